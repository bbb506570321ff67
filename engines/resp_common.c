/* The layer the RESP adapters share (see engines/resp_common.h for what and why). */
#include "engines/resp_common.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the address --------------------------------------------------------------------------------------- */

int vb_resp_addr_read(vb_resp_addr *a, const char *engine, const vb_engine_config *cfg, vb_error *err) {
    const vb_kv *kv = cfg->params;
    size_t n = cfg->n_params;
    memset(a, 0, sizeof *a);
    a->engine = engine;
    snprintf(a->socket, sizeof a->socket, "%s", vb_kv_get(kv, n, "socket", ""));
    snprintf(a->host, sizeof a->host, "%s", vb_kv_get(kv, n, "host", "127.0.0.1"));
    snprintf(a->password, sizeof a->password, "%s", vb_kv_get(kv, n, "password", ""));
    if (vb_kv_get_long(kv, n, "port", 6379, 1, 65535, &a->port, err) ||
        vb_kv_get_long(kv, n, "timeout_s", 600, 1, 86400, &a->timeout_s, err)) {
        vb_error_prefix(err, "%s", engine);
        return VB_ERROR;
    }
    if (cfg->io_timeout_s > 0 && cfg->io_timeout_s < a->timeout_s) a->timeout_s = cfg->io_timeout_s;
    return VB_OK;
}

/* hiredis writes with write(2): a write to a server that has gone (SHUTDOWN, a killed unit) raises SIGPIPE, whose
 * default kills the whole process (the agent, with every result it holds) instead of failing the call with EPIPE.
 * The process ignores it once, before its first connection, as redis-cli and redis-benchmark do; libpq and MariaDB
 * Connector/C protect their own writes (MSG_NOSIGNAL, and MariaDB's library init ignores SIGPIPE too). Seen: the
 * conformance tool died of SIGPIPE (exit 141) at Redis's restart check when no MariaDB engine ran in the process. */
static void ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

int vb_resp_dial(const vb_resp_addr *a, redisContext **out, vb_error *err) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, ignore_sigpipe);
    struct timeval tv = {a->timeout_s, 0}, ctv = {a->timeout_s < 10 ? a->timeout_s : 10, 0};
    *out = NULL;
    redisContext *rc = a->socket[0] ? redisConnectUnixWithTimeout(a->socket, ctv)
                                    : redisConnectWithTimeout(a->host, (int)a->port, ctv);
    if (!rc) return vb_error_set(err, a->engine, 1, "%s: out of memory for a connection", a->engine);
    if (rc->err) {
        int st = vb_adapter_fail(err, a->engine, a->socket[0] ? "connecting to the socket" : "connecting", rc->errstr,
                             a->socket[0] ? a->socket : a->host, 2, 1);
        redisFree(rc);
        return st;
    }
    redisSetTimeout(rc, tv);
    if (a->password[0]) {
        vb_resp_argv c;
        vb_resp_argv_init(&c);
        vb_resp_arg(&c, "AUTH");
        vb_resp_arg(&c, a->password);
        int st = vb_resp_do(a->engine, rc, &c, err, "AUTH");
        if (st != VB_OK) {
            redisFree(rc);
            return st;
        }
    }
    *out = rc;
    return VB_OK;
}

int vb_resp_ready(const vb_resp_addr *a, redisContext **rc, vb_error *err) {
    if (*rc && !(*rc)->err) return VB_OK;
    if (*rc) redisFree(*rc);
    *rc = NULL;
    return vb_resp_dial(a, rc, err);
}

int vb_resp_connect(void *state, void **conn, vb_error *err) {
    const vb_resp_addr *a = state;   /* the state's first member */
    vb_resp_conn *c = calloc(1, sizeof *c);
    if (!c) return vb_error_set(err, a->engine, 1, "%s: out of memory", a->engine);
    c->state = state, c->addr = a;
    int st = vb_resp_ready(a, &c->rc, err);
    if (st != VB_OK) {
        vb_resp_disconnect(c);
        return st;
    }
    *conn = c;
    return VB_OK;
}

void vb_resp_disconnect(void *conn) {
    vb_resp_conn *c = conn;
    if (!c) return;
    if (c->rc) redisFree(c->rc);
    free(c);
}

static int admin_dial(void *owner, void **conn, vb_error *err) {
    redisContext *rc = NULL;
    int st = vb_resp_dial(owner, &rc, err);
    *conn = rc;
    return st;
}

static void admin_hangup(void *conn) { redisFree(conn); }

const vb_admin_ops vb_resp_admin_ops = {admin_dial, admin_hangup};

