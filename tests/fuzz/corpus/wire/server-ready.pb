rL
pgvectorJvbench-dev-pgvector.serviceR#
started
m16
	ef_search40