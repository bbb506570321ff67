#!/usr/bin/env bash
# The soak campaign (`make soak`, not part of `make test`): a pgvector campaign of SOAK_MINUTES (default 30) on
# three "hosts" (tests/lib/hosts.sh: network namespaces, CURVE over TCP) with a fault every FAULT_EVERY_S
# (default 180 s), in turn: coordinator SIGKILL, client agent SIGKILL, PostgreSQL postmaster SIGKILL, the client
# host's link cut for 10 s, client agent SIGSTOPped for 30 s. The script is the supervisor a host would have
# (systemd's Restart=): a coordinator that died is resumed (`vbench resume`, with --retry-failed once the
# campaign ended with failed items), an agent that died is started again, a server that died is started again
# on its data directory. Every minute it samples VmRSS (/proc/PID/status) and the open file descriptors
# (/proc/PID/fd) of the coordinator and both agents, prints the table, and ends with the checks: the campaign
# finished, every plan item done, every result exactly once (COUNT per item_key), and for each process that
# lived through at least SOAK_MIN_SAMPLES samples, its last sample at most SOAK_RSS_MARGIN_KB (default 8192) kB
# RSS above its first sample after the warm-up (its second sample), and its descriptors at most SOAK_FD_MARGIN
# (default 4) above that sample among the samples taken while the same workload ran (the phase and client count
# of the running item): a client agent holds one connection per client, so its descriptors follow the client
# count by design; a leak grows within one workload. The coordinator also records its own memory every minute
# (limits.footprint_every_s: 60, coordinator/footprint.h): its heap less SQLite's page cache (which fills up to
# its cache_size as the results database grows) may not grow by more than 1 MB in any coordinator process.
# Output is TAP (the checks) with the table as comments; exit 0 only when every check passed.
#
#   SOAK_MINUTES=30 FAULT_EVERY_S=180 bash tests/soak/soak.sh      (root: network namespaces, chroot)
#   The database, samples.tsv, faults.txt and the logs are copied to SOAK_OUT (default results.db/soak).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib/lib.sh"
need python3 sqlite3
. "$ROOT/tests/lib/pg-server.sh"
. "$ROOT/tests/lib/hosts.sh"
SOAK_MINUTES=${SOAK_MINUTES:-30}
FAULT_EVERY_S=${FAULT_EVERY_S:-180}
FIRST_FAULT_S=${FIRST_FAULT_S:-$((FAULT_EVERY_S * 3 / 4))}
SAMPLE_EVERY_S=${SAMPLE_EVERY_S:-60}
SOAK_MIN_SAMPLES=${SOAK_MIN_SAMPLES:-5}
SOAK_RSS_MARGIN_KB=${SOAK_RSS_MARGIN_KB:-8192}
SOAK_FD_MARGIN=${SOAK_FD_MARGIN:-4}
WINDOW_S=${SOAK_WINDOW_S:-15}
SOAK_OUT=${SOAK_OUT:-$ROOT/results.db/soak}
LOG=$SCRATCH/soak.log
say() { echo "# $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }

vb_ensure_image db-trixie
reason=$(vb_pg_skip_reason)
if [ -n "$reason" ]; then echo "1..0 # SKIP $reason"; exit 0; fi
hosts_up
ok $? "three hosts: coord, bench and orch"
hosts_keys bench orch
ok $? "keys and allow-list"

# --- the server, and restarting it on its data directory (no initdb) as a supervisor would --------------------
pgdir=$SCRATCH/pg
vb_pg_start "$pgdir" soak-pw
ok $? "PostgreSQL + pgvector starts"
vb_pg_psql "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
pg_restart() { # the image's postmaster again on the same data directory (a start while the killed one's backends
    # still hold its shared memory fails: the supervisor tries again a second later)
    local img uidgid i
    img=$(vb_pg_image)
    uidgid=$(awk -F: '$1 == "postgres" {print $3 ":" $4}' "$img/etc/passwd")
    unshare --mount --propagation private sh -c "mount --bind '$pgdir' '$img/var/lib/vbench' &&
        exec chroot $img setpriv --reuid=${uidgid%:*} --regid=${uidgid#*:} --clear-groups $VB_PG_BIN/postgres \
             -D /var/lib/vbench/data -c listen_addresses= -c unix_socket_directories=/var/lib/vbench \
             -c shared_buffers=256MB -c fsync=off -c max_connections=100" >>"$pgdir/server.log" 2>&1 &
    VB_PG_PID=$!
    for i in $(seq 1 300); do
        vb_pg_psql 'SELECT 1' >/dev/null 2>&1 && return 0
        kill -0 "$VB_PG_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
trap 'vb_pg_stop; hosts_cleanup' EXIT

# --- the profile: sized so that the measurements alone take about SOAK_MINUTES --------------------------------
# 3 client counts x REPEATS windows of WINDOW_S measure for SOAK_MINUTES by themselves, on any machine; the
# gaps between windows (about 2 s), build, sweep, filtered, churn and the reruns after faults come on top.
repeats=$(( (SOAK_MINUTES * 60 + 3 * WINDOW_S - 1) / (3 * WINDOW_S) ))
[ "$repeats" -ge 1 ] || repeats=1
db=$SCRATCH/soak.sqlite
cat >"$SCRATCH/soak.yml" <<YML
name: soak
k: 10
datasets:
  - name: synth-30k
    source: synthetic
    rows: 30000
    queries: 1000
    dim: 64
    clusters: 32
    metric: euclidean
    seed: 5
engines:
  - name: pgvector
    host: $pgdir
    user: postgres
    password: soak-pw
    dbname: postgres
    m: 16
    ef_construction: 64
phases:
  build: {}
  recall_sweep: {ef_search: [10, 20, 40, 80, 160], queries: 500}
  concurrency: {clients: [1, 2, 4], window_s: $WINDOW_S, repeats: $repeats, warmup_s: 1, ef_search: 40}
  filtered: {selectivity: [0.1, 0.01], queries: 200, ef_search: 40}
  churn: {fraction: 0.1, limit_s: 1200, queries: 200, insert_batch: 50}
limits:
  agent_silent_s: 5
  max_attempts: 5
  footprint_every_s: 60
YML
say "profile: $repeats repeats of 3 windows of ${WINDOW_S} s; a fault every ${FAULT_EVERY_S} s from ${FIRST_FAULT_S} s; load $(cut -d' ' -f1-3 /proc/loadavg)"

# --- the processes and their supervisor ---------------------------------------------------------------------------
resumes=0; agent_starts=0; server_restarts=0; retry_failed=0
start_coordinator() { # run the first time, resume after
    if [ -e "$db" ]; then
        local extra=
        [ "$(q "$db" "SELECT status FROM campaign")" = finished ] && return 0
        [ "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status = 'failed'")" -gt 0 ] &&
            [ "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status NOT IN ('done', 'failed')")" = 0 ] &&
            { extra=--retry-failed; retry_failed=$((retry_failed + 1)); }
        coordinator resume --out "$db" $extra 2>>"$SCRATCH/coord.txt" &
        resumes=$((resumes + 1))
    else
        coordinator run --profile "$SCRATCH/soak.yml" --out "$db" 2>>"$SCRATCH/coord.txt" &
    fi
    coord=$!
}
start_bench() { agent bench bench 2>>"$SCRATCH/bench.txt" & bench=$!; agent_starts=$((agent_starts + 1)); }
start_orch() { agent orch orch --roles orchestrator 2>>"$SCRATCH/orch.txt" & orch=$!; }
coord=; bench=; orch=; coord_rc=
supervise() { # what Restart= does: anything that exited is started again, until the campaign is finished
    if [ -n "$coord" ] && ! kill -0 "$coord" 2>/dev/null; then
        wait "$coord" 2>/dev/null; coord_rc=$?; coord=
        say "coordinator exited ($coord_rc); campaign $(q "$db" "SELECT status FROM campaign" 2>/dev/null)"
    fi
    finished && return 0
    [ -n "$coord" ] || start_coordinator
    if ! kill -0 "$VB_PG_PID" 2>/dev/null; then
        wait "$VB_PG_PID" 2>/dev/null
        pg_restart; say "server restarted ($?), pid $VB_PG_PID"; server_restarts=$((server_restarts + 1))
    fi
    if [ -n "$bench" ] && ! kill -0 "$bench" 2>/dev/null; then wait "$bench" 2>/dev/null; bench=; fi
    if [ -n "$orch" ] && ! kill -0 "$orch" 2>/dev/null; then wait "$orch" 2>/dev/null; orch=; fi
    [ -n "$bench" ] || start_bench
    [ -n "$orch" ] || start_orch
    HOST_PIDS="$coord $bench $orch"
}
finished() { [ -e "$db" ] && [ "$(q "$db" "SELECT status FROM campaign" 2>/dev/null)" = finished ] && [ -z "$coord" ]; }

# --- the sampler ------------------------------------------------------------------------------------------------------
printf 'minute\trole\tpid\trss_kb\tfds\tsockets\tworkload\n' >"$SCRATCH/samples.tsv"
sample() { # sample MINUTE: one row per live process, with the workload running then (phase, client count)
    local role pid rss fds socks work
    work=$(q "$db" "SELECT phase || ' ' || COALESCE(NULLIF(substr(key, instr(key, 'clients=')), key), '')
                    FROM plan WHERE status = 'running' LIMIT 1" 2>/dev/null | sed 's/,repeat=[0-9]*//')
    for role in coordinator bench orch; do
        case $role in coordinator) pid=$coord ;; bench) pid=$bench ;; orch) pid=$orch ;; esac
        [ -n "$pid" ] && [ -r "/proc/$pid/status" ] || continue
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
        socks=$(ls -l "/proc/$pid/fd" 2>/dev/null | grep -c 'socket:')
        [ -n "$rss" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$role" "$pid" "$rss" "$fds" "$socks" "${work:--}" \
            >>"$SCRATCH/samples.tsv"
    done
}

# --- the faults -------------------------------------------------------------------------------------------------------
FAULTS=(coordinator-kill agent-kill server-kill link-cut agent-stop)
declare -A fault_count=()
fault() { # fault NAME: inject it now (the link cut and the stop block for their 10 s / 30 s)
    local what=$1 running
    running=$(q "$db" "SELECT group_concat(key, ' ') FROM plan WHERE status = 'running'" 2>/dev/null)
    say "fault $what (running: ${running:-nothing}); load $(cut -d' ' -f1-3 /proc/loadavg)"
    fault_count[$what]=$(( ${fault_count[$what]:-0} + 1 ))
    echo "$(date -u +%H:%M:%S) $what ${running:-}" >>"$SCRATCH/faults.txt"
    case $what in
        coordinator-kill) [ -n "$coord" ] && kill -9 "$coord" ;;
        agent-kill) [ -n "$bench" ] && kill -9 "$bench" ;;
        server-kill) kill -9 "$VB_PG_PID" ;;
        link-cut) link_down; sleep 10; link_up ;;
        agent-stop) [ -n "$bench" ] && { kill -STOP "$bench"; sleep 30; kill -CONT "$bench"; } ;;
    esac
}

