#!/usr/bin/env bash
# vbench dataset convert: a VectorDBBench case written by the test itself (parquet through hyparquet-writer from
# npm: train in two shuffled parts, test, neighbors) becomes NAME.base.fbin, NAME.query.fbin and NAME.gt.ibin with
# every vector at the row its id names; the profile entry it prints runs a campaign; a case without
# neighbors.parquet and one whose ids are not 0..rows-1 are refused by name. The converter's parquet reader
# (hyparquet) is installed by vbench under the cache on first use: without node, npm or their registry this test
# is skipped, saying which, and where every test is required (root, systemd, debootstrap) it fails, saying which.
. "$(dirname "$0")/../lib/lib.sh"
need cmp
for c in node npm; do
    command -v $c >/dev/null || skip_all "$c is not installed (bash deploy/install-deps --with-tests installs it)"
done
timeout 60 npm view hyparquet version >/dev/null 2>&1 ||
    skip_all "the npm registry is unreachable (npm view hyparquet failed): convert needs hyparquet once"
w="$SCRATCH/writer"
mkdir -p "$w"
timeout 300 npm install --no-audit --no-fund --silent --prefix "$w" hyparquet-writer@0.17.0 >"$SCRATCH/npm.log" 2>&1 ||
    skip_all "npm could not install hyparquet-writer (the fixture's writer): $(tail -1 "$SCRATCH/npm.log")"

