/* Self-test of the perf script folding (orchestrator/perf.c): a captured `perf script -F comm,tid,time,ip,sym,dso`
 * text (tests/unit/perf_script_fixture.txt: 8 samples of `perf record -F 99 -a -g` on this host, a MariaDB
 * bootstrap and the idle task) folded into collapsed stacks and its hottest functions; then the bytes of another
 * tool at their worst: malformed lines, frames without a sample, overlong lines and symbols, NULs, too many
 * frames, too many distinct stacks. The parser counts what it cannot read and never trusts it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/perf.h"
#include "tests/tap.h"

static char *slurp(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, fp);
    b[*len] = '\0';
    fclose(fp);
    return b;
}

static uint64_t count_of(const vb_perf_profile *p, const char *stack) {
    for (size_t i = 0; i < p->n_stacks; i++)
        if (strcmp(p->stacks[i], stack) == 0) return p->counts[i];
    return 0;
}

static int fold_str(const char *s, vb_perf_profile *p) {
    vb_error err;
    return vb_perf_fold(s, strlen(s), p, &err);
}

int main(void) {
    vb_error err;
    vb_perf_profile p;
    size_t len = 0;
    char *text = slurp("tests/unit/perf_script_fixture.txt", &len);
    ok(text != NULL, "the captured perf script text is readable");
    if (!text) return done_testing();
    is_int(vb_perf_fold(text, len, &p, &err), VB_OK, "the capture folds");
    is_int(p.samples, 8, "8 samples (6 mariadbd, 2 idle)");
    is_int(p.malformed, 0, "no malformed line in perf's own output");
    is_int(p.n_stacks, 7, "the two idle samples share one folded stack");
    is_int(count_of(&p, "swapper;common_startup_64;x86_64_start_kernel;__pfx_clear_bss;start_kernel;rest_init;"
                        "cpu_startup_entry;do_idle;cpuidle_enter;cpuidle_enter_state;default_enter_idle;default_idle;"
                        "pv_native_safe_halt"),
           2, "the idle stack: comm first, outermost to innermost, counted twice (comm right-aligned by perf)");
    is_int(count_of(&p, "mariadbd;__gconv_read_conf;mysqld_main;bootstrap;mysql_parse;mysql_execute_command;"
                        "mysql_create_view;[mariadbd];sql_create_definition_file;__vfscanf_internal;"
                        "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_rename;do_renameat2;vfs_rename;"
                        "ext4_rename;ext4_add_entry;ext4_dx_add_entry;add_dirent_to_buf;__ext4_mark_inode_dirty;"
                        "ext4_mark_iloc_dirty;__ext4_handle_dirty_metadata"),
           1, "a user and kernel stack, an unnamed frame named by its object ([mariadbd])");
    is_int(p.n_top, 6, "6 distinct functions on top of a stack");
    is_str(p.top[0].name, "[mariadbd]", "the hottest: the unnamed frames of mariadbd (ties by name)");
    is_int(p.top[0].samples, 2, "with 2 self samples");
    is_str(p.top[1].name, "pv_native_safe_halt", "then the idle halt");
    is_int(p.top[1].samples, 2, "with 2");
    char *folded = vb_perf_folded_text(&p);
    ok(folded && strncmp(folded, "swapper;common_startup_64;", 26) == 0, "the folded text starts with the largest stack");
    contains(folded ? folded : "", "pv_native_safe_halt 2\n", "each line ends with its count");
    size_t lines = 0;
    for (const char *q = folded ? folded : ""; *q; q++) lines += *q == '\n';
    is_int(lines, 7, "one line per folded stack");
    free(folded);
    vb_perf_profile_free(&p);
    free(text);

    /* malformed lines: counted, never a sample; the samples around them still fold */
    const char *bad = "\tffff frame_before_any_header (x)\n"
                      "no colon at the end 123 1.5\n"
                      "comm 12 notatime:\n"
                      "comm 1.2.3:\n"
                      ": \n"
                      "postgres 4242 1796221994.5:\n"
                      "\t  abc ExecScan (/usr/lib/postgresql/17/bin/postgres)\n"
                      "\t  zz-not-hex nothing\n"
                      "\t  abd standard_ExecutorRun (/usr/lib/postgresql/17/bin/postgres)\n"
                      "\n"
                      "postgres 4243 1796221994.6:\n"
                      "\t  100 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
                      "\t  101 a;b operator() (x) (/usr/lib/postgresql/17/lib/vector.so)\n"
                      "postgres 4243 1796221994.7:\n"
                      "\n\n";
    is_int(fold_str(bad, &p), VB_OK, "malformed input folds");
    is_int(p.samples, 3, "three well-formed samples, one without frames");
    is_int(p.malformed, 6, "six malformed lines counted (a frame before a header, four bad headers, a bad frame)");
    is_int(count_of(&p, "postgres;standard_ExecutorRun;ExecScan"), 1, "the bad frame inside a sample is skipped, its neighbours kept");
    is_int(count_of(&p, "postgres;a_b operator() (x);[libc.so.6]"), 1,
           "';' in a symbol becomes '_', a symbol holding parentheses keeps them, a frame without one is its object");
    is_int(count_of(&p, "postgres;[no stack]"), 1, "a sample without frames is kept as [no stack]");
    vb_perf_profile_free(&p);

    /* NULs, an overlong line, an overlong symbol, a header at the end without a newline */
    char nul[] = "postgres 1 1.5:\n\t 1 a\0b (x)\n\n";
    is_int(vb_perf_fold(nul, sizeof nul - 1, &p, &err), VB_OK, "a NUL in a line folds");
    is_int(p.malformed, 1, "the line with a NUL is malformed");
    is_int(p.samples, 1, "its sample is kept, without that frame");
    vb_perf_profile_free(&p);
    size_t big = VB_PERF_MAX_LINE * 2;
    char *longl = malloc(big + 1300);
    int o = snprintf(longl, 200, "postgres 1 1.5:\n\t 1 ");
    memset(longl + o, 'x', big);
    strcpy(longl + o + big, " (x)\n\t 2 ");
    o += (int)big + 9;
    memset(longl + o, 'y', 1000);
    strcpy(longl + o + 1000, " (x)\npostgres 2 2.5:");
    is_int(fold_str(longl, &p), VB_OK, "an overlong line folds");
    is_int(p.malformed, 1, "the line over VB_PERF_MAX_LINE is malformed");
    is_int(p.samples, 2, "the sample around it and the last header (no newline) are kept");
    ok(p.n_stacks >= 1 && strlen(p.top[0].name) <= VB_PERF_MAX_SYMBOL, "a 1000-byte symbol is cut at VB_PERF_MAX_SYMBOL");
    vb_perf_profile_free(&p);
    free(longl);

    /* more frames than kept, more stacks than kept */
    size_t cap = 64 + (VB_PERF_MAX_FRAMES + 50) * 32;
    char *deep = malloc(cap);
    o = snprintf(deep, cap, "postgres 1 1.5:\n");
    for (int i = 0; i < VB_PERF_MAX_FRAMES + 50; i++) o += snprintf(deep + o, cap - (size_t)o, "\t %x f%d (x)\n", i + 1, i);
    is_int(fold_str(deep, &p), VB_OK, "a stack deeper than VB_PERF_MAX_FRAMES folds");
    size_t semis = 0;
    for (const char *q = p.n_stacks ? p.stacks[0] : ""; *q; q++) semis += *q == ';';
    is_int(semis, VB_PERF_MAX_FRAMES, "its innermost VB_PERF_MAX_FRAMES frames are kept");
    is_str(p.top[0].name, "f0", "the leaf is the innermost frame");
    vb_perf_profile_free(&p);
    free(deep);
    size_t n = VB_PERF_MAX_STACKS + 100;
    char *many = malloc(n * 48 + 1);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) m += (size_t)sprintf(many + m, "p 1 1.5:\n\t 1 g%zu (x)\n\n", i);
    is_int(vb_perf_fold(many, m, &p, &err), VB_OK, "more distinct stacks than kept folds");
    is_int(p.n_stacks, VB_PERF_MAX_STACKS, "VB_PERF_MAX_STACKS stacks kept");
    is_int(p.dropped, 100, "the samples of the others are counted as dropped");
    vb_perf_profile_free(&p);
    free(many);

    /* found by tests/fuzz/fuzz_perf_script.c: a frame "addr ()" read past the line (bug-frame-empty-object) */
    char empty_obj[] = {'p', ' ', '1', ' ', '1', '.', '5', ':', '\n', '\t', '1', ' ', '(', ')'};
    is_int(vb_perf_fold(empty_obj, sizeof empty_obj, &p, &err), VB_OK, "a frame with an empty object name folds");
    is_int(count_of(&p, "p;[]"), 1, "named by its (empty) object, nothing read past the line");
    vb_perf_profile_free(&p);

    is_int(fold_str("", &p), VB_OK, "empty input folds");
    is_int(p.samples + p.n_top, 0, "to nothing");
    vb_perf_profile_free(&p);
    return done_testing();
}
