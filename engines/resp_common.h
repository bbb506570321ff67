/* What the RESP adapters share: engines/valkey.c (Valkey + valkey-search) and engines/redis.c (Redis 8 vector
 * sets), both through hiredis (Debian 12's 0.14: RESP2, no TLS).
 *
 *   address      where the server is (a Unix socket, else host and port), the password and the reply timeout,
 *                read from the engine's profile parameters in one place
 *   dial         a new connection, authenticated; VB_RETRY while the server cannot be reached
 *   conn         the client connection both adapters' connect and disconnect make and free (vb_resp_conn)
 *   ready        a connection that a call found lost (I/O error, EOF: the server restarted) is dialled again
 *                here, by the next call on it (engine.h: the caller may also close it and connect anew)
 *   admin        the engine's administrative connection, through engines/adapter_common.h's admin (dialled on
 *                first use, serialised, run once more on a fresh connection after a loss)
 *   errors       a failed command as the engine contract wants it: the server's words on one line; VB_RETRY
 *                for a lost connection and for the replies that mean "not now" (LOADING, BUSY, TRYAGAIN,
 *                MASTERDOWN), VB_ERROR for every other error reply (OOM gets a hint about maxmemory)
 *   argv         a command's arguments built without a server: what the unit tests compare with the
 *                documented syntax (tests/unit/test_valkey.c, test_redis.c), and what is sent
 *   pipeline     commands appended and their replies read every `depth` commands, the first error kept and
 *                the rest still read, so the connection stays in step: the load path of both adapters
 *   replies      INFO's "name:value" lines, INFO commandstats' calls per command, flat [name, value, ...]
 *                arrays (FT.INFO, VINFO)
 *
 * Every function that fills err uses `engine` (the adapter's name) as its domain and first word. */
#ifndef VB_ENGINES_RESP_COMMON_H
#define VB_ENGINES_RESP_COMMON_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"
#include "engines/adapter_common.h"
#include "util/error.h"
#include "util/kv.h"

/* ---- the address --------------------------------------------------------------------------------------- */

typedef struct vb_resp_addr {
    const char *engine;                /* the adapter's name: messages and domain */
    char socket[256], host[256], password[128];
    long port, timeout_s;
} vb_resp_addr;

/* The parameter names vb_resp_addr_read reads: an adapter's param_names start with these. */
#define VB_RESP_ADDR_PARAMS "socket", "host", "port", "password", "timeout_s"

/* Reads socket, host (default 127.0.0.1), port (6379), password and timeout_s (600) from the parameters;
 * VB_ERROR (domain "config") naming the parameter when a number is out of range. timeout_s is every
 * connection's redisSetTimeout (a read or write that waits longer fails: a lost connection); the phase's bound
 * (cfg->io_timeout_s, from limits.phase_timeout_s) caps it, and the connect's 10 s too. */
int vb_resp_addr_read(vb_resp_addr *a, const char *engine, const vb_engine_config *cfg, vb_error *err);

/* A new connection in *out (redisFree to release): the socket when one is set, else TCP; AUTH when a password is
 * given. VB_RETRY when the server cannot be reached, VB_ERROR when it refuses us (a wrong password). */
int vb_resp_dial(const vb_resp_addr *a, redisContext **out, vb_error *err);

/* *rc is usable afterwards: kept when it is up, else freed and dialled again (NULL is dialled too). */
int vb_resp_ready(const vb_resp_addr *a, redisContext **rc, vb_error *err);

/* ---- a client connection ------------------------------------------------------------------------------- */

/* What one client thread of a RESP adapter owns (engine.h: one connection per client thread): its socket and its
 * ef_search, sent with every query (EF, EF_RUNTIME), so a setting of this connection by construction. */
typedef struct vb_resp_conn {
    void *state;                       /* the adapter's engine state */
    const vb_resp_addr *addr;          /* the state's address */
    redisContext *rc;                  /* dialled again by vb_resp_ready after a loss */
    int ef_search;                     /* 0 = never set: the server's default */
} vb_resp_conn;

/* engine.h connect for an adapter whose state's FIRST member is its vb_resp_addr: a new vb_resp_conn, dialled;
 * VB_RETRY while the server cannot be reached. */
int vb_resp_connect(void *state, void **conn, vb_error *err);
/* engine.h disconnect: hangs up and frees a vb_resp_conn. */
void vb_resp_disconnect(void *conn);

/* The administrative connection's ops for vb_admin_init with a vb_resp_addr * as the owner. */
extern const vb_admin_ops vb_resp_admin_ops;

/* ---- errors ---------------------------------------------------------------------------------------------- */

/* 1 for an error reply that means "not now": LOADING, BUSY, TRYAGAIN, MASTERDOWN. */
int vb_resp_transient(const char *text);

