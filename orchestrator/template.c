/* Init steps and data templates (see orchestrator/template.h). */
#include "orchestrator/template.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fs.h"

extern char **environ;

#define TAIL_LINES 40

int vb_init_steps(const vb_init_ctx *c, char ***steps, size_t n, const char *kind, const char *const *binds,
                  const vb_kv *vars, size_t nv, char **tail, vb_error *err) {
    for (size_t i = 0; i < n; i++) {
        char **argv = vb_recipe_expand_argv(c->r, steps[i], vars, nv, err);
        if (!argv) return VB_ERROR;
        char name[256], unit_kind[32];
        snprintf(unit_kind, sizeof unit_kind, "%s", kind);
        for (char *p = unit_kind; *p; p++)
            if (*p == '.') *p = '-';
        snprintf(name, sizeof name, "%s-%s%zu", c->unit, strcmp(kind, "replica.run") == 0 ? "init" : unit_kind, i);
        vb_unit_reset_failed(c->u, name, NULL);
        vb_unit_spec spec = {.description = "vbench server init", .argv = (const char *const *)argv,
                             .type = "oneshot", .root_directory = c->root, .bind_paths = binds,
                             .drop_privileges = 1, .uid = c->uid, .gid = c->gid};
        int rc = vb_unit_start(c->u, name, &spec, err);
        vb_recipe_argv_free(argv);
        if (rc) {
            if (tail && vb_unit_journal_tail(c->u, name, TAIL_LINES, tail, NULL) != VB_OK) *tail = strdup("");
            vb_error_prefix(err, "%s step %zu of recipe %s", kind, i + 1, c->r->path);
            vb_unit_reset_failed(c->u, name, NULL);
            return VB_ERROR;
        }
    }
    return VB_OK;
}

const char *vb_template_dir(char *buf, size_t len) {
    const char *env = getenv("VBENCH_TEMPLATES");
    if (env && strcmp(env, "off") == 0) return NULL;
    snprintf(buf, len, "%s", env && *env ? env : "/var/cache/vbench/templates");
    return buf;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (flag == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;
}

static void rm_tree(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* cp -a --reflink=auto FROM/. TO (TO exists): every file with its owner, mode and times; a copy-on-write clone
 * where the file system makes one (btrfs, XFS), a copy elsewhere. cp's own words on failure. */
static int copy_tree(const char *from, const char *to, vb_error *err) {
    char src[PATH_MAX * 2];
    snprintf(src, sizeof src, "%s/.", from);
    int p[2];
    if (pipe(p) != 0) return vb_error_set(err, "template", errno, "pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    char *const argv[] = {"cp", "-a", "--reflink=auto", src, (char *)to, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/cp", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    char msg[512] = "";
    size_t got = 0;
    ssize_t r;
    while ((r = read(p[0], msg + got, sizeof msg - 1 - got)) > 0) got += (size_t)r;
    msg[got] = '\0';
    close(p[0]);
    if (rc != 0) return vb_error_set(err, "template", rc, "cannot run /bin/cp: %s", strerror(rc));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        msg[strcspn(msg, "\n")] = '\0';
        return vb_error_set(err, "template", 1, "copying the data template %s into %s failed: %s", from, to,
                            msg[0] ? msg : "cp ended without saying why");
    }
    return VB_OK;
}

/* PATH.new-* of makers that died more than a day ago. */
static void remove_stale(const char *path) {
    char dir[PATH_MAX], prefix[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = '\0';
    snprintf(prefix, sizeof prefix, "%s.new-", slash + 1);
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        char p[PATH_MAX * 2];
        struct stat st;
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) == 0 && time(NULL) - st.st_mtime > 86400) rm_tree(p);
    }
    closedir(d);
}

/* TEMPLATES/NAME-KEY.new-PID-NS/files made by init.run, the password file removed, template.txt beside it, then
 * renamed to TEMPLATES/NAME-KEY. Under the template's lock. */
