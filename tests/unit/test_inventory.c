/* Self-test of config/inventory: a valid inventory with its defaults, every refusal with file, line and key, the
 * key directory resolved against the file's directory, recipe checks, and the printed form deploy/install reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/inventory.h"
#include "tests/tap.h"

/* A valid inventory the error cases are variations of; the numbers are its line numbers. */
#define HEAD                                                                                                       \
    "coordinator:\n"                   /* 1 */                                                                     \
    "  listen: tcp://*:5555\n"         /* 2 */                                                                     \
    "hosts:\n"                         /* 3 */                                                                     \
    "  - name: ctl\n"                  /* 4 */                                                                     \
    "    address: 10.0.0.10\n"         /* 5 */                                                                     \
    "    roles: [coordinator]\n"       /* 6 */                                                                     \
    "  - name: db1\n"                  /* 7 */                                                                     \
    "    address: 10.0.0.11\n"         /* 8 */

static vb_inventory *parse(const char *text, vb_error *err) {
    vb_inventory *inv = NULL;
    vb_inventory_parse(text, strlen(text), "inv.yml", &inv, err);
    return inv;
}

/* The text must fail with "inv.yml:LINE: " and the message must contain each of the given fragments. */
static void expect_error(const char *name, const char *text, int line, const char *frag1, const char *frag2) {
    vb_error err = {0};
    vb_inventory *inv = parse(text, &err);
    ok(inv == NULL, "%s: rejected", name);
    if (getenv("VB_TEST_VERBOSE")) printf("#   %s\n", err.message);
    char where[64];
    snprintf(where, sizeof where, "inv.yml:%d: ", line);
    if (!ok(strncmp(err.message, where, strlen(where)) == 0, "%s: message starts with %s", name, where))
        printf("#   message: %s\n", err.message);
    char what[256];
    snprintf(what, sizeof what, "%s: names '%s'", name, frag1 ? frag1 : "");
    if (frag1) contains(err.message, frag1, what);
    snprintf(what, sizeof what, "%s: says '%s'", name, frag2 ? frag2 : "");
    if (frag2) contains(err.message, frag2, what);
    snprintf(what, sizeof what, "%s: domain inventory", name);
    is_str(err.domain, "inventory", what);
    vb_inventory_destroy(&inv);
}

static void test_valid(void) {
    const char *text = HEAD
        "    roles: [client, orchestrator]\n"
        "    cores: 64-79,3,2\n"
        "    memory: 16G\n"
        "    recipes: [pg, maria]\n"
        "  - name: load1\n"
        "    address: fd00::12\n"
        "    user: bench\n"
        "    port: 2222\n"
        "    roles: client\n";
    vb_error err = {0};
    vb_inventory *inv = parse(text, &err);
    if (!ok(inv != NULL, "valid: parses")) {
        printf("#   %s\n", err.message);
        return;
    }
    is_int(inv->n_hosts, 3, "valid: three hosts");
    is_int(inv->coordinator, 0, "valid: the coordinator is the first host");
    is_str(inv->listen, "tcp://*:5555", "valid: listen as written");
    is_str(inv->connect, "tcp://10.0.0.10:5555", "valid: connect defaults to the coordinator's address and port");
    is_str(inv->profile, "smoke", "valid: profile defaults to smoke");
    is_str(inv->out, "/var/lib/vbench/coordinator/results.db/smoke.sqlite", "valid: out defaults per profile");
    is_str(inv->keys_dir, "keys", "valid: keys defaults to keys (relative until loaded from a file)");
    const vb_inventory_host *db1 = &inv->hosts[1], *load1 = &inv->hosts[2];
    is_int(db1->roles, VB_ROLE_CLIENT | VB_ROLE_ORCHESTRATOR, "valid: db1 roles");
    is_str(db1->cores, "2-3,64-79", "valid: cores sorted and compacted");
    is_str(db1->memory, "16G", "valid: memory as written");
    is_str(db1->user, "root", "valid: user defaults to root");
    is_int(db1->port, 22, "valid: port defaults to 22");
    ok(db1->recipes && strcmp(db1->recipes[0], "pg") == 0 && strcmp(db1->recipes[1], "maria") == 0 &&
           !db1->recipes[2], "valid: recipes in order");
    is_int(db1->recipes_line, 12, "valid: recipes line");
    is_int(load1->roles, VB_ROLE_CLIENT, "valid: a scalar role");
    is_str(load1->user, "bench", "valid: user");
    is_int(load1->port, 2222, "valid: port");
    ok(load1->cores == NULL && load1->memory == NULL, "valid: no limits when none are written");
    char id[128];
    is_str(vb_inventory_agent_id(db1, VB_ROLE_ORCHESTRATOR, id, sizeof id), "db1-orchestrator", "valid: agent id");

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vb_inventory_print(inv, f);
    fclose(f);
    contains(buf, "coordinator=ctl\n", "print: the coordinator's host");
    contains(buf, "host=db1\ndb1.line=7\n", "print: a host and its line");
    contains(buf, "db1.agents=db1-client,db1-orchestrator\n", "print: agent ids");
    contains(buf, "db1.recipes=pg,maria\n", "print: recipes");
    contains(buf, "load1.address=fd00::12\n", "print: an IPv6 address");
    contains(buf, "load1.recipes=\n", "print: no recipes for a host without the orchestrator role");
    contains(buf, "ctl.agents=\n", "print: no agent on a coordinator-only host");
    free(buf);
    vb_inventory_destroy(&inv);
    ok(inv == NULL, "destroy nulls the pointer");

    /* IPv6 coordinator: brackets in the endpoint; recipes default to all; an explicit connect wins. */
    inv = parse("coordinator: {listen: 'tcp://[::]:7000', profile: /srv/p/tuned.yml}\nkeys: /etc/k\n"
                "hosts:\n  - {name: c, address: 'fd00::1', roles: [coordinator, client, orchestrator]}\n", &err);
    if (ok(inv != NULL, "v6: parses")) {
        is_str(inv->connect, "tcp://[fd00::1]:7000", "v6: connect in brackets");
        is_str(inv->out, "/var/lib/vbench/coordinator/results.db/tuned.sqlite", "v6: out from a profile path");
        ok(inv->hosts[0].recipes == NULL, "v6: recipes default to all (NULL)");
        is_str(inv->keys_dir, "/etc/k", "v6: absolute keys directory");
    } else {
        printf("#   %s\n", err.message);
    }
    vb_inventory_destroy(&inv);
    inv = parse("coordinator: {listen: 'tcp://*:1', connect: 'tcp://gw:9'}\nhosts:\n"
                "  - {name: c, address: a, roles: 'coordinator,client', recipes: []}\n", &err);
    ok(inv == NULL, "recipes on a host without the orchestrator role are refused");
    vb_inventory_destroy(&inv);
    inv = parse("coordinator: {listen: 'tcp://*:1', connect: 'tcp://gw:9'}\nhosts:\n"
                "  - {name: c, address: a, roles: 'coordinator, client, orchestrator', recipes: []}\n", &err);
    if (ok(inv != NULL, "explicit connect, empty recipes: parses")) {
        is_str(inv->connect, "tcp://gw:9", "explicit connect kept");
        ok(inv->hosts[0].recipes && !inv->hosts[0].recipes[0], "recipes: [] is none, not all");
    }
    vb_inventory_destroy(&inv);
}

