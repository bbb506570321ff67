#!/usr/bin/env bash
# The capacity phase end to end (issue 37), through the coordinator and a real agent into SQLite:
#  - the sleep engine with servers: 2 and servers: 4 (service 2 ms, 64 clients, Poisson arrivals: M/D/c). The rate
#    found for p99 <= 10 ms must be within 10 % of queueing theory: the M/D/c sojourn-time distribution computed
#    exactly by Crommelin's method (tests/unit/mdc.h, through tests/tools/vb_mdc), the rate whose p99 sojourn is 10 ms
#    found by bisection; the knee window at 1.2 x the found rate must fail the objective. servers: 4 doubles the
#    capacity c / D (1,000/s to 2,000/s); the rate at the objective grows by the theory's ratio (2.30: a larger pool
#    queues less), checked within the same 10 %.
#  - the client-limit guard: the null engine answers at once, so its search starts near a million queries per second,
#    which one client agent cannot generate: refused as the client's limit (status client_limit, the item failed with
#    a message that says it is the client), never reported as the engine's capacity.
#  - the read side: show (and --windows, --json), the csv export, the report's sentences, hockey-stick charts and
#    tables, every table fitting in headless Chromium and the section drawn by it.
#  - SIGKILL of the coordinator (and its local agent) during a capacity item, then resume: the item is measured again
#    from its start; the earlier attempt's windows stay with their attempt, the summary is the new attempt's.
# Windows of 2 s after 0.5 s of warm-up on the sleep engine (a window's p99 near the knee moves by tens of percent from
# one 1 s window to the next, and a queue that starts empty needs a few of its relaxation times, 0.1 - 0.3 s here, to
# reach its stationary tail), 0.5 s for the guard and the kill; a real run uses 10 s or more (docs/profiles.md
# "Capacity"). A loaded host stalls the client now and then (other processes; a virtual CPU taken away: 4-8 % steal
# here): the objective's latency leaves the client's own delay out (docs/metrics.md "Capacity": before that, three
# runs at a load of 6-8 found 632, 671 and 732/s for servers 2 and 1,469, 1,747 and 867/s for servers 4), and the
# sleep engine's campaign runs under SCHED_FIFO (chrt -f 1) where it may: its threads sleep almost all the time, and
# the real-time class keeps the other processes from delaying their wake-ups. Even so the host pauses now and then
# (0.1 - 8.5 ms per 2 s window under SCHED_FIFO at a load of 8 on this VM: steal); a window that fails the objective
# while the client host paused longer than a quarter of the target is measured again (docs/metrics.md "Capacity",
# host pauses): CI failed here once with servers 4 found too low and its knee met, with no pause measurement to say why.
. "$(dirname "$0")/../lib/lib.sh"
need pgrep gnuplot chromium /usr/bin/python3
MDC=${VB_TOOLS:-$VB_ROOT/${BUILD:-build}/tools}/vb_mdc
[ -x "$MDC" ] || { echo "Bail out! $MDC is not built (make unit builds the test tools)"; exit 1; }

profile() { # profile NAME ENGINES-YAML CAPACITY-SECTION
    cat <<YML
name: $1
datasets:
  - {name: synth, source: synthetic, rows: 2000, queries: 100, dim: 8, clusters: 4, metric: euclidean, seed: 3}
engines:
$2
phases:
  build:
  capacity: $3
YML
}

# ---- the sleep engine against M/D/c ----------------------------------------------------------------------------
db=$SCRATCH/mdc.sqlite
profile mdc "  - {name: sleep, service_us: 2000, servers: [2, 4]}" \
    "{recall: 0, p99_ms: [10], window_s: 2, warmup_s: 0.5, repeats: 2, clients: 64}" >"$SCRATCH/mdc.yml"
