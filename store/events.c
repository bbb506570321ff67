/* Events, the manifest and the agents seen. */
#include "store/store_int.h"

#include <jansson.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *vb_event_kind_name(vb_event_kind k) {
#define VB_EVENT_KIND_WORD(name, word) word,
    static const char *const words[] = {VB_EVENT_KINDS(VB_EVENT_KIND_WORD)};
#undef VB_EVENT_KIND_WORD
    return (unsigned)k < VB_EVENT__COUNT ? words[k] : "note";
}

int vb_store_event(vb_store *s, vb_event_kind kind, const char *level, const char *item_key, const char *source,
                   const char *fmt, ...) {
    char msg[4096], now[40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO event (at, level, item_key, source, message, kind) VALUES (?,?,?,?,?,?)",
                               NULL);
    if (!st) return s->last;
    store_bind_text(st, 1, now);
    store_bind_text(st, 2, level);
    store_bind_text(st, 3, item_key);
    store_bind_text(st, 4, source);
    store_bind_text(st, 5, msg);
    store_bind_text(st, 6, vb_event_kind_name(kind));
    return store_run(s, st, NULL, "recording an event");
}

int vb_store_manifest_get(vb_store *s, const char *key, char *buf, size_t len) {
    buf[0] = '\0';
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM manifest WHERE key = ?", -1, &st, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    int found = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0);
    if (found) snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return found;
}

int vb_store_manifest_set(vb_store *s, const char *key, const char *value, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO manifest (key, value, recorded_at) VALUES (?,?,?) "
                                  "ON CONFLICT(key) DO UPDATE SET value = excluded.value, recorded_at = excluded.recorded_at", err);
    if (!st) return s->last;
    store_bind_text(st, 1, key);
    store_bind_text(st, 2, value ? value : "");
    store_bind_text(st, 3, now);
    return store_run(s, st, err, "recording the manifest");
}

int vb_store_agent_seen(vb_store *s, const Vbench__Hello *h, vb_error *err) {
    char now[40];
    vb_store_now(now, sizeof now);
    char *roles = NULL, *cpus = NULL, *versions = NULL;
    size_t lr, lc, lv;
    FILE *fr = open_memstream(&roles, &lr), *fc = open_memstream(&cpus, &lc), *fv = open_memstream(&versions, &lv);
    for (size_t i = 0; i < h->n_roles; i++) fprintf(fr, "%s%s", i ? "," : "", h->roles[i]);
    for (size_t i = 0; i < h->n_cpus; i++) fprintf(fc, "%s%d", i ? "," : "", h->cpus[i]);
    /* the versions column: a JSON object through jansson, the one JSON path (text that is not UTF-8: null) */
    json_t *vo = json_object();
    for (size_t i = 0; i < h->n_versions; i++) {
        json_t *v = json_string(h->versions[i]->value);
        json_object_set_new(vo, h->versions[i]->key, v ? v : json_null());
    }
    char *vj = json_dumps(vo, JSON_COMPACT | JSON_PRESERVE_ORDER);
    fputs(vj ? vj : "{}", fv);
    free(vj);
    json_decref(vo);
    fclose(fr);
    fclose(fc);
    fclose(fv);
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO agent (id, host, roles, cores, cpus, memory_bytes, versions, first_seen, last_seen) "
                                  "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET host = excluded.host, "
                                  "roles = excluded.roles, cores = excluded.cores, cpus = excluded.cpus, "
                                  "memory_bytes = excluded.memory_bytes, versions = excluded.versions, last_seen = excluded.last_seen", err);
    int rc = st ? VB_STORE_OK : s->last;
    if (st) {
        store_bind_text(st, 1, h->agent_id);
        store_bind_text(st, 2, h->host);
        store_bind_text(st, 3, roles);
        sqlite3_bind_int(st, 4, (int)h->cores);
        store_bind_text(st, 5, cpus);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)h->memory_bytes);
        store_bind_text(st, 7, versions);
        store_bind_text(st, 8, now);
        store_bind_text(st, 9, now);
        rc = store_run(s, st, err, "recording an agent");
    }
    free(roles);
    free(cpus);
    free(versions);
    return rc;
}
