#!/usr/bin/env bash
# --data-dir DIR (issue 28): the local agents' working directory (the servers' data directories, the engines'
# files, the outbox) apart from the results file, here on another file system (a tmpfs mounted for the test).
# The run puts its agents' files there and nothing into FILE.d but the progress file; the directory is kept in
# the results (manifest campaign.data_dir), so a resume after a SIGKILL uses it again without being told; a
# --data-dir that cannot be made is refused before the results file exists.
. "$(dirname "$0")/../lib/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "mounting a tmpfs for the data directory needs root"
data=$SCRATCH/data
mkdir -p "$data" && mount -t tmpfs -o size=256m vbtest "$data"
ok $? "a tmpfs for the data directory"
trap 'umount "$data" 2>/dev/null; rm -rf "$SCRATCH"' EXIT
db=$SCRATCH/res/dd.sqlite
mkdir -p "$SCRATCH/res"
[ "$(stat -c %d "$data")" != "$(stat -c %d "$SCRATCH/res")" ]
ok $? "the data directory and the results are on different file systems"
out=$("$VBENCH" run --profile "$(dirname "$0")/../profiles/data-dir.yml" --out "$SCRATCH/res/never.sqlite" --data-dir /proc/nope/dd --quiet 2>&1)
is "$?" "2" "a --data-dir that cannot be made is refused" 
like "$out" "--data-dir /proc/nope/dd: cannot create it" "... naming it"
[ ! -e "$SCRATCH/res/never.sqlite" ]; ok $? "... before the results file is made"

"$VBENCH" run --profile "$(dirname "$0")/../profiles/data-dir.yml" --out "$db" --data-dir "$data/agents" --quiet 2>"$SCRATCH/run.txt" &
run=$!
wait_sql "$db" "SELECT COUNT(*) FROM plan WHERE status = 'running' AND phase = 'concurrency'" 1 60
ok $? "the campaign is in its windows"
[ -d "$data/agents/outbox" ]; ok $? "the local agent works in the data directory (its outbox is there)"
[ ! -e "$db.d/outbox" ]; ok $? "and not in FILE.d"
is "$(q "$db" "SELECT value FROM manifest WHERE key = 'campaign.data_dir'")" "$data/agents" "the results keep the data directory"
kill -9 $run
wait $run 2>/dev/null
rm -rf "$data/agents/outbox"
"$VBENCH" resume --out "$db" --quiet 2>>"$SCRATCH/run.txt"
is "$?" "0" "resume without --data-dir completes the campaign"
[ -d "$data/agents/outbox" ] && [ ! -e "$db.d/outbox" ]; ok $? "its agent worked in the stored data directory again"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every item done"
done_testing