rt=()
[ "$(id -u)" -eq 0 ] && chrt -f 1 true 2>/dev/null && rt=(chrt -f 1)
echo "# the sleep engine's campaign runs ${rt[*]:-at normal priority (not root, or no chrt)}"
"${rt[@]}" "$VBENCH" run --profile "$SCRATCH/mdc.yml" --out "$db" >"$SCRATCH/mdc.out" 2>"$SCRATCH/mdc.err"
rc=$?
ok $rc "the campaign on the sleep engine with servers 2 and 4 exits 0"
[ $rc -eq 0 ] || tail -20 "$SCRATCH/mdc.err" | diag
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item done"
declare -A found
for c in 2 4; do
    e="sleep[servers=$c]"
    theory=$("$MDC" "$c" 2000 10 | awk '{print $2}')
    rate=$(q "$db" "SELECT printf('%.1f', rate) FROM v_capacity WHERE engine = '$e' AND status = 'found'")
    found[$c]=$rate
    echo "# servers $c: M/D/$c with D = 2 ms, p99 sojourn <= 10 ms by Crommelin's formula: $theory/s (capacity c / D" \
         "= $((c * 500))/s); found $rate/s"
    ok "$(awk -v r="${rate:-0}" -v t="$theory" 'BEGIN { exit !(r >= 0.9 * t && r <= 1.1 * t) }'; echo $?)" \
       "servers $c: the rate found for p99 <= 10 ms ($rate/s) is within 10 % of M/D/$c's $theory/s"
    is "$(q "$db" "SELECT knee_failed, printf('%.1f', knee_rate / rate) FROM v_capacity WHERE engine = '$e'" | tr '|' ' ')" \
       "1 1.2" "servers $c: the knee window at 1.2 x the found rate failed the objective (p99 $(q "$db" \
       "SELECT printf('%.2f', knee_p99_ms) FROM v_capacity WHERE engine = '$e'") ms)"
    is "$(q "$db" "SELECT repeats FROM v_capacity WHERE engine = '$e'")" "2" \
       "servers $c: the found rate measured again 2 times ($(q "$db" "SELECT repeats_met FROM v_capacity WHERE engine = '$e'") met it; p99 there $(q "$db" "SELECT printf('%.2f', p99_ms) FROM v_capacity WHERE engine = '$e'") ms, the median)"
    is "$(q "$db" "SELECT COUNT(*) = (SELECT windows FROM v_capacity WHERE engine = '$e') FROM v_capacity_windows
                   WHERE engine = '$e' AND offered_rate > 0 AND p99_ms > 0 AND scheduled > 0 AND client_limited = 0")" "1" \
       "servers $c: every window of the search is a row of the curve (offered, achieved, p99)"
    is "$(q "$db" "SELECT COUNT(*) FROM v_capacity_windows WHERE engine = '$e' AND host_pause_ms IS NULL")" "0" \
       "servers $c: the client host's pauses measured in every window (the longest $(q "$db" "SELECT printf('%.2f', MAX(host_pause_ms)) FROM v_capacity_windows WHERE engine = '$e'") ms; $(q "$db" "SELECT COUNT(*) FROM v_capacity_windows WHERE engine = '$e' AND discounted > 0") window(s) failed while it paused, measured again)"
    q "$db" "SELECT step, stage, printf('%.1f', offered_rate), printf('%.1f', achieved_rate), printf('%.2f', p99_ms), met,
             printf('own %.2f, uncorrected %.2f, host pause %.2f%s', own_p99_ms, uncorrected_p99_ms, host_pause_ms,
                    CASE WHEN discounted > 0 THEN ', discounted' ELSE '' END)
             FROM v_capacity_windows WHERE engine = '$e'" | sed "s/^/#   servers $c window: /"
done
t2=$("$MDC" 2 2000 10 | awk '{print $2}'); t4=$("$MDC" 4 2000 10 | awk '{print $2}')
ok "$(awk -v a="${found[2]:-0}" -v b="${found[4]:-0}" -v t2="$t2" -v t4="$t4" \
      'BEGIN { r = a > 0 ? b / a : 0; th = t4 / t2; exit !(r >= 0.9 * th && r <= 1.1 * th && r >= 2 * 0.9) }'; echo $?)" \
   "servers 4 against 2: the capacity doubles, the rate at the objective grows $(awk -v a="${found[2]:-1}" -v b="${found[4]:-0}" 'BEGIN { printf "%.2f", b / a }') x (theory $(awk -v a="$t2" -v b="$t4" 'BEGIN { printf "%.2f", b / a }') x)"
