2Ï
r-cold-start)dev/pgvector/synth-angular-20k/cold_start‚("%À¨¥ ÷6€µà§¡Àš°Ì ş
 ş
°
°
€â	*$àÆ[°
€â	°
€â	ğ“	€â	°
ğ“	€â	ğ“	€â	:@ÓH²±™Qš™™™™™Ù?b)server closed the connection unexpectedly