/* ---- errors ---------------------------------------------------------------------------------------------- */

int vb_resp_transient(const char *text) {
    static const char *const words[] = {"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", NULL};
    for (int i = 0; text && words[i]; i++)
        if (strncmp(text, words[i], strlen(words[i])) == 0) return 1;
    return 0;
}

int vb_resp_fail(const char *engine, const redisContext *rc, const redisReply *r, vb_error *err, const char *what) {
    if (!r || (rc && rc->err))
        return vb_adapter_fail(err, engine, what, rc && rc->err ? rc->errstr : "no reply", "connection lost", 2, 1);
    if (r->type == REDIS_REPLY_ERROR) {
        const char *hint = strncmp(r->str, "OOM", 3) == 0 ? "maxmemory reached: give the server more memory" : NULL;
        return vb_adapter_fail(err, engine, what, r->str, hint, 1, vb_resp_transient(r->str));
    }
    return vb_adapter_fail(err, engine, what, "unexpected reply type", NULL, 1, 0);
}

/* ---- arguments ------------------------------------------------------------------------------------------- */

void vb_resp_argv_init(vb_resp_argv *a) {
    a->argc = a->overflow = 0;
    a->used = 0;
}

static void arg_add(vb_resp_argv *a, const char *s, size_t len, int binary) {
    if (a->argc >= VB_RESP_ARGV_MAX) {
        a->overflow = 1;
        return;
    }
    a->argv[a->argc] = s;
    a->len[a->argc] = len;
    a->binary[a->argc++] = binary;
}

void vb_resp_arg(vb_resp_argv *a, const char *s) { arg_add(a, s, strlen(s), 0); }

void vb_resp_arg_bin(vb_resp_argv *a, const void *data, size_t len) { arg_add(a, data, len, 1); }

void vb_resp_argf(vb_resp_argv *a, const char *fmt, ...) {
    size_t room = sizeof a->store - a->used;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(a->store + a->used, room, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= room) {
        a->overflow = 1;
        return;
    }
    arg_add(a, a->store + a->used, (size_t)w, 0);
    a->used += (size_t)w + 1;
}

const char *vb_resp_argv_text(const vb_resp_argv *a, char *buf, size_t len) {
    size_t o = 0;
    if (!len) return buf;
    buf[0] = '\0';
    for (int i = 0; i < a->argc && o + 1 < len; i++) {
        int w;
        if (a->binary[i]) w = snprintf(buf + o, len - o, "%s<%zu bytes>", i ? " " : "", a->len[i]);
        else if (!a->len[i] || memchr(a->argv[i], ' ', a->len[i]))
            w = snprintf(buf + o, len - o, "%s'%.*s'", i ? " " : "", (int)a->len[i], a->argv[i]);
        else w = snprintf(buf + o, len - o, "%s%.*s", i ? " " : "", (int)a->len[i], a->argv[i]);
        if (w < 0) break;
        o += (size_t)w < len - o ? (size_t)w : len - o - 1;
    }
    return buf;
}

/* ---- commands -------------------------------------------------------------------------------------------- */

static int refuse_overflow(const char *engine, const vb_resp_argv *a, vb_error *err, const char *what) {
    return vb_error_set(err, engine, 1, "%s: %s: the command has too many arguments to build (%d)", engine,
                        what ? what : "command", a->argc);
}

int vb_resp_run(const char *engine, redisContext *rc, const vb_resp_argv *a, redisReply **out, vb_error *err,
                const char *what) {
    *out = NULL;
    if (!what) what = a->argc ? a->argv[0] : "command";
    if (a->overflow) return refuse_overflow(engine, a, err, what);
    redisReply *r = redisCommandArgv(rc, a->argc, (const char **)a->argv, a->len);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        int st = vb_resp_fail(engine, rc, r, err, what);
        if (r) freeReplyObject(r);
        return st;
    }
    *out = r;
    return VB_OK;
}

int vb_resp_do(const char *engine, redisContext *rc, const vb_resp_argv *a, vb_error *err, const char *what) {
    redisReply *r = NULL;
    int st = vb_resp_run(engine, rc, a, &r, err, what);
    if (r) freeReplyObject(r);
    return st;
}

/* ---- the pipeline ---------------------------------------------------------------------------------------- */

void vb_resp_pipe_init(vb_resp_pipe *p, const char *engine, redisContext *rc, size_t depth) {
    memset(p, 0, sizeof *p);
    p->engine = engine;
    p->rc = rc;
    p->depth = depth ? depth : 1;
    p->status = VB_OK;
}

