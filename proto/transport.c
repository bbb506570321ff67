/* Transport security, the parts both sides share: the endpoint rules, key files, and the agent's set-up.
 * The coordinator's ZAP handler is in transport_zap.c, the handshake monitor in transport_monitor.c. */
#include "proto/transport.h"

#include "proto/wire.h"
#include "util/fs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DOMAIN "transport"
#define ZERO_KEY "0000000000000000000000000000000000000000"   /* Z85 of 32 zero bytes: zcert's "no key" */
#define MAX_CERT_BYTES 65536                                   /* a certificate is about 400 bytes */

/* ---- endpoint rules ----------------------------------------------------------------------------------------- */

int vb_transport_is_loopback(const char *endpoint) {
    if (!endpoint || strncmp(endpoint, "tcp://", 6) != 0) return 0;
    const char *h = endpoint + 6;
    const char *semi = strrchr(h, ';');      /* connect syntax "tcp://SOURCE;HOST:PORT": the peer is after ';' */
    if (semi) h = semi + 1;
    char host[256];
    size_t n;
    if (*h == '[') {
        const char *end = strchr(h, ']');
        if (!end) return 0;
        h++;
        n = (size_t)(end - h);
    } else {
        const char *colon = strrchr(h, ':');
        if (!colon) return 0;
        n = (size_t)(colon - h);
    }
    if (n == 0 || n >= sizeof host) return 0;
    memcpy(host, h, n);
    host[n] = '\0';
    if (strcmp(host, "localhost") == 0 || strcmp(host, "lo") == 0) return 1;
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    struct in6_addr a6;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return 0;
}

int vb_transport_check_endpoint(const char *endpoint, int curve, int insecure, int server, vb_error *err) {
    if (!endpoint || !*endpoint) return vb_error_set(err, DOMAIN, 1, "no endpoint given");
    if (strncmp(endpoint, "ipc://", 6) == 0 || strncmp(endpoint, "inproc://", 9) == 0) return VB_OK;
    if (strncmp(endpoint, "tcp://", 6) != 0)
        return vb_error_set(err, DOMAIN, 2, "%s: unsupported transport (vbench speaks tcp://, ipc:// and inproc://)",
                            endpoint);
    if (curve) return VB_OK;
    int loopback = vb_transport_is_loopback(endpoint);
    if (insecure && loopback) return VB_OK;
    if (insecure)
        return vb_error_set(err, DOMAIN, 3,
                            "%s: `insecure: true` is honoured on a loopback address only (127.0.0.0/8, ::1, "
                            "localhost); this one is not: use CURVE keys (`vbench keys NAME`, see `vbench keys "
                            "--help`)",
                            endpoint);
    if (server)
        return vb_error_set(err, DOMAIN, 4,
                            "%s: plain TCP would let anyone who reaches this port drive the coordinator. Make key "
                            "pairs with `vbench keys coordinator` and `vbench keys agent-NAME` (one per agent), put "
                            "the agents' .pub files into one directory and run with --cert coordinator.key --allow "
                            "DIR; or, on a loopback address only, set `transport: {insecure: true}` in the profile",
                            endpoint);
    return vb_error_set(err, DOMAIN, 4,
                        "%s: plain TCP is refused. Make a key pair with `vbench keys agent-NAME`, put "
                        "agent-NAME.pub into the coordinator's --allow directory and start the agent with --cert "
                        "agent-NAME.key --server-key coordinator.pub; or, against a coordinator on a loopback "
                        "address that runs with `insecure: true`, pass --insecure",
                        endpoint);
}

/* ---- limits ----------------------------------------------------------------------------------------------- */

void vb_transport_socket_limits(zsock_t *sock, int server) {
    zsock_set_maxmsgsize(sock, (int)VB_WIRE_FRAME_MAX);
    if (server) {
        zsock_set_heartbeat_ivl(sock, VB_TRANSPORT_HEARTBEAT_IVL_MS);
        zsock_set_heartbeat_timeout(sock, VB_TRANSPORT_HEARTBEAT_TIMEOUT_MS);
    }
}

/* ---- key files ------------------------------------------------------------------------------------------------ */

