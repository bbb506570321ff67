#!/usr/bin/env bash
# Every fuzz target (tests/fuzz/) replays its committed corpus once, without fuzzing: the seeds and each input
# that once crashed a decoder (the bug-* files) must run clean under AddressSanitizer and UndefinedBehavior-
# Sanitizer, with the targets' own invariants. Builds the targets in build-fuzz/ (make fuzz-targets) first.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# clang's libFuzzer runtime: installed here when missing (as root); the test skips only when it cannot be had.
probe() {
    printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
        >"$SCRATCH/probe.c"
    clang -fsanitize=fuzzer "$SCRATCH/probe.c" -o "$SCRATCH/probe" >"$SCRATCH/probe.log" 2>&1
}
if ! probe; then
    [ "$(id -u)" -eq 0 ] && bash "$ROOT/deploy/install-deps" --with-fuzz >"$SCRATCH/deps.log" 2>&1
    if ! probe; then
        echo "1..0 # SKIP clang cannot link -fsanitize=fuzzer and deploy/install-deps --with-fuzz could not" \
             "install it: $(tail -1 "$SCRATCH/probe.log" 2>/dev/null)"
        exit 0
    fi
fi

make -C "$ROOT" --no-print-directory -j2 fuzz-targets >"$SCRATCH/build.log" 2>&1
rc=$?
ok $rc "the fuzz targets build (make fuzz-targets)"
[ $rc -eq 0 ] || { sed 's/^/#   /' "$SCRATCH/build.log" | tail -20; done_testing; exit; }

# the targets' scratch directories (their own clean-up is skipped by a crash) go where lib.sh cleans up
export VB_FUZZ_TMP="$SCRATCH"
bugs=0
for src in "$ROOT"/tests/fuzz/fuzz_*.c; do
    t=$(basename "$src" .c)
    t=${t#fuzz_}
    files=("$ROOT/tests/fuzz/corpus/$t"/*)
    [ -e "${files[0]}" ]; ok $? "$t: has a committed corpus"
    [ -e "${files[0]}" ] || continue
    for f in "${files[@]}"; do case $(basename "$f") in bug-*) bugs=$((bugs + 1)) ;; esac; done
    (cd "$SCRATCH" && "$ROOT/build-fuzz/fuzz/$t" -timeout=10 "${files[@]}") >"$SCRATCH/$t.log" 2>&1
    rc=$?
    ok $rc "$t: ${#files[@]} corpus files run clean"
    if [ $rc -ne 0 ]; then
        sed -n 's/^Running: /#   while running /p' "$SCRATCH/$t.log" | tail -1
        grep -m3 'ERROR\|SUMMARY\|invariant failed' "$SCRATCH/$t.log" | sed 's/^/#   /'
    fi
done
[ "$bugs" -gt 0 ]; ok $? "the corpus keeps the inputs of fixed bugs ($bugs bug-* files)"
done_testing
