/* Test tool: abuses a coordinator's CURVE port the way a hostile or broken client would, for the wire tests
 * (tests/e2e/78-wire-abuse.t). Each mode prints one line of what it saw and exits 0 when it could do what it was
 * asked (the verdict on the coordinator's side is the test's to check).
 *
 *   vb_wireprobe junk HOST PORT N
 *       N plain TCP connections, one after another, each sending 256 bytes of junk (not ZMTP) and closing.
 *   vb_wireprobe rogue ENDPOINT CERT.key SERVER.pub N
 *       N CURVE connections with CERT (a key the coordinator does not allow), 50 at a time; prints "refused R of N"
 *       where R counts the connections libzmq reports as refused by the coordinator's ZAP handler (status 400).
 *   vb_wireprobe big ENDPOINT CERT.key SERVER.pub ID BYTES
 *       one CURVE connection as ID; after the handshake sends one frame of BYTES bytes; prints "closed" when the
 *       coordinator closed the connection within 30 s, "open" otherwise.
 *   vb_wireprobe hijack ENDPOINT CERT.key SERVER.pub ID SECONDS
 *       one CURVE connection as ID, sending a Hello as agent ID every second for SECONDS; prints "received N
 *       messages: BODY..." (what came back: a Welcome means the coordinator took it for agent ID).
 *   vb_wireprobe orchestrator ENDPOINT CERT.key SERVER.pub ID SECONDS
 *       an agent with role orchestrator that never does anything: one Hello as ID, then a Heartbeat every second
 *       for SECONDS, whatever the coordinator asks; prints "< BODY" for each message as it comes and "received N
 *       messages: BODY..." at the end. A server the
 *       coordinator asks it for stays "starting" (tests/e2e/73-stop-refusal.t keeps the coordinator in its stop
 *       loop with it).
 * Exit status: 0 done, 1 could not (the reason on stderr), 2 usage. */
#include <arpa/inet.h>
#include <czmq.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/wire.h"

static int usage(void) {
    fprintf(stderr, "usage: vb_wireprobe junk HOST PORT N | rogue ENDPOINT CERT SERVER_PUB N |\n"
                    "       big ENDPOINT CERT SERVER_PUB ID BYTES | hijack ENDPOINT CERT SERVER_PUB ID SECONDS |\n"
                    "       orchestrator ENDPOINT CERT SERVER_PUB ID SECONDS\n");
    return 2;
}

static int junk(const char *host, int port, int n) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        fprintf(stderr, "vb_wireprobe: %s is not an IPv4 address\n", host);
        return 1;
    }
    char bytes[256];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (char)(0xA5 ^ (i * 37));
    int sent = 0;
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) break;
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && write(fd, bytes, sizeof bytes) == (ssize_t)sizeof bytes)
            sent++;
        char sink[64];
        struct timeval tv = {.tv_sec = 1};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        while (read(fd, sink, sizeof sink) > 0) {}   /* until the coordinator closes */
        close(fd);
    }
    printf("junk sent on %d of %d connections\n", sent, n);
    return sent == n ? 0 : 1;
}

/* A CURVE DEALER as id (NULL: none) with a monitor on its handshake events. */
static zsock_t *curve_dealer(const char *endpoint, zcert_t *cert, const char *server_key, const char *id, zsock_t **mon,
                             unsigned seq) {
    zsock_t *d = zsock_new(ZMQ_DEALER);
    if (!d) return NULL;
    zsock_set_linger(d, 0);
    zsock_set_sndhwm(d, 0);
    if (id) zsock_set_identity(d, id);
    zcert_apply(cert, d);
    zsock_set_curve_serverkey(d, server_key);
    char addr[80];
    snprintf(addr, sizeof addr, "inproc://vb-wireprobe-%u", seq);
    zmq_socket_monitor(zsock_resolve(d), addr,
                       ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                           ZMQ_EVENT_DISCONNECTED);
    *mon = zsock_new_pair(addr);
    zsock_connect(d, "%s", endpoint);
    return d;
}

/* The next monitor event within ms (0 when none), its value in *value. */
static int next_event(zsock_t *mon, int ms, uint32_t *value) {
    zsock_set_rcvtimeo(mon, ms);
    zmsg_t *m = zmsg_recv(mon);
    if (!m) return 0;
    uint16_t ev = 0;
    zframe_t *h = zmsg_first(m);
    if (h && zframe_size(h) == 6) {
        memcpy(&ev, zframe_data(h), 2);
        if (value) memcpy(value, zframe_data(h) + 2, 4);
    }
    zmsg_destroy(&m);
    return ev;
}

static void close_dealer(zsock_t **d, zsock_t **mon) {
    zmq_socket_monitor(zsock_resolve(*d), NULL, 0);
    zsock_destroy(d);
    zsock_destroy(mon);
}

