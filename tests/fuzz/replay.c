/* Corpus replay without libFuzzer: a main() that feeds each file named on the command line, once, to the fuzz
 * target's LLVMFuzzerTestOneInput (after LLVMFuzzerInitialize where the target has one).
 *
 * Why: `make test` replays the committed corpus as a regression test. Building the targets with clang and
 * libFuzzer for that costs a second build of the whole library; linked with this driver, each target is built
 * by the ordinary compiler with the unit tests (build/fuzz-replay/NAME) and checks the same inputs with the
 * same invariants (FZ_CHECK aborts). Under `make asan-test` the same drivers are built with AddressSanitizer
 * and UndefinedBehaviorSanitizer; `make fuzz` / `make fuzz-corpus` keep the clang + libFuzzer build.
 *
 * Usage: NAME [-timeout=SECONDS] FILE...   Prints "Running: FILE" before and "Executed FILE" after each input
 * (as libFuzzer does, so tests/fuzz/run.sh and the e2e test read either log); an input that takes longer than
 * the timeout (default 10 s) ends the run with exit 70. Exit 0 when every input ran; a crash is the target's
 * own abort or signal. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static const char *current = "";

static void on_timeout(int sig) {
    (void)sig;
    static const char msg[] = "ERROR: replay: timeout while running ";
    if (write(2, msg, sizeof msg - 1) < 0 || write(2, current, strlen(current)) < 0 || write(2, "\n", 1) < 0) {
    }
    _exit(70);
}

/* The whole file in a malloc'd buffer of exactly its size (as libFuzzer passes it, so a read past the end is a
 * heap overflow under AddressSanitizer). */
static uint8_t *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0, got;
    uint8_t *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n < cap) continue;
        uint8_t *more = realloc(buf, cap * 2);
        if (!more) free(buf);
        buf = more;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return NULL;
    }
    uint8_t *exact = malloc(n ? n : 1);
    if (exact) memcpy(exact, buf, n);
    free(buf);
    *size = n;
    return exact;
}

int main(int argc, char **argv) {
    unsigned timeout = 10;
    int first = 1;
    if (first < argc && strncmp(argv[first], "-timeout=", 9) == 0) timeout = (unsigned)atoi(argv[first++] + 9);
    if (first >= argc) {
        fprintf(stderr, "usage: %s [-timeout=SECONDS] FILE...: replays each file once through the fuzz target\n",
                argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    signal(SIGALRM, on_timeout);
    for (int i = first; i < argc; i++) {
        size_t size = 0;
        uint8_t *data = read_all(argv[i], &size);
        if (!data) {
            fprintf(stderr, "ERROR: replay: cannot read %s\n", argv[i]);
            return 1;
        }
        current = argv[i];
        fprintf(stderr, "Running: %s\n", argv[i]);
        alarm(timeout);
        LLVMFuzzerTestOneInput(data, size);
        alarm(0);
        fprintf(stderr, "Executed %s in %zu bytes\n", argv[i], size);
        free(data);
    }
    return 0;
}
