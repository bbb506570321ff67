/* Profile engine entries checked against the engine registry.
 *
 * Separate from config/profile.c so that reading and planning a profile never links the engines (the unit
 * tests of the config module, tools that only print a plan); the coordinator calls this right after loading,
 * before any work is assigned, so a misspelt engine parameter fails in the first second with its line. */
#include <stdio.h>
#include <string.h>

#include "config/profile.h"
#include "engines/engine.h"

/* "a, b, c" from the first n names (or up to a NULL entry). */
static const char *join(const char *const *names, size_t n, char *buf, size_t len) {
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && names && names[i] && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
    return buf;
}

int vb_profile_check_engines(const vb_profile *p, vb_error *err) {
    char known[512];
    for (size_t i = 0; i < p->n_engines; i++) {
        const vb_profile_engine *e = &p->engines[i];
        size_t index = i;
        int line = vb_profile_engine_line(p, e->name, "name", &index);
        const vb_engine_ops *ops = vb_engine_find(e->name);
        if (!ops) {
            const char *names[64];
            size_t n = vb_engine_list(names, 64);
            return vb_error_set(err, "profile", 1, "%s:%d: key 'engines[%zu].name': unknown engine '%s' (known: %s)",
                                p->source, line ? line : e->line, index, e->name,
                                join(names, n < 64 ? n : 64, known, sizeof known));
        }
        for (size_t j = 0; j < e->n_params; j++) {
            const char *key = e->params[j].key;
            int accepted = vb_profile_engine_param_is_general(key);
            for (const char *const *a = ops->param_names; a && *a && !accepted; a++) accepted = strcmp(*a, key) == 0;
            if (accepted) continue;
            int pline = vb_profile_engine_line(p, e->name, key, NULL);
            if (!ops->param_names || !ops->param_names[0])
                return vb_error_set(err, "profile", 1,
                                    "%s:%d: unknown key 'engines[%zu].%s': engine '%s' takes no parameters",
                                    p->source, pline ? pline : e->line, index, key, e->name);
            return vb_error_set(err, "profile", 1, "%s:%d: unknown key 'engines[%zu].%s': engine '%s' takes only: %s",
                                p->source, pline ? pline : e->line, index, key, e->name,
                                join(ops->param_names, 64, known, sizeof known));
        }
    }
    return VB_OK;
}
