ra
pgvectorJvbench-dev-pgvector.serviceb8
the unit endedFATAL: out of memory

	ef_search40