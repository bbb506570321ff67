jT
pgvectorpgvector"7dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=402dev8