/* Fills err for a failed command `what`: the connection's own error (VB_RETRY: lost), the server's error reply
 * (VB_RETRY or VB_ERROR by vb_resp_transient), or an unexpected reply (r not an error: VB_ERROR). r may be NULL. */
int vb_resp_fail(const char *engine, const redisContext *rc, const redisReply *r, vb_error *err, const char *what);

/* ---- arguments ------------------------------------------------------------------------------------------- */

#define VB_RESP_ARGV_MAX 48

/* A command's arguments. Strings added with vb_resp_arg and vb_resp_arg_bin are borrowed (they must outlive the
 * command's use); vb_resp_argf copies its text into the struct. Too many arguments, or too much copied text,
 * set overflow (the command is then refused by vb_resp_run, vb_resp_do and vb_resp_pipe_add, never sent cut
 * short). */
typedef struct vb_resp_argv {
    int argc, overflow;
    const char *argv[VB_RESP_ARGV_MAX];
    size_t len[VB_RESP_ARGV_MAX];
    int binary[VB_RESP_ARGV_MAX];      /* added with vb_resp_arg_bin: rendered as <N bytes> by vb_resp_argv_text */
    char store[768];
    size_t used;
} vb_resp_argv;

void vb_resp_argv_init(vb_resp_argv *a);
void vb_resp_arg(vb_resp_argv *a, const char *s);
void vb_resp_arg_bin(vb_resp_argv *a, const void *data, size_t len);
void vb_resp_argf(vb_resp_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The command as one line for tests and messages: arguments separated by one space, a binary one as
 * "<N bytes>", an argument that is empty or holds a space in single quotes. Truncated to len. */
const char *vb_resp_argv_text(const vb_resp_argv *a, char *buf, size_t len);

/* ---- commands -------------------------------------------------------------------------------------------- */

/* Sends a and reads its reply into *out (freeReplyObject by the caller) unless it is an error; what names the
 * command in messages (NULL: its first argument). */
int vb_resp_run(const char *engine, redisContext *rc, const vb_resp_argv *a, redisReply **out, vb_error *err,
                const char *what);
/* The same, the reply not wanted. */
int vb_resp_do(const char *engine, redisContext *rc, const vb_resp_argv *a, vb_error *err, const char *what);

/* ---- the pipeline ---------------------------------------------------------------------------------------- */

typedef struct vb_resp_pipe {
    const char *engine;
    redisContext *rc;
    size_t depth;                      /* replies are read after this many commands */
    size_t pending;                    /* sent, reply not read yet */
    size_t sent;                       /* every command appended */
    long long integer_sum;             /* the sum of the integer replies read (VADD: rows added; VREM: rows removed) */
    int status;                        /* the first failure; VB_OK so far */
} vb_resp_pipe;

void vb_resp_pipe_init(vb_resp_pipe *p, const char *engine, redisContext *rc, size_t depth);
/* Appends a command; reads the pending replies once depth are pending. Returns the pipe's status so far:
 * after VB_RETRY (the connection is lost) stop appending. */
int vb_resp_pipe_add(vb_resp_pipe *p, const vb_resp_argv *a, vb_error *err);
/* Reads every pending reply; the first failure of the whole pipe (err has its message), else VB_OK. */
int vb_resp_pipe_finish(vb_resp_pipe *p, vb_error *err);

/* ---- replies --------------------------------------------------------------------------------------------- */

/* INFO SECTION's text into buf (truncated to len, NUL-terminated). */
int vb_resp_info(const char *engine, redisContext *rc, const char *section, char *buf, size_t len, vb_error *err);
/* A field of INFO's text ("used_memory"), matched as a whole name at the start of a line; *found (may be NULL)
 * 0 and 0 returned when there is none. */
long long vb_resp_info_field(const char *text, const char *name, int *found);
/* The same for a text value ("redis_version"), into buf; 0 when absent (buf ""), 1 when found. */
int vb_resp_info_text(const char *text, const char *name, char *buf, size_t len);
/* calls= of the command's line in INFO commandstats ("cmdstat_vsim:calls=12,usec=..."), the name matched
 * without regard to case (Redis writes module-style commands in upper case: cmdstat_VSIM); 0 when absent. */
long long vb_resp_cmdstat_calls(const char *text, const char *command);
/* Any numeric field of the command's line ("usec", "failed_calls"), matched as a whole name after ':' or ','; 0 when
 * the line or the field is absent. vb_resp_cmdstat_calls is this with "calls". */
long long vb_resp_cmdstat_field(const char *text, const char *command, const char *field);

/* The value after the member name key in a flat [name, value, ...] array (FT.INFO, VINFO), or NULL. */
const redisReply *vb_resp_pair_get(const redisReply *r, const char *key);
/* A number from an integer, double or string value ("0", "1.000000"); def when absent. */
double vb_resp_pair_num(const redisReply *r, const char *key, double def);
/* A string value, "" when absent or not a string. */
const char *vb_resp_pair_str(const redisReply *r, const char *key);

#endif
