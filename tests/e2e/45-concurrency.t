#!/usr/bin/env bash
# The concurrency phase end to end, through the coordinator and a real agent process into SQLite, on the
# built-in "sleep" engine (a fixed, fully concurrent 1 ms service time): closed-loop windows of 1, 2 and 4
# clients must keep every client in a call (in flight ~ clients) and scale (efficiency ~ 1); an open-loop
# window at a rate well below capacity (8 clients at 125/s each: 1/8 busy, so queueing inside a client is rare)
# must achieve it with few late starts. `vbench show` prints both tables.
. "$(dirname "$0")/../lib/lib.sh"

profile() { # profile NAME CONCURRENCY-SECTION
    cat <<YML
name: $1
datasets:
  - {name: synth-2k, source: synthetic, rows: 2000, queries: 200, dim: 16, clusters: 8, metric: euclidean, seed: 3}
engines:
  - name: sleep
    service_us: 1000
phases:
  build:
  concurrency: $2
YML
}

db="$SCRATCH/closed.sqlite"
profile conc-closed "{clients: [1, 2, 4], window_s: 1, repeats: 1, warmup_s: 0.2}" >"$SCRATCH/closed.yml"
"$VBENCH" run --profile "$SCRATCH/closed.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "closed loop: vbench run exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "closed loop: every plan item done"
is "$(q "$db" "SELECT group_concat(clients, ',') FROM (SELECT clients FROM window_result ORDER BY clients)")" "1,2,4" \
   "closed loop: one window per client count"
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE ef_search = 100 AND errors = 0 AND clients_lost = 0 AND target_rate IS NULL AND window_s BETWEEN 0.99 AND 1.01 AND warmup_queries > 0 AND latency_hist IS NOT NULL")" \
   "3" "closed loop: windows of 1 s at ef_search 100, warm-up queries apart, no errors, no target rate"
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE in_flight BETWEEN 0.95 * clients AND clients + 1e-9 AND fraction_in_call_min > 0.95")" \
   "3" "closed loop: in flight within 5 % of the client count, every client > 95 % in calls"
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE p50_ms BETWEEN 0.95 AND 3 AND qps BETWEEN 0.6 * clients / (p50_ms / 1000) AND 1.05 * clients / (p50_ms / 1000)")" \
   "3" "closed loop: median latency ~1 ms and QPS ~ clients / latency"
is "$(q "$db" "SELECT COUNT(*) FROM v_concurrency WHERE clients > 1 AND efficiency > 0.85 AND efficiency_refused IS NULL")" \
   "2" "closed loop: efficiency shown and near 1 for 2 and 4 clients: $(q "$db" "SELECT group_concat(printf('%.3f', efficiency), ' ') FROM v_concurrency")"
out=$("$VBENCH" show "$db")
like "$out" "Concurrency (closed loop)" "show prints the closed-loop concurrency table"
like "$out" "in_call" "show: the table has the fraction in call (its header in_call within 120 columns)"
"$VBENCH" show --json "$db" >"$SCRATCH/show.json"
/usr/bin/python3 - "$SCRATCH/show.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["concurrency"]) == 3 and d["concurrency_open"] == []
for row in d["concurrency"]:
    for k in ("engine", "clients", "qps", "p50_ms", "p99_ms", "in_flight", "fraction_in_call", "efficiency"):
        assert k in row, k
PY
ok $? "show --json: three closed-loop rows with the documented fields, no open-loop rows"

db="$SCRATCH/open.sqlite"
profile conc-open "{clients: [8], window_s: 1, repeats: 1, warmup_s: 0.2, mode: open, target_rate: 1000}" \
    >"$SCRATCH/open.yml"
"$VBENCH" run --profile "$SCRATCH/open.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "open loop: vbench run exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT key FROM plan WHERE phase = 'concurrency'")" \
   "conc-open/sleep/synth-2k/concurrency/clients=8,repeat=1,mode=open,target_rate=1000" "open loop: the key names the loop"
row=$(q "$db" "SELECT printf('%.0f %.0f %d %d', target_rate, qps, late_starts, queries) FROM window_result")
# The arrival times are drawn from a fixed seed, so the achieved rate is the target's within Poisson noise; how
# many starts were late (a wake-up more than 1 ms after its intended start) is the machine's, not the client's:
# on a 2-core host busy with other tests it can be a third of them, so its count is not bounded here (how close
# to on time the client keeps its starts is measured by bench/, make bench-client; tests/unit/test_concurrency.c
# checks the counting itself). Checked: the window's row holds the agent's own count (its note in the events),
# and the count agrees with the lag percentile recorded beside it: a lag p99 above 1 ms (2 % margin for the
# histogram) means at least 1 % of the starts were late, one below it at most 1 %.
note=$(q "$db" "SELECT message FROM event WHERE message LIKE 'open loop%'" | sed -n 's/.*; \([0-9]*\) of \([0-9]*\) queries started late.*/\1 \2/p')
is "$(q "$db" "SELECT late_starts || ' ' || queries FROM window_result")" "${note:-no note}" \
   "open loop: the window's late starts and queries are the agent's own count ($note)"
is "$(q "$db" "SELECT COUNT(*) FROM window_result WHERE target_rate = 1000 AND qps BETWEEN 850 AND 1150 AND lag_p99_ms IS NOT NULL
               AND (lag_p99_ms <= 1.02 OR late_starts >= queries / 100) AND (lag_p99_ms >= 0.98 OR late_starts <= queries / 100 + 1)")" \
   "1" "open loop: 1000/s achieved within 15 %, late starts agree with the lag p99 (target, qps, late, queries: $row, lag p99 $(q "$db" "SELECT lag_p99_ms FROM window_result") ms)"
is "$(q "$db" "SELECT efficiency_refused FROM v_concurrency")" "open loop: QPS is set by the target rate" \
   "open loop: no efficiency, and the view says why"
like "$(q "$db" "SELECT message FROM event WHERE message LIKE 'open loop%'")" "target 1000/s" \
   "open loop: the agent's note (achieved, late starts, backlog, service time) is in the events"
out=$("$VBENCH" show "$db")
like "$out" "Concurrency (open loop" "show prints the open-loop table"
like "$out" "late_starts" "show: the open-loop table has late starts"
done_testing
