#!/usr/bin/env bash
# Every fuzz target (tests/fuzz/) replays its committed corpus once, without fuzzing: the seeds and each input
# that once crashed a decoder (the bug-* files) must run clean, with the targets' own invariants (FZ_CHECK).
. "$(dirname "$0")/../lib/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# The replay drivers are built with the unit tests (make unit: BUILD/fuzz-replay/NAME, tests/fuzz/replay.c), by the
# ordinary compiler; the clang + libFuzzer build is `make fuzz` / `make fuzz-corpus`'s, and `make asan-test`
# replays the corpus under AddressSanitizer and UndefinedBehaviorSanitizer.
REPLAY=$ROOT/${BUILD:-build}/fuzz-replay
missing=0
for src in "$ROOT"/tests/fuzz/fuzz_*.c; do
    t=$(basename "$src" .c)
    [ -x "$REPLAY/${t#fuzz_}" ] || missing=$((missing + 1))
done
is "$missing" 0 "every fuzz target has its replay driver in $REPLAY (make unit builds them)"

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
    (cd "$SCRATCH" && "$REPLAY/$t" -timeout=10 "${files[@]}") >"$SCRATCH/$t.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] && [ "$(grep -c '^Executed ' "$SCRATCH/$t.log")" -eq "${#files[@]}" ]
    ok $? "$t: ${#files[@]} corpus files run clean"
    if [ $rc -ne 0 ]; then
        sed -n 's/^Running: /#   while running /p' "$SCRATCH/$t.log" | tail -1
        grep -m3 'ERROR\|SUMMARY\|invariant failed' "$SCRATCH/$t.log" | sed 's/^/#   /'
    fi
done
[ "$bugs" -gt 0 ]; ok $? "the corpus keeps the inputs of fixed bugs ($bugs bug-* files)"
done_testing
