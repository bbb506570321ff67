/* pgvector-specific helpers beyond the engine interface (engines/pgvector.c). */
#ifndef VB_ENGINES_PGVECTOR_H
#define VB_ENGINES_PGVECTOR_H

#include "engines/engine.h"

/* Opens its own connection with the engine's profile parameters (cfg), applies ef_search and the iterative scan
 * settings as the search path does, runs EXPLAIN on the kNN query for spec's metric (filtered when filter is a
 * tag filter) and says whether the plan scans the table's HNSW index: *uses_index = 1 when it does. plan (may
 * be NULL) receives the plan text, one line per plan row, truncated to plan_len. The table must exist. */
int vb_pgvector_explain(const vb_engine_config *cfg, const vb_table_spec *spec, int ef_search, int k,
                        const vb_filter *filter, int *uses_index, char *plan, size_t plan_len, vb_error *err);

#endif
