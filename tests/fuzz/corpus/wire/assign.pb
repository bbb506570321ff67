‡
7dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40hnswlib"
m16*synth-angular-20k2
	ef_search402
m16@
HXb( è