/* The server settings pass (profile `server_pass: durable | relaxed`): applied through the recipes, whose
 * `parameters: server_pass:` give each pass's settings (the deploy/engines recipes: relaxed is PostgreSQL fsync,
 * full_page_writes and synchronous_commit off; InnoDB flush_log_at_trx_commit 0 and doublewrite 0). The coordinator
 * names the pass in every recipe reference it sends ("pgvector server_pass=relaxed"), so the orchestrator derives
 * the settings and the manifest records every resulting one (server.NAME.*). The pass itself goes into the
 * manifest (server_pass), and a known asymmetry (asymmetry.server_pass) when the campaign mixes engines the pass
 * applies to with engines it does not (an embedded engine has no durability to relax). */
#ifndef VB_COORDINATOR_SERVER_PASS_H
#define VB_COORDINATOR_SERVER_PASS_H

#include "config/profile.h"
#include "store/store.h"

/* Rewrites the recipe reference of every engine with a recipe (unless it names server_pass itself). */
void vb_server_pass_apply(vb_profile *p);
/* Records the pass and the asymmetry note in the manifest. */
void vb_server_pass_record(const vb_profile *p, vb_store *s);

#endif