static int name_ok(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-') return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/* mkdir -p, new directories mode 0700 (they hold secret keys). */
static int make_dir(const char *dir, vb_error *err) {
    vb_error mk;
    if (vb_mkdirs(dir, 0700, &mk) != VB_OK) return vb_error_set(err, DOMAIN, mk.code, "%s", mk.message);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return vb_error_set(err, DOMAIN, ENOTDIR, "%s is not a directory", dir);
    return VB_OK;
}

/* Writes one certificate file through a temporary file in the same directory, so a reader never sees half a
 * key and a secret is never readable by others, not even for a moment: the temporary file is made 0600 by
 * mkstemp, written under umask 077, and moved into place with link() (fails if the name exists: no overwrite)
 * or, when forced, rename(). */
static int write_cert(zcert_t *cert, const char *path, int secret, int force, vb_error *err) {
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof tmp)
        return vb_error_set(err, DOMAIN, ENAMETOOLONG, "%s: path too long", path);
    int fd = mkstemp(tmp);
    if (fd < 0) return vb_error_set(err, DOMAIN, errno, "cannot write %s: %s", path, strerror(errno));
    close(fd);
    mode_t old = umask(077);
    int rc = secret ? zcert_save_secret(cert, tmp) : zcert_save_public(cert, tmp);
    umask(old);
    if (rc != 0 || chmod(tmp, secret ? 0600 : 0644) != 0) {
        int e = errno;
        unlink(tmp);
        return vb_error_set(err, DOMAIN, e, "cannot write %s: %s", path, strerror(e));
    }
    if (force) {
        rc = rename(tmp, path);
    } else {
        rc = link(tmp, path);
        if (rc != 0 && errno != EEXIST) {   /* a file system without hard links: check, then rename */
            rc = access(path, F_OK) == 0 ? (errno = EEXIST, -1) : rename(tmp, path);
        }
    }
    int e = errno;
    unlink(tmp);
    if (rc != 0) {
        if (e == EEXIST)
            return vb_error_set(err, DOMAIN, EEXIST, "%s already exists: refusing to replace a key (use --force)", path);
        return vb_error_set(err, DOMAIN, e, "cannot write %s: %s", path, strerror(e));
    }
    return VB_OK;
}

int vb_transport_keys_make(const char *dir, const char *name, int force, char public_key[VB_TRANSPORT_KEY_LEN + 1],
                           vb_error *err) {
    if (!name_ok(name))
        return vb_error_set(err, DOMAIN, EINVAL,
                            "bad key name \"%s\": letters, digits, '.', '_', '-', not starting with '.' or '-', at "
                            "most 64 characters",
                            name ? name : "");
    if (!dir || !*dir) dir = ".";
    char key_path[PATH_MAX], pub_path[PATH_MAX];
    if (snprintf(key_path, sizeof key_path, "%s/%s.key", dir, name) >= (int)sizeof key_path ||
        snprintf(pub_path, sizeof pub_path, "%s/%s.pub", dir, name) >= (int)sizeof pub_path)
        return vb_error_set(err, DOMAIN, ENAMETOOLONG, "%s: path too long", dir);
    if (!force) {
        const char *exists = access(key_path, F_OK) == 0 ? key_path : access(pub_path, F_OK) == 0 ? pub_path : NULL;
        if (exists)
            return vb_error_set(err, DOMAIN, EEXIST,
                                "%s already exists: refusing to replace a key that a coordinator or agent may "
                                "depend on (use --force to make a new pair)",
                                exists);
    }
    if (make_dir(dir, err) != VB_OK) return VB_ERROR;
    zcert_t *cert = zcert_new();
    if (!cert) return vb_error_set(err, DOMAIN, ENOMEM, "cannot make a key pair (libzmq without CURVE?)");
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    zcert_set_meta(cert, "name", "%s", name);
    zcert_set_meta(cert, "host", "%s", host);
    zcert_set_meta(cert, "created-by", "vbench keys");
    int rc = write_cert(cert, key_path, 1, force, err);
    if (rc == VB_OK) {
        rc = write_cert(cert, pub_path, 0, force, err);
        if (rc != VB_OK && !force) unlink(key_path);   /* never leave half a pair that we made */
    }
    if (rc == VB_OK && public_key) snprintf(public_key, VB_TRANSPORT_KEY_LEN + 1, "%s", zcert_public_txt(cert));
    zcert_destroy(&cert);
    return rc;
}

/* Parses a zcert file. Returns the config (caller destroys) or NULL with err naming the file. The file is read
 * here and parsed from memory: czmq's zconfig_load leaks its file handle when the syntax is bad. */
