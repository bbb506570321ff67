#!/usr/bin/env bash
# Reading never writes, and a damaged results database is never read silently.
# - A campaign leaves FILE.bak, a copy that passes integrity_check; during a campaign it is written every
#   limits.backup_every_s.
# - 4 KB of zeros on one page (the root of sweep_result): status, show and resume refuse the file (exit 2) with the
#   last good backup and `.recover`, and change nothing; the advice works (restore the .bak, resume: complete).
# - An empty file, another program's SQLite database and a text file: status, show and resume say what the file is,
#   exit 2, and leave it byte for byte as it was (no vbench schema written into it).
. "$(dirname "$0")/../lib/lib.sh"
for tool in sqlite3 sha256sum dd; do
    command -v $tool >/dev/null || { echo "not ok 1 - $tool is missing (deploy/install-deps)"; echo "1..1"; exit 1; }
done
tiny="$(dirname "$0")/../profiles/tiny.yml"
# The damaged-page checks need a finished campaign with sweep results (the page zeroed is sweep_result's root): the
# tiny profile's builds and recall sweeps, without its windows, filtered points and churn (issue 40: the suite's time).
profile=$SCRATCH/sweeps.yml
sed -e 's/^name: tiny$/name: sweeps/' -e '/^  concurrency:/d' -e '/^  filtered:/d' -e '/^  churn:/d' "$tiny" >"$profile"
db="$SCRATCH/r/tiny.sqlite"
sum() { sha256sum "$1" | cut -d' ' -f1; }

"$VBENCH" run --profile "$profile" --out "$db" --quiet 2>"$SCRATCH/run.txt"
ok $? "a tiny campaign completes"
[ -f "$db.bak" ]; ok $? "it leaves a backup beside the database ($db.bak)"
is "$(sqlite3 "$db.bak" "PRAGMA integrity_check")" "ok" "the backup passes integrity_check"
is "$(sqlite3 "$db.bak" "SELECT COUNT(*) FROM plan WHERE status = 'done'")" "$(q "$db" "SELECT COUNT(*) FROM plan")" \
   "the backup holds the finished campaign"
is "$(q "$db" "PRAGMA application_id") $(q "$db" "PRAGMA user_version")" "1986162275 1" \
   "the database carries vbench's application_id and user_version"

# Periodic: limits.backup_every_s: 1 on a campaign of several seconds (the whole tiny profile, about 7 s: its sweep
# warm-ups and four 1 s windows; it was run with three repeats of them, about 15 s) writes the .bak while it runs.
sed 's/^phases:/limits: {backup_every_s: 1}\nphases:/' "$tiny" >"$SCRATCH/backup.yml"
"$VBENCH" run --profile "$SCRATCH/backup.yml" --out "$SCRATCH/p.sqlite" --quiet 2>"$SCRATCH/run-p.txt" &
pid=$!
backup_seen() { [ -f "$SCRATCH/p.sqlite.bak" ] || ! kill -0 $pid; }
wait_until 120 backup_seen
[ -f "$SCRATCH/p.sqlite.bak" ] && kill -0 $pid 2>/dev/null
ok $? "a backup is written while the campaign runs (limits.backup_every_s: 1)"
wait $pid
ok $? "... and the campaign completes"

# A zeroed page.
pg=$(q "$db" "SELECT rootpage FROM sqlite_master WHERE name = 'sweep_result'")
cp "$db" "$SCRATCH/good.sqlite"
dd if=/dev/zero of="$db" bs=4096 seek=$((pg - 1)) count=1 conv=notrunc 2>/dev/null
before=$(sum "$db")
for cmd in status show resume; do
    out=$("$VBENCH" $cmd --out "$db" 2>&1)
    is "$?" "2" "$cmd refuses a database with a zeroed page (page $pg: sweep_result), exit 2"
    like "$out" "$db is damaged (PRAGMA quick_check:" "... saying it is damaged"
    like "$out" "the last good backup is $db.bak" "... naming the last good backup"
    like "$out" "sqlite3 $db .recover" "... and .recover"
done
is "$(sum "$db")" "$before" "the damaged file is unchanged"
[ ! -e "$db.lock" ]; ok $? "the refused resume left no lock behind"
# The advice, as given.
mv "$db" "$db.damaged" && rm -f "$db-wal" "$db-shm" && cp "$db.bak" "$db"
"$VBENCH" resume --out "$db" --quiet 2>"$SCRATCH/resume.txt"
ok $? "restoring the .bak as advised: resume works"
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'") $(q "$db" "SELECT COUNT(*) FROM sweep_result")" "0 4" \
   "... and the campaign is whole again"

# Files that are not results databases.
: >"$SCRATCH/empty.sqlite"
sqlite3 "$SCRATCH/other.sqlite" "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'x')"
sqlite3 "$SCRATCH/app.sqlite" "PRAGMA application_id = 1234; CREATE TABLE t (x)"
printf 'hello\n' >"$SCRATCH/notes.txt"
check_refused() { # check_refused FILE EXPECTED-TEXT WHAT
    local f=$1 want=$2 what=$3 cmd out s0
    s0=$(sum "$f")
    for cmd in status show resume; do
        out=$("$VBENCH" $cmd --out "$f" 2>&1)
        is "$?" "2" "$cmd on $what: exit 2"
        like "$out" "$want" "... saying so"
    done
    is "$(sum "$f")" "$s0" "$what is unchanged (sha256)"
    [ ! -e "$f.lock" ] && [ ! -e "$f.d" ]; ok $? "... and nothing was made beside it"
}
check_refused "$SCRATCH/empty.sqlite" "$SCRATCH/empty.sqlite is empty" "an empty file"
check_refused "$SCRATCH/other.sqlite" "$SCRATCH/other.sqlite is an SQLite database but not a vbench results database" \
    "another program's SQLite database"
check_refused "$SCRATCH/app.sqlite" "not a vbench results database (application_id 0x000004d2)" \
    "an SQLite database with another application_id"
check_refused "$SCRATCH/notes.txt" "$SCRATCH/notes.txt is not an SQLite database" "a text file"
is "$(sqlite3 "$SCRATCH/other.sqlite" "SELECT COUNT(*) FROM sqlite_master")" "1" "no vbench table was written into the foreign database"
done_testing
