#!/usr/bin/env bash
# An engine that returns the same id twice in one answer (MariaDB 11.8.9 does, in some filtered answers) costs
# recall, not the measurement: through the coordinator and a real agent process into SQLite, on the built-in
# "null" engine with duplicate_every: 4 (every fourth answer of a connection has its first id again on its last
# row). The sweep point and both churn measurements must complete, count the answers that repeat an id
# (duplicate_answers) with the first one named (duplicate_example), score the repeats as misses, and show each
# as a "duplicate ids" row of the validity view and of `vbench show`. Then an older database without the new
# columns: `vbench resume` adds them and records the item it runs again.
. "$(dirname "$0")/../lib/lib.sh"
db="$SCRATCH/dup.sqlite"
cat >"$SCRATCH/dup.yml" <<'YML'
name: dup
k: 10
datasets:
  - {name: synth-2k, source: synthetic, rows: 2000, queries: 100, dim: 16, clusters: 8, metric: euclidean, seed: 3}
engines:
  - name: "null"
    duplicate_every: 4
phases:
  build: {}
  recall_sweep: {ef_search: [40]}
  churn: {fraction: 0.05, limit_s: 60, queries: 100, ef_search: 40}
YML

"$VBENCH" run --profile "$SCRATCH/dup.yml" --out "$db" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
rc=$?
ok $rc "vbench run exits 0: repeated ids do not fail an item"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/err.txt" | tail -20
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item done"

# One client asks queries 0 .. 99 in order: answers 4, 8, ..., 100 (queries 3, 7, ..., 99) repeat the first id
# on row 9. Each has 9 distinct ids of 10: short as well.
is "$(q "$db" "SELECT duplicate_answers || ' ' || short_answers || ' ' || queries || ' ' || errors FROM sweep_result")" \
   "25 25 100 0" "sweep: 25 of 100 answers repeat an id, and are short (9 distinct ids of 10)"
ex=$(q "$db" "SELECT duplicate_example FROM sweep_result")
[[ $ex =~ ^query\ 3:\ id\ [0-9]+\ at\ rows\ 0\ and\ 9$ ]]
ok $? "sweep: the first is named: '$ex'"
is "$(q "$db" "SELECT stage || ' ' || duplicate_answers || ' ' || (duplicate_example LIKE 'query 3: id % at rows 0 and 9')
               FROM churn_result WHERE stage IN ('before', 'after') ORDER BY stage DESC")" \
   "$(printf 'before 25 1\nafter 25 1')" "churn: before and after count theirs too"
is "$(q "$db" "SELECT COUNT(*) FROM churn_result WHERE stage NOT IN ('before', 'after') AND
               (duplicate_answers <> 0 OR duplicate_example IS NOT NULL)")" "0" \
   "churn: the stages without queries have none"
is "$(q "$db" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'duplicate ids'")" "3" \
   "three validity findings: the sweep point and the churn's before and after"
is "$(q "$db" "SELECT detail FROM v_validity WHERE \"check\" = 'duplicate ids' AND item LIKE '%recall_sweep%'")" \
   "25 of 100 answers repeated an id (first: $ex); repeats count as misses" "the sweep's finding says what and how it is scored"
like "$(q "$db" "SELECT detail FROM v_validity WHERE \"check\" = 'duplicate ids' AND detail LIKE '%after the churn%'")" \
     "25 of 100 answers after the churn repeated an id (first: query 3: id " "the churn's says when"
like "$(q "$db" "SELECT detail FROM v_validity WHERE \"check\" = 'short answers'")" \
     "25 of 100 answers had fewer than k distinct rows" "the short answers are a finding of their own"
like "$(cat "$SCRATCH/err.txt")" "25 of 100 answers repeated an id (first: query 3: id " "the terminal says so as it happens"
out=$("$VBENCH" show "$db")
like "$out" "duplicate ids" "vbench show lists the finding in its validity section"
like "$out" "repeats count as misses" "with its detail"
is "$(q "$db" "SELECT COUNT(*) FROM pragma_table_info('filtered_result') WHERE name IN ('duplicate_answers', 'duplicate_example')")" \
   "2" "filtered_result has the columns too"

# An older database: no duplicate columns (and the views of its time). The sweep point failed there and runs
# again on resume; the columns are added, the committed rows read 0, the new row has its count.
old="$SCRATCH/old.sqlite"
cp "$db" "$old"
{
    q "$old" "SELECT 'DROP VIEW ' || name || ';' FROM sqlite_master WHERE type = 'view'"
    for t in sweep_result filtered_result churn_result; do
        echo "ALTER TABLE $t DROP COLUMN duplicate_answers; ALTER TABLE $t DROP COLUMN duplicate_example;"
    done
    echo "DROP TABLE recall_dist;"   # issue 35: a database from before the recall distribution
    echo "DELETE FROM sweep_result;"
    echo "UPDATE plan SET status = 'failed', error = 'recall error: the answer returns id 1 twice' WHERE phase = 'recall_sweep';"
} >"$SCRATCH/downgrade.sql"
q "$old" <"$SCRATCH/downgrade.sql"
is "$(q "$old" "SELECT COUNT(*) FROM pragma_table_info('churn_result') WHERE name LIKE 'duplicate%'")" "0" \
   "the older database has no duplicate columns"
"$VBENCH" resume --out "$old" --retry-failed --quiet 2>"$SCRATCH/resume.txt"
rc=$?
ok $rc "vbench resume --retry-failed on the older database exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/resume.txt" | tail -20
is "$(q "$old" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item done"
is "$(q "$old" "SELECT duplicate_answers FROM sweep_result")" "25" "the sweep point ran again and has its count"
is "$(q "$old" "SELECT group_concat(duplicate_answers || ':' || COALESCE(duplicate_example, 'NULL')) FROM churn_result
                WHERE stage IN ('before', 'after')")" "0:NULL,0:NULL" "the rows committed before the columns existed read 0"
is "$(q "$old" "SELECT COUNT(*) FROM v_validity WHERE \"check\" = 'duplicate ids'")" "1" "and the validity view reads the database"
is "$(q "$old" "SELECT group_concat(phase || ':' || queries) FROM v_recall_dist")" "recall_sweep:100" \
   "resume adds the recall distribution table: the point run again has its distribution, the older rows none"
like "$("$VBENCH" show "$old")" "duplicate ids" "vbench show reads it too"
done_testing
