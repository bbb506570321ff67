/* The server settings pass (coordinator/server_pass.h). */
#include "coordinator/server_pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vb_server_pass_apply(vb_profile *p) {
    const char *pass = vb_profile_setting(p, "server_pass", NULL);
    if (!pass) return;
    for (size_t e = 0; e < p->n_engines; e++)
        for (size_t i = 0; i < p->engines[e].n_params; i++) {
            vb_kv *kv = &p->engines[e].params[i];
            if (strcmp(kv->key, "recipe") != 0 || strstr(kv->value, "server_pass=")) continue;
            size_t len = strlen(kv->value) + strlen(pass) + 16;
            char *v = malloc(len);
            if (!v) continue;
            snprintf(v, len, "%s server_pass=%s", kv->value, pass);
            free((char *)kv->value);
            kv->value = v;
        }
}

void vb_server_pass_record(const vb_profile *p, vb_store *s) {
    const char *pass = vb_profile_setting(p, "server_pass", "durable");
    vb_store_manifest_set(s, "server_pass", pass, NULL);
    char servers[512] = "", embedded[512] = "";
    size_t ns = 0, ne = 0;
    for (size_t e = 0; e < p->n_engines; e++) {
        int server = vb_profile_engine_recipe(&p->engines[e]) != NULL;
        char *buf = server ? servers : embedded;
        size_t *n = server ? &ns : &ne;
        if (*n < sizeof servers) *n += (size_t)snprintf(buf + *n, sizeof servers - *n, "%s%s", *n ? ", " : "", p->engines[e].name);
    }
    if (strcmp(pass, "durable") != 0 && ns && ne) {
        char note[1200];
        snprintf(note, sizeof note, "server_pass %s relaxes durability on the servers (%s) only; the embedded engines "
                 "(%s) write nothing durable in any pass", pass, servers, embedded);
        vb_store_manifest_set(s, "asymmetry.server_pass", note, NULL);
    }
}
