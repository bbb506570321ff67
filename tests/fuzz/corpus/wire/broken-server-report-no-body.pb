r'
pgvectorJvbench-dev-pgvector.service