Je
7dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40"(exceeded limits.phase_timeout_s = 3600 s