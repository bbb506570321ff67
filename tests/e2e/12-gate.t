#!/usr/bin/env bash
# The test gate (tests/run-suite, tests/required-here, lib.sh skip / skip_all / vb_ensure_image, tap.h tap_skip):
# a skip is a TAP skip where the suite is not required, a failure naming its cause where it is; the line before
# prove's summary counts the skips by reason and prove's "Result:" stays last. Then, as root, the run that must
# not be green: every server test that needs the engine image db-trixie, with the image's recipe pointing at a
# mirror that cannot be reached (a scratch recipe directory and cache, VBENCH_IMAGE_RECIPES / VBENCH_IMAGE_CACHE):
# the suite FAILS, and the count line names each server test that did not run and why.
. "$(dirname "$0")/../lib/lib.sh"
need prove
ROOT=$VB_ROOT

# Three tiny tests: one skips a check, one skips as a whole, one passes.
mk() { printf '#!/usr/bin/env bash\n. %q/tests/lib/lib.sh\n%s\ndone_testing\n' "$ROOT" "$2" >"$SCRATCH/t/$1"; chmod +x "$SCRATCH/t/$1"; }
mkdir -p "$SCRATCH/t"
mk a-check.t 'ok 0 "a check that runs"; skip "no frobnicator here"'
mk b-whole.t 'skip_all "no frobnicator here"'
mk c-pass.t 'is "$(echo x)" x "a check that passes"'
suite() { VB_REQUIRED=$1 VB_SKIP_LOG="$SCRATCH/skips.$1" VB_FAIL_LOG= bash "$SCRATCH/t/$2" 2>/dev/null; }

out=$(suite 0 a-check.t); rc=$?
is "$rc" 0 "not required: a skipped check leaves the test passing"
like "$out" "ok 2 # SKIP no frobnicator here" "... shown as a TAP skip with its reason"
out=$(suite 0 b-whole.t); rc=$?
is "$rc:$out" "0:1..0 # SKIP no frobnicator here" "not required: skip_all is the plan 1..0 # SKIP and exit 0"
out=$(suite 1 a-check.t); rc=$?
is "$rc" 1 "required: a skipped check fails the test"
like "$out" "not ok 2 - required here (root, systemd, debootstrap: tests/required-here), but skipped: no frobnicator here" \
     "... naming the cause"
out=$(suite 1 b-whole.t); rc=$?
is "$rc:$out" "1:not ok 1 - required here (root, systemd, debootstrap: tests/required-here), but skipped: no frobnicator here
1..1" "required: skip_all fails the test with one check that names the cause"
is "$(cat "$SCRATCH/skips.1")" "a-check.t	required	no frobnicator here
b-whole.t	required	no frobnicator here" "each skip is a line of the skip log: file, kind, reason"

