#!/usr/bin/env bash
# The capacity phase on two client agents (issue 37: "with several client agents, the offered rate is split across
# them"; docs/design.md §8 "A capacity window on several client agents"). The coordinator listens on a socket and
# keeps its local client agent; a second client agent, bench2, is started by hand, as an agent on another host would
# be. `client_agents: 2` makes the capacity item wait until both are idle; its own agent (the leader) runs the search
# and the other is lent to it: every window's rate is split in two, each agent runs its half on its own Poisson
# schedule, and the leader merges the shares (histograms merged, counts summed) into the window the search records.
#  - the sleep engine with servers: 4, service 2 ms: an embedded engine, so each client agent holds its own four
#    servers, and a window at rate r is two M/D/4 queues, each fed r / 2 by its own Poisson schedule; the merged p99
#    is one M/D/4's at r / 2, so the rate found for p99 <= 10 ms must be within 10 % of twice M/D/4's rate at that
#    objective (tests/tools/vb_mdc, Crommelin's method, as 47-capacity.t): an uneven split, or a merge that dropped
#    an agent's latencies, misses it. Every window has two shares, from both agents, each offered half the window's
#    rate, their windows starting together;
#  - a helper lost during the item (SIGKILL) does not hang it: the leader's window waits for its share a bounded time,
#    then the item fails with a message naming the helper;
#  - client_agents is range-checked when the profile is read.
. "$(dirname "$0")/../lib/lib.sh"
need pgrep
MDC=${VB_TOOLS:-$VB_ROOT/${BUILD:-build}/tools}/vb_mdc
[ -x "$MDC" ] || { echo "Bail out! $MDC is not built (make unit builds the test tools)"; exit 1; }

cat >"$SCRATCH/two.yml" <<'YML'
name: two
datasets:
  - {name: synth, source: synthetic, rows: 2000, queries: 100, dim: 8, clusters: 4, metric: euclidean, seed: 3}
engines:
  - {name: sleep, service_us: 2000, servers: 4}
phases:
  build:
  capacity: {recall: 0, p99_ms: [10], window_s: 2, warmup_s: 0.5, repeats: 1, clients: 64, client_agents: 2}
YML
db=$SCRATCH/two.sqlite
sock=$SCRATCH/coord.sock
rt=()
[ "$(id -u)" -eq 0 ] && chrt -f 1 true 2>/dev/null && rt=(chrt -f 1)
"${rt[@]}" "$VBENCH" run --profile "$SCRATCH/two.yml" --out "$db" --listen "ipc://$sock" >"$SCRATCH/two.out" \
    2>"$SCRATCH/two.err" &
coord=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"${rt[@]}" "$VB_BIN/vbench-agent" --connect "ipc://$sock" --id bench2 --roles client --workdir "$SCRATCH/bench2.d" \
    >"$SCRATCH/bench2.txt" 2>&1 &
agent2=$!
vb_on_exit "kill $coord $agent2 2>/dev/null"
wait $coord
rc=$?
is "$rc" "0" "the campaign on two client agents exits 0"
[ $rc -eq 0 ] || tail -20 "$SCRATCH/two.err" | diag
wait_pid $agent2 30
is "$WAIT_RC" "0" "the second client agent leaves with the campaign's end"
is "$(q "$db" "SELECT COUNT(*) FROM agent WHERE roles LIKE '%client%'")" "2" "two client agents joined"
is "$(q "$db" "SELECT status FROM plan WHERE key LIKE '%sleep%capacity%'")" "done" "the sleep engine's capacity item is done"

e=sleep
one=$("$MDC" 4 2000 10 | awk '{print $2}')
theory=$(awk -v t="$one" 'BEGIN { printf "%.1f", 2 * t }')
rate=$(q "$db" "SELECT printf('%.1f', rate) FROM v_capacity WHERE engine = '$e' AND status = 'found'")
echo "# M/D/4 with D = 2 ms, p99 sojourn <= 10 ms: $one/s; two of them, each fed half: $theory/s; found ${rate:-none}/s"
ok "$(awk -v r="${rate:-0}" -v t="$theory" 'BEGIN { exit !(r >= 0.9 * t && r <= 1.1 * t) }'; echo $?)" \
   "the rate found for p99 <= 10 ms (${rate:-none}/s) is within 10 % of two M/D/4 queues' $theory/s"
n=$(q "$db" "SELECT COUNT(*) FROM capacity_window AS w JOIN plan ON plan.key = w.item_key WHERE w.engine = 'sleep'")
[ "${n:-0}" -gt 3 ]; ok $? "the search measured windows ($n)"
is "$(q "$db" "SELECT COUNT(*) FROM capacity_window WHERE engine = 'sleep' AND agents = 2")" "$n" "every window was offered by 2 agents"
is "$(q "$db" "SELECT COUNT(*) FROM capacity_window AS w WHERE w.engine = 'sleep' AND
               (SELECT COUNT(*) FROM capacity_window_share AS s WHERE s.result_key = w.result_key) = 2 AND
               (SELECT COUNT(DISTINCT agent) FROM capacity_window_share AS s WHERE s.result_key = w.result_key) = 2")" \
   "$n" "every window has two shares, from two different agents"
