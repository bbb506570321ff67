#!/usr/bin/env bash
# The preflight (issue 16): a campaign whose server data would not fit on the disk is refused before any item
# runs, with the numbers in the message, and nothing is created; `vbench run --check` prints the same checks and
# the runtime estimate and creates nothing; a --cpus naming a CPU that is not online is refused up front.
# The results (and so the servers' data directories, FILE.d/servers/ENGINE) go to a 64 MiB tmpfs (root only).
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then skip_all "needs root to mount a tmpfs"; fi
need sqlite3
MNT="$SCRATCH/small"
mkdir -p "$MNT"
trap 'umount -l "$MNT" 2>/dev/null; rm -rf "$SCRATCH"' EXIT
mount -t tmpfs -o size=64m tmpfs "$MNT" || skip_all "cannot mount a tmpfs here"

cat >"$SCRATCH/big.yml" <<'YML'
name: big
datasets:
  - name: synth-big
    source: synthetic
    rows: 200000
    queries: 100
    dim: 128
    metric: euclidean
engines:
  - name: pgvector
    recipe: pgvector
    m: 16
phases:
  build: {}
YML

out=$("$VBENCH" run --profile "$SCRATCH/big.yml" --out "$MNT/big.sqlite" --quiet 2>&1); rc=$?
is "$rc" 2 "a campaign whose server data does not fit is refused (exit 2)"
like "$out" "preflight refused the campaign" "the message says the preflight refused it"
like "$out" "disk $MNT: 64 MiB free, the campaign needs 1.3 GiB there" "the message names the file system and its free space"
like "$out" "server data of pgvector for synth-big (200000 rows x" "the message gives the rows and bytes per row"
like "$out" "--out DIR/FILE.sqlite" "the message says what to do"
[ ! -e "$MNT/big.sqlite" ] && [ ! -e "$MNT/big.sqlite.d" ]; ok $? "no results database and no work directory were created"
is "$(ls -A "$MNT" | wc -l)" 0 "the tmpfs is untouched"

out=$("$VBENCH" run --profile "$SCRATCH/big.yml" --out "$MNT/big.sqlite" --check 2>&1); rc=$?
is "$rc" 1 "run --check exits 1 when a check fails"
like "$out" "preflight: FAIL disk $MNT" "run --check prints the failing disk check"
like "$out" "estimate: pgvector ~" "run --check prints the runtime estimate per engine"
like "$out" "| total ~" "... and in total"
is "$(ls -A "$MNT" | wc -l)" 0 "run --check created nothing"

out=$("$VBENCH" run --profile dev --out "$SCRATCH/dev.sqlite" --check 2>&1); rc=$?
is "$rc" 0 "run --check of dev on a roomy disk passes"
like "$out" "preflight: every check passed" "it says every check passed"
[ ! -e "$SCRATCH/dev.sqlite" ] && [ ! -e "$SCRATCH/cache/history.sqlite" ]; ok $? "run --check created no database"

bad=$(($(nproc --all) + 7))
out=$("$VBENCH" run --profile dev --out "$SCRATCH/cpus.sqlite" --cpus "0,$bad" --quiet 2>&1); rc=$?
is "$rc" 2 "a --cpus naming a CPU that is not online is refused"
like "$out" "--cpus \"0,$bad\" names CPUs this host does not have online ($bad)" "the message names the CPU"
[ ! -e "$SCRATCH/cpus.sqlite" ]; ok $? "... before the database is created"
done_testing
