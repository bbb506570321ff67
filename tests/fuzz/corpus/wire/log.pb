ZM
7dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40short answers: 3 