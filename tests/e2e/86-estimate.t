#!/usr/bin/env bash
# The runtime estimate (issue 16): printed before the start per engine and in total, recorded in the manifest,
# compared with the truth at the end (an event and a status line); the measured rates go into the history under
# the cache ($VBENCH_CACHE/history.sqlite) and the next estimate uses them; `status` shows elapsed time, the ETA
# and the time since the last result while the campaign runs, and `status --watch` ends with the campaign.
. "$(dirname "$0")/../lib/lib.sh"
need sqlite3

cat >"$SCRATCH/est.yml" <<'YML'
name: est
datasets:
  - name: synth-est
    source: synthetic
    rows: 3000
    queries: 100
    dim: 16
    metric: euclidean
engines:
  - name: hnswlib
    m: 8
    ef_construction: 32
  - name: exact
phases:
  build: {}
  recall_sweep: {ef_search: [10, 40]}
  concurrency: {clients: [1, 2], window_s: 1, repeats: 1, warmup_s: 0.2, ef_search: 20}
YML
DB="$SCRATCH/est.sqlite"
"$VBENCH" run --profile "$SCRATCH/est.yml" --out "$DB" >"$SCRATCH/run.out" 2>"$SCRATCH/run.err" &
pid=$!
for _ in $(seq 1 100); do
    [ "$(q "$DB" "SELECT count(*) FROM plan WHERE status = 'done'" 2>/dev/null)" -ge 3 ] 2>/dev/null && break
    sleep 0.2
done
st=$("$VBENCH" status "$DB" 2>&1)
like "$st" "time: elapsed ~" "status while running: elapsed time"
like "$st" "last result ~" "status while running: time since the last result"
like "$st" "ETA: ~" "status while running: the ETA"
watch=$(timeout 120 "$VBENCH" status --watch 1 "$DB" 2>&1); rc=$?
is "$rc" 0 "status --watch ends (exit 0) when the campaign ends"
wait $pid
is "$?" 0 "the campaign finished"
err=$(cat "$SCRATCH/run.err")
like "$err" "estimate: hnswlib ~" "the estimate per engine is printed before the start"
like "$err" "| total ~" "... and the total"
like "$(q "$DB" "SELECT message FROM event WHERE message LIKE 'estimate vs actual:%'")" "estimate vs actual: estimated ~" \
    "an event compares the estimate with the truth"
ratio=$(q "$DB" "SELECT value FROM manifest WHERE key = 'estimate.ratio'")
[ -n "$ratio" ]; ok $? "the manifest has estimate.ratio ($ratio)"
[ -n "$(q "$DB" "SELECT value FROM manifest WHERE key = 'estimate.engine.hnswlib_s'")" ]; ok $? "... and the engine's estimate"
like "$watch" "estimate: ~" "the last status of --watch compares the estimate with the truth"
like "$("$VBENCH" status "$DB")" "actual / estimate" "status after the end shows estimate against actual"
n=$(q "$SCRATCH/cache/history.sqlite" "SELECT count(*) FROM measured WHERE campaign = 'est' AND dim = 16")
is "$n" 2 "the history holds the measured rates of both engines"
load=$(q "$SCRATCH/cache/history.sqlite" "SELECT load_rows_s > 0 FROM measured WHERE engine = 'hnswlib'")
is "$load" 1 "... with a load rate"
chk=$("$VBENCH" run --profile "$SCRATCH/est.yml" --out "$SCRATCH/again.sqlite" --check 2>&1)
like "$chk" "hnswlib: measured here" "the next estimate uses the measured rates"
# The calibration probe (issue 36.6, coordinator/calibrate.h). The sleep engine has no default rates (the unknown
# engine's: 500 QPS at ef_search 100 and dimension 128, time per query taken as proportional to ef_search), so
# 30,000 queries at ef_search 800 and 1000 estimate at 13 minutes from defaults while it answers in 50 us
# whatever ef_search says: a long default estimate on a host with no history, which `run` probes first.
cat >"$SCRATCH/cal.yml" <<'YML'
name: cal
datasets:
  - {name: synth-cal, source: synthetic, rows: 2000, queries: 30000, dim: 128, metric: euclidean}
engines:
  - {name: sleep, service_us: 50}
phases:
  build: {}
  recall_sweep: {ef_search: [800, 1000]}
YML
export VBENCH_CACHE="$SCRATCH/cal-cache"
chk=$("$VBENCH" run --profile "$SCRATCH/cal.yml" --out "$SCRATCH/cal.sqlite" --check 2>&1)
like "$chk" "sleep: default rates" "calibration: a host with no history estimates from default rates"
like "$chk" "calibration: nothing measured on this host for sleep; \`run\` probes it first" \
     "--check says the run will probe the engine first (the default estimate is over 10 minutes)"
is "$(ls "$SCRATCH" | grep -c '^cal\.sqlite')" 0 "--check creates nothing, the probe's files neither"
"$VBENCH" run --profile "$SCRATCH/cal.yml" --out "$SCRATCH/nop.sqlite" --no-probe --check >/dev/null 2>&1
"$VBENCH" run --profile "$SCRATCH/cal.yml" --out "$SCRATCH/cal.sqlite" >"$SCRATCH/cal.out" 2>"$SCRATCH/cal.err"
is "$?" 0 "the calibrated campaign finishes"
like "$(cat "$SCRATCH/cal.err")" "calibrating: probed sleep in" "run says it probed the engine before estimating"
is "$(q "$SCRATCH/cal.sqlite.probe.sqlite" "SELECT status || ' ' || runs FROM campaign") $(q "$SCRATCH/cal.sqlite.probe.sqlite" "SELECT COUNT(*) FROM build_result WHERE rows = 5000")" \
   "finished 1 1" "the probe is a campaign of its own beside the results: 5,000 rows built (FILE.probe.sqlite)"