case="$SCRATCH/case"
mkdir -p "$case"
cat > "$w/make.mjs" <<'JS'
// A VectorDBBench-shaped case: ids shuffled across two train parts, exact L2 neighbours.
import { parquetWriteFile } from 'hyparquet-writer'
import fs from 'fs'
const [dir, exp] = process.argv.slice(2)
const n = 3000, q = 50, dim = 16, k = 10
let seed = 12345
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
const vec = () => Array.from({ length: dim }, () => Math.fround(rnd() * 2 - 1))
const base = Array.from({ length: n }, vec), qs = Array.from({ length: q }, vec)
const order = Array.from({ length: n }, (_, i) => i).sort(() => rnd() - 0.5)
const listOf = (type) => [{ name: 'emb', repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 }, { name: 'element', type, repetition_type: 'REQUIRED' }]
const vecSchema = [{ name: 'root', num_children: 2 }, { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' }, ...listOf('FLOAT')]
const write = (file, ids, vs) => parquetWriteFile({ filename: `${dir}/${file}`, rowGroupSize: 700, schema: vecSchema,
  columnData: [{ name: 'id', data: ids.map(BigInt) }, { name: 'emb', data: vs }] })
const half = n / 2
write('train-00-of-02.parquet', order.slice(0, half), order.slice(0, half).map((i) => base[i]))
write('train-01-of-02.parquet', order.slice(half), order.slice(half).map((i) => base[i]))
write('test.parquet', [...Array(q).keys()], qs)
const d2 = (a, b) => a.reduce((s, x, j) => s + (x - b[j]) ** 2, 0)
const nbrs = qs.map((x) => [...Array(n).keys()].sort((a, b) => d2(x, base[a]) - d2(x, base[b]) || a - b).slice(0, k))
const nbSchema = [{ name: 'root', num_children: 2 }, { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' },
  { name: 'neighbors_id', repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 }, { name: 'element', type: 'INT64', repetition_type: 'REQUIRED' }]
parquetWriteFile({ filename: `${dir}/neighbors.parquet`, schema: nbSchema,
  columnData: [{ name: 'id', data: [...Array(q).keys()].map(BigInt) }, { name: 'neighbors_id', data: nbrs.map((r) => r.map(BigInt)) }] })
fs.writeFileSync(`${exp}.base`, Buffer.from(new Float32Array(base.flat()).buffer))
fs.writeFileSync(`${exp}.query`, Buffer.from(new Float32Array(qs.flat()).buffer))
fs.writeFileSync(`${exp}.gt`, Buffer.from(new Uint32Array(nbrs.flat()).buffer))
JS
(cd "$w" && node make.mjs "$case" "$SCRATCH/expected") 2>"$SCRATCH/make.err"
ok $? "the test wrote a VectorDBBench case in parquet (two train parts, test, neighbors)"
[ -s "$SCRATCH/make.err" ] && sed 's/^/#   /' "$SCRATCH/make.err"

out="$SCRATCH/out"
"$VBENCH" dataset convert "$case" --metric euclidean --name vdb --out "$out" >"$SCRATCH/profile.txt" 2>"$SCRATCH/conv.err"
rc=$?
ok $rc "vbench dataset convert exits 0 (installing hyparquet under the cache on first use)"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/conv.err" | tail -20
[ -e "$VBENCH_CACHE/node/node_modules/hyparquet/package.json" ]; ok $? "hyparquet is installed under the cache directory"
is "$(od -An -tu4 -N8 "$out/vdb.base.fbin" | xargs)" "3000 16" "base.fbin header: 3000 rows x 16"
tail -c +9 "$out/vdb.base.fbin" | cmp -s - "$SCRATCH/expected.base"; ok $? "every train vector at the row its id names"
tail -c +9 "$out/vdb.query.fbin" | cmp -s - "$SCRATCH/expected.query"; ok $? "the queries, in id order"
is "$(od -An -tu4 -N8 "$out/vdb.gt.ibin" | xargs)" "50 10" "gt.ibin header: 50 queries x 10 neighbours"
tail -c +9 "$out/vdb.gt.ibin" | cmp -s - "$SCRATCH/expected.gt"; ok $? "the ground truth ids, per query"
like "$(cat "$SCRATCH/profile.txt")" "groundtruth_path: $out/vdb.gt.ibin" "it prints the profile entry"

# the printed entry runs a campaign; the given neighbours agree with vbench's exact ground truth
{ echo "name: vdb"; echo "k: 10"; cat "$SCRATCH/profile.txt"
  printf 'engines:\n  - name: exact\nphases:\n  build:\n  recall_sweep:\n    ef_search: [10]\n'; } > "$SCRATCH/vdb.yml"
"$VBENCH" run --profile "$SCRATCH/vdb.yml" --out "$SCRATCH/vdb.sqlite" --quiet 2>"$SCRATCH/run.err"
rc=$?
ok $rc "a campaign on the converted files completes"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/run.err" | tail -20
is "$(q "$SCRATCH/vdb.sqlite" "SELECT rows FROM build_result")" "3000" "the build loaded 3000 rows"
is "$(q "$SCRATCH/vdb.sqlite" "SELECT recall FROM sweep_result")" "1.0" "exact search finds the neighbours (recall 1.0)"

# refusals
mkdir -p "$SCRATCH/nogt" && cp "$case"/train-*.parquet "$case/test.parquet" "$SCRATCH/nogt/"
err=$("$VBENCH" dataset convert "$SCRATCH/nogt" --metric euclidean --out "$out" 2>&1 >/dev/null)
is "$?" "1" "a case without neighbors.parquet is refused"
like "$err" "no neighbors.parquet" "naming the missing file"
mkdir -p "$SCRATCH/sparse" && cp "$case/train-00-of-02.parquet" "$case/test.parquet" "$case/neighbors.parquet" "$SCRATCH/sparse/"
err=$("$VBENCH" dataset convert "$SCRATCH/sparse" --metric euclidean --out "$out" 2>&1 >/dev/null)
is "$?" "1" "a case whose ids are not 0..rows-1 is refused"
like "$err" "the converter needs the ids 0..rows-1" "saying why"
[ ! -e "$out/sparse.base.fbin" ]; ok $? "and leaves no file under the final name"
err=$("$VBENCH" dataset convert "$case" --out "$out" 2>&1 >/dev/null)
is "$?" "2" "--metric is required"

[ -n "${KEEP:-}" ] && trap - EXIT && echo "# kept $SCRATCH"
done_testing