is "$(q "$db" "SELECT COUNT(*) FROM v_capacity WHERE op_source = 'probe' AND ef_search = 10 AND recall_target = 0")" "2" \
   "no recall objective and no sweep: the probe's first ef_search is the operating point"
like "$(cat "$SCRATCH/mdc.err")" "queries/s at p99 <= 10 ms" "the console says the found rate"

# ---- the read side: show, show --json, the exports, the report's section in headless Chromium -------------------
db=$SCRATCH/mdc.sqlite
capout=$("$VBENCH" show "$db" 2>&1)
like "$capout" "Capacity at a latency objective" "vbench show prints the capacity per configuration"
# The table is printed in two parts; the reason, the second part's last column, takes the room its part leaves (it
# wrapped at 16 columns before: a reason of 150 characters on ten lines).
capsec=$(printf '%s\n' "$capout" | sed -n '/^Capacity at/,/^$/{p};/^engine .*reason/,/^$/{p}')
is "$(printf '%s\n' "$capout" | awk 'length($0) > 120' | wc -l)" "0" "show: every line fits 120 columns"
is "$(printf '%s\n' "$capsec" | awk 'h { match($0, /-+$/); w = RLENGTH; h = 0 } /^engine .*reason$/ { h = 1 } END { print (w >= 40) }')" "1" \
   "show: the capacity reason column is at least 40 wide where the table is printed in parts ($(printf '%s\n' "$capsec" | grep -c '^ \{40,\}') continuation lines)"
like "$("$VBENCH" show --windows "$db" 2>&1)" "Capacity search windows" "show --windows prints every window of the search"
is "$("$VBENCH" show --json "$db" | /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
print(len(d["capacity"]), sorted(set(r["status"] for r in d["capacity"])), "capacity_windows" in d)')" \
   "2 ['found'] False" "show --json: a capacity row per configuration (the windows only with --windows)"
"$VBENCH" export "$db" --format csv -o "$SCRATCH/csv" --quiet
ok $? "export csv"
is "$(/usr/bin/python3 -c 'import csv, sys; print(len(list(csv.DictReader(open(sys.argv[1], newline="")))))' \
      "$SCRATCH/csv/capacity_windows.csv")" "$(q "$db" "SELECT COUNT(*) FROM v_capacity_windows")" \
   "the csv export has every window of every search"
"$VBENCH" report "$db" -o "$SCRATCH/rep" --quiet
ok $? "vbench report"
html=$(cat "$SCRATCH/rep/report.html")
for c in 2 4; do
    rate=$(q "$db" "SELECT printf('%.0f', rate) FROM v_capacity WHERE engine = 'sleep[servers=$c]'")
    like "$html" "sleep[servers=$c] serves $rate queries/s at p99 &lt;= 10 ms and recall &gt;= 0" \
         "the report's sentence for servers $c: $rate queries/s at p99 <= 10 ms"
done
like "$html" "no server CPU was sampled (an embedded engine" "the sentence says the sleep engine has no server to sample"
for n in 1 2; do
    [ -s "$SCRATCH/rep/charts/capacity-$n.png" ] && grep -q "p99 target 10 ms" "$SCRATCH/rep/charts/capacity-$n.body.gp"
    ok $? "the hockey stick of configuration $n is drawn with its target line"
done
over=$(vb_report_overflow "$SCRATCH/rep/report.html"); rc=$?
ok $rc "the report is measured in headless Chromium"
is_empty "$over" "every table of the report fits its page at 1,400 pixels"
# the capacity section alone, with the report's own style, as Chromium draws it
vb_report_section_shot "$SCRATCH/rep/report.html" capacity "$SCRATCH/capacity.png"