static void test_errors(void) {
    expect_error("empty", "", 1, "empty", NULL);
    expect_error("not a map", "- a\n", 1, "expected a map", NULL);
    expect_error("unknown top key", HEAD "    roles: [client]\nextra: 1\n", 10, "unknown key 'extra'", "hosts");
    expect_error("yaml syntax", HEAD "    roles: [client\n", 10, "inv.yml:", NULL);
    expect_error("no coordinator section", "hosts: []\n", 1, "key 'coordinator'", "missing");
    expect_error("bad listen", "coordinator:\n  listen: 5555\n" "hosts:\n", 2, "coordinator.listen", "tcp://");
    expect_error("listen port", "coordinator:\n  listen: tcp://*:99999\n", 2, "coordinator.listen", NULL);
    expect_error("connect may not be *", "coordinator:\n  listen: tcp://*:1\n  connect: tcp://*:1\n", 3,
                 "coordinator.connect", NULL);
    expect_error("unknown coordinator key", "coordinator:\n  listen: tcp://*:1\n  lisen: x\n", 3,
                 "unknown key 'coordinator.lisen'", "listen, connect, profile, out");
    expect_error("relative out", "coordinator:\n  listen: tcp://*:1\n  out: x.sqlite\n", 3, "coordinator.out",
                 "absolute");
    expect_error("no hosts", "coordinator:\n  listen: tcp://*:1\n", 1, "key 'hosts'", "missing");
    expect_error("empty hosts", "coordinator:\n  listen: tcp://*:1\nhosts: []\n", 3, "key 'hosts'", "empty list");
    expect_error("host not a map", "coordinator:\n  listen: tcp://*:1\nhosts:\n  - ctl\n", 4, "hosts[0]",
                 "expected a map");
    expect_error("missing address", "coordinator:\n  listen: tcp://*:1\nhosts:\n  - name: a\n    roles: [client]\n",
                 4, "hosts[0].address", "missing");
    expect_error("bad name", "coordinator:\n  listen: tcp://*:1\nhosts:\n  - name: 'a b'\n", 4, "hosts[0].name",
                 "not a valid host name");
    expect_error("unknown host key", HEAD "    roles: [client]\n    cpus: 1\n", 10, "unknown key 'hosts[1].cpus'",
                 "cores");
    expect_error("bad address", HEAD "    roles: [client]\n    address2: x\n", 10, "hosts[1].address2", NULL);
    expect_error("no roles", HEAD, 7, "hosts[1].roles", "missing");
    expect_error("unknown role", HEAD "    roles: [client, server]\n", 9, "hosts[1].roles", "unknown role 'server'");
    expect_error("role twice", HEAD "    roles: client,client\n", 9, "hosts[1].roles", "twice");
    expect_error("bad cores", HEAD "    roles: [client]\n    cores: 64-x\n", 10, "hosts[1].cores", "CPU list");
    expect_error("cores without client", HEAD "    roles: [orchestrator]\n    cores: 1\n", 10, "hosts[1].cores",
                 "client role");
    expect_error("bad memory", HEAD "    roles: [client]\n    memory: 16GB\n", 10, "hosts[1].memory",
                 "not a memory size");
    expect_error("memory 0", HEAD "    roles: [client]\n    memory: 0\n", 10, "hosts[1].memory", NULL);
    expect_error("recipes without orchestrator", HEAD "    roles: [client]\n    recipes: [pg]\n", 10,
                 "hosts[1].recipes", "orchestrator role");
    expect_error("bad recipe", HEAD "    roles: [orchestrator, client]\n    recipes: [pg, ../x]\n", 10,
                 "hosts[1].recipes[1]", "recipe name");
    expect_error("recipes scalar", HEAD "    roles: [orchestrator, client]\n    recipes: pg\n", 10, "hosts[1].recipes",
                 "'all'");
    expect_error("bad port", HEAD "    roles: [client]\n    port: ssh\n", 10, "hosts[1].port", "1..65535");
    expect_error("bad user", HEAD "    roles: [client]\n    user: Root\n", 10, "hosts[1].user", "not a user");
    expect_error("duplicate name", HEAD "    roles: [client]\n  - name: db1\n    address: x\n    roles: [client]\n",
                 10, "duplicate host name 'db1'", "line 7");
    expect_error("same address", HEAD "    roles: [client]\n  - name: db2\n    address: 10.0.0.11\n    roles: [client]\n", 11,
                 "hosts[2].address", "same address as 'db1'");
    expect_error("two coordinators", HEAD "    roles: [coordinator, client]\n", 7, "second coordinator", "line 4");
    expect_error("no coordinator",
                 "coordinator:\n  listen: tcp://*:1\nhosts:\n  - name: a\n    address: x\n    roles: [client]\n", 3,
                 "no host has the coordinator role", NULL);
    expect_error("no client", HEAD "    roles: [orchestrator]\n", 3, "no host has the client role", NULL);
    expect_error("duplicate key", HEAD "    roles: [client]\n    roles: [client]\n", 10, "duplicate key 'roles'",
                 NULL);
    expect_error("control character", HEAD "    roles: [client]\n    memory: \"1G\\n\"\n", 10, "hosts[1].memory",
                 "control characters");
}