# The runner's count line, just before prove's summary.
if [ "$VB_REQUIRED" = 1 ]; then
    out=$(bash "$ROOT/tests/run-suite" "$SCRATCH"/t/*.t 2>/dev/null); rc=$?
    is "$rc" 1 "tests/run-suite, required here: the two skips fail the run"
    is "$(printf '%s\n' "$out" | tail -1)" "Result: FAIL" "prove's result is the last line"
    like "$(printf '%s\n' "$out" | grep -B1 '^Test Summary Report')" \
         "skips: 0; REQUIRED here but not run: 2 - no frobnicator here: 2 (a-check.t b-whole.t)" \
         "the count line, just before prove's summary, names the skips that were required and their tests"
else
    out=$(bash "$ROOT/tests/run-suite" "$SCRATCH"/t/*.t 2>/dev/null); rc=$?
    is "$rc" 0 "tests/run-suite, not required here: skips leave the run passing"
    is "$(printf '%s\n' "$out" | tail -1)" "Result: PASS" "prove's result is the last line"
    like "$(printf '%s\n' "$out" | grep -B1 '^All tests successful')" \
         "skips: 2 (not required here: $(bash "$ROOT/tests/required-here")) - no frobnicator here: 2 (a-check.t b-whole.t)" \
         "the count line, just before prove's summary, counts the skips by reason with their tests"
fi
out=$(bash "$ROOT/tests/run-suite" "$SCRATCH/t/c-pass.t" 2>/dev/null)
like "$(printf '%s\n' "$out" | tail -4 | head -1)" "skips: none" "no skip: the count line says none"
# The slowest files, each beside its budget (tests/budget.txt, or VB_BUDGET), and a line naming every file over 1.5
# times its budget (c-pass.t's 0 s), or saying none was (100 s).
printf '# file seconds\nc-pass.t 0\n' >"$SCRATCH/budget"
out=$(VB_BUDGET="$SCRATCH/budget" bash "$ROOT/tests/run-suite" --timer "$SCRATCH/t/c-pass.t" 2>/dev/null)
like "$out" "c-pass.t  (budget 0 s)" "--timer: the slowest files, each with its budget"
like "$out" "OVER BUDGET (more than 1.5 times $SCRATCH/budget): c-pass.t " "... a file over 1.5 times its budget is named"
# With tests/lib/cpu-exec as prove's --exec (make test's), each line has the file's CPU-seconds and the heading the
# suite's: a file that burns a tenth of a second in a child shows at least that much.
printf '#!/usr/bin/env bash\necho 1..1\ni=0; while [ $i -lt 200000 ]; do i=$((i + 1)); done\necho ok 1\n' >"$SCRATCH/t/d-busy.t"
chmod +x "$SCRATCH/t/d-busy.t"
out=$(VB_BUDGET="$SCRATCH/budget" bash "$ROOT/tests/run-suite" --exec "bash $ROOT/tests/lib/cpu-exec" --timer \
      "$SCRATCH/t/d-busy.t" 2>/dev/null)
cpu=$(printf '%s\n' "$out" | sed -n 's/.*d-busy\.t  \([0-9.]*\) CPU-s.*/\1/p')
ok "$(awk -v c="${cpu:-0}" 'BEGIN { print (c >= 0.1) ? 0 : 1 }')" "--exec tests/lib/cpu-exec: the file's CPU-seconds beside its wall seconds (${cpu:-none}; its loop of 200,000 steps in bash)"
like "$out" "CPU-s):" "... and the suite's CPU-seconds in the heading"
printf '* 100\n' >"$SCRATCH/budget"
out=$(VB_BUDGET="$SCRATCH/budget" bash "$ROOT/tests/run-suite" --timer "$SCRATCH/t/c-pass.t" 2>/dev/null)
like "$out" "budget: no file took more than 1.5 times its budget ($SCRATCH/budget)" "... and none, when none is (the * budget)"

# --- the engine image cannot be built: the server tests fail, the suite fails and says which did not run ---------
[ "$(id -u)" -eq 0 ] || skip_all "the image build part needs root (deploy/image-build)"
mkdir -p "$SCRATCH/recipes" "$SCRATCH/images"
sed 's|^@mirror .*|@mirror http://127.0.0.1:9/debian|' "$ROOT/deploy/images/db-trixie.list" >"$SCRATCH/recipes/db-trixie.list"
grep -q '^@mirror http://127.0.0.1:9/debian$' "$SCRATCH/recipes/db-trixie.list"
ok $? "a db-trixie recipe whose mirror cannot be reached (127.0.0.1:9), in a scratch recipe directory"
servers=$(cd "$ROOT" && grep -l '^\(vb_ensure_image db-trixie\|vb_ns_servers_boot\|vb_pg_boot\|mdb_boot\)' tests/e2e/*.t | grep -v '61-engine-builds\|64-valkey\|63-conformance')
[ "$(echo "$servers" | wc -w)" -ge 4 ]
ok $? "the server tests that need db-trixie: $(echo $servers | sed 's|tests/e2e/||g')"
t0=$(date +%s)
out=$(cd "$ROOT" && VBENCH_IMAGE_RECIPES="$SCRATCH/recipes" VBENCH_IMAGE_CACHE="$SCRATCH/images" \
      bash tests/run-suite -j2 $servers 2>"$SCRATCH/suite.err"); rc=$?
is "$rc" 1 "the suite fails ($(($(date +%s) - t0)) s)"
is "$(printf '%s\n' "$out" | tail -1)" "Result: FAIL" "... prove's result, last"
count=$(printf '%s\n' "$out" | grep '^skips: ')
n=$(echo "$servers" | wc -w)
like "$count" "REQUIRED here but not run: $n - the engine image db-trixie could not be built: $n (" \
     "the count line says that $n required server tests did not run, and why"
missing=
for t in $servers; do
    case "$count" in *"$(basename "$t")"*) ;; *) missing="$missing $t" ;; esac
done
is_empty "$missing" "... and names each of them"
like "$(cat "$SCRATCH/suite.err")" "the engine image db-trixie could not be built, so this test cannot run" \
     "each failing test says why on stderr (what prove shows)"
like "$(cat "$SCRATCH/suite.err")" "127.0.0.1" "... with the build's own words about the mirror"
[ -z "$(ls -A "$SCRATCH/images" | grep -v '\.log$\|\.lock$')" ]
ok $? "no image was left in the scratch cache"
done_testing
