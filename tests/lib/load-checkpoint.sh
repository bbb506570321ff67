# The checks of a load continued from its checkpoint across coordinator kills, for 44-load-checkpoint (MariaDB) and
# 49-load-checkpoint-pgvector. Sourced after lib.sh; uses $db (the results file).
# ckpt A: the last checkpoint of attempt A (rows), 0 when none.
ckpt() { q "$db" "SELECT COALESCE(MAX(rows), 0) FROM load_checkpoint WHERE attempt = $1" 2>/dev/null || echo 0; }

# vb_load_kills KILLS WHAT AFTER: with the campaign running as $run, KILLS times: wait until this attempt's
# checkpoints are 1,500 rows past where it started (the rows of the attempt before), SIGKILL the coordinator, call
# AFTER with the attempt's number (its checks, in this shell; what it leaves in $kill_note is added to $killed_at
# after the checkpoint), resume
# it in the background as $run again. Then the last resume runs as $run; $killed_at lists where each attempt stopped.
vb_load_kills() {
    local kills=$1 what=$2 after=$3 a from
    killed_at=""
    for a in $(seq 1 "$kills"); do
        from=$((a == 1 ? 0 : $(ckpt $((a - 1)))))
        wait_sql "$db" "SELECT COALESCE(MAX(rows), 0) FROM load_checkpoint WHERE attempt = $a" $((from + 1500)) 120
        ok $? "attempt $a: $what checkpointed 1,500 rows past row $from"
        kill -9 $run
        wait $run 2>/dev/null
        kill_note=""
        "$after" "$a"
        killed_at="$killed_at $(ckpt $a)${kill_note:+ $kill_note}"
        "$VBENCH" resume --out "$db" --quiet 2>>"$SCRATCH/run.txt" &
        run=$!
    done
}

# vb_load_continued KILLS WHAT: each resumed attempt 2 .. KILLS+1 started at the last checkpoint of the attempt
# before it, said by the agent ("continuing the load from its checkpoint at row N"), its own checkpoints past it;
# no attempt loaded from the first row. WHAT names the load in the checks ("the load", "the COPY").
vb_load_continued() {
    local kills=$1 what=$2 a want got first
    for a in $(seq 2 $((kills + 1))); do
        want=$(ckpt $((a - 1)))
        [ "$want" -gt 0 ]; ok $? "attempt $((a - 1)) left a checkpoint ($want rows)"
        got=$(q "$db" "SELECT message FROM event WHERE message LIKE '%continuing the load from its checkpoint at row%' ORDER BY id LIMIT 1 OFFSET $((a - 2))" |
              sed -n 's/.*checkpoint at row \([0-9]*\):.*/\1/p')
        is "$got" "$want" "attempt $a continued $what at row $want, the checkpoint, not at row 0"
        first=$(q "$db" "SELECT MIN(rows) FROM load_checkpoint WHERE attempt = $a")
        [ -z "$first" ] || [ "$first" -gt "$want" ]
        ok $? "attempt $a's checkpoints start past it (${first:-none} > $want)"
    done
    q "$db" "SELECT message FROM event WHERE message LIKE '%continuing the load%'" | sed 's/^/# /'
    is "$(q "$db" "SELECT COUNT(*) FROM event WHERE message LIKE '%loading from the first row%'")" "0" \
       "no attempt went back to the first row"
}
