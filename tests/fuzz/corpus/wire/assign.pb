›
7dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40recall_sweephnswlib"
m16*synth-angular-20k2
	ef_search402
m16:
	ef_search40@
H