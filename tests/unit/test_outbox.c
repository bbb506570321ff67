/* Self-test of agent/outbox: what is put survives a close and a reopen in the order it was put; an ack removes
 * it for good; a replaced key keeps one entry; unfinished writes are dropped; every kind of damaged file is
 * moved aside and reported by name, never loaded and never fatal; a second process cannot share the outbox. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/outbox.h"
#include "tests/tap.h"

static char tmp[64];
static char reports[4096];
static int n_reports;

static void on_report(void *arg, const char *path, const char *why) {
    (void)arg;
    n_reports++;
    snprintf(reports + strlen(reports), sizeof reports - strlen(reports), "%s: %s\n", path, why);
}

static size_t count_files(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name), s = strlen(suffix);
        if (e->d_name[0] != '.' && l >= s && strcmp(e->d_name + l - s, suffix) == 0) n++;
    }
    closedir(d);
    return n;
}

static int write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(data, 1, len, f);
    return fclose(f);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static vb_outbox *reopen(vb_outbox **o, const char *dir) {
    vb_outbox_close(o);
    vb_error err;
    *o = vb_outbox_open(dir, 0, on_report, NULL, &err);
    if (!*o) printf("#   reopen: %s\n", err.message);
    return *o;
}

int main(void) {
    snprintf(tmp, sizeof tmp, "/tmp/vb-outbox-XXXXXX");
    if (!mkdtemp(tmp)) return 1;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/outbox/agent-1", tmp);
    vb_error err;

    vb_outbox *o = vb_outbox_open(dir, 0, on_report, NULL, &err);
    ok(o != NULL, "open creates the directory and its parents");
    struct stat st;
    ok(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "the directory is mode 0700");
    is_int(vb_outbox_count(o), 0, "a new outbox is empty");

    /* put, in an order that is not the keys' order */
    const char *keys[] = {"k/zeta#window", "k/alpha#window", "k/mid#final", "k/beta#sweep"};
    for (int i = 0; i < 4; i++) {
        char body[64];
        int n = snprintf(body, sizeof body, "body of %s", keys[i]);
        ok(vb_outbox_put(o, keys[i], body, (size_t)n, &err) == VB_OK, "put %s", keys[i]);
    }
    is_int(count_files(dir, ".pb"), 4, "one file per entry");
    char name[32], path[512];
    vb_outbox_file_name(keys[0], name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ok(access(path, F_OK) == 0, "the file is named after the key's hash (%s)", name);
    is_int(count_files(dir, ""), 4, "no temporary file left behind");

    ok(reopen(&o, dir) != NULL, "reopen");
    is_int(vb_outbox_count(o), 4, "all four entries come back");
    int order_ok = 1;
    for (int i = 0; i < 4; i++) order_ok &= vb_outbox_key(o, (size_t)i) && strcmp(vb_outbox_key(o, (size_t)i), keys[i]) == 0;
    ok(order_ok, "in the order they were put");
    size_t len = 0;
    const char *data = vb_outbox_data(o, 1, &len);
    ok(data && len == strlen("body of k/alpha#window") && memcmp(data, "body of k/alpha#window", len) == 0,
       "with their bodies intact");

    /* ack */
    is_int(vb_outbox_ack(o, "k/alpha#window"), 1, "ack removes an entry");
    is_int(vb_outbox_ack(o, "k/alpha#window"), 0, "a second ack finds nothing");
    is_int(count_files(dir, ".pb"), 3, "... and its file");

    /* replace: same key, new body, moves to the end */
    ok(vb_outbox_put(o, "k/zeta#window", "second", 6, &err) == VB_OK, "put a key again");
    is_int(vb_outbox_count(o), 3, "a replaced key stays one entry");
    ok(reopen(&o, dir) != NULL, "reopen after the replacement");
    is_str(vb_outbox_key(o, 2), "k/zeta#window", "the replaced entry is now last");
    data = vb_outbox_data(o, 2, &len);
    ok(data && len == 6 && memcmp(data, "second", 6) == 0, "with the new body");
    is_int(n_reports, 0, "nothing reported so far");

    /* puts after a reopen continue the sequence */
    ok(vb_outbox_put(o, "k/new#x", "n", 1, &err) == VB_OK, "put after reopen");
    ok(reopen(&o, dir) != NULL, "reopen");
    is_str(vb_outbox_key(o, vb_outbox_count(o) - 1), "k/new#x", "an entry put after a reopen comes after the older ones");

    /* damage: a truncated file, a flipped byte, garbage, an empty file, an unfinished write */
    vb_outbox_file_name("k/mid#final", name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    long size = file_size(path);
    ok(size > 40 && truncate(path, size - 3) == 0, "truncate %s", name);
    char flipped[32];
    vb_outbox_file_name("k/beta#sweep", flipped, sizeof flipped);
    snprintf(path, sizeof path, "%s/%s", dir, flipped);
    int fd = open(path, O_RDWR);
    unsigned char b = 0;
    ok(fd >= 0 && pread(fd, &b, 1, 40) == 1, "read a byte past the header of %s", flipped);
    b ^= 0x20;
    ok(pwrite(fd, &b, 1, 40) == 1, "flip it");
    close(fd);
    snprintf(path, sizeof path, "%s/0123456789abcdef.pb", dir);
    write_bytes(path, "this is not an outbox file at all, just some text", 49);
    snprintf(path, sizeof path, "%s/fedcba9876543210.pb", dir);
    write_bytes(path, "", 0);
    snprintf(path, sizeof path, "%s/.tmp-aaaaaaaaaaaaaaaa.pb", dir);
    write_bytes(path, "VBOUTBOX half written", 21);

    n_reports = 0;
    reports[0] = '\0';
    ok(reopen(&o, dir) != NULL, "an outbox with damaged files opens");
    is_int(vb_outbox_count(o), 2, "only the two sound entries are loaded");
    is_int(n_reports, 4, "each of the four damaged files is reported");
    contains(reports, "truncated", "a truncated file is reported as truncated");
    contains(reports, "checksum mismatch", "a flipped byte is a checksum mismatch");
    contains(reports, "bad magic", "garbage is not an outbox file");
    contains(reports, "truncated header", "an empty file has a truncated header");
    char cdir[300];
    snprintf(cdir, sizeof cdir, "%s/corrupt/%s", dir, name);
    contains(reports, cdir, "the report names where the file went");
    snprintf(cdir, sizeof cdir, "%s/corrupt", dir);
    is_int(count_files(cdir, ".pb"), 4, "the damaged files are kept in corrupt/ for a person to look at");
    is_int(count_files(dir, ".pb"), 2, "and are gone from the outbox");
    snprintf(path, sizeof path, "%s/.tmp-aaaaaaaaaaaaaaaa.pb", dir);
    ok(access(path, F_OK) != 0, "an unfinished write is removed");
    n_reports = 0;
    ok(reopen(&o, dir) != NULL, "reopen once more");
    is_int(n_reports, 0, "nothing is reported twice");

    /* set aside on request (a body the agent cannot decode) */
    ok(vb_outbox_set_aside(o, "k/new#x", "not a vbench.Envelope"), "set aside an entry");
    is_int(vb_outbox_count(o), 1, "it leaves the outbox");
    contains(reports, "not a vbench.Envelope", "and is reported with the caller's reason");

    /* a second process with the same directory waits, then refuses */
    pid_t child = fork();
    if (child == 0) {
        vb_error e2;
        vb_outbox *o2 = vb_outbox_open(dir, 200, NULL, NULL, &e2);
        if (o2) _exit(0);
        _exit(strstr(e2.message, "in use by another agent") ? 3 : 4);
    }
    int status = 0;
    waitpid(child, &status, 0);
    is_int(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 3, "a second process cannot open the same outbox");
    vb_outbox_close(&o);
    child = fork();
    if (child == 0) {
        vb_error e2;
        vb_outbox *o2 = vb_outbox_open(dir, 200, NULL, NULL, &e2);
        int rc = o2 && vb_outbox_count(o2) == 1 ? 0 : 4;
        vb_outbox_close(&o2);
        _exit(rc);
    }
    waitpid(child, &status, 0);
    is_int(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0, "once closed, another process opens it");

    o = vb_outbox_open(dir, 0, NULL, NULL, &err);
    ok(o && vb_outbox_put(o, "", "x", 1, &err) != VB_OK, "an empty key is refused");
    vb_outbox_close(&o);
    vb_outbox_close(&o);   /* closing twice is harmless */

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) printf("# could not remove %s\n", tmp);
    return done_testing();
}
