/* Self-test of the build phase's timings (agent/phase_build.c), run through its real code path: vb_phase_build
 * with a vb_phase_ctx whose `out` is an inproc PUSH socket; the test reads the result back from a PULL socket.
 *
 * What it pins down, without asserting any wall-clock duration (timing belongs to bench/):
 *   - an engine without a build step (exact: no build op) records build_s exactly 0. The build used to run on a
 *     thread polled every 100 ms, so every build time was rounded up to the poll (about 0.100 s for nothing);
 *   - an engine with a build step (test-build: exact plus a build op that counts its calls and times itself)
 *     runs it once, and build_s covers at least what the build op itself measured;
 *   - the three timings are ordered: first_query_s >= load_s + build_s;
 *   - build_repeats (Point.build): the session remembers which build its index is; an item of that build (or of
 *     no stated build) searches it as it is, an item of another build has it built again, said in a warning. */
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/phase.h"
#include "proto/wire.h"
#include "tests/tap.h"
#include "util/clock.h"

static char tmpdir[256], cache_dir[512], work_dir[512];
static zsock_t *pull, *push;
static vb_session *session;
static atomic_int stop_flag;

/* test-build: the exact engine with a build step that takes a known minimum time (it spins until 20 ms have
 * passed on the monotonic clock, so the lower bound below holds on any machine, however loaded). */
static atomic_int build_calls;
static uint64_t build_ns;   /* what the build op measured of itself */
static int tb_build(void *state, vb_error *err) {
    (void)state;
    (void)err;
    uint64_t t0 = vb_now_ns();
    while (vb_now_ns() - t0 < 20000000ull) {}
    build_ns = vb_now_ns() - t0;
    atomic_fetch_add(&build_calls, 1);
    return VB_OK;
}
static vb_engine_ops test_build_ops;

static const vb_kv dataset_kv[] = {
    {"name", "synth-build"}, {"source", "synthetic"}, {"rows", "2000"}, {"queries", "20"},
    {"dim", "16"},           {"clusters", "8"},       {"metric", "euclidean"}, {"seed", "3"},
};

typedef struct build_out {
    int rc;
    vb_error err;
    int results;
    Vbench__BuildResult b;
} build_out;

static char last_warning[512];

/* Runs phase `phase` of engine on the session kept between calls (close: closed afterwards), as build `build` of
 * the configuration; returns the phase's rc, *warned = the warnings it logged. */
static int run_on_session(const char *engine, Vbench__Phase phase, long build, int close, int *warned) {
    Vbench__Assign a = VBENCH__ASSIGN__INIT;
    a.item_key = "test/test-build/synth-build/x";
    a.phase = phase;
    a.engine = (char *)engine;
    a.dataset = "synth-build";
    a.k = 10;
    vb_phase_ctx ctx = {
        .assign = &a,
        .point = {.load_connections = 2, .load_batch = 1000, .build = build},
        .dataset_params = (vb_kv *)dataset_kv, .n_dataset_params = sizeof dataset_kv / sizeof dataset_kv[0],
        .session = &session, .out = push, .stop = &stop_flag, .agent_id = "test",
        .work_dir = work_dir, .cache_dir = cache_dir,
    };
    vb_error err;
    vb_error_clear(&err);
    int rc = phase == VBENCH__PHASE__PHASE_BUILD ? vb_phase_build(&ctx, &err) : vb_phase_ensure_index(&ctx, &err);
    Vbench__Envelope *env;
    vb_error werr;
    *warned = 0;
    while ((env = vb_wire_recv(pull, NULL, &werr))) {
        if (env->body_case == VBENCH__ENVELOPE__BODY_LOG && env->log->level == VBENCH__LOG_LEVEL__LOG_WARN) {
            (*warned)++;
            snprintf(last_warning, sizeof last_warning, "%s", env->log->message ? env->log->message : "");
        }
        vb_wire_free(env);
    }
    if (close) vb_session_close(&session);
    return rc;
}