static zconfig_t *load_config(const char *path, struct stat *st, vb_error *err) {
    if (!path || !*path) {
        vb_error_set(err, DOMAIN, EINVAL, "no certificate file given");
        return NULL;
    }
    FILE *f = fopen(path, "r");
    if (!f || fstat(fileno(f), st) != 0) {
        vb_error_set(err, DOMAIN, errno, "cannot read certificate %s: %s%s", path, strerror(errno),
                     errno == ENOENT ? " (make a key pair with `vbench keys NAME`)" : "");
        if (f) fclose(f);
        return NULL;
    }
    char text[MAX_CERT_BYTES + 1];
    size_t n = S_ISREG(st->st_mode) ? fread(text, 1, sizeof text, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!S_ISREG(st->st_mode) || bad || n > MAX_CERT_BYTES) {
        vb_error_set(err, DOMAIN, EINVAL, "%s is not a certificate (%s)", path,
                     !S_ISREG(st->st_mode) ? "not a regular file" : bad ? "read error" : "too large");
        return NULL;
    }
    text[n] = '\0';
    zconfig_t *root = zconfig_str_load(text);
    if (!root) vb_error_set(err, DOMAIN, EINVAL, "%s is not a certificate in czmq's zcert format", path);
    return root;
}

/* Reads curve/WHICH-key: 1 present and valid (Z85 copied to txt, 32 bytes to bin), 0 absent or all zero,
 * -1 malformed (err set). */
static int config_key(zconfig_t *root, const char *which, const char *path, char txt[VB_TRANSPORT_KEY_LEN + 1],
                      uint8_t bin[32], vb_error *err) {
    char item[32];
    snprintf(item, sizeof item, "/curve/%s-key", which);
    const char *v = zconfig_get(root, item, NULL);
    if (!v || !*v || strcmp(v, ZERO_KEY) == 0) return 0;
    if (strlen(v) != VB_TRANSPORT_KEY_LEN || !zmq_z85_decode(bin, v)) {
        vb_error_set(err, DOMAIN, EINVAL, "%s: curve/%s-key is not a 40-character Z85 key", path, which);
        return -1;
    }
    snprintf(txt, VB_TRANSPORT_KEY_LEN + 1, "%s", v);
    return 1;
}

zcert_t *vb_transport_cert_load(const char *path, vb_error *err) {
    struct stat st;
    zconfig_t *root = load_config(path, &st, err);
    if (!root) return NULL;
    char pub_txt[VB_TRANSPORT_KEY_LEN + 1], sec_txt[VB_TRANSPORT_KEY_LEN + 1], derived[VB_TRANSPORT_KEY_LEN + 1];
    uint8_t pub[32], sec[32];
    zcert_t *cert = NULL;
    int hp = config_key(root, "public", path, pub_txt, pub, err);
    int hs = hp < 0 ? -1 : config_key(root, "secret", path, sec_txt, sec, err);
    if (hp < 0 || hs < 0) {
        /* err set */
    } else if (hp == 0) {
        vb_error_set(err, DOMAIN, EINVAL, "%s has no curve/public-key: not a CURVE certificate", path);
    } else if (hs == 0) {
        vb_error_set(err, DOMAIN, EINVAL,
                     "%s holds no secret key: it is a public certificate; pass the matching .key file", path);
    } else if (st.st_mode & 077) {
        vb_error_set(err, DOMAIN, EPERM,
                     "%s holds a secret key but other users may read it (mode %04o): chmod 600 %s", path,
                     (unsigned)(st.st_mode & 07777), path);
    } else if (zmq_curve_public(derived, sec_txt) != 0 || strcmp(derived, pub_txt) != 0) {
        vb_error_set(err, DOMAIN, EINVAL, "%s: its public key does not belong to its secret key", path);
    } else {
        cert = zcert_new_from(pub, sec);
        const char *name = zconfig_get(root, "/metadata/name", NULL);
        if (cert && name && *name) zcert_set_meta(cert, "name", "%s", name);
    }
    zconfig_destroy(&root);
    return cert;
}

