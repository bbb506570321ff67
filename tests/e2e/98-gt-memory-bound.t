#!/usr/bin/env bash
# The ground truth under a memory limit (issue 29): a corpus three times larger than the memory cgroup the
# campaign runs in is read from disk about once, not once per candidate re-rank (before the fix the re-rank read
# candidate rows back at random from the memory-mapped corpus, each fault a read-ahead window: measured 2M x 96
# with 1,000 queries in a 256 MiB cgroup, 288 s against 5 s unconstrained, 35 GB read in its first 45 s; after it,
# 10 s and 731.5 MiB read for a 732.4 MiB corpus). The answer is the same file, byte for byte, as without the
# limit, and no process is OOM-killed. (That the progress moves per corpus block is test_groundtruth's: here it would
# depend on the machine's speed.)
. "$(dirname "$0")/../lib/lib.sh"
need sqlite3 dd cmp
[ "$(id -u)" = 0 ] || skip_all "a memory cgroup needs root"

ROWS=300000 DIM=96 LIMIT_MIB=40
cat >"$SCRATCH/gt.yml" <<YML
name: gtmem
k: 10
datasets:
  - name: synth-gtmem
    source: synthetic
    rows: $ROWS
    queries: 1000
    dim: $DIM
    clusters: 32
    metric: angular
    seed: 3
engines:
  - name: "null"
phases:
  build:
YML

# 1. unconstrained: makes the corpus and the reference ground truth
"$VBENCH" run --profile "$SCRATCH/gt.yml" --out "$SCRATCH/free.sqlite" --quiet >"$SCRATCH/free.out" 2>&1
is "$?" 0 "the unconstrained campaign runs"
gt=$(ls "$VBENCH_CACHE"/gt-*-k10.bin 2>/dev/null | head -1)
train=$(ls "$VBENCH_CACHE"/synth-*-train.f32 2>/dev/null | head -1)
[ -n "$gt" ] && [ -n "$train" ]; ok $? "the corpus ($train) and its ground truth ($gt) are in the cache"
mv "$gt" "$SCRATCH/gt-free.bin"
dd if="$train" iflag=nocache count=0 status=none # drop the corpus's pages: the constrained run reads it from disk

# 2. the same inside a memory cgroup of LIMIT_MIB (v2 memory.max, or v1 memory.limit_in_bytes)
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    cg=/sys/fs/cgroup/vbtest-gtmem-$$
    mkdir "$cg" && echo $((LIMIT_MIB << 20)) >"$cg/memory.max"
    oom() { awk '$1 == "oom_kill" {print $2}' "$cg/memory.events"; }
else
    cg=/sys/fs/cgroup/memory/vbtest-gtmem-$$
    mkdir "$cg" && echo $((LIMIT_MIB << 20)) >"$cg/memory.limit_in_bytes"
    oom() { awk '$1 == "oom_kill" {print $2}' "$cg/memory.oom_control"; }
fi
ok $? "a memory cgroup of $LIMIT_MIB MiB ($cg)"
[ -d "$cg" ] || { done_testing; exit; }
trap 'rmdir "$cg" 2>/dev/null; rm -rf "$SCRATCH"' EXIT
(echo "$BASHPID" >"$cg/cgroup.procs" && exec timeout 240 "$VBENCH" run --profile "$SCRATCH/gt.yml" --out "$SCRATCH/cg.sqlite") \
    >"$SCRATCH/cg.out" 2>"$SCRATCH/cg.err"
is "$?" 0 "the campaign runs inside the cgroup (within 240 s: before the fix this one did not end in 300 s)"
is "$(oom)" 0 "nothing in the cgroup was OOM-killed"
cmp -s "$SCRATCH/gt-free.bin" "$(ls "$VBENCH_CACHE"/gt-*-k10.bin | head -1)"
ok $? "the ground truth under the limit is the same file, byte for byte, as without it"

line=$(grep -a "ground truth for synth-gtmem" "$SCRATCH/cg.err" | tail -1)
like "$line" "computed and cached" "the run says it computed the ground truth: $line"
read_mib=$(sed -n 's/.*s, \([0-9.]*\) MiB read from disk.*/\1/p' <<<"$line")
corpus_mib=$(sed -n 's/.*for a corpus of \([0-9.]*\) MiB.*/\1/p' <<<"$line")
[ -n "$read_mib" ] && [ -n "$corpus_mib" ] && awk -v r="$read_mib" -v c="$corpus_mib" 'BEGIN { exit !(r <= 1.5 * c) }'
ok $? "the corpus is read about once: $read_mib MiB read for $corpus_mib MiB (at most 1.5 times)"
awk -v r="$read_mib" -v c="$corpus_mib" 'BEGIN { exit !(r >= 0.5 * c) }'
ok $? "... and it was read from disk at all ($read_mib MiB: the limit made the run cold)"

done_testing
