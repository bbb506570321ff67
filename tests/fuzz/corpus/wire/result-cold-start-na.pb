2ƒ
r-cold-start-na)dev/pgvector/synth-angular-20k/cold_start‚B@hnswlib is an embedded engine: it runs inside the client process