#!/usr/bin/env bash
# A server vbench did not start (no orchestrator, no recipe: a PostgreSQL + pgvector of the user's, here
# tests/lib/pg-server.sh) is SIGKILLed between two items and its own supervisor starts it again 6 s later.
# The items that come up meanwhile wait for it (up to 120 s) instead of failing in a burst: before, every
# remaining item failed within a fraction of a second with "the database system is starting up" or "No such
# file" on the socket (found by the soak, docs/reliability.md). The campaign completes, each item once, and
# the table the build made is used again (no reload).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/pg-server.sh"
pgdir=$SCRATCH/pg
vb_pg_boot "$pgdir" wait-pw
pg_again() { # the postmaster again on the same data directory (no initdb), as a supervisor would
    local img uidgid
    img=$(vb_pg_image)
    uidgid=$(awk -F: '$1 == "postgres" {print $3 ":" $4}' "$img/etc/passwd")
    unshare --mount --propagation private sh -c "mount --bind '$pgdir' '$img/var/lib/vbench' &&
        exec chroot $img setpriv --reuid=${uidgid%:*} --regid=${uidgid#*:} --clear-groups $VB_PG_BIN/postgres \
             -D /var/lib/vbench/data -c listen_addresses= -c unix_socket_directories=/var/lib/vbench \
             -c shared_buffers=256MB -c fsync=off -c max_connections=100" >>"$pgdir/server.log" 2>&1 &
    VB_PG_PID=$!
}
db=$SCRATCH/wait.sqlite
cat >"$SCRATCH/wait.yml" <<YML
name: wait
k: 10
datasets: [{name: t, source: synthetic, rows: 5000, queries: 200, dim: 16, clusters: 8, metric: euclidean, seed: 4}]
engines:
  - {name: pgvector, host: $pgdir, user: postgres, password: wait-pw, dbname: postgres, m: 8, ef_construction: 32}
phases:
  build: {}
  recall_sweep: {ef_search: [10, 20, 40, 80], queries: 200}
  filtered: {selectivity: [0.1], queries: 50, ef_search: 40}
YML
# The kill comes between the build and the first sweep point, at a moment the campaign cannot outrun: the agent
# stops itself (VBENCH_AGENT_FAULT=stop-after-final:1, SIGSTOP) once the build's Done is on disk and before it is
# sent; the server is killed while it is stopped, then it goes on (SIGCONT), and every item after the build starts
# while the server is down or recovering. (Before, the kill followed a poll of build_result, and a fast agent had
# finished two sweep points by then: once in a whole make test, 2da3027.)
VBENCH_AGENT_FAULT=stop-after-final:1 "$VBENCH" run --profile "$SCRATCH/wait.yml" --out "$db" --quiet 2>"$SCRATCH/run.txt" &
run=$!
agent=
wait_until 60 vb_agent_stopped "$run"
stopped=$?
swept=$(q "$db" "SELECT COUNT(*) FROM sweep_result")
kill -9 "$VB_PG_PID"; wait "$VB_PG_PID" 2>/dev/null
[ -n "$agent" ] && kill -CONT "$agent"
[ "$stopped" -eq 0 ] && ! kill -0 "$VB_PG_PID" 2>/dev/null && [ "${swept:-9}" -eq 0 ]
ok $? "the server is SIGKILLed between the build and the first sweep point (agent stopped: $((1 - stopped)), sweep points done: $swept)"
sleep 6
pg_again
pg_up() { vb_pg_psql 'SELECT 1' >/dev/null; }
wait_until 30 pg_up
ok $? "its supervisor starts it again 6 s later on the same data directory"
wait $run
rc=$?
failed=$(q "$db" "SELECT COUNT(*) FROM plan WHERE status = 'failed'")
# The item that was running when the server died may fail (its queries were cut); none after it.
[ "$failed" -le 1 ]; ok $? "at most the item running at the kill failed ($failed failed; exit $rc)"
q "$db" "SELECT key || ': ' || error FROM plan WHERE status = 'failed'" | sed 's/^/#   /'
like "$(q "$db" "SELECT group_concat(message, ' | ') FROM event")" "the server cannot be reached" \
     "an item waited for the server and said so"
if [ "$failed" -gt 0 ]; then "$VBENCH" resume --out "$db" --retry-failed --quiet 2>>"$SCRATCH/run.txt"; fi
is "$(q "$db" "SELECT status FROM campaign")" "finished" "the campaign completes"
is "$(q "$db" "SELECT COUNT(*) || ' ' || COUNT(DISTINCT item_key) FROM sweep_result")" "4 4" "each sweep point once"
is "$(q "$db" "SELECT COUNT(*) FROM filtered_result")" "1" "the filtered point once"
is "$(q "$db" "SELECT COUNT(*) FROM build_result")" "1" "one build"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE message LIKE '%rebuilding it untimed%'")" "0" \
   "the restarted server's table was attached, not loaded again"
done_testing