static void run_build(const char *engine, build_out *o) {
    memset(o, 0, sizeof *o);
    char key[256];
    snprintf(key, sizeof key, "test/%s/synth-build/build", engine);
    Vbench__Assign a = VBENCH__ASSIGN__INIT;
    a.item_key = key;
    a.phase = VBENCH__PHASE__PHASE_BUILD;
    a.engine = (char *)engine;
    a.dataset = "synth-build";
    a.k = 10;
    vb_phase_ctx ctx = {
        .assign = &a,
        .point = {.load_connections = 2, .load_batch = 1000},   /* the plan gives every build item these */
        .dataset_params = (vb_kv *)dataset_kv, .n_dataset_params = sizeof dataset_kv / sizeof dataset_kv[0],
        .session = &session, .out = push, .stop = &stop_flag, .agent_id = "test",
        .work_dir = work_dir, .cache_dir = cache_dir,
    };
    vb_error_clear(&o->err);
    vb_phase_fn fn = vb_phase_lookup(VBENCH__PHASE__PHASE_BUILD);
    o->rc = fn ? fn(&ctx, &o->err) : vb_error_set(&o->err, "test", 1, "vb_phase_lookup(\"build\") is NULL");
    vb_error werr;
    Vbench__Envelope *env;
    while ((env = vb_wire_recv(pull, NULL, &werr))) {
        if (env->body_case == VBENCH__ENVELOPE__BODY_RESULT && env->result->body_case == VBENCH__RESULT__BODY_BUILD) {
            o->results++;
            o->b = *env->result->build;
            o->b.engine_version = NULL;
            o->b.dataset_hash = NULL;
        }
        vb_wire_free(env);
    }
    vb_session_close(&session);
    printf("#   %s: rc %d, load_s %.6f, build_s %.6f, first_query_s %.6f%s%s\n", engine, o->rc, o->b.load_s,
           o->b.build_s, o->b.first_query_s, o->rc ? ", error: " : "", o->rc ? o->err.message : "");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vb-test-phase-build-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", tmpdir);
    snprintf(work_dir, sizeof work_dir, "%s/work", tmpdir);
    pull = zsock_new_pull("inproc://test-phase-build");
    push = zsock_new_push("inproc://test-phase-build");
    if (!pull || !push) {
        printf("Bail out! cannot make the inproc sockets\n");
        return 1;
    }
    zsock_set_rcvtimeo(pull, 200);
    test_build_ops = vb_engine_exact;
    test_build_ops.name = "test-build";
    test_build_ops.build = tb_build;
    ok(vb_engine_register(&test_build_ops) == VB_OK, "test-build registered");

    build_out o;
    run_build("exact", &o);
    ok(o.rc == VB_OK && o.results == 1, "exact: the build item succeeds with one result");
    ok(vb_engine_exact.build == NULL, "exact has no build step (what the next check relies on)");
    ok(o.b.build_s == 0.0, "exact: no build step, build_s exactly 0 (got %.6f; the poll used to add 0.1 s)",
       o.b.build_s);
    ok(o.b.load_s > 0 && o.b.first_query_s >= o.b.load_s + o.b.build_s,
       "exact: first_query_s %.6f >= load_s %.6f + build_s %.6f", o.b.first_query_s, o.b.load_s, o.b.build_s);
    is_int(o.b.rows, 2000, "exact: every row loaded");

    run_build("test-build", &o);
    ok(o.rc == VB_OK && o.results == 1, "test-build: the build item succeeds with one result");
    is_int(atomic_load(&build_calls), 1, "test-build: the engine's build ran once");
    ok(o.b.build_s >= (double)build_ns / 1e9,
       "test-build: build_s %.6f covers the build op's own %.6f s", o.b.build_s, (double)build_ns / 1e9);
    ok(o.b.first_query_s >= o.b.load_s + o.b.build_s,
       "test-build: first_query_s %.6f >= load_s %.6f + build_s %.6f", o.b.first_query_s, o.b.load_s, o.b.build_s);

    /* build_repeats: build 2 made, then items of build 2, of no stated build and of build 3 on the same session */
    int warned = 0, calls = atomic_load(&build_calls);
    ok(run_on_session("test-build", VBENCH__PHASE__PHASE_BUILD, 2, 0, &warned) == VB_OK,
       "build_repeats: build 2 made");
    is_int(atomic_load(&build_calls), calls + 1, "build_repeats: build 2 ran the build step");
    ok(run_on_session("test-build", VBENCH__PHASE__PHASE_RECALL_SWEEP, 2, 0, &warned) == VB_OK && warned == 0,
       "build_repeats: an item of build 2 searches the index as it is, no warning");
    ok(run_on_session("test-build", VBENCH__PHASE__PHASE_RECALL_SWEEP, 0, 0, &warned) == VB_OK && warned == 0,
       "build_repeats: an item of no stated build (an older coordinator) too");
    is_int(atomic_load(&build_calls), calls + 1, "build_repeats: no build step for them");
    ok(run_on_session("test-build", VBENCH__PHASE__PHASE_RECALL_SWEEP, 3, 0, &warned) == VB_OK && warned == 1,
       "build_repeats: an item of build 3 on build 2's index: built again, with a warning");
    is_int(atomic_load(&build_calls), calls + 2, "build_repeats: the build step ran for it");
    /* v_validity's 'measured after a rebuild' finds the warning by these words */
    contains(last_warning, "this item measures build 3", "build_repeats: the warning names the build");
    ok(run_on_session("test-build", VBENCH__PHASE__PHASE_RECALL_SWEEP, 3, 1, &warned) == VB_OK && warned == 0,
       "build_repeats: the next item of build 3 finds build 3");

    zsock_destroy(&push);
    zsock_destroy(&pull);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return done_testing();
}
