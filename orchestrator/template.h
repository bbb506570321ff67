/* A server's data directory made by its recipe's init (orchestrator/recipe.h init:): the init commands run as
 * oneshot units in the image, and, for a recipe with init.template, once per image, recipe and version into a
 * template that each data directory then copies (issue 40: initdb took about 8 s and mariadb-install-db 6.5 s of
 * every campaign that started a server; a copy takes a fraction of a second).
 *
 * The templates live in $VBENCH_TEMPLATES, else /var/cache/vbench/templates, beside the images they come from:
 * TEMPLATES/NAME-KEY/files/ is what init.run wrote (the recipe's password_file removed), TEMPLATES/NAME-KEY/
 * template.txt says how it was made (key<TAB>value: recipe, image, key, made_at, init_s, the commands). KEY is
 * vb_recipe_template_key: a changed init command, user, image build or version makes a new template, and a
 * template is never changed after its rename into place. One orchestrator makes a template at a time
 * (NAME-KEY.lock, flock): another that needs it waits and copies it. $VBENCH_TEMPLATES=off runs init.run in every
 * data directory instead, as recipes without init.template always do. */
#ifndef VB_ORCHESTRATOR_TEMPLATE_H
#define VB_ORCHESTRATOR_TEMPLATE_H

#include <stddef.h>
#include <sys/types.h>

#include "orchestrator/recipe.h"
#include "orchestrator/units.h"
#include "util/error.h"
#include "util/kv.h"

/* Where a server's init steps run: its unit's name (a step is the oneshot unit UNIT-KINDk, e.g.
 * vbench-c-pgvector-init0), the image (NULL: host binaries), the server's user. */
typedef struct vb_init_ctx {
    vb_units *u;
    const vb_recipe *r;
    const char *unit;
    const char *root;
    uid_t uid;
    gid_t gid;
} vb_init_ctx;

/* Runs steps[0 .. n - 1] one after the other, each expanded with vars and run as a oneshot unit as the server's
 * user with binds (NULL-terminated "HOST:INSIDE" pairs, or NULL without an image). On failure err names the step
 * (KIND step N of recipe PATH) and *tail holds the unit's journal tail (the caller frees it). */
int vb_init_steps(const vb_init_ctx *c, char ***steps, size_t n, const char *kind, const char *const *binds,
                  const vb_kv *vars, size_t nv, char **tail, vb_error *err);

/* The templates' directory ($VBENCH_TEMPLATES, else /var/cache/vbench/templates) into buf; NULL when
 * $VBENCH_TEMPLATES is "off". */
const char *vb_template_dir(char *buf, size_t len);

/* What vb_template_init did, for the manifest (server.ENGINE.data_template, ...). */
typedef struct vb_template_info {
    char path[4096];     /* TEMPLATES/NAME-KEY */
    char key[17];
    int made;            /* 1: this start ran init.run into it; 0: it was there */
    double init_s;       /* seconds init.run took when made */
    double copy_s;       /* seconds the copy into the data directory took */
    double apply_s;      /* seconds init.template.apply took */
} vb_template_info;

/* datadir (made, the server's, holding the password file) filled from the recipe's template: the template found
 * or made (init.run into TEMPLATES/NAME-KEY.new-PID-NS, bound at data_mount, with a password of its own, then renamed
 * into place), copied in (cp -a --reflink=auto), then init.template.apply run there with vars (the data
 * directory's own password, ...). image_id goes into the key (vb_recipe_template_key). */
int vb_template_init(const vb_init_ctx *c, const char *templates, const char *image_id, const char *datadir,
                     const vb_kv *vars, size_t nv, vb_template_info *info, char **tail, vb_error *err);

#endif
