#!/usr/bin/env bash
# A pgvector COPY into a server that stops reading is bounded by the phase's timeout (issue 28): a real
# PostgreSQL 17 + pgvector (tests/lib/pg-server.sh) over its Unix socket, the postmaster and its backends
# SIGSTOPped while the build's COPY streams rows. A Unix socket has no TCP timeouts and libpq's blocking write
# waits without a bound for a full socket to drain; the rows are now written in nonblocking mode, every write
# waiting with poll() up to io_timeout_s (limits.phase_timeout_s). The load fails at the bound, and the agent
# answers the coordinator's Abort (sent at the phase timeout) itself: it is not stuck (limits.abort_unanswered_s is
# set far beyond this test's patience), and the embedded engine's build after it runs on the same agent. Before:
# the loader thread sat in PQputCopyData until SIGCONT, the agent never answered, nothing ran for 600 s.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/pg-server.sh"
stopped=
trap '[ -n "$stopped" ] && kill -CONT $stopped 2>/dev/null; kill -9 $run 2>/dev/null; vb_pg_stop; rm -rf "$SCRATCH"' EXIT
TIMEOUT=8

vb_pg_boot "$SCRATCH/pg" copy-pw
db=$SCRATCH/copy.sqlite
# 300,000 x 64 rows in COPYs of 50,000 rows (some 15 MB each): a COPY is streaming most of the load's time.
cat >"$SCRATCH/copy.yml" <<YML
name: copy-timeout
datasets:
  - {name: synth, source: synthetic, rows: 300000, queries: 20, dim: 64, clusters: 16, metric: euclidean, seed: 7}
engines:
  - name: pgvector
    host: $SCRATCH/pg
    user: postgres
    password: copy-pw
    dbname: postgres
    m: 8
    ef_construction: 16
  - name: exact
phases:
  build: {load_connections: 1, load_batch: 50000}
limits: {phase_timeout_s: $TIMEOUT, abort_unanswered_s: 600, max_attempts: 1}
YML
"$VBENCH" run --profile "$SCRATCH/copy.yml" --out "$db" --quiet 2>"$SCRATCH/run.txt" &
run=$!
copying() { [ "$(vb_pg_psql "SELECT COUNT(*) FROM pg_stat_activity WHERE query LIKE 'COPY%' AND state = 'active'")" -ge 1 ]; }
wait_until 120 copying
ok $? "the build's COPY is streaming rows"
stopped="$VB_PG_PID $(pgrep -P "$VB_PG_PID" | tr '\n' ' ')"
kill -STOP $stopped
t0=$(date +%s)
wait_pid $run 120
took=$(($(date +%s) - t0))
echo "# the campaign ended ${took} s after the server was stopped (phase_timeout_s $TIMEOUT)"
is "$WAIT_RC" "1" "the campaign ends (exit 1: its build failed) while the server is still stopped"
[ "$took" -le $((3 * TIMEOUT + 10)) ]; ok $? "within a few phase timeouts of the stop (${took} s; the Abort bound is 600 s)"
is "$(q "$db" "SELECT engine || ':' || status FROM plan WHERE phase = 'build' ORDER BY seq" | tr '\n' ' ')" \
   "pgvector:failed exact:done " "the pgvector build failed; the embedded engine's build after it ran on the same agent"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE kind = 'agent_stuck'")" "0" "the agent answered: never stuck"
kill -CONT $stopped
stopped=
done_testing