is "$(q "$db" "SELECT COUNT(*) FROM capacity_window AS w WHERE w.engine = 'sleep' AND NOT EXISTS (SELECT 1 FROM
               capacity_window_share AS s WHERE s.result_key = w.result_key AND abs(s.offered_rate - w.offered_rate / 2)
               > 1e-6 * w.offered_rate)")" "$n" "each share was offered half the window's rate"
is "$(q "$db" "SELECT COUNT(*) FROM capacity_window AS w WHERE w.engine = 'sleep' AND
               (SELECT SUM(s.scheduled) FROM capacity_window_share AS s WHERE s.result_key = w.result_key) = w.scheduled")" \
   "$n" "a window's arrivals are the sum of its shares'"
is "$(q "$db" "SELECT group_concat(agent, ' ') FROM (SELECT DISTINCT agent FROM capacity_window_share ORDER BY agent)")" \
   "bench2 local-client" "the shares are the two agents'"
skew=$(q "$db" "SELECT printf('%.1f', 1e3 * MAX(d)) FROM (SELECT MAX(s.window_start) - MIN(s.window_start) AS d
                FROM capacity_window_share AS s JOIN capacity_window AS w USING (result_key) WHERE w.engine = 'sleep'
                GROUP BY s.result_key)")
echo "# the shares' windows started at most ${skew:-?} ms apart (the request relayed by the coordinator)"
ok "$(awk -v s="${skew:-1e9}" 'BEGIN { exit !(s >= 0 && s < 250) }'; echo $?)" \
   "the shares of a window start together (at most ${skew:-?} ms apart, under an eighth of the 2 s window)"
q "$db" "SELECT step, stage, printf('%.1f', offered_rate), printf('%.1f', achieved_rate), printf('%.2f', p99_ms), met,
         shares FROM v_capacity_windows WHERE engine = 'sleep'" | sed "s/^/#   window: /"
like "$("$VBENCH" show "$db" --windows 2>&1)" "bench2" "show --windows names the agents' shares"
is "$(q "$db" "SELECT COUNT(*) FROM event WHERE message LIKE '%own copy of the index%'") $(q "$db" "SELECT COUNT(*)
    FROM event WHERE message LIKE '%no index in this agent (restart?)%'")" "1 0" \
   "the helper says it builds its own copy of the embedded engine's index (not a restart's rebuild)"

# ---- a helper lost: the item fails naming it, within window + warm-up + a margin ---------------------------------
sed -e 's/^name: two/name: lost/' -e 's/^phases:/limits: {agent_silent_s: 4}\nphases:/' "$SCRATCH/two.yml" >"$SCRATCH/lost.yml"
db=$SCRATCH/lost.sqlite
sock=$SCRATCH/lost.sock
"$VBENCH" run --profile "$SCRATCH/lost.yml" --out "$db" --listen "ipc://$sock" >"$SCRATCH/lost.out" 2>"$SCRATCH/lost.err" &
coord=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$VB_BIN/vbench-agent" --connect "ipc://$sock" --id bench2 --roles client --workdir "$SCRATCH/lost2.d" \
    >"$SCRATCH/lost2.txt" 2>&1 &
agent2=$!
vb_on_exit "kill $coord $agent2 2>/dev/null"
wait_sql "$db" "SELECT COUNT(*) FROM capacity_window" 1 120
# the helper is the agent that does not run the item (either may lead: the first idle one found leads)
helper=$(q "$db" "SELECT s.agent FROM capacity_window_share AS s JOIN plan ON plan.key = s.item_key
                  WHERE s.agent <> plan.agent LIMIT 1")
if [ "$helper" = bench2 ]; then hpid=$agent2; else hpid=$(pgrep -P $coord -x vbench-agent); fi
kill -9 ${hpid:-0}
killed=$(date +%s)
wait_pid $coord 120
ended=$(date +%s)
[ "$WAIT_RC" -ne 0 ] && [ "$WAIT_RC" -ne 124 ]; ok $? "with its helper killed, the campaign ends, as a failure (exit $WAIT_RC, $((ended - killed)) s after the kill)"
msg=$(q "$db" "SELECT error FROM plan WHERE key LIKE '%capacity%'")
is "$(q "$db" "SELECT status FROM plan WHERE key LIKE '%capacity%'")" "failed" "the capacity item failed"
like "$msg" "no share from helper agent ${helper:-?} within" "its message names the helper lost, ${helper:-?} ($msg)"

# ---- client_agents is checked when the profile is read ------------------------------------------------------------
sed 's/client_agents: 2/client_agents: 65/' "$SCRATCH/two.yml" >"$SCRATCH/bad.yml"
out=$("$VBENCH" run --profile "$SCRATCH/bad.yml" --check 2>&1)
is "$?" "2" "client_agents: 65 is refused"
like "$out" "bad.yml:8: key 'phases.capacity.client_agents': 65 is outside [0, 64]" "... naming the file, line, key and range"
done_testing
