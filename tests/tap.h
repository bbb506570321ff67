/* A minimal TAP producer for the unit test programs; prove(1) runs them and prints the summary.
 * Each check prints "ok N - name" or "not ok N - name" with the failing values on a '#' line. */
#ifndef VB_TESTS_TAP_H
#define VB_TESTS_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tap_n, tap_failed;

#define ok(cond, ...) tap_ok_((cond) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...) tap_is_int_((long long)(got), (long long)(want), __FILE__, __LINE__, __VA_ARGS__)
#define is_double(got, want, tol, ...) tap_is_double_((double)(got), (double)(want), (double)(tol), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...) tap_is_str_((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define contains(hay, needle, ...) tap_contains_((hay), (needle), __FILE__, __LINE__, __VA_ARGS__)

static inline int tap_ok_(int pass, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static inline int tap_ok_(int pass, const char *file, int line, const char *fmt, ...) {
    char name[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    tap_n++;
    printf("%sok %d - %s\n", pass ? "" : "not ", tap_n, name);
    /* A failing check marked "# TODO reason" is a known defect, not a failure (TAP): said, not counted. */
    if (!pass && !strstr(name, "# TODO")) {
        tap_failed++;
        printf("#   failed at %s:%d\n", file, line);
        /* The digest tests/run-suite prints before prove's summary (see tests/lib/lib.sh, fail_log). */
        const char *log = getenv("VB_FAIL_LOG");
        FILE *f = log ? fopen(log, "a") : NULL;
        char exe[4096];
        ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[len > 0 ? len : 0] = '\0';
        const char *prog = strrchr(exe, '/'), *base = strrchr(file, '/');
        if (f) {
            fprintf(f, "%s\tnot ok %d - %s (%s:%d)\n", prog ? prog + 1 : "?", tap_n, name, base ? base + 1 : file, line);
            fclose(f);
        }
    }
    fflush(stdout);
    return pass;
}
/* A formatted test name for is_int, is_double, is_str and contains, which print their name as given: four rotating
 * buffers, so one call may format up to four names. */
static inline const char *nm(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline const char *nm(const char *fmt, ...) {
    static char buf[4][1200];
    static int next;
    char *b = buf[next++ % 4];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof buf[0], fmt, ap);
    va_end(ap);
    return b;
}
#define TAP_DIAG_(...) (printf("#   " __VA_ARGS__), printf("\n"))
static inline int tap_is_int_(long long got, long long want, const char *file, int line, const char *name, ...) {
    int pass = tap_ok_(got == want, file, line, "%s", name);
    if (!pass) TAP_DIAG_("got %lld, want %lld", got, want);
    return pass;
}
static inline int tap_is_double_(double got, double want, double tol, const char *file, int line, const char *name, ...) {
    int pass = tap_ok_(fabs(got - want) <= tol, file, line, "%s", name);
    if (!pass) TAP_DIAG_("got %.9g, want %.9g (tolerance %g)", got, want, tol);
    return pass;
}
static inline int tap_is_str_(const char *got, const char *want, const char *file, int line, const char *name, ...) {
    int pass = tap_ok_(got && want && strcmp(got, want) == 0, file, line, "%s", name);
    if (!pass) TAP_DIAG_("got \"%s\", want \"%s\"", got ? got : "(null)", want ? want : "(null)");
    return pass;
}
static inline int tap_contains_(const char *hay, const char *needle, const char *file, int line, const char *name, ...) {
    int pass = tap_ok_(hay && needle && strstr(hay, needle) != NULL, file, line, "%s", name);
    if (!pass) TAP_DIAG_("\"%s\" does not contain \"%s\"", hay ? hay : "(null)", needle ? needle : "(null)");
    return pass;
}
/* A check that cannot run here: "ok N # SKIP why". Where every test is required (VB_REQUIRED=1, set by make test
 * through tests/run-suite as root with systemd and debootstrap: tests/required-here) it is a failure naming why.
 * Either way one line in $VB_SKIP_LOG, which make test counts by reason (as tests/lib/lib.sh's skip). */
#define tap_skip(...) tap_skip_(__FILE__, __LINE__, __VA_ARGS__)
static inline void tap_skip_(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void tap_skip_(const char *file, int line, const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    const char *req = getenv("VB_REQUIRED"), *log = getenv("VB_SKIP_LOG"), *base = strrchr(file, '/');
    int required = req && strcmp(req, "1") == 0;
    FILE *f = log && *log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "%.*s\t%s\t%s\n", (int)strcspn(base ? base + 1 : file, "."), base ? base + 1 : file,
                required ? "required" : "skip", why);
        fclose(f);
    }
    if (required)
        tap_ok_(0, file, line, "required here (root, systemd, debootstrap: tests/required-here), but skipped: %s", why);
    else
        printf("ok %d # SKIP %s\n", ++tap_n, why);
    fflush(stdout);
}
/* Prints the plan line at the end and returns the exit status for main(). */
static inline int done_testing(void) {
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