static int make_template(const vb_init_ctx *c, const char *path, const char *key, const char *image_id,
                         const vb_kv *vars, size_t nv, double *init_s, char **tail, vb_error *err) {
    const vb_recipe *r = c->r;
    char stage[PATH_MAX + 64], files[PATH_MAX + 80], info[PATH_MAX + 80];
    /* a name of this maker's own: the init unit of an orchestrator that died while it made the template may still
     * be writing into that one's (systemd's unit outlives it), so it is left alone, and removed a day later */
    snprintf(stage, sizeof stage, "%s.new-%d-%llu", path, (int)getpid(), (unsigned long long)vb_now_ns());
    snprintf(files, sizeof files, "%s/files", stage);
    snprintf(info, sizeof info, "%s/template.txt", stage);
    remove_stale(path);
    vb_error mk;
    if (vb_mkdirs(files, 0755, &mk) != VB_OK)
        return vb_error_set(err, "template", mk.code, "cannot make the data template %s: %s", files, mk.message);
    if (chown(files, c->uid, c->gid) != 0 || chmod(files, 0700) != 0)
        return vb_error_set(err, "template", errno, "cannot prepare the data template %s: %s", files, strerror(errno));
    /* a password of the template's own where init reads one: each copy's is set by init.template.apply */
    static const char alphabet[] = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    unsigned char raw[24];
    char pw[sizeof raw + 1];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return vb_error_set(err, "template", errno, "getrandom: %s", strerror(errno));
    for (size_t i = 0; i < sizeof raw; i++) pw[i] = alphabet[raw[i] % (sizeof alphabet - 1)];
    pw[sizeof raw] = '\0';
    char pwpath[PATH_MAX + 300] = "";
    if (r->password_file) {
        snprintf(pwpath, sizeof pwpath, "%s/%s", files, r->password_file);
        int fd = open(pwpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dprintf(fd, "%s\n", pw) < 0 || fchown(fd, c->uid, c->gid) != 0) {
            int e = errno;
            if (fd >= 0) close(fd);
            return vb_error_set(err, "template", e, "cannot write %s: %s", pwpath, strerror(e));
        }
        close(fd);
    }
    vb_kv *v = calloc(nv ? nv : 1, sizeof *v);
    for (size_t i = 0; i < nv; i++) {
        v[i] = vars[i];
        if (strcmp(v[i].key, "password") == 0) v[i].value = pw;
        else if (strcmp(v[i].key, "datadir") == 0) v[i].value = files;
        else if (strcmp(v[i].key, "data") == 0 && !c->root) v[i].value = files;
    }
    char bind[PATH_MAX * 2];
    snprintf(bind, sizeof bind, "%s:%s", files, r->data_mount);
    const char *binds[] = {bind, NULL};
    uint64_t t0 = vb_now_ns();
    int rc = vb_init_steps(c, r->init, r->n_init, "init", c->root ? binds : NULL, v, nv, tail, err);
    free(v);
    *init_s = (double)(vb_now_ns() - t0) / 1e9;
    if (rc) return vb_error_prefix(err, "making the data template %s", path);
    if (pwpath[0]) unlink(pwpath);
    FILE *f = fopen(info, "w");
    if (!f) return vb_error_set(err, "template", errno, "cannot write %s: %s", info, strerror(errno));
    fprintf(f, "recipe\t%s\nimage\t%s\nkey\t%s\nmade_at\t%.3f\ninit_s\t%.3f\n", r->path, image_id, key,
            (double)time(NULL), *init_s);
    for (size_t i = 0; i < r->n_init; i++) {
        fprintf(f, "init.run.%zu\t", i);
        for (size_t j = 0; r->init[i][j]; j++) fprintf(f, "%s%s", j ? " " : "", r->init[i][j]);
        fputc('\n', f);
    }
    if (fclose(f) != 0) return vb_error_set(err, "template", errno, "cannot write %s: %s", info, strerror(errno));
    if (rename(stage, path) != 0)
        return vb_error_set(err, "template", errno, "cannot rename %s to %s: %s", stage, path, strerror(errno));
    return VB_OK;
}

int vb_template_init(const vb_init_ctx *c, const char *templates, const char *image_id, const char *datadir,
                     const vb_kv *vars, size_t nv, vb_template_info *info, char **tail, vb_error *err) {
    memset(info, 0, sizeof *info);
    if (vb_recipe_template_key(c->r, image_id, vars, nv, info->key, err)) return VB_ERROR;
    vb_error mk;
    if (vb_mkdirs(templates, 0755, &mk) != VB_OK)
        return vb_error_set(err, "template", mk.code, "cannot make the templates' directory %s: %s (set "
                            "VBENCH_TEMPLATES to another, or to off to run the recipe's init in every data "
                            "directory)", templates, mk.message);
    if (snprintf(info->path, sizeof info->path, "%s/%s-%s", templates, c->r->name, info->key) >= (int)sizeof info->path)
        return vb_error_set(err, "template", 1, "the templates' directory path is too long: %s", templates);
    char lock[sizeof info->path + 8], ready[sizeof info->path + 16], files[sizeof info->path + 8];
    snprintf(lock, sizeof lock, "%s.lock", info->path);
    snprintf(ready, sizeof ready, "%s/template.txt", info->path);
    snprintf(files, sizeof files, "%s/files", info->path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return vb_error_set(err, "template", errno, "cannot open %s: %s", lock, strerror(errno));
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
    struct stat st;
    int rc = VB_OK;
    if (stat(ready, &st) != 0) {
        rc = make_template(c, info->path, info->key, image_id, vars, nv, &info->init_s, tail, err);
        info->made = rc == VB_OK;
    }
    close(fd);   /* the lock: a template in place is never written again */
    if (rc) return VB_ERROR;
    uint64_t t0 = vb_now_ns();
    char creates[PATH_MAX + 300];
    snprintf(creates, sizeof creates, "%s/%s", datadir, c->r->init_creates);
    if (copy_tree(files, datadir, err)) {
        rm_tree(creates);   /* the next start copies again */
        return VB_ERROR;
    }
    info->copy_s = (double)(vb_now_ns() - t0) / 1e9;
    char bind[PATH_MAX * 2];
    snprintf(bind, sizeof bind, "%s:%s", datadir, c->r->data_mount);
    const char *binds[] = {bind, NULL};
    t0 = vb_now_ns();
    rc = vb_init_steps(c, c->r->template_apply, c->r->n_template_apply, "template.apply", c->root ? binds : NULL, vars,
                       nv, tail, err);
    info->apply_s = (double)(vb_now_ns() - t0) / 1e9;
    if (rc) {
        rm_tree(creates);   /* a copy without its own settings (the template's password) is never started */
        vb_error_prefix(err, "in the copy of the data template %s", info->path);
    }
    return rc;
}