# ---- the client-limit guard --------------------------------------------------------------------------------------
db=$SCRATCH/null.sqlite
profile guard "  - {name: 'null'}" "{recall: 0, p99_ms: [10], window_s: 0.5, warmup_s: 0.1, repeats: 1, precision: 0.2, clients: 32}" \
    >"$SCRATCH/null.yml"
"$VBENCH" run --profile "$SCRATCH/null.yml" --out "$db" >"$SCRATCH/null.out" 2>"$SCRATCH/null.err"
rc=$?
[ $rc -ne 0 ]; ok $? "the campaign on the null engine does not end as a success (exit $rc)"
is "$(q "$db" "SELECT status FROM plan WHERE phase = 'capacity'")" "failed" "the capacity item failed"
like "$(q "$db" "SELECT error FROM plan WHERE phase = 'capacity'")" "the client, not the engine, is the limit" \
     "its error says the client is the limit"
is "$(q "$db" "SELECT status FROM v_capacity")" "client_limit" "the answer is client_limit, not a capacity"
like "$(q "$db" "SELECT reason FROM v_capacity")" "this is not the engine's capacity" "and says so"
is "$(q "$db" "SELECT COUNT(*) FROM v_capacity WHERE status = 'found'")" "0" "no rate is reported as the null engine's capacity"
like "$(q "$db" "SELECT group_concat(client_reason, ' | ') FROM v_capacity_windows WHERE client_limited = 1")" \
     "the client's limit, not the engine's" "the refused windows say why: $(q "$db" "SELECT client_reason FROM v_capacity_windows WHERE client_limited = 1 LIMIT 1")"
like "$(cat "$SCRATCH/null.err")" "the client, not the engine, is the limit" "the terminal says it too"

# ---- kill and resume -------------------------------------------------------------------------------------------------
db=$SCRATCH/kill.sqlite
profile kill "  - {name: sleep, service_us: 2000, servers: 2}" \
    "{recall: 0, p99_ms: [10], window_s: 0.5, warmup_s: 0.1, repeats: 1, precision: 0.2, clients: 32}" >"$SCRATCH/kill.yml"
"$VBENCH" run --profile "$SCRATCH/kill.yml" --out "$db" --quiet 2>"$SCRATCH/run1.txt" &
pid=$!
wait_sql "$db" "SELECT COUNT(*) FROM capacity_window" 3 120
ok $? "the first run committed three capacity windows"
children=$(pgrep -P "$pid" | tr '\n' ' ')
[ -n "$children" ]; ok $? "the coordinator has its local agent as a child (${children:-none})"
kill -9 "$pid" $children
wait "$pid" 2>/dev/null
before=$(q "$db" "SELECT COUNT(*) FROM capacity_window")
is "$(q "$db" "SELECT status FROM plan WHERE phase = 'capacity'")" "running" "the killed item is not done"
is "$(q "$db" "SELECT COUNT(*) FROM capacity_result")" "0" "no summary yet"
"$VBENCH" resume --out "$db" --quiet 2>"$SCRATCH/run2.txt"
rc=$?
ok $rc "resume completes the campaign"
[ $rc -eq 0 ] || tail -20 "$SCRATCH/run2.txt" | diag
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every item done after the resume"
is "$(q "$db" "SELECT COUNT(*) FROM capacity_window WHERE attempt = 1")" "$before" \
   "the first attempt's $before windows stay in the table with their attempt"
is "$(q "$db" "SELECT MIN(step) FROM capacity_window WHERE attempt = 2")" "1" "the second attempt measured again from its start"
is "$(q "$db" "SELECT attempt, status FROM v_capacity" | tr '|' ' ')" "2 found" "the summary is the new attempt's"
is "$(q "$db" "SELECT COUNT(*) FROM v_capacity_windows WHERE attempt = 2") $(q "$db" "SELECT windows FROM v_capacity")" \
   "$(q "$db" "SELECT windows FROM v_capacity") $(q "$db" "SELECT windows FROM v_capacity")" \
   "the summary counts the new attempt's windows"
done_testing