int vb_transport_public_load(const char *path, char key[VB_TRANSPORT_KEY_LEN + 1], char name[128], vb_error *err) {
    struct stat st;
    zconfig_t *root = load_config(path, &st, err);
    if (!root) return VB_ERROR;
    char sec_txt[VB_TRANSPORT_KEY_LEN + 1];
    uint8_t pub[32], sec[32];
    int rc = VB_ERROR;
    int hp = config_key(root, "public", path, key, pub, err);
    int hs = hp < 0 ? -1 : config_key(root, "secret", path, sec_txt, sec, err);
    if (hp < 0 || hs < 0) {
        /* err set */
    } else if (hp == 0) {
        vb_error_set(err, DOMAIN, EINVAL, "%s has no curve/public-key: not a CURVE certificate", path);
    } else if (hs > 0) {
        vb_error_set(err, DOMAIN, EINVAL,
                     "%s holds a secret key: give the other side the .pub file; a .key must never leave its host",
                     path);
    } else {
        rc = VB_OK;
        if (name) {
            const char *meta = zconfig_get(root, "/metadata/name", NULL);
            if (meta && *meta) {
                snprintf(name, 128, "%s", meta);
            } else {
                const char *base = strrchr(path, '/');
                snprintf(name, 128, "%s", base ? base + 1 : path);
                size_t n = strlen(name);
                if (n > 4 && strcmp(name + n - 4, ".pub") == 0) name[n - 4] = '\0';
            }
        }
    }
    zconfig_destroy(&root);
    return rc;
}

/* ---- agent side --------------------------------------------------------------------------------------------- */

int vb_transport_client_setup(zsock_t *dealer, const vb_transport_opts *o, vb_transport_monitor **mon,
                              vb_error *err) {
    if (mon) *mon = NULL;
    if (o->cert && !o->server_key)
        return vb_error_set(err, DOMAIN, EINVAL,
                            "--cert needs --server-key FILE.pub: the coordinator's public key, which pins the "
                            "coordinator this agent talks to");
    if (!o->cert && o->server_key)
        return vb_error_set(err, DOMAIN, EINVAL,
                            "--server-key needs --cert FILE.key: this agent's own key pair (make one with `vbench "
                            "keys agent-NAME`)");
    int curve = o->cert != NULL;
    if (vb_transport_check_endpoint(o->endpoint, curve, o->insecure, 0, err) != VB_OK) return VB_ERROR;
    vb_transport_socket_limits(dealer, 0);
    if (curve) {
        zcert_t *cert = vb_transport_cert_load(o->cert, err);
        if (!cert) return VB_ERROR;
        char server_key[VB_TRANSPORT_KEY_LEN + 1];
        if (vb_transport_public_load(o->server_key, server_key, NULL, err) != VB_OK) {
            zcert_destroy(&cert);
            return VB_ERROR;
        }
        zcert_apply(cert, dealer);
        zsock_set_curve_serverkey(dealer, server_key);
        zcert_destroy(&cert);
    }
    vb_transport_monitor *m = NULL;
    if (mon && !(m = vb_transport_monitor_new(dealer, o, err))) return VB_ERROR;
    if (zsock_connect(dealer, "%s", o->endpoint) != 0) {
        int e = zmq_errno();
        vb_transport_monitor_destroy(&m);
        return vb_error_set(err, DOMAIN, e, "cannot connect to %s: %s", o->endpoint, zmq_strerror(e));
    }
    if (mon) *mon = m;
    return VB_OK;
}

/* ---- local agent of a CURVE coordinator -------------------------------------------------------------------- */

int vb_transport_zap_local_agent(vb_transport_zap *zap, const char *dir, const char *name, char *cert_out,
                                 size_t cert_len, char *server_key_out, size_t server_key_len, vb_error *err) {
    if (!zap) return vb_error_set(err, DOMAIN, EINVAL, "the local agent needs keys only when the coordinator uses CURVE");
    if (name && strcmp(name, "coordinator") == 0)
        return vb_error_set(err, DOMAIN, EINVAL, "the local agent's key cannot be called \"coordinator\"");
    char pub[VB_TRANSPORT_KEY_LEN + 1];
    if (vb_transport_keys_make(dir, name, 1, pub, err) != VB_OK) return VB_ERROR;
    snprintf(cert_out, cert_len, "%s/%s.key", dir, name);
    snprintf(server_key_out, server_key_len, "%s/coordinator.pub", dir);
    uint8_t server_pub[32], none[32] = {0};
    zmq_z85_decode(server_pub, vb_transport_zap_server_key(zap));
    zcert_t *sc = zcert_new_from(server_pub, none);
    zcert_set_meta(sc, "name", "coordinator");
    int rc = write_cert(sc, server_key_out, 0, 1, err);
    zcert_destroy(&sc);
    if (rc != VB_OK) return VB_ERROR;
    return vb_transport_zap_allow(zap, pub, name, err);
}
