2‚
r-cold-start-na)dev/pgvector/synth-angular-20k/cold_startzB@hnswlib is an embedded engine: it runs inside the client process