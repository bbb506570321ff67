/* Fuzz target: a profile (YAML text) as `vbench run --profile FILE` reads it.
 *
 * The bytes go through vb_profile_parse (YAML tree, schema check, canonical values), and an accepted profile
 * through what the coordinator does with it before any agent is involved: the manifest JSON, the plan expansion,
 * engine selection and the phase list getters. (vb_profile_check_engines, a lookup of names in the engine
 * registry, is left out: the engines do not build with clang 14.)
 *
 * Invariants checked beyond the sanitizers: a refused profile says "FILE:LINE: ..."; the manifest JSON is valid
 * JSON; plan keys are unique, found again by vb_plan_find, and start with the profile's name. */
#include <sqlite3.h>

#include "config/plan.h"
#include "config/profile.h"
#include "tests/fuzz/fuzz_util.h"

#define SOURCE "fuzz.yml"

/* SQLite's json_valid, so the check does not depend on a JSON parser of our own. */
static int json_valid(const char *text) {
    static sqlite3 *db;
    if (!db && sqlite3_open(":memory:", &db) != SQLITE_OK) abort();
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT json_valid(?1)", -1, &st, NULL) != SQLITE_OK) abort();
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    int valid = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    sqlite3_finalize(st);
    return valid;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void check_plan(const vb_profile *p) {
    vb_plan *plan = NULL;
    vb_error err = {0};
    if (vb_plan_build(p, &plan, &err) != VB_OK) {
        FZ_CHECK(err.message[0], "plan refused without a message");
        return;
    }
    size_t n = plan->n_items, name_len = strlen(p->name);
    FZ_CHECK(n > 0 && n <= VB_PLAN_MAX_ITEMS, "a plan of %zu items", n);
    const char **keys = malloc(n * sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        const vb_plan_item *it = &plan->items[i];
        FZ_CHECK(strncmp(it->key, p->name, name_len) == 0 && it->key[name_len] == '/', "plan key %s", it->key);
        FZ_CHECK(it->seq == (int)i, "item %zu has seq %d", i, it->seq);
        keys[i] = it->key;
    }
    qsort(keys, n, sizeof *keys, cmp_str);   /* vb_plan_find is linear: sorting keeps a 100,000-item plan cheap */
    for (size_t i = 1; i < n; i++) FZ_CHECK(strcmp(keys[i - 1], keys[i]) != 0, "plan key %s is not unique", keys[i]);
    free(keys);
    FZ_CHECK(vb_plan_find(plan, plan->items[n - 1].key) == &plan->items[n - 1], "the last item is not found");
    vb_plan_destroy(&plan);
}

static void check_phases(const vb_profile *p) {
    for (size_t i = 0; i < p->n_phases; i++) {
        const vb_profile_phase *ph = &p->phases[i];
        FZ_CHECK(vb_profile_phase_find(p, ph->kind) == ph, "phase %s", ph->kind);
        for (size_t j = 0; j < ph->n_params; j++) {
            long l[VB_MAX_LIST];
            double d[VB_MAX_LIST];
            vb_error err = {0};
            /* every value is a list of one or more numbers or not a list at all; both getters must cope */
            int nl = vb_profile_phase_list(ph, ph->params[j].key, l, VB_MAX_LIST, &err);
            int nd = vb_profile_phase_list_double(ph, ph->params[j].key, d, VB_MAX_LIST, &err);
            FZ_CHECK(nl <= VB_MAX_LIST && nd <= VB_MAX_LIST, "list of %d / %d items", nl, nd);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vb_profile *p = NULL;
    vb_error err = {0};
    if (vb_profile_parse((const char *)data, size, SOURCE, &p, &err) != VB_OK) {
        FZ_CHECK(p == NULL, "a refused profile was returned");
        FZ_SAY("refused: %s", err.message);
        FZ_CHECK(strncmp(err.message, SOURCE ":", strlen(SOURCE) + 1) == 0, "message without the file: %s",
                 err.message);
        return 0;
    }
    FZ_SAY("accepted: %s, %zu datasets, %zu engines, %zu phases", p->name, p->n_datasets, p->n_engines, p->n_phases);
    FZ_CHECK(p->n_datasets > 0 && p->n_engines > 0 && p->n_phases > 0, "an accepted profile without work");
    char *json = vb_profile_to_json(p);
    FZ_CHECK(json && json_valid(json), "manifest JSON is not JSON: %s", json ? json : "(null)");
    free(json);
    for (size_t i = 0; i < p->n_engines; i++) vb_profile_engine_line(p, p->engines[i].name, "name", NULL);
    check_phases(p);
    check_plan(p);
    /* keep only the last engine: the plan must still expand */
    size_t engines = p->n_engines;
    if (vb_profile_select_engines(p, p->engines[p->n_engines - 1].name, &err) == VB_OK && engines > 1) {
        FZ_CHECK(p->n_engines == 1, "%zu engines after selecting one", p->n_engines);
        check_plan(p);
    }
    vb_profile_destroy(&p);
    return 0;
}
