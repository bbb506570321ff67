#!/usr/bin/env bash
# The notify command (issue 16): run when a campaign finishes, when a limit expires and when the campaign ends
# incomplete, with a one-paragraph summary on stdin and VBENCH_EVENT in its environment; --notify overrides the
# profile's notify.command; a failing and a hanging command are events (bounded by notify.timeout_s) and never
# stop the campaign. The command is a script that writes its stdin to a file.
. "$(dirname "$0")/../lib/lib.sh"
need sqlite3

cat >"$SCRATCH/notify.sh" <<'SH'
#!/bin/sh
cat >"$NOTIFY_DIR/$VBENCH_EVENT.txt"
SH
chmod +x "$SCRATCH/notify.sh"
export NOTIFY_DIR="$SCRATCH/got"
mkdir -p "$NOTIFY_DIR"

cat >"$SCRATCH/small.yml" <<YML
name: small
datasets:
  - {name: synth-n, source: synthetic, rows: 2000, queries: 50, dim: 8, metric: euclidean}
engines:
  - {name: exact}
phases:
  build: {}
  recall_sweep: {ef_search: [10]}
notify:
  command: "$SCRATCH/notify.sh"
YML
"$VBENCH" run --profile "$SCRATCH/small.yml" --out "$SCRATCH/small.sqlite" --quiet; rc=$?
is "$rc" 0 "the campaign finished"
[ -s "$NOTIFY_DIR/finished.txt" ]; ok $? "the profile's notify command ran for the finished campaign"
txt=$(cat "$NOTIFY_DIR/finished.txt" 2>/dev/null)
like "$txt" "vbench campaign small on " "the summary names the campaign"
like "$txt" "2 of 2 items done, 0 failed or skipped, 0 stopped at their limit" "... and counts the items"
like "$txt" "$SCRATCH/small.sqlite" "... and names the results"
is "$(wc -l <"$NOTIFY_DIR/finished.txt")" 1 "the summary is one paragraph (one line)"
is "$(q "$SCRATCH/small.sqlite" "SELECT count(*) FROM event WHERE source = 'notify' AND message = 'notify command ran (finished)'")" 1 \
    "the run of the command is an event"

# a churn limit that expires: limit_expired at once, incomplete at the end; --notify wins over the profile
cat >"$SCRATCH/churn.yml" <<'YML'
name: churn-notify
datasets:
  - {name: synth-c, source: synthetic, rows: 20000, queries: 100, dim: 64, metric: euclidean, seed: 3}
engines:
  - {name: hnswlib, m: 16, ef_construction: 100}
phases:
  build: {}
  churn: {fraction: 0.25, limit_s: 1, queries: 100}
notify:
  command: "exit 7"
YML
"$VBENCH" run --profile "$SCRATCH/churn.yml" --out "$SCRATCH/churn.sqlite" --quiet --notify "$SCRATCH/notify.sh"; rc=$?
is "$rc" 1 "the churn campaign ends incomplete (exit 1)"
like "$(cat "$NOTIFY_DIR/limit_expired.txt" 2>/dev/null)" "churn-notify" "--notify ran when the limit expired"
like "$(cat "$NOTIFY_DIR/incomplete.txt" 2>/dev/null)" "1 stopped at their limit" "... and at the end, incomplete"

# a failing command and a hanging one: events, and the campaign is unaffected
sed -i "s|command: .*|command: \"exit 3\"|" "$SCRATCH/small.yml"
"$VBENCH" run --profile "$SCRATCH/small.yml" --out "$SCRATCH/fail.sqlite" --quiet; rc=$?
is "$rc" 0 "a failing notify command does not fail the campaign"
is "$(q "$SCRATCH/fail.sqlite" "SELECT count(*) FROM event WHERE source = 'notify' AND level = 'warn' AND message LIKE 'notify command (finished) failed: exit status 3:%'")" 1 \
    "its failure is an event with the exit status"
printf 'notify:\n  command: "sleep 600"\n  timeout_s: 1\n' >"$SCRATCH/hang-notify.yml"
sed '/^notify:/,$d' "$SCRATCH/small.yml" >"$SCRATCH/hang.yml"
cat "$SCRATCH/hang-notify.yml" >>"$SCRATCH/hang.yml"
start=$(date +%s)
"$VBENCH" run --profile "$SCRATCH/hang.yml" --out "$SCRATCH/hang.sqlite" --quiet; rc=$?
is "$rc" 0 "a hanging notify command does not hold the campaign's result"
[ $(( $(date +%s) - start )) -lt 60 ]; ok $? "it is killed after notify.timeout_s"
is "$(q "$SCRATCH/hang.sqlite" "SELECT count(*) FROM event WHERE source = 'notify' AND message LIKE 'notify command (finished) killed after notify.timeout_s = 1 s%'")" 1 \
    "the kill is an event"
pgrep -f 'sleep 600' >/dev/null && ok 1 "the hanging command's process group is gone" || ok 0 "the hanging command's process group is gone"
done_testing