/* Reads the pending replies: the first error is kept, the others still read; a lost connection ends it. */
static int pipe_drain(vb_resp_pipe *p, vb_error *err) {
    while (p->pending) {
        redisReply *r = NULL;
        if (redisGetReply(p->rc, (void **)&r) != REDIS_OK || !r) {
            p->pending = 0;
            if (p->status != VB_RETRY) p->status = vb_resp_fail(p->engine, p->rc, NULL, err, "pipelined command");
            return p->status;
        }
        p->pending--;
        if (r->type == REDIS_REPLY_INTEGER) p->integer_sum += r->integer;
        if (r->type == REDIS_REPLY_ERROR && p->status == VB_OK)
            p->status = vb_resp_fail(p->engine, p->rc, r, err, "pipelined command");
        freeReplyObject(r);
    }
    return p->status;
}

int vb_resp_pipe_add(vb_resp_pipe *p, const vb_resp_argv *a, vb_error *err) {
    if (p->status == VB_RETRY) return p->status;
    if (a->overflow) {
        if (p->status == VB_OK) p->status = refuse_overflow(p->engine, a, err, a->argc ? a->argv[0] : NULL);
        return p->status;
    }
    if (redisAppendCommandArgv(p->rc, a->argc, (const char **)a->argv, a->len) != REDIS_OK) {
        p->status = vb_resp_fail(p->engine, p->rc, NULL, err, a->argv[0]);
        return p->status;
    }
    p->pending++;
    p->sent++;
    if (p->pending >= p->depth) pipe_drain(p, err);
    return p->status;
}

int vb_resp_pipe_finish(vb_resp_pipe *p, vb_error *err) { return pipe_drain(p, err); }

/* ---- replies --------------------------------------------------------------------------------------------- */

int vb_resp_info(const char *engine, redisContext *rc, const char *section, char *buf, size_t len, vb_error *err) {
    vb_resp_argv a;
    vb_resp_argv_init(&a);
    vb_resp_arg(&a, "INFO");
    vb_resp_arg(&a, section);
    redisReply *r = NULL;
    int st = vb_resp_run(engine, rc, &a, &r, err, "INFO");
    if (st != VB_OK) return st;
    snprintf(buf, len, "%s", r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ? r->str : "");
    freeReplyObject(r);
    return VB_OK;
}

/* The value of the line "name:value" (a whole name at the start of a line), or NULL. */
static const char *info_value(const char *text, const char *name) {
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ':') return p + n + 1;
    return NULL;
}

long long vb_resp_info_field(const char *text, const char *name, int *found) {
    const char *v = info_value(text, name);
    if (found) *found = v != NULL;
    return v ? strtoll(v, NULL, 10) : 0;
}

int vb_resp_info_text(const char *text, const char *name, char *buf, size_t len) {
    const char *v = info_value(text, name);
    size_t n = v ? strcspn(v, "\r\n") : 0;
    if (len) snprintf(buf, len, "%.*s", (int)n, v ? v : "");
    return v != NULL;
}

long long vb_resp_cmdstat_field(const char *text, const char *command, const char *field) {
    size_t n = strlen(command), fn = strlen(field);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, "cmdstat_", 8) != 0 || strncasecmp(p + 8, command, n) != 0 || p[8 + n] != ':') continue;
        const char *eol = strchr(p, '\n');
        for (const char *f = p + 8 + n; f && (!eol || f < eol); f = strpbrk(f + 1, ",\n")) {
            if (eol && f >= eol) break;
            if (strncmp(f + 1, field, fn) == 0 && f[1 + fn] == '=') return strtoll(f + 2 + fn, NULL, 10);
        }
        return 0;
    }
    return 0;
}

long long vb_resp_cmdstat_calls(const char *text, const char *command) {
    return vb_resp_cmdstat_field(text, command, "calls");
}

const redisReply *vb_resp_pair_get(const redisReply *r, const char *key) {
    if (!r || r->type != REDIS_REPLY_ARRAY) return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i];
        if ((k->type == REDIS_REPLY_STRING || k->type == REDIS_REPLY_STATUS) && strcmp(k->str, key) == 0)
            return r->element[i + 1];
    }
    return NULL;
}

double vb_resp_pair_num(const redisReply *r, const char *key, double def) {
    const redisReply *v = vb_resp_pair_get(r, key);
    if (!v) return def;
    if (v->type == REDIS_REPLY_INTEGER) return (double)v->integer;
    if (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS) return strtod(v->str, NULL);
    return def;
}

const char *vb_resp_pair_str(const redisReply *r, const char *key) {
    const redisReply *v = vb_resp_pair_get(r, key);
    return v && (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS) ? v->str : "";
}
