#!/usr/bin/env bash
# vbench report and export (issue 15) on real campaigns: a small campaign of the embedded engines (every phase,
# repeats), a second one with another hnswlib parameter, a third on another dataset. The report is rendered by
# headless Chromium with JavaScript off and no network; every section must be in the rendered page, every chart
# must decode and not be blank; the screenshot is kept as an artifact (VB_ARTIFACTS, default results.db/artifacts).
. "$(dirname "$0")/../lib/lib.sh"
need gnuplot chromium /usr/bin/python3 tar
/usr/bin/python3 -c 'import PIL' 2>/dev/null ||
    skip_all "python3-pil is not installed (bash deploy/install-deps --with-tests installs it)"
ARTIFACTS=${VB_ARTIFACTS:-$(cd "$(dirname "$0")/../.." && pwd)/results.db/artifacts}

profile() { # profile NAME M SEED [sweep]: with sweep, only the build and the recall sweep (runb and runc serve the
             # two-database reports below, whose checks read the series' labels and the recall-QPS chart's caption)
    cat > "$SCRATCH/$1.yml" <<YML
name: $1
description: "report test: 2k synthetic vectors, embedded engines, every phase, short windows, 2 repeats."
k: 10
datasets:
  - {name: synth-angular-2k, source: synthetic, rows: 2000, queries: 100, dim: 32, clusters: 16, metric: angular, seed: $3}
engines:
  - {name: hnswlib, m: $2, ef_construction: 64}
  - {name: exact}
resources: {layout: small}
phases:
  build:
  recall_sweep: {ef_search: [10, 20, 40, 80, 200]}
YML
    [ "${4:-}" = sweep ] || cat >> "$SCRATCH/$1.yml" <<YML
  concurrency: {clients: [1, 2, 4], window_s: 1, repeats: 2, warmup_s: 0.1, ef_search: 40}
  filtered: {selectivity: [0.1, 0.01], queries: 50, ef_search: 40}
  churn: {fraction: 0.1, limit_s: 60, queries: 100, ef_search: 40}
YML
}
profile runa 8 1
profile runb 16 1 sweep
profile runc 8 2 sweep
for r in runa runb runc; do
    "$VBENCH" run --profile "$SCRATCH/$r.yml" --out "$SCRATCH/$r.sqlite" --quiet 2>"$SCRATCH/$r.err"
    ok $? "campaign $r runs" || sed 's/^/#   /' "$SCRATCH/$r.err" | tail -5
done

