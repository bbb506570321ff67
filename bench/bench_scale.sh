#!/usr/bin/env bash
# The stand's own costs as the corpus grows (issue 29): a synthetic corpus of each size, into the `null` engine
# (it accepts the rows and answers at once, so every cost measured is vbench's), build + one recall-sweep point,
# with a fresh dataset cache per size. Per size: the float32 cache's generation (seconds, MiB written), the load
# through the client (rows/s), the exact ground truth (seconds, multiply-adds/s, MiB read from disk), the agent's
# peak RSS and the anonymous part of it (sampled from /proc every 0.2 s), the results database's size, the answers
# kept for the sweep point, and `vbench report`'s time. One table, how each grows (the exponent b of a fit
# value = a x rows^b over the sizes), and a chart (gnuplot).
#
# A benchmark, not a test. usage: bash bench/bench_scale.sh [BIN]
# env: BENCH_SCALE_ROWS (default "1000000 2000000 5000000 10000000"), BENCH_SCALE_DIM (96), BENCH_SCALE_QUERIES
#      (10000), BENCH_SCALE_DIR (default /var/tmp/vbench-bench-scale: the corpora need up to rows x dim x 4 bytes),
#      BENCH_SCALE_CGROUP_MIB (run each campaign inside a memory cgroup of this size; needs root)
set -u
BIN=${1:-bin}
BIN=$(cd "$BIN" && pwd)
ROWS_LIST=${BENCH_SCALE_ROWS:-"1000000 2000000 5000000 10000000"}
DIM=${BENCH_SCALE_DIM:-96}
NQ=${BENCH_SCALE_QUERIES:-10000}
DIR=${BENCH_SCALE_DIR:-/var/tmp/vbench-bench-scale}
CG_MIB=${BENCH_SCALE_CGROUP_MIB:-}
mkdir -p "$DIR"
TABLE="$DIR/scale-d$DIM.tsv"

echo "# bench-scale: $(date -u +%FT%TZ), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg), dim $DIM, $NQ queries, k 10${CG_MIB:+, memory cgroup $CG_MIB MiB}"
printf 'rows\tgen_s\tgen_mib_w\tload_rows_s\tgt_s\tgt_gmadds\tgt_mib_r\tcorpus_mib\tpeak_rss_mib\tpeak_anon_mib\tdb_mib\tanswers_kib\treport_s\toom\n' >"$TABLE"

for ROWS in $ROWS_LIST; do
    work="$DIR/run-$ROWS-d$DIM"
    rm -rf "$work" && mkdir -p "$work"
    cat >"$work/p.yml" <<YML
name: scale
k: 10
datasets:
  - {name: synth-$ROWS, source: synthetic, rows: $ROWS, queries: $NQ, dim: $DIM, clusters: 64, metric: angular, seed: 1}
engines:
  - name: "null"
phases:
  build:
  recall_sweep: {ef_search: [10]}