static void test_load(void) {
    char dir[] = "/tmp/vb-test-inventory.XXXXXX";
    if (!ok(mkdtemp(dir) != NULL, "load: a temporary directory")) return;
    char path[256], recipes[300], file[400];
    snprintf(path, sizeof path, "%s/inv.yml", dir);
    FILE *f = fopen(path, "w");
    fputs(HEAD "    roles: [orchestrator, client]\n    recipes: [pg, maria]\n", f);
    fclose(f);
    vb_inventory *inv = NULL;
    vb_error err = {0};
    ok(vb_inventory_load(path, &inv, &err) == VB_OK, "load: reads the file");
    char want[512];
    snprintf(want, sizeof want, "%s/keys", dir);
    is_str(inv ? inv->keys_dir : "", want, "load: keys resolved against the file's directory");
    is_str(inv ? inv->source : "", path, "load: the source is the path as given");

    snprintf(recipes, sizeof recipes, "%s/engines", dir);
    mkdir(recipes, 0755);
    snprintf(file, sizeof file, "%s/pg.yml", recipes);
    fclose(fopen(file, "w"));
    ok(inv && vb_inventory_check_recipes(inv, recipes, &err) == VB_ERROR, "recipes: a missing recipe is an error");
    snprintf(want, sizeof want, "%s:10: key 'hosts[1].recipes[1]': no engine recipe 'maria'", path);
    contains(err.message, want, "recipes: the message names file, line, key and recipe");
    snprintf(file, sizeof file, "%s/maria.yml", recipes);
    fclose(fopen(file, "w"));
    ok(inv && vb_inventory_check_recipes(inv, recipes, &err) == VB_OK, "recipes: all present");
    vb_inventory_destroy(&inv);

    ok(vb_inventory_load("/nonexistent/inv.yml", &inv, &err) == VB_ERROR && inv == NULL, "load: a missing file");
    contains(err.message, "/nonexistent/inv.yml: No such file", "load: the message names the file");

    unlink(file);
    snprintf(file, sizeof file, "%s/pg.yml", recipes);
    unlink(file);
    rmdir(recipes);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    test_valid();
    test_errors();
    test_load();
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