static int rogue(const char *endpoint, zcert_t *cert, const char *server_key, int n) {
    enum { BATCH = 50 };
    int refused = 0;
    unsigned seq = 0;
    for (int done = 0; done < n;) {
        int b = n - done < BATCH ? n - done : BATCH;
        zsock_t *d[BATCH], *mon[BATCH];
        for (int i = 0; i < b; i++) d[i] = curve_dealer(endpoint, cert, server_key, NULL, &mon[i], seq++);
        for (int i = 0; i < b; i++) {
            uint32_t v = 0;
            int ev;
            while ((ev = next_event(mon[i], 5000, &v)) && ev != ZMQ_EVENT_HANDSHAKE_FAILED_AUTH &&
                   ev != ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {}
            refused += ev == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH && v == 400;
            close_dealer(&d[i], &mon[i]);
        }
        done += b;
    }
    printf("refused %d of %d\n", refused, n);
    return 0;
}

static int big(const char *endpoint, zcert_t *cert, const char *server_key, const char *id, size_t bytes) {
    zsock_t *mon = NULL, *d = curve_dealer(endpoint, cert, server_key, id, &mon, 0);
    int ev;
    while ((ev = next_event(mon, 10000, NULL)) && ev != ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {}
    if (ev != ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        fprintf(stderr, "vb_wireprobe: no CURVE handshake with %s within 10 s\n", endpoint);
        close_dealer(&d, &mon);
        return 1;
    }
    zframe_t *f = zframe_new(NULL, bytes);
    if (!f) {
        fprintf(stderr, "vb_wireprobe: cannot allocate %zu bytes\n", bytes);
        close_dealer(&d, &mon);
        return 1;
    }
    memset(zframe_data(f), 'x', bytes);
    zframe_send(&f, d, 0);
    while ((ev = next_event(mon, 30000, NULL)) && ev != ZMQ_EVENT_DISCONNECTED) {}
    printf("%s\n", ev == ZMQ_EVENT_DISCONNECTED ? "closed" : "open");
    close_dealer(&d, &mon);
    return 0;
}

/* One CURVE connection as id, speaking as an agent with one role for seconds: a Hello every second (hijack), or
 * one Hello and then a Heartbeat every second (orchestrator). Prints the bodies that came back. */
static int speak(const char *endpoint, zcert_t *cert, const char *server_key, const char *id, const char *role,
                 int hello_once, int seconds) {
    zsock_t *mon = NULL, *d = curve_dealer(endpoint, cert, server_key, id, &mon, 0);
    char *roles[] = {(char *)role};
    Vbench__Hello h = VBENCH__HELLO__INIT;
    h.protocol = VB_PROTOCOL_VERSION;
    h.agent_id = (char *)id;
    h.host = "hijacker";
    h.cores = 2;                     /* a plausible host, so that a budget can be derived from it */
    h.memory_bytes = 8ull << 30;
    h.n_roles = 1;
    h.roles = roles;
    h.instance = (uint64_t)getpid();
    Vbench__Envelope env = VBENCH__ENVELOPE__INIT;
    env.body_case = VBENCH__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    Vbench__Heartbeat hb = VBENCH__HEARTBEAT__INIT;
    Vbench__Envelope beat = VBENCH__ENVELOPE__INIT;
    beat.body_case = VBENCH__ENVELOPE__BODY_HEARTBEAT;
    beat.heartbeat = &hb;
    int received = 0;
    char bodies[512] = "";
    for (int s = 0; s < seconds; s++) {
        h.seq = (uint64_t)s + 1;
        hb.seq = (uint64_t)s;
        vb_wire_send(d, NULL, s == 0 || !hello_once ? &env : &beat, NULL);
        zpoller_t *p = zpoller_new(d, NULL);
        int64_t end = zclock_mono() + 1000;
        while (zclock_mono() < end) {
            if (zpoller_wait(p, (int)(end - zclock_mono())) != d) continue;
            vb_error err;
            Vbench__Envelope *in = vb_wire_recv(d, NULL, &err);
            received++;
            if (in && hello_once) printf("< %s\n", vb_wire_body_name(in));   /* as it comes, for a test to wait on */
            if (in && strlen(bodies) + 20 < sizeof bodies) {
                strcat(bodies, " ");
                strcat(bodies, vb_wire_body_name(in));
            }
            vb_wire_free(in);
            fflush(stdout);
        }
        zpoller_destroy(&p);
    }
    printf("received %d messages:%s\n", received, bodies);
    close_dealer(&d, &mon);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    zsys_init();
    zsys_set_linger(0);
    if (strcmp(argv[1], "junk") == 0) return argc == 5 ? junk(argv[2], atoi(argv[3]), atoi(argv[4])) : usage();
    if (argc < 6) return usage();
    zcert_t *cert = zcert_load(argv[3]), *server = zcert_load(argv[4]);
    if (!cert || !server) {
        fprintf(stderr, "vb_wireprobe: cannot load %s or %s\n", argv[3], argv[4]);
        return 1;
    }
    const char *server_key = zcert_public_txt(server);
    int rc = 2;
    if (strcmp(argv[1], "rogue") == 0 && argc == 6) rc = rogue(argv[2], cert, server_key, atoi(argv[5]));
    else if (strcmp(argv[1], "big") == 0 && argc == 7)
        rc = big(argv[2], cert, server_key, argv[5], (size_t)strtoull(argv[6], NULL, 10));
    else if (strcmp(argv[1], "hijack") == 0 && argc == 7)
        rc = speak(argv[2], cert, server_key, argv[5], "client", 0, atoi(argv[6]));
    else if (strcmp(argv[1], "orchestrator") == 0 && argc == 7)
        rc = speak(argv[2], cert, server_key, argv[5], "orchestrator", 1, atoi(argv[6]));
    else usage();
    zcert_destroy(&cert);
    zcert_destroy(&server);
    return rc;
}