YML
    cg=""
    if [ -n "$CG_MIB" ]; then
        if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
            cg=/sys/fs/cgroup/vbench-scale-$$; mkdir "$cg"; echo $((CG_MIB << 20)) >"$cg/memory.max"
        else
            cg=/sys/fs/cgroup/memory/vbench-scale-$$; mkdir "$cg"; echo $((CG_MIB << 20)) >"$cg/memory.limit_in_bytes"
        fi
    fi
    (
        [ -n "$cg" ] && echo "$BASHPID" >"$cg/cgroup.procs"
        exec env VBENCH_CACHE="$work/cache" "$BIN/vbench" run --profile "$work/p.yml" --out "$work/r.sqlite"
    ) >"$work/run.out" 2>"$work/run.err" &
    pid=$!
    rss=0 anon=0
    while kill -0 "$pid" 2>/dev/null; do
        for a in $(pgrep -f "vbench-agent.*$work" 2>/dev/null); do
            read -r r n < <(awk '/^VmRSS/ {r = $2} /^RssAnon/ {n = $2} END {print r + 0, n + 0}' "/proc/$a/status" 2>/dev/null)
            [ "${r:-0}" -gt "$rss" ] && rss=$r
            [ "${n:-0}" -gt "$anon" ] && anon=$n
        done
        sleep 0.2
    done
    wait "$pid"; rc=$?
    oom=0
    if [ -n "$cg" ]; then
        oom=$(awk '$1 == "oom_kill" {print $2}' "$cg/memory.events" "$cg/memory.oom_control" 2>/dev/null | head -1)
        rmdir "$cg"
    fi
    if [ "$rc" -ne 0 ]; then
        echo "rows $ROWS: the campaign failed (exit $rc): $(tail -3 "$work/run.err")" >&2
        continue
    fi
    open=$(grep -a "dataset synth-$ROWS (" "$work/run.err" | tail -1)
    gtl=$(grep -a "ground truth for synth-$ROWS" "$work/run.err" | tail -1)
    gen_s=$(sed -n 's/.*opened in \([0-9.]*\) s.*/\1/p' <<<"$open")
    gen_w=$(sed -n 's/.* read and \([0-9.]*\) MiB written.*/\1/p' <<<"$open")
    gt_s=$(sed -n 's/.* in \([0-9.]*\) s, [0-9.]* MiB read.*/\1/p' <<<"$gtl")
    gt_r=$(sed -n 's/.* s, \([0-9.]*\) MiB read from disk.*/\1/p' <<<"$gtl")
    corpus=$(sed -n 's/.*for a corpus of \([0-9.]*\) MiB.*/\1/p' <<<"$gtl")
    load=$(sqlite3 "$work/r.sqlite" "SELECT printf('%.0f', rows / max(load_s, 1e-9)) FROM build_result LIMIT 1")
    answers=$(sqlite3 "$work/r.sqlite" "SELECT printf('%.1f', length(answers) / 1024.0) FROM sweep_result LIMIT 1")
    t0=$(date +%s%N)
    "$BIN/vbench" report "$work/r.sqlite" -o "$work/report" --quiet >/dev/null 2>&1
    report_s=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    db=$(stat -c %s "$work/r.sqlite")
    awk -v rows="$ROWS" -v nq="$NQ" -v dim="$DIM" -v gen="$gen_s" -v genw="$gen_w" -v load="$load" -v gt="$gt_s" \
        -v gtr="$gt_r" -v corpus="$corpus" -v rss="$rss" -v anon="$anon" -v db="$db" -v ans="$answers" \
        -v rep="$report_s" -v oom="${oom:-0}" 'BEGIN {
        printf "%d\t%.2f\t%.1f\t%.0f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%.1f\t%.2f\t%s\n", rows, gen, genw, load,
               gt, (gt > 0 ? nq * rows * dim / gt / 1e9 : 0), gtr, corpus, rss / 1024, anon / 1024, db / 1048576, ans,
               rep, oom }' >>"$TABLE"
    rm -rf "$work/cache"   # the corpus: up to 3.8 GB per size
done

# aligned by awk, not column(1): a minimal Debian has no bsdextrautils (make fresh-check found it)
awk -F'\t' '{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } if (NF > nf) nf = NF }
     END { for (r = 1; r <= NR; r++) { l = ""; for (i = 1; i <= nf; i++) l = l sprintf(i < nf ? "%-" w[i] "s  " : "%s", c[r, i])
           print l } }' "$TABLE"
echo "# gen_s, gen_mib_w: the synthetic corpus generated and written as the float32 cache (agent's /proc/self/io)"
echo "# gt_s, gt_gmadds, gt_mib_r: the exact ground truth (queries x rows x dim multiply-adds), what it read from disk"
echo "# peak_rss_mib / peak_anon_mib: the client agent's VmRSS / RssAnon, largest sample (every 0.2 s)"
echo "# db_mib: the results database; answers_kib: the ids kept for the sweep point; report_s: vbench report"
# how each grows: least squares of log(value) on log(rows)
awk -F'\t' 'NR > 1 && $1 > 0 { n++; x = log($1); for (c = 2; c <= 13; c++) if ($c > 0) { sx[c] += x; sy[c] += log($c);
        sxx[c] += x * x; sxy[c] += x * log($c); m[c]++ } }
    NR == 1 { for (c = 2; c <= 13; c++) name[c] = $c }
    END { if (n < 2) exit; printf "# growth exponent b (value ~ rows^b):"; for (c = 2; c <= 13; c++) if (m[c] >= 2) {
        d = m[c] * sxx[c] - sx[c] * sx[c]; if (d > 0) printf " %s %.2f", name[c], (m[c] * sxy[c] - sx[c] * sy[c]) / d }
        printf "\n" }' "$TABLE"

if command -v gnuplot >/dev/null 2>&1; then
    gnuplot <<GP
set terminal pngcairo size 900,520 font ",10"
set output "$DIR/scale-d$DIM.png"
set title "vbench's own costs against the corpus size ($DIM dimensions, $NQ queries, null engine)" noenhanced
set logscale xy
set autoscale xfix
set xlabel "rows"
set key left top
set grid
plot "$TABLE" using 1:2 skip 1 with linespoints title "generation s", \
     "" using 1:5 skip 1 with linespoints title "ground truth s", \
     "" using 1:9 skip 1 with linespoints title "agent peak RSS MiB", \
     "" using 1:10 skip 1 with linespoints title "agent peak anon MiB", \
     "" using 1:13 skip 1 with linespoints title "report s"
GP
    echo "# chart: $DIR/scale-d$DIM.png"
fi