"$VBENCH" report "$SCRATCH/runa.sqlite" >"$SCRATCH/report.out" 2>"$SCRATCH/report.err"
ok $? "vbench report exits 0"
dir="$SCRATCH/runa-report"
[ -s "$dir/report.html" ] && [ -s "$dir/report.md" ]; ok $? "report.html and report.md beside the database (DB-report/)"
like "$(cat "$SCRATCH/report.err")" "drawing chart" "progress on stderr"
n_svg=$(ls "$dir"/charts/*.svg 2>/dev/null | wc -l)
[ "$n_svg" -ge 12 ]; ok $? "charts/*.svg written ($n_svg)"
is "$(ls "$dir"/charts/*.png | wc -l)" "$n_svg" "a PNG beside every SVG"
grep -q '<svg' "$dir/charts/recall-qps.svg" && grep -q 'gnuplot' "$dir/charts/recall-qps.svg"
ok $? "the SVG is gnuplot's"
! grep -Eq '(src|href)="(https?:)?//' "$dir/report.html"; ok $? "report.html refers to nothing on the network"
grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$dir/report.html"; ok $? "and forbids any fetch (CSP)"

# Headless Chromium: a fresh profile whose preferences block JavaScript; a proxy that goes nowhere. A probe page
# proves JavaScript is off before the report is judged.
chrome() { # chrome PROFILE-DIR ARGS...
    local p=$1; shift
    mkdir -p "$p/Default"
    echo '{"profile":{"default_content_setting_values":{"javascript":2}}}' > "$p/Default/Preferences"
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$p" \
        --proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' "$@" 2>>"$SCRATCH/chromium.log"
}
printf '<html><body><p id="x">JS-OFF</p><script>document.getElementById("x").textContent="JS-ON"</script></body></html>' \
    > "$SCRATCH/probe.html"
chrome "$SCRATCH/c0" --dump-dom "file://$SCRATCH/probe.html" > "$SCRATCH/probe.dom"
grep -q '<p id="x">JS-OFF</p>' "$SCRATCH/probe.dom"; ok $? "Chromium runs with JavaScript off (probe page untouched)"
chrome "$SCRATCH/c1" --dump-dom "file://$dir/report.html" > "$SCRATCH/report.dom"
ok $? "Chromium renders report.html"
missing=""
for s in summary environment validity asymmetries recall build concurrency timegoes filtered churn streaming capacity mixed server topology reproduce appendix; do
    grep -q "<section id=\"$s\"" "$SCRATCH/report.dom" || missing="$missing $s"
done
is_empty "$missing" "every section is in the rendered page, in order"
order=$(grep -o '<section id="[a-z]*"' "$SCRATCH/report.dom" | sed 's/.*id="//; s/"//' | tr '\n' ' ')
is "$order" "summary environment validity asymmetries recall build concurrency timegoes filtered churn streaming capacity mixed server topology reproduce appendix " \
   "sections in the issue's order (issue 27 adds timegoes after concurrency, issue 25 streaming after churn, issue 37 capacity and issue 38 mixed after streaming, issue 39 topology after server)"
like "$(cat "$SCRATCH/report.dom")" "No configuration in these runs has shards or replicas" \
     "without shards or replicas the Topology section says every engine ran on one server"
chrome "$SCRATCH/c2" --window-size=1100,5000 --screenshot="$SCRATCH/report.png" "file://$dir/report.html" >/dev/null
ok $? "Chromium takes a screenshot"
/usr/bin/python3 - "$SCRATCH/report.dom" "$SCRATCH/report.png" <<'PY'
import base64, io, re, sys
from PIL import Image
dom = open(sys.argv[1]).read()
imgs = re.findall(r'<img[^>]*src="data:image/png;base64,([^"]+)"', dom)
assert len(imgs) >= 12, "only %d inline charts" % len(imgs)
for i, b in enumerate(imgs):
    im = Image.open(io.BytesIO(base64.b64decode(b)))
    im.load()
    assert im.size[0] >= 400 and im.size[1] >= 300, (i, im.size)
    colours = im.convert("RGB").getcolors(1 << 20)
    # a blank chart is one colour; a drawn one has axes, text and lines in several
    assert colours is not None and len(colours) > 8, "chart %d is blank (%d colours)" % (i, len(colours or []))
shot = Image.open(sys.argv[2]).convert("RGB")
assert shot.size[0] >= 1000, shot.size
assert len(shot.getcolors(1 << 24)) > 50, "the screenshot is blank"
print("# %d charts decoded, screenshot %dx%d" % (len(imgs), shot.size[0], shot.size[1]))
PY
ok $? "every inline chart decodes and is not blank; the screenshot is not blank"
mkdir -p "$ARTIFACTS" && cp "$SCRATCH/report.png" "$ARTIFACTS/report-screenshot.png" && echo "# screenshot: $ARTIFACTS/report-screenshot.png"

# The page's content: facts computed, not placeholders.
html=$(cat "$dir/report.html")
like "$html" "best at recall &gt;= 0.90" "the summary gives the best QPS per recall floor"
like "$html" "Scaling 1 -&gt; 4 clients" "the summary gives the scaling to the most clients"
like "$html" "Churn kept" "the summary gives the churn retention"
# hnswlib grows its graph on insert (build_s is exactly 0 since the build is no longer rounded up to a poll)
like "$html" "on insert (during the load)" "known asymmetries: when each engine builds its index, computed"
# Environment at a glance (issue 26): the machine and the engines in two small tables; the manifest folded at the end.
envsec=$(sed -n '/<section id="environment">/,/<\/section>/p' "$dir/report.html")
model=$(q "$SCRATCH/runa.sqlite" "SELECT value FROM manifest WHERE key = 'host.cpu_model'")
like "$envsec" "<td>$model</td>" "the environment names the host's CPU model"
like "$envsec" "<td>host " "a row for the host"
like "$envsec" "<td>client local-client</td>" "a row for the client agent"
like "$envsec" "<td>hnswlib</td><td>embedded</td><td>hnswlib 0.8" "a row per engine: kind and version"
like "$envsec" "m=8, ef_construction=64" "with its key settings"
! grep -q "host.cpu_flags" <<<"$envsec"; ok $? "the environment no longer lists every manifest key"
rows=$(grep -c '<tr>' <<<"$envsec")
[ "$rows" -le 12 ]; ok $? "the environment is a glance: $rows table rows (the old section had one per manifest key)"
appx=$(sed -n '/<section id="appendix">/,/<\/section>/p' "$dir/report.html")
like "$appx" "<details><summary>" "the appendix is folded"
like "$appx" "host.cpu_flags" "and holds the whole manifest"
! grep -Eq '[0-9]\.[0-9]*(9999999|0000000)[0-9]' <<<"$appx"; ok $? "manifest numbers rounded (no 4.7999999999999998)"
# every line of every chart title and caption fits the 900 px image (at most 96 characters)
long=$(grep -h '^set title' "$dir"/charts/*.body.gp | sed 's/^set title "//; s/" noenhanced$//; s/\\n/\n/g' |
       awk 'length > 96' | head -3)
is_empty "$long" "chart titles and captions are wrapped to the chart's width"
like "$html" "vbench run --profile" "reproduce gives the command"
# Recall as a distribution (issue 35): the CDF of per-query recall per engine at the sweep's lowest ef_search, with its
# caption, and the table of every measured point's percentiles and shares.
recsec=$(sed -n '/<section id="recall">/,/<\/section>/p' "$dir/report.html")
like "$html" "Per-query recall at ef_search 10: p10 1.0000, 0.0 % of the queries at recall 0." \
     "the summary gives exact's per-query recall at the lowest ef_search: p10 1, none at 0"
like "$html" "Per-query recall at ef_search 10: p10 $(q "$SCRATCH/runa.sqlite" "SELECT printf('%.4f', recall_p10) FROM v_recall_sweep WHERE engine = 'hnswlib' AND ef_search = 10")" \
     "and hnswlib's, from v_recall_sweep"
like "$recsec" '<figure id="chart-recall-distribution">' "the recall section has the recall distribution chart"
like "$recsec" "Per-query recall at ef_search 10 (1 client)" "drawn at the lowest ef_search of the sweep"
like "$recsec" "at x = 0: the queries with nothing right" "with its caption"
like "$recsec" "Recall distribution per measured point" "and the distribution table"
like "$recsec" "<th>p10</th><th>p50</th><th>zero_share</th><th>below_half</th>" "whose columns are the percentiles and shares"
/usr/bin/python3 - "$dir/charts/recall-distribution.dat" <<'PY'
import sys
blocks = [b for b in open(sys.argv[1]).read().split("\n\n\n") if b.strip()]
assert len(blocks) == 2, len(blocks)          # hnswlib and exact
for b in blocks:
    pts = [tuple(map(float, l.split())) for l in b.strip().splitlines() if not l.startswith("#")]
    assert pts[-1] == (1.0, 1.0), pts[-1]      # a CDF ends at recall 1 with every query
    assert all(p[1] < q[1] and p[0] < q[0] for p, q in zip(pts, pts[1:])), pts
PY
ok $? "the chart's data: one CDF per engine, increasing, ending at (1, 1)"
like "$(cat "$dir/report.md")" "![Recall vs QPS" "report.md links the charts as files"

# Two runs of the same dataset, another parameter: side by side, not flagged.
"$VBENCH" report "$SCRATCH/runa.sqlite" "$SCRATCH/runb.sqlite" -o "$SCRATCH/ab" --quiet
ok $? "report over two databases"
ab=$(cat "$SCRATCH/ab/report.html")
like "$ab" "runa: hnswlib" "runs side by side: runa's hnswlib"
like "$ab" "runb: hnswlib" "and runb's hnswlib"
! grep -q "dataset content hash differs" "$SCRATCH/ab/report.html"; ok $? "same dataset: no dataset flag"
# Another dataset: flagged at the top and in the charts.
"$VBENCH" report "$SCRATCH/runa.sqlite" "$SCRATCH/runc.sqlite" -o "$SCRATCH/ac" --quiet
ok $? "report over two databases of different datasets"
grep -q 'class="warn">These runs differ and are drawn side by side: dataset content hash differs' "$SCRATCH/ac/report.html"
ok $? "the dataset mismatch is flagged at the top"
sed 's/\\n/ /g' "$SCRATCH/ac/charts/recall-qps.body.gp" | grep -q "CAUTION: the runs differ in dataset content hash"
ok $? "and in the charts' captions"

# Issue 36.15: what a reader of a report of several series saw in Chromium 1,400 pixels wide. Every table fits its
# page (the recall sweep's ran to 1,585 pixels in a box of 1,100 with four series: its columns after `queries` cut
# off), the legend stands beside the plot, not below it over the x axis's label, and the latency chart draws
# lines, not shaded p50 - p99 bands that overlapped into one area.
for r in "$dir/report.html" "$SCRATCH/ab/report.html"; do
    over=$(vb_report_overflow "$r"); rc=$?
    [ $rc -eq 0 ] && [ -z "$over" ]; ok $? "every table of $(basename "$(dirname "$r")") fits its page in Chromium at 1400 px${over:+: $over}"
done
grep -q "^set key outside right top vertical" "$dir/charts/recall-qps.body.gp"
ok $? "the charts' legend stands to the right of the plot"
! grep -q "filledcurves" "$dir/charts/latency-ef.body.gp" && grep -q "dt 2" "$dir/charts/latency-ef.body.gp"
ok $? "the latency chart draws p50 and p99 as lines (no shaded bands)"
like "$html" "<p class=\"note\">Not shown: " "a table's columns left out are named under it"

# Exports.
"$VBENCH" export "$SCRATCH/runa.sqlite" --format csv -o "$SCRATCH/csv" --quiet
ok $? "export csv"
/usr/bin/python3 - "$SCRATCH/csv" "$SCRATCH/runa.sqlite" <<'PY'
import csv, os, sqlite3, sys
d, db = sys.argv[1], sqlite3.connect(sys.argv[2])
for f in ("build", "recall_sweep", "recall_targets", "recall_dist", "concurrency", "filtered", "churn", "validity"):
    raw = open(os.path.join(d, f + ".csv"), newline="").read()
    assert raw.endswith("\r\n") or raw.count("\n") <= 1, f     # RFC 4180 line ends
    rows = list(csv.reader(open(os.path.join(d, f + ".csv"), newline="")))
    n = db.execute("SELECT COUNT(*) FROM " + ("build_result" if f == "build" else "sweep_result") ).fetchone()[0]
    if f in ("build", "recall_sweep"):
        assert len(rows) - 1 == n, (f, len(rows), n)
rd = list(csv.DictReader(open(os.path.join(d, "recall_dist.csv"), newline="")))
n = db.execute("SELECT COUNT(*) FROM recall_dist").fetchone()[0]
assert len(rd) == n and n > 0, (len(rd), n)
for k in ("engine", "phase", "point", "recall", "recall_min", "recall_p1", "recall_p10", "recall_p50", "zero_share",
          "below_half_share", "queries"):
    assert k in rd[0], k
sw = list(csv.DictReader(open(os.path.join(d, "recall_sweep.csv"), newline="")))
assert all(r["recall_p10"] != "" and r["zero_share"] != "" for r in sw), sw[0]
b = list(csv.DictReader(open(os.path.join(d, "build.csv"), newline="")))
assert any("," in r["engine_version"] for r in b), "a field with a comma is quoted and read back whole"
PY
ok $? "csv: one file per view (recall_dist too, and the sweep's distribution columns), header, every row, a comma inside a field quoted"
"$VBENCH" export "$SCRATCH/runa.sqlite" --format json -o "$SCRATCH/json" --quiet
ok $? "export json"
/usr/bin/python3 - "$SCRATCH/json/results.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["profile"]["k"] == 10 and d["profile"]["name"] == "runa"
assert "host.cpu_model" in d["manifest"]
assert len(d["tables"]["sweep_result"]) == 10 and len(d["views"]["v_concurrency"]) == 12
# the recall distribution: a row per measured point, 10 sweep + 4 filtered + 2 churn before / after of each engine
assert len(d["tables"]["recall_dist"]) == len(d["views"]["v_recall_dist"]) >= 16, len(d["tables"]["recall_dist"])
assert all("recall_p1" in r and "zero_share" in r for r in d["views"]["v_recall_dist"])
assert all("recall_p10" in r and "below_half_share" in r for r in d["views"]["v_recall_sweep"])
PY
ok $? "json: profile, manifest, every result row, the recall distribution"
"$VBENCH" export "$SCRATCH/runa.sqlite" --format bundle -o "$SCRATCH/bundle" --quiet >/dev/null
ok $? "export bundle"
list=$(tar tzf "$SCRATCH/bundle/runa.tar.gz")
for f in runa/runa.sqlite runa/report/report.html runa/csv/recall_sweep.csv runa/json/results.json runa/profile.yml \
         runa/profile.resolved.json runa/README.md; do
    like "$list" "$f" "the bundle has $f"
done
tar xzf "$SCRATCH/bundle/runa.tar.gz" -C "$SCRATCH/bundle" && "$VBENCH" show "$SCRATCH/bundle/runa/runa.sqlite" >/dev/null
ok $? "the bundled database reads back"
done_testing