is "$(q "$VBENCH_CACHE/history.sqlite" "SELECT COUNT(*) FROM measured WHERE campaign = 'probe-cal' AND dim = 128 AND sweep_qps100 > 0")" 1 \
   "the probe's rates are in the history under its own campaign name"
like "$(q "$SCRATCH/cal.sqlite" "SELECT value FROM manifest WHERE key = 'estimate.basis.sleep'")" "probed here" \
     "the campaign's estimate is from the probe's rates, and says so"
like "$(q "$SCRATCH/cal.sqlite" "SELECT value FROM manifest WHERE key = 'estimate.probe'")" "probed sleep in" \
     "the manifest records the probe"
probed=$(q "$SCRATCH/cal.sqlite" "SELECT value FROM manifest WHERE key = 'estimate.total_s'")
default=$(printf '%s\n' "$chk" | sed -n 's/^estimate: .*total ~\(.*\)$/\1/p')
awk -v p="$probed" 'BEGIN { exit !(p < 300) }'
ok $? "the probed estimate ($probed s) is under half of the 10 minutes the default one was over ($default)"
chk2=$("$VBENCH" run --profile "$SCRATCH/cal.yml" --out "$SCRATCH/cal2.sqlite" --check 2>&1)
unlike "$chk2" "calibration:" "the next campaign on this host needs no probe (its rates are measured)"
"$VBENCH" run --profile "$SCRATCH/cal.yml" --out "$SCRATCH/cal.sqlite" >/dev/null 2>&1
is "$(q "$SCRATCH/cal.sqlite.probe.sqlite" "SELECT COUNT(*) FROM campaign")" 1 \
   "a run refused because FILE exists probes nothing and leaves the earlier probe as it was"

# Filtered QPS per selectivity (coordinator/history.h vb_history_filtered): a history whose hnswlib answered 1,000
# filtered queries/s at 10 % and 100 at 1 % (ef_search 100, this very shape) estimates 100 queries at 10 % as
# 0.1 s, at 1 % as 1 s, at 3 % as 1/3 s (log-linear between them: 300/s), each + 0.1 s for the item. One filtered rate for
# every selectivity, as before, put MariaDB's 1 % item at 16x under its time.
export VBENCH_CACHE="$SCRATCH/fsel-cache"
mkdir -p "$VBENCH_CACHE"
sqlite3 "$VBENCH_CACHE/history.sqlite" "
  CREATE TABLE measured (engine TEXT NOT NULL, dataset TEXT NOT NULL, dim INTEGER NOT NULL, rows INTEGER NOT NULL,
    campaign TEXT, recorded_at TEXT NOT NULL, load_rows_s REAL, build_rows_s REAL, insert_rows_s REAL,
    sweep_qps100 REAL, filtered_qps REAL, client_qps REAL, bytes_per_row REAL);
  CREATE TABLE measured_filtered (engine TEXT NOT NULL, dataset TEXT NOT NULL, dim INTEGER NOT NULL,
    rows INTEGER NOT NULL, campaign TEXT, recorded_at TEXT NOT NULL, predicate TEXT NOT NULL,
    selectivity REAL NOT NULL, qps100 REAL NOT NULL);
  INSERT INTO measured VALUES ('hnswlib', 'x', 16, 3000, 'made', '2026-01-01T00:00:00Z', 50000, NULL, 50000, 5000, 500, NULL, NULL);
  INSERT INTO measured_filtered VALUES ('hnswlib', 'x', 16, 3000, 'made', '2026-01-01T00:00:00Z', 'range', 0.1, 1000);
  INSERT INTO measured_filtered VALUES ('hnswlib', 'x', 16, 3000, 'made', '2026-01-01T00:00:00Z', 'range', 0.01, 100);"
cat >"$SCRATCH/fsel.yml" <<'YML'
name: fsel
datasets: [{name: s, source: synthetic, rows: 3000, queries: 100, dim: 16, metric: euclidean}]
engines: [{name: hnswlib, m: 8, ef_construction: 32}]
phases:
  build: {}
  filtered: {selectivity: [0.1, 0.03, 0.01], queries: 100, ef_search: 100}
YML
"$VBENCH" run --profile "$SCRATCH/fsel.yml" --out "$SCRATCH/fsel.sqlite" --quiet
# (estimate.items keeps tenths of a second)
est() { q "$SCRATCH/fsel.sqlite" "SELECT printf('%.1f', j.value) FROM manifest AS m, json_each(m.value) AS j WHERE m.key = 'estimate.items' AND j.key LIKE '%selectivity=$1'"; }
is "$(est 0.1) $(est 0.03) $(est 0.01)" "0.2 0.4 1.1" \
   "the filtered items' estimates follow the QPS measured at each selectivity (log-linear between them)"
is "$(q "$VBENCH_CACHE/history.sqlite" "SELECT COUNT(*) FROM measured_filtered WHERE campaign = 'fsel' AND selectivity IN (0.1, 0.03, 0.01) AND qps100 > 0")" 3 \
   "the campaign's filtered QPS per selectivity goes into the history"
done_testing
