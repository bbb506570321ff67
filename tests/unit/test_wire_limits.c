/* The message-size bound of proto/wire.h holds for the largest messages the code can make: a WindowResult of 4,096
 * clients with every histogram bucket filled at its largest count, a SweepResult whose answers are at
 * VB_WIRE_ANSWERS_MAX, a ServerReport with a full batch of samples,
 * facts of PATH_MAX values and a log tail far over VB_WIRE_LOG_TAIL_MAX (sent clipped, keeping its end). Both go
 * through real sockets whose ZMQ_MAXMSGSIZE is set as the coordinator's and agents' are; a frame over the bound
 * is dropped by libzmq. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/histogram.h"
#include "proto/transport.h"
#include "proto/wire.h"
#include "tests/tap.h"

static Vbench__Histogram *full_histogram(void) {
    size_t n = vb_histogram_bucket_count();
    Vbench__Histogram *h = calloc(1, sizeof *h);
    vbench__histogram__init(h);
    h->n_idx = h->n_counts = n;
    h->idx = calloc(n, sizeof *h->idx);
    h->counts = calloc(n, sizeof *h->counts);
    for (size_t i = 0; i < n; i++) h->idx[i] = (uint32_t)i, h->counts[i] = UINT64_MAX;
    h->out_of_range = h->min_ns = h->max_ns = UINT64_MAX;
    return h;
}

static void free_histogram(Vbench__Histogram *h) {
    free(h->idx);
    free(h->counts);
    free(h);
}

int main(void) {
    zsys_init();
    zsock_t *rx = zsock_new(ZMQ_PAIR), *tx = zsock_new(ZMQ_PAIR);
    vb_transport_socket_limits(rx, 1);
    zsock_bind(rx, "tcp://127.0.0.1:*");
    zsock_connect(tx, "%s", zsock_endpoint(rx));
    zsock_set_rcvtimeo(rx, 5000);

    /* The largest Result: a window of 4,096 clients (the profile's limit) with two full histograms. */
    Vbench__WindowResult w = VBENCH__WINDOW_RESULT__INIT;
    w.clients = 4096;
    w.latency = full_histogram();
    w.lag = full_histogram();
    w.n_fraction_in_call = 4096;
    w.fraction_in_call = calloc(4096, sizeof(double));
    w.queries = w.errors = w.warmup_queries = w.late_starts = w.clients_lost = UINT64_MAX;
    Vbench__Result r = VBENCH__RESULT__INIT;
    char key[256];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    r.result_key = r.item_key = key;
    r.body_case = VBENCH__RESULT__BODY_WINDOW;
    r.window = &w;
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_RESULT;
    env.result = &r;
    size_t result_bytes = vbench__envelope__get_packed_size(&env);
    ok(result_bytes < VB_WIRE_MAX_BYTES / 4, "the largest Result is %zu bytes, a quarter of the bound at most", result_bytes);
    vb_error err;
    ok(vb_wire_send(tx, NULL, &env, &err) == VB_OK, "it is sent");
    Vbench__Envelope *got = vb_wire_recv(rx, NULL, &err);
    ok(got && got->result->window->clients == 4096, "and received whole through a socket with the bound");
    vb_wire_free(got);

    /* The largest sweep: answers at the bound the agent keeps (VB_WIRE_ANSWERS_MAX), per-query recall at its own
     * (VB_WIRE_QUERY_RECALL_MAX), a full histogram, the longest plan and duplicate example. */
    Vbench__SweepResult sw = VBENCH__SWEEP_RESULT__INIT;
    Vbench__Measurement sm = VBENCH__MEASUREMENT__INIT;
    sm.latency = full_histogram();
    static char plan[2048], example[128];
    memset(plan, 'p', sizeof plan - 1);
    memset(example, 'd', sizeof example - 1);
    sm.plan = plan;
    sm.duplicate_example = example;
    sm.queries = sm.short_answers = sm.errors = sm.duplicate_answers = UINT64_MAX;
    sm.recall_queries = UINT64_MAX;
    sm.query_recall.len = VB_WIRE_QUERY_RECALL_MAX;
    sm.query_recall.data = calloc(1, VB_WIRE_QUERY_RECALL_MAX);
    sw.m = &sm;
    sw.answers.len = VB_WIRE_ANSWERS_MAX;
    sw.answers.data = calloc(1, VB_WIRE_ANSWERS_MAX);
    r.body_case = VBENCH__RESULT__BODY_SWEEP;
    r.sweep = &sw;
    size_t sweep_bytes = vbench__envelope__get_packed_size(&env);
    ok(sweep_bytes <= VB_WIRE_MAX_BYTES - (512u << 10), "the largest sweep is %zu bytes, 512 KB under the bound",
       sweep_bytes);
    ok(vb_wire_send(tx, NULL, &env, &err) == VB_OK, "it is sent");
    got = vb_wire_recv(rx, NULL, &err);
    ok(got && got->result->sweep->answers.len == VB_WIRE_ANSWERS_MAX &&
       got->result->sweep->m->query_recall.len == VB_WIRE_QUERY_RECALL_MAX, "and received whole");
    vb_wire_free(got);
    free(sw.answers.data);
    free(sm.query_recall.data);
    free_histogram(sm.latency);

    /* The largest ServerReports: a batch of 256 samples; a server's end (died) with 40 facts of PATH_MAX bytes
     * and a log tail 4 MB over the bound. */
    Vbench__ServerReport sr = VBENCH__SERVER_REPORT__INIT;
    Vbench__ServerSamples samples = VBENCH__SERVER_SAMPLES__INIT;
    Vbench__ServerEnd end = VBENCH__SERVER_END__INIT;
    Vbench__ServerSample s[256], *sp[256];
    for (int i = 0; i < 256; i++) {
        vbench__server_sample__init(&s[i]);
        s[i].wall = 1e12;
        s[i].cgroup_bytes = s[i].rss_bytes = s[i].cpu_usec = s[i].pss_bytes = UINT64_MAX;
        sp[i] = &s[i];
    }
    samples.n_samples = 256;
    samples.samples = sp;
    samples.item_key = key;
    sr.engine = sr.unit = "x";
    sr.body_case = VBENCH__SERVER_REPORT__BODY_SAMPLES;
    sr.samples = &samples;
    Vbench__Envelope env1 = VBENCH__ENVELOPE__INIT;
    env1.body_case = VBENCH__ENVELOPE__BODY_SERVER_REPORT;
    env1.server_report = &sr;
    ok(vbench__envelope__get_packed_size(&env1) < VB_WIRE_MAX_BYTES / 4, "a batch of 256 samples is %zu bytes",
       vbench__envelope__get_packed_size(&env1));
    ok(vb_wire_send(tx, NULL, &env1, &err) == VB_OK, "it is sent");
    got = vb_wire_recv(rx, NULL, &err);
    ok(got && got->server_report->body_case == VBENCH__SERVER_REPORT__BODY_SAMPLES &&
       got->server_report->samples->n_samples == 256, "and received with every sample");
    vb_wire_free(got);

    static char value[PATH_MAX];
    memset(value, 'v', sizeof value - 1);
    Vbench__KV kv[40], *kvp[40];
    for (int i = 0; i < 40; i++) {
        vbench__kv__init(&kv[i]);
        kv[i].key = "unit.some_property";
        kv[i].value = value;
        kvp[i] = &kv[i];
    }
    end.n_facts = 40;
    end.facts = kvp;
    size_t tail_len = (size_t)VB_WIRE_MAX_BYTES + (4u << 20);
    char *tail = malloc(tail_len + 1);
    for (size_t i = 0; i < tail_len; i++) tail[i] = i % 100 == 99 ? '\n' : 'a' + (char)(i / 100 % 26);
    tail[tail_len] = '\0';
    end.log_tail = tail;
    end.message = "x";
    sr.body_case = VBENCH__SERVER_REPORT__BODY_DIED;
    sr.died = &end;
    Vbench__Envelope env2 = VBENCH__ENVELOPE__INIT;
    env2.body_case = VBENCH__ENVELOPE__BODY_SERVER_REPORT;
    env2.server_report = &sr;
    ok(vbench__envelope__get_packed_size(&env2) > VB_WIRE_MAX_BYTES, "a log tail 4 MB over the bound is over the bound");
    ok(vb_wire_send(tx, NULL, &env2, &err) == VB_OK, "the report is sent all the same: %s", err.message);
    ok(end.log_tail == tail && sr.died == &end, "... without changing the caller's message");
    got = vb_wire_recv(rx, NULL, &err);
    ok(got != NULL, "and received through a socket with the bound");
    if (got) {
        is_int(got->server_report->body_case, VBENCH__SERVER_REPORT__BODY_DIED, "... as a died report");
        const char *lt = got->server_report->died->log_tail;
        size_t n = strlen(lt);
        ok(n <= VB_WIRE_LOG_TAIL_MAX && n > VB_WIRE_LOG_TAIL_MAX - 200, "its log tail is clipped to %zu bytes", n);
        ok(strcmp(lt, tail + tail_len - n) == 0, "... keeping the end of the log");
        ok(n == tail_len || tail[tail_len - n - 1] == '\n', "... from the start of a line");
        is_int(got->server_report->died->n_facts, 40, "... with every fact");
    }
    vb_wire_free(got);

    /* A frame over the bound: libzmq drops it (and the connection); the receiver gets nothing. */
    size_t big = VB_WIRE_FRAME_MAX + 1;
    zframe_t *f = zframe_new(NULL, big);
    memset(zframe_data(f), 0, big);
    zframe_send(&f, tx, 0);
    zsock_set_rcvtimeo(rx, 1000);
    zframe_t *in = zframe_recv(rx);
    ok(in == NULL, "a frame of %zu bytes (the bound + 1) never reaches the receiver", big);
    zframe_destroy(&in);

    free(tail);
    free(w.fraction_in_call);
    free_histogram(w.latency);
    free_histogram(w.lag);
    zsock_destroy(&tx);
    zsock_destroy(&rx);
    return done_testing();
}
