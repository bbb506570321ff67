j'
pgvectorJvbench-dev-pgvector.service