t0=$(date +%s)
supervise
next_fault=$((t0 + FIRST_FAULT_S)); next_sample=$t0; minute=0; nf=0
deadline=$((t0 + SOAK_MINUTES * 60 * 3))   # a campaign three times its size is a failure, not a soak
while ! finished; do
    now=$(date +%s)
    if [ "$now" -ge "$deadline" ]; then say "deadline passed: stopping"; break; fi
    if [ "$now" -ge "$next_sample" ]; then sample "$minute"; minute=$((minute + 1)); next_sample=$((next_sample + SAMPLE_EVERY_S)); fi
    if [ "$now" -ge "$next_fault" ] && [ "$(q "$db" "SELECT status FROM campaign" 2>/dev/null)" = running ]; then
        fault "${FAULTS[$((nf % ${#FAULTS[@]}))]}"; nf=$((nf + 1)); next_fault=$(($(date +%s) + FAULT_EVERY_S))
    fi
    supervise
    sleep 1
done
elapsed=$(($(date +%s) - t0))
for p in $bench $orch; do wait_pid "$p" 30; done
HOST_PIDS=

# --- the report and the checks ---------------------------------------------------------------------------------------
say "elapsed $((elapsed / 60)) min $((elapsed % 60)) s; $nf faults; $resumes resumes ($retry_failed with --retry-failed), $agent_starts client agent starts, $server_restarts server restarts"
echo "# faults (UTC, what, items running):"; sed 's/^/#   /' "$SCRATCH/faults.txt" 2>/dev/null
echo "# samples (every ${SAMPLE_EVERY_S} s):"
python3 - "$SCRATCH/samples.tsv" <<'PY' | sed 's/^/# /'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
mins = sorted({int(r['minute']) for r in rows})
cell = {(int(r['minute']), r['role']): r for r in rows}
print('| minute | running | coordinator pid | RSS kB | fds | client agent pid | RSS kB | fds (sockets) | orchestrator agent pid | RSS kB | fds |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for m in mins:
    work = next((cell[(m, ro)]['workload'] for ro in ('coordinator', 'bench', 'orch') if (m, ro) in cell), '-')
    out = [str(m), work]
    for role in ('coordinator', 'bench', 'orch'):
        r = cell.get((m, role))
        fd = f"{r['fds']} ({r['sockets']})" if r and role == 'bench' else r['fds'] if r else '-'
        out += [r['pid'], r['rss_kb'], fd] if r else ['-', '-', '-']
    print('| ' + ' | '.join(out) + ' |')
PY
is "$(q "$db" "SELECT status FROM campaign")" "finished" "the campaign finished (after $((elapsed / 60)) min)"
[ "$elapsed" -ge $((SOAK_MINUTES * 60)) ]; ok $? "it ran at least $SOAK_MINUTES minutes ($elapsed s)"
for f in "${FAULTS[@]}"; do
    [ "${fault_count[$f]:-0}" -ge 1 ]; ok $? "fault $f injected ${fault_count[$f]:-0} times"
done
is "${coord_rc:-}" "0" "the last coordinator exited 0"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item is done"
is "$(q "$db" "SELECT COUNT(*) || ' ' || COUNT(DISTINCT item_key) FROM build_result")" "1 1" "one build result"
for ph in recall_sweep:sweep_result concurrency:window_result filtered:filtered_result; do
    is "$(q "$db" "SELECT COUNT(*) || ' ' || COUNT(DISTINCT item_key) FROM ${ph#*:}")" \
       "$(q "$db" "SELECT COUNT(*) || ' ' || COUNT(*) FROM plan WHERE phase = '${ph%%:*}'")" \
       "${ph%%:*}: each item's result exactly once (COUNT = COUNT DISTINCT item_key = plan items)"
done
is "$(q "$db" "SELECT COUNT(*) FROM (SELECT item_key FROM window_result GROUP BY item_key HAVING COUNT(*) > 1)")" "0" \
   "no window has two result rows"
is "$(q "$db" "SELECT group_concat(stage || '=' || n, ' ') FROM (SELECT stage, COUNT(*) AS n FROM churn_result WHERE stage IN ('before', 'delete', 'maintain', 'after') GROUP BY stage ORDER BY stage)")" \
   "after=1 before=1 delete=1 maintain=1" "churn: before, delete, maintain and after once each"
is "$(q "$db" "SELECT (rows_done = rows_planned) || ' ' || completed FROM v_churn")" "1 1" "churn: every planned row reinserted once"
q "$db" "SELECT 'attempts>1: ' || key || ' (' || attempts || ')' FROM plan WHERE attempts > 1" | sed 's/^/#   /'
# Growth: per process instance (a restarted process starts afresh; its first sample is the warm-up). RSS: its
# last sample against its second. Descriptors: within each workload it saw (a client agent keeps one connection
# per client, so a step from 2 to 4 clients is 2 descriptors more by design), the last sample of that workload
# against its first after the warm-up; and the descriptors that are not sockets over the whole life.
python3 - "$SCRATCH/samples.tsv" "$SOAK_MIN_SAMPLES" "$SOAK_RSS_MARGIN_KB" "$SOAK_FD_MARGIN" >"$SCRATCH/growth.txt" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
nmin, rss_m, fd_m = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
by = {}
for r in rows:
    by.setdefault((r['role'], r['pid']), []).append(r)
for (role, pid), s in by.items():
    if len(s) < nmin:
        print(f"skip {role} pid {pid}: {len(s)} samples")
        continue
    a, b = s[1], s[-1]
    drss = int(b['rss_kb']) - int(a['rss_kb'])
    dfile = (int(b['fds']) - int(b['sockets'])) - (int(a['fds']) - int(a['sockets']))
    work = {}
    for x in s[1:]:
        work.setdefault(x['workload'], []).append(int(x['fds']))
    dwork, wmax = 0, '-'
    for w, f in work.items():
        if f[-1] - f[0] > dwork or wmax == '-':
            dwork, wmax = f[-1] - f[0], w
    good = drss <= rss_m and dwork <= fd_m and dfile <= fd_m
    print(f"{'ok' if good else 'GROWS'} {role} pid {pid}: {len(s)} samples, RSS {a['rss_kb']} -> {b['rss_kb']} kB "
          f"({drss:+d}), fds {a['fds']} -> {b['fds']} (not sockets {dfile:+d}; within one workload at most "
          f"{dwork:+d}, {wmax}), max RSS {max(int(x['rss_kb']) for x in s)} kB")
PY
sed 's/^/#   /' "$SCRATCH/growth.txt"
# The coordinator's own account (its "footprint" events, every 60 s): RSS follows the heap, and the heap grows as
# SQLite's page cache fills with the growing results database, up to its cache_size; what is not SQLite's must
# stay flat. Per coordinator process: the heap less SQLite's part, last event against its second.
q "$db" "SELECT at, message FROM event WHERE kind = 'footprint' ORDER BY id" >"$SCRATCH/footprint.txt"
python3 - "$SCRATCH/footprint.txt" "$SOAK_MIN_SAMPLES" >"$SCRATCH/footprint-growth.txt" <<'PY'
import re, sys
rows = []
for line in open(sys.argv[1]):
    at, _, msg = line.rstrip('\n').partition('|')
    w = dict(re.findall(r'(\w+)=(\d+)', msg))
    if 'pid' in w:
        rows.append((at, {k: int(v) for k, v in w.items()}))
by = {}
for at, w in rows:
    by.setdefault(w['pid'], []).append(w)
for pid, s in by.items():
    if len(s) < int(sys.argv[2]):
        print(f"skip coordinator pid {pid}: {len(s)} footprint events")
        continue
    a, b = s[1], s[-1]
    other = (b['heap_kb'] - b['sqlite_kb']) - (a['heap_kb'] - a['sqlite_kb'])
    print(f"{'ok' if other <= 1024 else 'GROWS'} coordinator pid {pid}: {len(s)} events; heap {a['heap_kb']} -> "
          f"{b['heap_kb']} kB, SQLite {a['sqlite_kb']} -> {b['sqlite_kb']} kB (cache limit {b['sqlite_cache_max_kb']} kB, "
          f"database {a['db_kb']} -> {b['db_kb']} kB), the rest {other:+d} kB; RSS {a['rss_kb']} -> {b['rss_kb']} kB")
PY
sed 's/^/#   /' "$SCRATCH/footprint-growth.txt"
grep -q '^ok coordinator' "$SCRATCH/footprint-growth.txt" && ! grep -q '^GROWS' "$SCRATCH/footprint-growth.txt"
ok $? "the coordinator's heap less SQLite's page cache did not grow by more than 1 MB in any process (footprint events)"
grep -q '^ok coordinator' "$SCRATCH/growth.txt"; ok $? "a coordinator lived $SOAK_MIN_SAMPLES+ samples and did not grow"
grep -q '^ok bench' "$SCRATCH/growth.txt"; ok $? "a client agent lived $SOAK_MIN_SAMPLES+ samples and did not grow"
grep -q '^ok orch' "$SCRATCH/growth.txt"; ok $? "the orchestrator agent did not grow"
! grep -q '^GROWS' "$SCRATCH/growth.txt"; ok $? "no process grew by more than $SOAK_RSS_MARGIN_KB kB RSS or $SOAK_FD_MARGIN fds (within one workload)"
tbl=$(vb_pg_psql "SELECT tablename FROM pg_tables WHERE tablename LIKE 'vb_%' LIMIT 1" 2>/dev/null)
is "$(vb_pg_psql "SELECT COUNT(*) || ' ' || COUNT(DISTINCT id) FROM $tbl" 2>/dev/null || echo '?')" "30000 30000" \
   "the server's table $tbl holds the 30,000 rows once each (churn reinserted every deleted row once)"
say "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$SOAK_OUT" && cp "$db" "$LOG" "$SCRATCH/samples.tsv" "$SCRATCH/faults.txt" "$SCRATCH/growth.txt" \
    "$SCRATCH/coord.txt" "$SCRATCH/bench.txt" "$SCRATCH/soak.yml" "$SCRATCH/footprint-growth.txt" "$SOAK_OUT/" 2>/dev/null && echo "# kept in $SOAK_OUT"
done_testing
