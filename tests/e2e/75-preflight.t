#!/usr/bin/env bash
# The preflight (issue 16): a campaign whose server data would not fit on the disk is refused before any item
# runs, with the numbers in the message, and nothing is created; `vbench run --check` prints the same checks and
# the runtime estimate and creates nothing; a --cpus naming a CPU that is not online is refused up front.
# The results (and so the servers' data directories, FILE.d/servers/ENGINE) go to a 64 MiB tmpfs (root only).
# A resume without --data-dir checks the servers' data directory the campaign uses (issue 28): the --data-dir its
# run recorded (manifest campaign.data_dir; here on the tmpfs, remounted read-only: refused, naming it), else
# FILE.d beside the results, and says which it checked. Before: it checked FILE.d whatever the run had used.
. "$(dirname "$0")/../lib/lib.sh"

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

# A resume without --data-dir: the campaign's recorded data directory is the one checked.
killed_in_windows() { # killed_in_windows DB [--data-dir DIR]: a run of tests/profiles/data-dir.yml SIGKILLed in its first window
    local db=$1; shift
    "$VBENCH" run --profile "$(dirname "$0")/../profiles/data-dir.yml" --out "$db" "$@" --quiet 2>>"$SCRATCH/dd.txt" &
    local pid=$!
    wait_sql "$db" "SELECT COUNT(*) FROM plan WHERE status = 'running' AND phase = 'concurrency'" 1 60
    local rc=$?
    kill -9 $pid
    wait $pid 2>/dev/null
    return $rc
}
db=$SCRATCH/dd.sqlite
killed_in_windows "$db" --data-dir "$MNT/data"
ok $? "a campaign run with --data-dir on the tmpfs is killed in its windows"
is "$(q "$db" "SELECT value FROM manifest WHERE key = 'campaign.data_dir'")" "$MNT/data" "the results keep its data directory"
mount -o remount,ro "$MNT"
ok $? "the tmpfs is read-only now"
out=$("$VBENCH" resume --out "$db" --quiet 2>&1); rc=$?
is "$rc" 2 "resume without --data-dir is refused: the campaign's data directory cannot be written"
like "$out" "preflight refused the campaign" "... by the preflight"
like "$out" "the servers' data directory $MNT/data (the campaign's, from the --data-dir of its run (manifest campaign.data_dir)): this process cannot write it (Read-only file system)" \
     "... which names the directory it checked, the recorded one, not FILE.d"
mount -o remount,rw "$MNT"
out=$("$VBENCH" resume --out "$db" 2>&1); rc=$?
is "$rc" 0 "writable again: the resume completes the campaign"
like "$out" "preflight: ok   the servers' data directory $MNT/data (the campaign's, from the --data-dir of its run (manifest campaign.data_dir)): writable, " \
     "it says which data directory it checked"
printf '%s\n' "$out" | grep "preflight: ok   the servers' data directory" | sed 's/^/# /'
printf '%s\n' "$out" | grep -q "data directory $MNT/data .*: writable, [0-9.]* [KMG]*i*B free"
ok $? "and its free space"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every item done"

db=$SCRATCH/dflt.sqlite
killed_in_windows "$db"
ok $? "a campaign run without --data-dir is killed in its windows"
out=$("$VBENCH" resume --out "$db" 2>&1); rc=$?
is "$rc" 0 "its resume completes it"
like "$out" "preflight: ok   the servers' data directory $db.d (the default, FILE.d beside the results): writable" \
     "and says it checked FILE.d"

# The client's memory (issue 29): what an embedded engine keeps in the client's own memory must fit the host; the
# memory-mapped corpus need not (before, a 5M x 768 campaign of the null engine, which keeps nothing per row, was
# refused as "corpus 14.3 GiB + graph 15.2 GiB"). A synthetic corpus a quarter larger than this host's memory:
mem_kib=$(awk '/^MemTotal/ {print $2}' /proc/meminfo)   # kB: mawk's printf %d stops at 2^31 - 1
rows=$((mem_kib * 1024 / 256 * 5 / 4))
cat >"$SCRATCH/huge.yml" <<YML
name: huge
datasets:
  - {name: synth-huge, source: synthetic, rows: $rows, queries: 100, dim: 64, metric: euclidean}
engines:
  - {name: "null"}
  - {name: exact}
  - {name: hnswlib, m: 16}
phases:
  build: {}
YML
out=$("$VBENCH" run --check --profile "$SCRATCH/huge.yml" --out "$SCRATCH/huge.sqlite" 2>&1)
like "$out" "preflight: ok   dataset synth-huge: $rows x 64" "the preflight ran on a corpus of $rows x 64 (larger than memory)"
! grep -q "memory: null" <<<"$out"; ok $? "null keeps nothing per row: a corpus larger than memory is no memory failure for it"
like "$out" "FAIL memory: exact on synth-huge keeps about" "exact's private copy of a corpus larger than memory is refused"
like "$out" "(its private copy of the rows) in the client's own memory, more than this host's" "naming what it keeps"
like "$out" "FAIL memory: hnswlib on synth-huge keeps about" "and so is hnswlib's graph"
like "$out" "(its graph, with a copy of each vector) in the client's own memory" "each engine names what it keeps (client_keeps)"
[ ! -e "$SCRATCH/huge.sqlite" ]; ok $? "and --check created nothing"
done_testing
