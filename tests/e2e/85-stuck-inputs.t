#!/usr/bin/env bash
# Nothing waits forever (issue 11), on real processes in local mode:
#   a FIFO given as a .fvecs dataset: refused by name at once (opened without blocking, regular files only)
#   a SIGSTOPped local agent: marked lost after limits.agent_silent_s, SIGKILLed and started again; the campaign
#   completes with every window once
#   SIGINT, and SIGTERM, to the coordinator during a window: coordinator and agent gone within 20 s, the campaign
#   `interrupted`, and `vbench resume` completes it; SIGTERM also with its agent stopped (SIGSTOP), which before
#   the fix held the coordinator in waitpid forever
. "$(dirname "$0")/../lib/lib.sh"

for tool in sqlite3 pgrep mkfifo; do
    command -v $tool >/dev/null || skip_all "$tool is not installed (deploy/install-deps)"
done

# waits up to $2 tenths of a second for PID $1 to end; returns 0 when it did
gone_within() { for _ in $(seq 1 "$2"); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done; return 1; }

# ---- a FIFO as the dataset ----
mkfifo "$SCRATCH/base.fvecs" "$SCRATCH/queries.fvecs"
cat >"$SCRATCH/fifo.yml" <<YML
name: fifo
datasets:
  - name: piped
    source: fvecs
    path: $SCRATCH/base.fvecs
    queries_path: $SCRATCH/queries.fvecs
    metric: euclidean
engines:
  - name: hnswlib
phases:
  build: {}
  recall_sweep: {ef_search: [10]}
YML
"$VBENCH" run --profile "$SCRATCH/fifo.yml" --out "$SCRATCH/fifo.sqlite" --quiet 2>"$SCRATCH/fifo.err" &
pid=$!
if gone_within $pid 300; then
    ok 0 "FIFO dataset: the campaign ends within 30 s (no hang on the open)"
    wait $pid
    is "$?" "1" "FIFO dataset: exit 1 (the build failed, the rest skipped)"
else
    ok 1 "FIFO dataset: the campaign ends within 30 s (no hang on the open)"
    kill -9 $pid $(pgrep -P $pid) 2>/dev/null
    wait $pid 2>/dev/null
fi
err=$(q "$SCRATCH/fifo.sqlite" "SELECT error FROM plan WHERE phase = 'build'")
like "$err" "$SCRATCH/base.fvecs is a FIFO (named pipe): a dataset file must be a regular file" \
     "FIFO dataset: refused by name, saying why"
is "$(q "$SCRATCH/fifo.sqlite" "SELECT status FROM plan WHERE phase = 'recall_sweep'")" "skipped" \
   "FIFO dataset: the sweep is skipped"
ok $(pgrep -f "vbench-agent.*$SCRATCH/fifo" >/dev/null; [ $? -ne 0 ]; echo $?) "FIFO dataset: no agent left behind"

# ---- the campaign of the other cases ----
# The windows run an open loop at 200 queries/s: this file checks faults, not throughput, and a closed loop kept
# both cores busy for every window (CPU the whole suite paid for, issue 40).
cat >"$SCRATCH/p.yml" <<'YML'
name: stuck
datasets:
  - name: synth-stuck
    source: synthetic
    rows: 4000
    queries: 100
    dim: 16
    clusters: 8
    metric: euclidean
    seed: 4
engines:
  - name: hnswlib
    m: 8
    ef_construction: 32
phases:
  build: {}
  concurrency: {clients: [1, 2, 3], window_s: 2, repeats: 1, warmup_s: 0.1, ef_search: 20, mode: open, target_rate: 200}
limits:
  agent_silent_s: 5
YML

# start NAME: runs the campaign in the background (PID, DB, AGENT) and waits until its first window runs, then half
# a second into it (its 2 s window, after the 0.1 s warm-up: each case signals there; the windows were 3 s and the
# wait 1 s, about 16 s more of closed-loop windows over the five runs of the file)
start() {
    DB="$SCRATCH/$1.sqlite"
    "$VBENCH" run --profile "$SCRATCH/p.yml" --out "$DB" --quiet 2>"$SCRATCH/$1.err" &
    PID=$!
    local n
    for _ in $(seq 1 600); do
        n=$(q "$DB" "SELECT COUNT(*) FROM plan WHERE phase = 'concurrency' AND status = 'running'" 2>/dev/null || echo 0)
        [ "${n:-0}" -ge 1 ] && break
        sleep 0.1
    done
    sleep 0.5
    AGENT=$(pgrep -P "$PID" -x vbench-agent)
}

# complete NAME: resume completes the campaign with every item done and every result once
complete() {
    "$VBENCH" resume --out "$DB" --quiet 2>"$SCRATCH/$1.resume"
    local rc=$?
    is "$rc" "0" "$1: resume completes the campaign (exit 0)"
    [ "$rc" -eq 0 ] || { tail -15 "$SCRATCH/$1.resume"; q "$DB" "SELECT kind || ': ' || message FROM event ORDER BY id DESC LIMIT 8"; } | sed 's/^/#   /'

    is "$(q "$DB" "SELECT status FROM campaign")" "finished" "$1: finished"
    is "$(q "$DB" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "$1: every plan item is done"
    is "$(q "$DB" "SELECT COUNT(*) || ' ' || COUNT(DISTINCT item_key) FROM window_result")" "3 3" \
       "$1: each window recorded once"
}

# ---- a SIGSTOPped local agent ----
start sigstop
ok $([ -n "$AGENT" ]; echo $?) "sigstop: the local agent runs ($AGENT)"
kill -STOP $AGENT
if gone_within $PID 900; then
    wait $PID
    rc=$?
    ok 0 "sigstop: the campaign ends by itself"
    is "$rc" "0" "sigstop: the campaign completes (exit 0)"
    like "$(q "$DB" "SELECT group_concat(message, ' | ') FROM event")" "local agent local-client (pid $AGENT) is lost: killed" \
         "sigstop: the stopped agent was killed, saying so"
    is "$(q "$DB" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "sigstop: every plan item is done"
    is "$(q "$DB" "SELECT COUNT(*) || ' ' || COUNT(DISTINCT item_key) FROM window_result")" "3 3" \
       "sigstop: each window recorded once"
else
    ok 1 "sigstop: the campaign ends by itself (within 90 s)"
    kill -9 $PID $AGENT 2>/dev/null
    wait $PID 2>/dev/null
fi
ok $(kill -0 $AGENT 2>/dev/null; [ $? -ne 0 ]; echo $?) "sigstop: the stopped agent is gone"

# ---- signals to the coordinator ----
for sig in INT TERM TERM-stopped-agent; do
    name=sig$sig
    start $name
    [ "$sig" = TERM-stopped-agent ] && kill -STOP $AGENT
    kill -${sig%%-*} $PID
    if gone_within $PID 200; then
        wait $PID
        rc=$?
        ok 0 "$name: the coordinator ends within 20 s"
        is "$rc" "2" "$name: exit 2 (interrupted)"
    else
        ok 1 "$name: the coordinator ends within 20 s"
        kill -9 $PID 2>/dev/null
        wait $PID 2>/dev/null
    fi
    if gone_within $AGENT 50; then ok 0 "$name: its agent is gone too"; else ok 1 "$name: its agent is gone too"; kill -9 $AGENT; fi
    is "$(q "$DB" "SELECT status FROM campaign")" "interrupted" "$name: the campaign is interrupted"
    complete $name
done

done_testing
