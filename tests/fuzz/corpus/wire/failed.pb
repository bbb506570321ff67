Bi
7dev/hnswlib/synth-angular-20k/recall_sweep/ef_search=40engine&ERROR: relation "items" does not exist