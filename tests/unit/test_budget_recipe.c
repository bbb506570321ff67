/* Self-test of the server budget (config/budget.c) and the engine recipes (orchestrator/recipe.c): layouts
 * resolved against a host, overrides and their errors, the profile's resources section checked with lines,
 * recipe loading with file:line errors, budget-derived settings (the reference run's numbers come out of the
 * reference layout), templates, and the repository's own recipes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/budget.h"
#include "config/profile.h"
#include "orchestrator/recipe.h"
#include "tests/tap.h"

#define GB 1000000000ull
#define GIB 1073741824ull

static vb_profile *profile(const char *resources, vb_error *err) {
    char text[2048];
    snprintf(text, sizeof text,
             "name: t\ndatasets:\n  - {name: d, source: synthetic, rows: 100}\nengines:\n  - name: exact\n"
             "  - {name: pgvector, recipe: pgvector, optional: true}\nphases:\n  build:\n%s", resources);
    vb_profile *p = NULL;
    vb_profile_parse(text, strlen(text), "r.yml", &p, err);
    return p;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

typedef struct collector {
    vb_kv kv[16];
    char vals[16][96];
    size_t n;
} collector;

static void collect(void *c, const char *k, const char *val) {
    collector *x = c;
    snprintf(x->vals[x->n], sizeof x->vals[x->n], "%s", val);
    x->kv[x->n] = (vb_kv){k, x->vals[x->n]};
    x->n++;
}

static const char *setting(vb_kv *kv, size_t n, const char *key) { return vb_kv_get(kv, n, key, "(none)"); }

int main(void) {
    vb_error err = {0};
    vb_budget b;

    /* ---- sizes */
    uint64_t v = 0;
    ok(vb_size_parse("120.8GB", "x", &v, &err) == VB_OK && v == 120800000000ull, "120.8GB is decimal");
    ok(vb_size_parse("512MiB", "x", &v, &err) == VB_OK && v == 512ull << 20, "512MiB is binary");
    ok(vb_size_parse("8G", "x", &v, &err) == VB_OK && v == 8ull << 30, "8G is binary, as systemd reads it");
    ok(vb_size_parse("12x", "resources.shm", &v, &err) == VB_ERROR, "12x is refused");
    contains(err.message, "resources.shm: '12x' is not a size", "the error names the key");
    ok(vb_size_parse("-1GB", "x", &v, &err) == VB_ERROR, "a negative size is refused");

    /* ---- layouts */
    vb_profile *p = profile("resources:\n  layout: auto\n", &err);
    ok(p != NULL, "a profile with resources loads");
    ok(vb_budget_resolve(p, 80, 256 * GB, &b, &err) == VB_OK, "auto on an 80-core, 256 GB host");
    is_str(b.layout, "reference", "is the reference layout");
    is_str(b.server_cpus, "0-63", "server CPUs 0-63");
    is_str(b.client_cpus, "64-79", "client CPUs 64-79");
    is_int(b.server_memory, 120800000000ull, "server memory 120.8 GB");
    is_int(b.shm, 13 * GB, "/dev/shm 13 GB");
    is_int(b.client_memory, 8 * GB, "client memory 8 GB");
    ok(vb_budget_resolve(p, 2, 24 * GIB, &b, &err) == VB_OK, "auto on a 2-core, 24 GiB host");
    is_str(b.layout, "small", "is the small layout");
    is_str(b.server_cpus, "0", "server CPU 0");
    is_str(b.client_cpus, "1", "client CPU 1");
    is_int(b.server_memory, 12 * GIB, "half the memory for the server");
    ok(b.shm > b.server_memory / 10 && b.shm < b.server_memory / 9, "/dev/shm the reference's share (13 / 120.8)");
    ok(vb_budget_resolve(p, 1, 4 * GIB, &b, &err) == VB_OK && strcmp(b.server_cpus, "0") == 0 &&
           strcmp(b.client_cpus, "0") == 0, "one core: server and client share it");
    ok(vb_budget_resolve(p, 16, 64 * GIB, &b, &err) == VB_OK && strcmp(b.server_cpus, "0-12") == 0 &&
           strcmp(b.client_cpus, "13-15") == 0, "16 cores: the last fifth for the client");
    vb_profile_destroy(&p);

    /* ---- a node's share (topology, issue 39) */
    {
        vb_budget whole = {.server_cpus = "0-6", .n_server_cpus = 7, .server_memory = 12 * GIB, .shm = 3 * GIB}, n;
        vb_budget_node_share(&whole, 0, 3, &n);
        ok(strcmp(n.server_cpus, "0-2") == 0 && n.n_server_cpus == 3, "share: node 0 of 3 on 7 CPUs: 0-2 (%s)",
           n.server_cpus);
        vb_budget_node_share(&whole, 2, 3, &n);
        ok(strcmp(n.server_cpus, "5-6") == 0 && n.n_server_cpus == 2, "share: node 2 of 3: 5-6 (%s)", n.server_cpus);
        is_int(n.server_memory, 4 * GIB, "share: a third of the memory");
        is_int(n.shm, 1 * GIB, "share: a third of /dev/shm");
        snprintf(whole.server_cpus, sizeof whole.server_cpus, "0-1");
        whole.n_server_cpus = 2;
        vb_budget_node_share(&whole, 2, 3, &n);
        ok(strcmp(n.server_cpus, "0") == 0 && n.n_server_cpus == 1, "share: fewer CPUs than nodes, round robin (%s)",
           n.server_cpus);
        vb_budget_node_share(&whole, 0, 1, &n);
        ok(strcmp(n.server_cpus, "0-1") == 0 && n.server_memory == 12 * GIB, "share: one node keeps the whole budget");
    }

    p = profile("resources:\n  layout: reference\n", &err);
    ok(vb_budget_resolve(p, 2, 24 * GIB, &b, &err) == VB_ERROR, "the reference layout on a 2-core host fails");
    contains(err.message, "names CPU 63, but this host has 2", "saying which CPU is missing");
    contains(err.message, "layout: small", "and what to do");
    vb_profile_destroy(&p);

    p = profile("resources:\n  server_cpus: 0-1\n  server_memory: 2GiB\n  shm: 256MiB\n  client_cpus: \"3\"\n", &err);
    ok(p && vb_budget_resolve(p, 4, 16 * GIB, &b, &err) == VB_OK, "explicit values override the layout");
    is_str(b.server_cpus, "0-1", "server CPUs as given");
    is_int(b.server_memory, 2 * GIB, "server memory as given");
    is_int(b.shm, 256ull << 20, "shm as given");
    is_str(b.client_cpus, "3", "client CPUs as given");
    vb_profile_destroy(&p);

    p = profile("resources:\n  server_memory: 30GiB\n", &err);
    ok(p && vb_budget_resolve(p, 4, 16 * GIB, &b, &err) == VB_ERROR, "more memory than the host has fails");
    contains(err.message, "exceed this host's", "saying so");
    vb_profile_destroy(&p);

    /* the loader checks the section with lines */
    p = profile("resources:\n  shm: lots\n", &err);
    ok(p == NULL, "a bad size is refused at load");
    contains(err.message, "r.yml:10:", "with its line");
    p = profile("resources:\n  server_cpu: 0\n", &err);
    ok(p == NULL, "an unknown key is refused");
    contains(err.message, "unknown key 'resources.server_cpu'", "named");
    p = profile("resources:\n  client_cpus: a-b\n", &err);
    ok(p == NULL && strstr(err.message, "not a CPU list"), "a bad CPU list is refused");
    p = profile("resources:\n  layout: huge\n", &err);
    ok(p == NULL && strstr(err.message, "'huge' is not one of"), "an unknown layout is refused");

    /* budget entries travel as key/values and come back */
    p = profile("", &err);
    vb_budget_resolve(p, 80, 256 * GB, &b, &err);
    collector cl = {.n = 0};
    vb_budget_each(&b, collect, &cl);
    vb_budget b2;
    ok(vb_budget_from_kv(cl.kv, cl.n, &b2, &err) == VB_OK, "the budget crosses the wire as key/values");
    ok(b2.server_memory == b.server_memory && b2.shm == b.shm && b2.n_server_cpus == 64 &&
           strcmp(b2.server_cpus, "0-63") == 0, "and comes back the same");
    ok(vb_budget_from_kv(cl.kv + 2, cl.n - 2, &b2, &err) == VB_ERROR, "a budget without server_cpus is refused");

    /* default engine selection leaves the optional ones out */
    ok(vb_profile_select_engines(p, NULL, &err) == VB_OK && p->n_engines == 1 && strcmp(p->engines[0].name, "exact") == 0,
       "without --engines the optional engines are left out");
    vb_profile_destroy(&p);
    p = profile("", &err);
    ok(vb_profile_select_engines(p, "pgvector", &err) == VB_OK && p->n_engines == 1, "--engines names an optional one");
    is_str(vb_profile_engine_recipe(&p->engines[0]), "pgvector", "its recipe");
    ok(vb_profile_check_engines(p, &err) == VB_OK, "recipe and optional are accepted beside the adapter's keys");
    vb_profile_destroy(&p);

    /* a recipe reference may carry recipe parameters (issue 17); anything else stays refused */
    const char *refs[] = {"pgvector pgvector_version=0.8.7", "pgvector pgvector_version", "pgvector a=b=c",
                          "pgvector ../x=1", "../pgvector"};
    for (int i = 0; i < 5; i++) {
        char text[512];
        snprintf(text, sizeof text, "name: t\ndatasets:\n  - {name: d, source: synthetic, rows: 100}\nengines:\n"
                                    "  - {name: pgvector, recipe: %s}\nphases:\n  build:\n", refs[i]);
        vb_profile *pr = NULL;
        int rc = vb_profile_parse(text, strlen(text), "r.yml", &pr, &err);
        ok(i == 0 ? rc == VB_OK : rc == VB_ERROR, "recipe: '%s' is %s", refs[i], i == 0 ? "accepted" : "refused");
        if (i == 0 && pr) is_str(vb_profile_engine_recipe(&pr->engines[0]), refs[0], "and kept whole for the orchestrator");
        if (i == 1) contains(err.message, "r.yml:5: key 'engines[0].recipe'", "naming file, line and key");
        vb_profile_destroy(&pr);
    }

    /* ---- recipes */
    char dir[] = "/tmp/vb-recipes-XXXXXX";
    ok(mkdtemp(dir) != NULL, "a recipe directory");
    char path[256];
    snprintf(path, sizeof path, "%s/good.yml", dir);
    write_file(path,
               "name: good\nengine: pgvector\nimage: db-trixie\nuser: postgres\npassword_file: pw\n"
               "init:\n  creates: data\n  run:\n    - [/bin/initdb, \"-D{data}/data\"]\n"
               "start: [/bin/postgres, \"-cshared_buffers={shared_buffers}\", \"-cw={workers}\"]\n"
               "settings:\n  shared_buffers: {of: memory, fraction: 0.25, unit: MiB, suffix: MB}\n"
               "  workers: {of: cpus, fraction: 0.125, min: 1}\n  cache: {of: memory, fraction: 0.25}\n"
               "  shm_part: {of: shm, fraction: 0.5, unit: GiB, suffix: G}\n  fixed: 200\n"
               "connect: {host: \"{datadir}\", password: \"{password}\"}\nsizes: [data]\nstop_signal: INT\n");
    vb_recipe *r = NULL;
    ok(vb_recipe_load(dir, "good", &r, &err) == VB_OK, "a recipe loads");
    if (!r) printf("#   %s\n", err.message);
    if (r) {
        is_str(r->engine, "pgvector", "its engine");
        is_str(r->data_mount, "/var/lib/vbench", "the default data mount");
        is_int(r->n_init, 1, "one init step");
        is_int(r->stop_signal, 2, "stop_signal INT");
        p = profile("resources:\n  layout: reference\n", &err);
        vb_budget_resolve(p, 80, 256 * GB, &b, &err);
        vb_kv *set = NULL;
        size_t ns = 0;
        ok(vb_recipe_settings(r, &b, &set, &ns, &err) == VB_OK && ns == 5, "five settings for the reference budget");
        is_str(setting(set, ns, "shared_buffers"), "28800MB", "a quarter of 120.8 GB in MiB");
        is_str(setting(set, ns, "workers"), "8", "an eighth of 64 CPUs: the reference's 8 build threads");
        is_str(setting(set, ns, "cache"), "30200000000", "a quarter of 120.8 GB: the reference's 30.2 GB graph cache");
        is_str(setting(set, ns, "shm_part"), "6G", "half the /dev/shm in GiB");
        is_str(setting(set, ns, "fixed"), "200", "a literal");
        char *out = NULL;
        vb_kv vars[] = {{"data", "/var/lib/vbench"}, {"shared_buffers", "28800MB"}};
        ok(vb_recipe_expand(r, "-D{data}/x {shared_buffers}", vars, 2, &out, &err) == VB_OK && out &&
               strcmp(out, "-D/var/lib/vbench/x 28800MB") == 0, "templates expand");
        free(out);
        ok(vb_recipe_expand(r, "{nope}", vars, 2, &out, &err) == VB_ERROR, "an unknown name is an error");
        contains(err.message, "unknown name {nope}", "naming it");
        vb_recipe_kv_free(set, ns);
        vb_profile_destroy(&p);
        vb_recipe_destroy(&r);
    }
    snprintf(path, sizeof path, "%s/bad.yml", dir);
    write_file(path, "name: bad\nengine: pgvector\nimage: x\nuser: u\nstart: [relative/path]\n");
    ok(vb_recipe_load(dir, "bad", &r, &err) == VB_ERROR, "a relative start command is refused");
    contains(err.message, "bad.yml:5: key 'start[0]'", "with file, line and key");
    write_file(path, "name: bad\nengine: pgvector\nimage: x\nuser: u\nstart: [/x]\nsettings:\n  a: {of: disk}\n");
    ok(vb_recipe_load(dir, "bad", &r, &err) == VB_ERROR && strstr(err.message, "bad.yml:7:"), "a setting of an unknown quantity");
    write_file(path, "name: bad\nengine: pgvector\nimage: x\nuser: u\nstart: [/x]\nbogus: 1\n");
    ok(vb_recipe_load(dir, "bad", &r, &err) == VB_ERROR && strstr(err.message, "bad.yml:6: unknown key 'bogus'"),
       "an unknown key");
    write_file(path, "name: other\nengine: pgvector\nimage: x\nuser: u\nstart: [/x]\n");
    ok(vb_recipe_load(dir, "bad", &r, &err) == VB_ERROR && strstr(err.message, "does not match the file name"),
       "a name that is not the file's");
    write_file(path, "name: bad\nengine: pgvector\nuser: postgres\nstart: [/opt/pg-17.2/bin/postgres, -D, \"{data}\"]\n");
    ok(vb_recipe_load(dir, "bad", &r, &err) == VB_OK && r && r->image == NULL,
       "a recipe without an image (binaries built from a tag) loads");
    vb_recipe_destroy(&r);
    ok(vb_recipe_load(dir, "nosuch", &r, &err) == VB_ERROR, "an unknown recipe");
    contains(err.message, "recipes in", "lists what there is");
    contains(err.message, "bad, good", "sorted");
    ok(vb_recipe_load(dir, "../good", &r, &err) == VB_ERROR, "a name with a slash is not a path");

    /* parameters: "NAME key=value" chooses the image; the default applies otherwise (issue 17) */
    snprintf(path, sizeof path, "%s/pv.yml", dir);
    write_file(path, "name: pv\nengine: pgvector\nimage: base\nuser: u\nstart: [/x]\n"
                     "build: {package: pkg, target_isa: x86-64, kernel_isa: x86-64-v4, flags: none}\n"
                     "parameters:\n  ver:\n    default: packaged\n    packaged: {image: base}\n"
                     "    1.2.3: {image: base-layer}\n"
                     "    next: {image: other, packages: [p18, p18-ext], build: {package: p18-ext, target_isa: x86-64-v2}}\n");
    ok(vb_recipe_load(dir, "pv", &r, &err) == VB_OK && r && strcmp(r->image, "base") == 0 && r->n_params == 1 &&
           strcmp(r->params[0].value, "packaged") == 0, "without a parameter the default value's image");
    if (r) {
        is_str(r->build_package, "pkg", "build.package");
        is_str(r->build_kernel_isa, "x86-64-v4", "build.kernel_isa");
    }
    vb_recipe_destroy(&r);
    ok(vb_recipe_load(dir, "pv ver=1.2.3", &r, &err) == VB_OK && r && strcmp(r->image, "base-layer") == 0 &&
           strcmp(r->params[0].value, "1.2.3") == 0, "\"pv ver=1.2.3\" takes that value's image");
    vb_recipe_destroy(&r);
    ok(vb_recipe_load(dir, "pv ver=next", &r, &err) == VB_OK && r && strcmp(r->image, "other") == 0,
       "\"pv ver=next\" takes that value's image");
    if (r) {
        ok(r->n_packages == 2 && strcmp(r->packages[0], "p18") == 0 && strcmp(r->packages[1], "p18-ext") == 0,
           "and its packages, in place of the recipe's");
        is_str(r->build_package, "p18-ext", "and its build.package");
        is_str(r->build_target_isa, "x86-64-v2", "and its build.target_isa");
        ok(r->build_kernel_isa == NULL && r->build_flags == NULL,
           "the value's build: replaces the recipe's whole (no kernel_isa or flags of the recipe's left beside it)");
    }
    vb_recipe_destroy(&r);
    ok(vb_recipe_load(dir, "pv ver=9.9", &r, &err) == VB_ERROR, "an undeclared value is refused");
    contains(err.message, "no value '9.9' (known: packaged, 1.2.3, next)", "listing the values");
    contains(err.message, "pv.yml:8:", "with file and line (the parameter's)");
    ok(vb_recipe_load(dir, "pv nope=1", &r, &err) == VB_ERROR, "an undeclared parameter is refused");
    contains(err.message, "no parameter 'nope'", "naming it");
    ok(vb_recipe_load(dir, "pv ver", &r, &err) == VB_ERROR, "a word without '=' is refused");
    contains(err.message, "is not key=value", "saying how to write it");
    write_file(path, "name: pv\nengine: pgvector\nimage: base\nuser: u\nstart: [/x]\nreplica:\n  primary_mount: /p\n"
                     "  run: [[/y]]\n  args: --x\n");
    ok(vb_recipe_load(dir, "pv", &r, &err) == VB_ERROR, "replica.args that is not a list is refused");
    contains(err.message, "pv.yml:9: key 'replica.args': expected a non-empty list", "with file, line and key");
    write_file(path, "name: pv\nengine: pgvector\nimage: base\nuser: u\nstart: [/x]\nbuild: {cflags: x}\n");
    ok(vb_recipe_load(dir, "pv", &r, &err) == VB_ERROR, "an unknown build key is refused");
    contains(err.message, "pv.yml:6: unknown key 'build.cflags'", "with file, line and key");
    /* port: the TCP port of a server placed over several hosts (node K on port + K) */
    write_file(path, "name: pv\nengine: pgvector\nimage: base\nuser: u\nstart: [/x]\nport: 65530\n");
    ok(vb_recipe_load(dir, "pv", &r, &err) == VB_ERROR, "a port without room for the nodes' ports is refused");
    contains(err.message, "key 'port': 65530 is not a TCP port from 1 to 65519", "saying the range");
    write_file(path, "name: pv\nengine: pgvector\nimage: base\nuser: u\nstart: [/x, \"{port}\"]\nport: 6000\n");
    ok(vb_recipe_load(dir, "pv", &r, &err) == VB_OK && r->port == 6000, "port: 6000 is kept");
    vb_recipe_destroy(&r);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    if (system(path) != 0) printf("# cleanup failed\n");

    /* the repository's recipes load */
    const char *names[] = {"pgvector", "mariadb", "valkey", "mongodb"};
    for (int i = 0; i < 4; i++) {
        ok(vb_recipe_load("deploy/engines", names[i], &r, &err) == VB_OK, "deploy/engines/%s.yml loads", names[i]);
        if (!r) {
            printf("#   %s\n", err.message);
            continue;
        }
        if (i == 0)   /* issue 39: pgvector makes read replicas with pg_basebackup, MariaDB by its replication */
            ok(r->replica_mount && strcmp(r->replica_mount, "/var/lib/vbench-primary") == 0 &&
                   r->n_replica_init == 1 && strstr(r->replica_init[0][0], "pg_basebackup"),
               "pgvector's recipe: replica.run copies the primary with pg_basebackup");
        if (i == 1) {
            ok(r->replica_mount && r->n_replica_init == 1 && strstr(r->replica_init[0][2], "mariadb-dump") &&
                   strstr(r->replica_init[0][2], "MASTER_USE_GTID = slave_pos"),
               "mariadb's recipe: replica.run seeds the replica from the primary's dump at its GTID position");
            int bin = 0, id = 0;
            for (size_t j = 0; r->replica_primary_args && r->replica_primary_args[j]; j++)
                bin |= strcmp(r->replica_primary_args[j], "--log-bin=binlog") == 0;
            for (size_t j = 0; r->replica_args && r->replica_args[j]; j++)
                id |= strcmp(r->replica_args[j], "--server-id={server_id}") == 0;
            ok(bin && id, "mariadb's recipe: the binary log on a primary with replicas, a server id per replica");
        }
        if (i == 0)   /* placement (coordinator/placement.h): TCP at {listen} on port + K, replicas over {primary_host} */
            ok(r->port == 5432 && strstr(r->replica_init[0][2], "host={primary_host} port={primary_port}") &&
                   strcmp(vb_kv_get(r->connect, r->n_connect, "host", ""), "{host}") == 0 &&
                   strcmp(vb_kv_get(r->connect, r->n_connect, "port", ""), "{port}") == 0,
               "pgvector's recipe: port 5432, connect host {host} and port {port}, replicas copy {primary_host}:{primary_port}");
        if (i == 1) {   /* placed: networking at {listen}:{port} after the rest, root@'%' from accounts.sql */
            int bind = 0, init_file = 0;
            for (size_t j = 0; r->placed_args && r->placed_args[j]; j++) {
                bind |= strcmp(r->placed_args[j], "--bind-address={listen}") == 0;
                init_file |= strcmp(r->placed_args[j], "--init-file={data}/accounts.sql") == 0;
            }
            ok(r->port == 3306 && bind && init_file && strstr(r->replica_init[0][2], "MASTER_HOST = '$H'") &&
                   strcmp(vb_kv_get(r->connect, r->n_connect, "host", ""), "{listen}") == 0,
               "mariadb's recipe: port 3306, placed_args listen at {listen} and run accounts.sql, replicas over TCP");
        }
        p = profile("", &err);
        vb_budget_resolve(p, 2, 24 * GIB, &b, &err);
        vb_kv *set = NULL;
        size_t ns = 0;
        vb_recipe_settings(r, &b, &set, &ns, &err);
        vb_kv vars[48];
        size_t nv = 0;
        for (size_t j = 0; j < ns && nv < 30; j++) vars[nv++] = set[j];   /* room for the 12 below */
        vars[nv++] = (vb_kv){"data", "/var/lib/vbench"};
        vars[nv++] = (vb_kv){"datadir", "/x"};
        vars[nv++] = (vb_kv){"password", "p"};
        vars[nv++] = (vb_kv){"listen", ""};   /* what the orchestrator gives every node (orchestrate.c start_node) */
        vars[nv++] = (vb_kv){"host", "/x"};
        if (r->port) vars[nv++] = (vb_kv){"port", "5432"};
        char **argv = vb_recipe_expand_argv(r, r->start, vars, nv, &err);
        ok(argv != NULL, "%s: every start argument expands", names[i]);
        if (!argv) printf("#   %s\n", err.message);
        vb_recipe_argv_free(argv);
        int init_ok = 1;
        for (size_t j = 0; j < r->n_init; j++) {
            char **iv = vb_recipe_expand_argv(r, r->init[j], vars, nv, &err);
            if (!iv) init_ok = 0, printf("#   %s\n", err.message);
            vb_recipe_argv_free(iv);
        }
        for (size_t j = 0; j < r->n_template_apply; j++) {
            char **iv = vb_recipe_expand_argv(r, r->template_apply[j], vars, nv, &err);
            if (!iv) init_ok = 0, printf("#   %s\n", err.message);
            vb_recipe_argv_free(iv);
        }
        ok(init_ok, "%s: every init step expands (%zu, and %zu of init.template.apply)", names[i], r->n_init,
           r->n_template_apply);
        /* the replica's steps and arguments with the replica's variables (orchestrator/orchestrate.c start_node) */
        vars[nv++] = (vb_kv){"primary", "/var/lib/vbench-primary"};
        vars[nv++] = (vb_kv){"primary_password", "p"};
        vars[nv++] = (vb_kv){"server_id", "2"};
        vars[nv++] = (vb_kv){"replication_port", "40000"};
        vars[nv++] = (vb_kv){"primary_host", "/var/lib/vbench-primary"};   /* placement: node 0's host and port */
        vars[nv++] = (vb_kv){"primary_port", "5432"};
        int rep_ok = 1;
        char **more[2] = {r->replica_primary_args, r->replica_args};
        for (size_t j = 0; j < r->n_replica_init + 2; j++) {
            char **src = j < r->n_replica_init ? r->replica_init[j] : more[j - r->n_replica_init];
            if (!src) continue;
            char **iv = vb_recipe_expand_argv(r, src, vars, nv, &err);
            if (!iv) rep_ok = 0, printf("#   %s\n", err.message);
            vb_recipe_argv_free(iv);
        }
        ok(rep_ok, "%s: every replica step and argument expands", names[i]);
        vb_recipe_kv_free(set, ns);
        vb_profile_destroy(&p);
        vb_recipe_destroy(&r);
    }
    /* valkey: maxmemory 0.9 of the server's memory, noeviction, io-threads from the CPUs */
    ok(vb_recipe_load("deploy/engines", "valkey", &r, &err) == VB_OK && r && strcmp(r->image, "db-valkey-search") == 0,
       "valkey names an image with the search module, which vbench does not build (written from the documentation)");
    if (r) {
        vb_profile *vp = profile("", &err);
        vb_budget vb;
        vb_budget_resolve(vp, 64, 120 * GIB, &vb, &err);
        vb_kv *set = NULL;
        size_t ns = 0;
        vb_recipe_settings(r, &vb, &set, &ns, &err);
        char want[64];
        snprintf(want, sizeof want, "%.0fmb", floor((double)vb.server_memory * 0.9 / 1048576.0));
        is_str(vb_kv_get(set, ns, "maxmemory", ""), want, "valkey: maxmemory is 0.9 of the server's memory");
        char io[16];
        snprintf(io, sizeof io, "%d", vb.n_server_cpus / 8 < 1 ? 1 : vb.n_server_cpus / 8 > 16 ? 16 : vb.n_server_cpus / 8);
        is_str(vb_kv_get(set, ns, "io_threads", ""), io, "valkey: io-threads one per eight server CPUs");
        int noevict = 0;
        for (size_t j = 0; r->start[j]; j++) noevict |= strcmp(r->start[j], "noeviction") == 0;
        ok(noevict, "valkey: maxmemory-policy noeviction");
        vb_recipe_kv_free(set, ns);
        vb_profile_destroy(&vp);
    }
    vb_recipe_destroy(&r);
    /* redis (Redis 8 vector sets): trixie's 8.0 by default, unstable's with redis_version=unstable, same binary;
     * maxmemory 0.9 of the server's memory with noeviction, no persistence, port 0, io-threads from the CPUs; every
     * setting is a recipe setting (so the manifest records it) and every start argument expands */
    static const struct { const char *ref, *image; } rv[] = {
        {"redis", "db-trixie"}, {"redis redis_version=trixie", "db-trixie"}, {"redis redis_version=unstable", "db-sid"},
        {"redis server_pass=relaxed", "db-trixie"}, {"redis redis_version=unstable server_pass=durable", "db-sid"}};
    for (size_t i = 0; i < sizeof rv / sizeof rv[0]; i++) {
        r = NULL;
        int rc = vb_recipe_load("deploy/engines", rv[i].ref, &r, &err);
        ok(rc == VB_OK && r && strcmp(r->image, rv[i].image) == 0 && strcmp(r->start[0], "/usr/bin/redis-server") == 0,
           "recipe \"%s\": image %s, /usr/bin/redis-server (%s)", rv[i].ref, rv[i].image, rc ? err.message : "ok");
        vb_recipe_destroy(&r);
    }
    ok(vb_recipe_load("deploy/engines", "redis redis_version=8.2", &r, &err) == VB_ERROR && strstr(err.message, "trixie"),
       "an unknown redis_version is refused, naming the known ones (%s)", err.message);
    if (vb_recipe_load("deploy/engines", "redis", &r, &err) == VB_OK) {
        vb_profile *rp = profile("", &err);
        vb_budget rb;
        vb_budget_resolve(rp, 64, 120 * GIB, &rb, &err);
        vb_kv *set = NULL;
        size_t ns = 0;
        vb_recipe_settings(r, &rb, &set, &ns, &err);
        char want[64], io[16];
        snprintf(want, sizeof want, "%.0fmb", floor((double)rb.server_memory * 0.9 / 1048576.0));
        is_str(vb_kv_get(set, ns, "maxmemory", ""), want, "redis: maxmemory is 0.9 of the server's memory");
        snprintf(io, sizeof io, "%d", rb.n_server_cpus / 8 < 1 ? 1 : rb.n_server_cpus / 8 > 16 ? 16 : rb.n_server_cpus / 8);
        is_str(vb_kv_get(set, ns, "io_threads", ""), io, "redis: io-threads one per eight server CPUs");
        is_str(vb_kv_get(set, ns, "maxmemory_policy", ""), "noeviction", "redis: maxmemory-policy noeviction");
        is_str(vb_kv_get(set, ns, "save", "?"), "", "redis: save \"\" (no snapshots)");
        is_str(vb_kv_get(set, ns, "appendonly", ""), "no", "redis: appendonly no");
        is_str(vb_kv_get(set, ns, "port", ""), "0", "redis: port 0 (the Unix socket only)");
        vb_kv vars[40];
        size_t nv = 0;
        for (size_t j = 0; j < ns && nv < 34; j++) vars[nv++] = set[j];
        vars[nv++] = (vb_kv){"data", "/var/lib/vbench"};
        vars[nv++] = (vb_kv){"datadir", "/x"};
        vars[nv++] = (vb_kv){"password", "p"};
        vars[nv++] = (vb_kv){"listen", ""};   /* what the orchestrator gives every node (orchestrate.c start_node) */
        vars[nv++] = (vb_kv){"host", "/x"};
        if (r->port) vars[nv++] = (vb_kv){"port", "5432"};
        char **argv = vb_recipe_expand_argv(r, r->start, vars, nv, &err);
        char line[1024] = "";
        for (size_t j = 0; argv && argv[j]; j++)
            snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s", j ? " " : "", argv[j][0] ? argv[j] : "''");
        contains(line, "--port 0 --unixsocket /var/lib/vbench/redis.sock", "redis: the socket in the data directory");
        contains(line, "--save '' --appendonly no", "redis: persistence off");
        char tail[192];
        snprintf(tail, sizeof tail, "--maxmemory %s --maxmemory-policy noeviction --io-threads %s", want, io);
        contains(line, tail, "redis: maxmemory, noeviction and io-threads from the budget");
        vb_recipe_argv_free(argv);
        is_str(vb_kv_get(r->connect, r->n_connect, "socket", ""), "{datadir}/redis.sock", "redis: clients use the socket");
        vb_recipe_kv_free(set, ns);
        vb_profile_destroy(&rp);
    } else {
        ok(0, "deploy/engines/redis.yml loads: %s", err.message);
    }
    vb_recipe_destroy(&r);
    ok(vb_recipe_load("deploy/engines", "pgvector pgvector_version=0.8.7", &r, &err) == VB_OK && r &&
           strcmp(r->image, "db-sid") == 0, "pgvector_version=0.8.7 runs from the db-sid image (Debian unstable)");
    if (r) {
        is_str(r->build_package, "postgresql-18-pgvector", "0.8.7: the engine's package is postgresql-18-pgvector");
        ok(r->n_packages == 2 && strcmp(r->packages[0], "postgresql-18") == 0, "0.8.7: the manifest records PostgreSQL 18's packages");
        vb_profile *pp = profile("", &err);
        vb_budget pb;
        vb_budget_resolve(pp, 4, 8 * GIB, &pb, &err);
        vb_kv *set = NULL;
        size_t ns = 0;
        vb_recipe_settings(r, &pb, &set, &ns, &err);
        vb_kv vars[40];
        size_t nv = 0;
        for (size_t j = 0; j < ns && nv < 34; j++) vars[nv++] = set[j];
        vars[nv++] = (vb_kv){"data", "/var/lib/vbench"};
        vars[nv++] = (vb_kv){"datadir", "/x"};
        vars[nv++] = (vb_kv){"password", "p"};
        vars[nv++] = (vb_kv){"listen", ""};
        vars[nv++] = (vb_kv){"port", "5432"};
        char **sv = vb_recipe_expand_argv(r, r->start, vars, nv, &err);
        is_str(sv ? sv[0] : "(no argv)", "/usr/lib/postgresql/18/bin/postgres", "0.8.7: PostgreSQL 18's postgres starts");
        vb_recipe_argv_free(sv);
        vb_recipe_kv_free(set, ns);
        vb_profile_destroy(&pp);
    }
    vb_recipe_destroy(&r);
    ok(vb_recipe_load("deploy/engines", "pgvector", &r, &err) == VB_OK && r && strcmp(r->image, "db-trixie") == 0 &&
           r->build_target_isa && strcmp(r->build_target_isa, "x86-64") == 0, "packaged: db-trixie, built for x86-64");
    if (r) {
        is_str(r->build_package, "postgresql-17-pgvector", "packaged: the engine's package is postgresql-17-pgvector");
    }
    vb_recipe_destroy(&r);

    /* server passes (issue 16): relaxed turns durability off through the recipe's settings; durable keeps the
     * engine's defaults; parallel maintenance workers stop at 8 above 64 server CPUs */
    static const struct { const char *ref, *key, *want; int cpus; } passes[] = {
        {"pgvector", "fsync", "on", 64},
        {"pgvector server_pass=durable", "synchronous_commit", "on", 64},
        {"pgvector server_pass=relaxed", "fsync", "off", 64},
        {"pgvector server_pass=relaxed", "full_page_writes", "off", 64},
        {"pgvector server_pass=relaxed", "synchronous_commit", "off", 64},
        {"mariadb", "innodb_flush_log_at_trx_commit", "1", 64},
        {"mariadb server_pass=relaxed", "innodb_flush_log_at_trx_commit", "0", 64},
        {"mariadb server_pass=relaxed", "innodb_doublewrite", "0", 64},
        {"mariadb server_pass=relaxed", "log_bin", "OFF", 64},
        {"pgvector", "max_parallel_maintenance_workers", "8", 64},
        {"pgvector", "max_parallel_maintenance_workers", "8", 128},
        {"pgvector", "max_parallel_maintenance_workers", "2", 16},
    };
    for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
        r = NULL;
        if (vb_recipe_load("deploy/engines", passes[i].ref, &r, &err) != VB_OK) {
            ok(0, "%s loads: %s", passes[i].ref, err.message);
            continue;
        }
        char res[256];
        snprintf(res, sizeof res, "resources:\n  server_cpus: \"0-%d\"\n  server_memory: 100GB\n  client_cpus: \"%d\"\n",
                 passes[i].cpus - 1, passes[i].cpus);
        p = profile(res, &err);
        int okb = p && vb_budget_resolve(p, passes[i].cpus + 1, 200 * GIB, &b, &err) == VB_OK;
        vb_kv *set = NULL;
        size_t ns = 0;
        const char *got = NULL;
        if (okb && vb_recipe_settings(r, &b, &set, &ns, &err) == VB_OK) got = vb_kv_get(set, ns, passes[i].key, NULL);
        ok(got && strcmp(got, passes[i].want) == 0, "%s on %d CPUs: %s = %s (got %s)", passes[i].ref, passes[i].cpus,
           passes[i].key, passes[i].want, got ? got : okb ? "nothing" : err.message);
        vb_recipe_kv_free(set, ns);
        vb_profile_destroy(&p);
        vb_recipe_destroy(&r);
    }
    /* every shipped recipe takes both passes: a profile names server_pass once for all its engines */
    static const char *const shipped[] = {"pgvector", "mariadb", "valkey", "mongodb"};
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++)
        for (int relaxed = 0; relaxed < 2; relaxed++) {
            char ref[64];
            snprintf(ref, sizeof ref, "%s server_pass=%s", shipped[i], relaxed ? "relaxed" : "durable");
            r = NULL;
            int rc = vb_recipe_load("deploy/engines", ref, &r, &err);
            ok(rc == VB_OK, "recipe \"%s\" loads%s%s", ref, rc == VB_OK ? "" : ": ", rc == VB_OK ? "" : err.message);
            vb_recipe_destroy(&r);
        }
    ok(vb_recipe_load("deploy/engines", "pgvector server_pass=fast", &r, &err) == VB_ERROR &&
           strstr(err.message, "known: durable, relaxed"), "an unknown pass is refused, naming the known ones");
    /* ---- data templates (issue 40): the key of init.run's output, the same for every campaign of an image and
     * recipe, another for a changed init command, user, image or version */
    {
        vb_profile *tp = profile("", &err);
        vb_budget small, big;
        vb_budget_resolve(tp, 2, 8 * GIB, &small, &err);
        vb_budget_resolve(tp, 64, 120 * GIB, &big, &err);
        vb_profile_destroy(&tp);
        char k1[17] = "", k2[17] = "", k3[17] = "", k4[17] = "", k5[17] = "";
        /* the vars start_node gives a data directory: the settings of its budget and its own paths and password */
        #define TKEY(R, B, DATADIR, PW, IMG, OUT)                                                                \
            do {                                                                                               \
                vb_kv *set_ = NULL, v_[48];                                                                    \
                size_t ns_ = 0, nv_ = 0;                                                                       \
                vb_recipe_settings((R), (B), &set_, &ns_, &err);                                               \
                for (size_t j_ = 0; j_ < ns_ && nv_ < 40; j_++) v_[nv_++] = set_[j_];                           \
                v_[nv_++] = (vb_kv){"data", "/var/lib/vbench"};                                               \
                v_[nv_++] = (vb_kv){"datadir", (DATADIR)};                                                     \
                v_[nv_++] = (vb_kv){"password", (PW)};                                                         \
                v_[nv_++] = (vb_kv){"cpus", (B)->n_server_cpus > 8 ? "64" : "2"};                             \
                v_[nv_++] = (vb_kv){"memory_bytes", "1000"};                                                   \
                OUT[0] = '\0';                                                                                 \
                if (vb_recipe_template_key((R), (IMG), v_, nv_, OUT, &err) != VB_OK)                            \
                    printf("#   %s\n", err.message);                                                         \
                vb_recipe_kv_free(set_, ns_);                                                                  \
            } while (0)
        r = NULL;
        ok(vb_recipe_load("deploy/engines", "pgvector", &r, &err) == VB_OK && r && r->init_template &&
               r->n_template_apply == 1 && strstr(r->template_apply[0][2], "ALTER ROLE postgres PASSWORD"),
           "pgvector's recipe: initdb into a template, each copy's password set by init.template.apply");
        if (r) {
            TKEY(r, &small, "/w1/servers/pgvector", "pw1", "/img/db-trixie-1 key=1", k1);
            TKEY(r, &big, "/w2/servers/pgvector", "pw2", "/img/db-trixie-1 key=1", k2);
            TKEY(r, &small, "/w1/servers/pgvector", "pw1", "/img/db-trixie-2 key=2", k3);
        }
        ok(strlen(k1) == 16 && strspn(k1, "0123456789abcdef") == 16, "a template key is 16 hex digits (%s)", k1);
        is_str(k2, k1, "two campaigns of one image and recipe share the key (another budget, data directory, password)");
        ok(strlen(k3) == 16 && strcmp(k3, k1) != 0, "another image build makes another key (%s)", k3);
        vb_recipe_destroy(&r);
        ok(vb_recipe_load("deploy/engines", "pgvector pgvector_version=0.8.7", &r, &err) == VB_OK, "pgvector 0.8.7 loads");
        if (r) TKEY(r, &small, "/w1/servers/pgvector", "pw1", "/img/db-trixie-1 key=1", k4);
        ok(strlen(k4) == 16 && strcmp(k4, k1) != 0, "another version (PostgreSQL 18's initdb) makes another key (%s)", k4);
        vb_recipe_destroy(&r);
        ok(vb_recipe_load("deploy/engines", "mariadb", &r, &err) == VB_OK && r && r->init_template &&
               r->n_template_apply == 1 && strstr(r->template_apply[0][2], "IDENTIFIED BY '{password}'") &&
               strstr(r->template_apply[0][2], "{data}/accounts.sql"),
           "mariadb's recipe: mariadb-install-db into a template, the copy's own accounts.sql (its password) applied");
        vb_recipe_destroy(&r);
        /* a recipe of the test's own, then the same with one init argument changed, another user, no template */
        char tdir[] = "/tmp/vb-template-XXXXXX", tpath[64];
        ok(mkdtemp(tdir) != NULL, "a recipe directory for the template keys");
        snprintf(tpath, sizeof tpath, "%s/t.yml", tdir);
        const char *base = "name: t\nengine: pgvector\nimage: base\nuser: %s\nstart: [/x, \"{data}\"]\n"
                           "settings: {mem: {of: memory, fraction: 0.5, unit: MiB}}\n"
                           "init:\n  creates: d\n  run: [[/init, \"{data}/d\", \"--pw={password}\", %s]]\n"
                           "  template: {}\n";
        char text[512];
        snprintf(text, sizeof text, base, "u", "--locale=C");
        write_file(tpath, text);
        ok(vb_recipe_load(tdir, "t", &r, &err) == VB_OK && r && r->init_template && r->n_template_apply == 0,
           "init.template: {} loads (a template, nothing to apply)");
        if (r) {
            TKEY(r, &small, "/w/servers/t", "p", "/img/base key=1", k1);
            TKEY(r, &big, "/v/servers/t", "q", "/img/base key=1", k2);
        }
        is_str(k2, k1, "the key leaves out the password and data directory the init names");
        vb_recipe_destroy(&r);
        snprintf(text, sizeof text, base, "u", "--locale=C.UTF-8");
        write_file(tpath, text);
        if (vb_recipe_load(tdir, "t", &r, &err) == VB_OK) TKEY(r, &small, "/w/servers/t", "p", "/img/base key=1", k3);
        ok(k3[0] && strcmp(k3, k1) != 0, "a changed init argument makes another key (%s, was %s)", k3, k1);
        vb_recipe_destroy(&r);
        snprintf(text, sizeof text, base, "v", "--locale=C");
        write_file(tpath, text);
        if (vb_recipe_load(tdir, "t", &r, &err) == VB_OK) TKEY(r, &small, "/w/servers/t", "p", "/img/base key=1", k5);
        ok(k5[0] && strcmp(k5, k1) != 0 && strcmp(k5, k3) != 0, "another user makes another key (%s)", k5);
        vb_recipe_destroy(&r);
        snprintf(text, sizeof text, base, "u", "\"--mem={mem}\"");
        write_file(tpath, text);
        if (vb_recipe_load(tdir, "t", &r, &err) == VB_OK) {
            TKEY(r, &small, "/w/servers/t", "p", "/img/base key=1", k4);
            TKEY(r, &big, "/w/servers/t", "p", "/img/base key=1", k5);
        }
        ok(k4[0] && k5[0] && strcmp(k4, k5) != 0, "an init that names a budget-derived setting: a key per budget");
        vb_recipe_destroy(&r);
        #undef TKEY
        write_file(tpath, "name: t\nengine: pgvector\nuser: u\nstart: [/x]\n"
                          "init:\n  creates: d\n  run: [[/init]]\n  template: {aply: [[/x]]}\n");
        ok(vb_recipe_load(tdir, "t", &r, &err) == VB_ERROR, "an unknown key under init.template is refused");
        contains(err.message, "t.yml:8: unknown key 'init.template.aply' (known: apply)", "with file, line and key");
        write_file(tpath, "name: t\nengine: pgvector\nuser: u\nstart: [/x]\n"
                          "init:\n  creates: d\n  run: [[/init]]\n  templates: {}\n");
        ok(vb_recipe_load(tdir, "t", &r, &err) == VB_ERROR, "an unknown key under init is refused");
        contains(err.message, "t.yml:8: unknown key 'init.templates' (known: creates, run, template)", "naming it");
        write_file(tpath, "name: t\nengine: pgvector\nuser: u\nstart: [/x]\n"
                          "init:\n  creates: d\n  run: [[/init]]\n  template: yes\n");
        ok(vb_recipe_load(tdir, "t", &r, &err) == VB_ERROR, "init.template must be a map");
        contains(err.message, "key 'init.template': expected a map", "saying so");
        snprintf(tpath, sizeof tpath, "rm -rf %s", tdir);
        if (system(tpath) != 0) printf("# cleanup failed\n");
    }
    return done_testing();
}
