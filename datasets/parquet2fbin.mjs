// `vbench dataset convert`: a VectorDBBench case (parquet) into big-ann files, run by Node.js with hyparquet
// (a pure-JavaScript parquet reader that `vbench dataset convert` installs beside this file with npm).
// Built into the vbench binary (util/embed.sh) and written into CACHE/node/ at each use.
//
// usage: node parquet2fbin.mjs DIR OUTDIR NAME METRIC
// DIR holds train.parquet or shuffle_train.parquet (or their -NN-of-MM parts; columns id, emb), test.parquet
// (id, emb) and neighbors.parquet (id, neighbors_id). Writes OUTDIR/NAME.base.fbin, NAME.query.fbin (uint32 rows,
// uint32 dim, float32 values) and NAME.gt.ibin (uint32 queries, uint32 k, uint32 ids), each row at the position
// its id names, so a neighbour id is a row of the base file. Row groups are read one at a time: the memory used is
// one row group, not the corpus. Each file is written as FILE.part and renamed when complete.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'
import fs from 'fs'
import path from 'path'

const [dir, outdir, name, metric] = process.argv.slice(2)
if (!metric) {
  console.error('usage: node parquet2fbin.mjs DIR OUTDIR NAME METRIC')
  process.exit(2)
}

function die(msg) {
  console.error(`vbench dataset convert: ${msg}`)
  process.exit(1)
}

const files = fs.readdirSync(dir).sort()
const partsOf = (prefix) => files.filter((f) => new RegExp(`^${prefix}(-\\d+-of-\\d+)?\\.parquet$`).test(f))
let train = partsOf('train')
if (!train.length) train = partsOf('shuffle_train')
if (!train.length) die(`${dir}: no train.parquet, shuffle_train.parquet or their -NN-of-MM parts`)
for (const f of ['test.parquet', 'neighbors.parquet'])
  if (!files.includes(f)) die(`${dir}: no ${f} (a VectorDBBench case has train, test and neighbors)`)

async function open(file) {
  const p = path.join(dir, file)
  const buf = await asyncBufferFromFile(p)
  let md
  try {
    md = await parquetMetadataAsync(buf)
  } catch (e) {
    die(`${p}: not a parquet file that can be read (${e.message})`)
  }
  return { p, buf, md, rows: Number(md.num_rows) }
}

// Every row group of the files, in order: fn(row, file, rowNumber).
async function eachRow(opened, columns, fn) {
  for (const o of opened) {
    let start = 0
    for (const rg of o.md.row_groups) {
      const end = start + Number(rg.num_rows)
      const rows = await parquetReadObjects({ file: o.buf, metadata: o.md, columns, rowStart: start, rowEnd: end })
      for (let i = 0; i < rows.length; i++) fn(rows[i], o.p, start + i)
      start = end
    }
  }
}

function header(fd, a, b) {
  const h = Buffer.alloc(8)
  h.writeUInt32LE(a, 0)
  h.writeUInt32LE(b, 4)
  fs.writeSync(fd, h, 0, 8, 0)
}

// Vectors of `opened` (column emb) into OUTDIR/NAME.SUFFIX, row = id. Returns [rows, dim].
async function vectors(opened, suffix) {
  const total = opened.reduce((s, o) => s + o.rows, 0)
  if (!total) die(`${opened[0].p}: no rows`)
  const first = await parquetReadObjects({ file: opened[0].buf, metadata: opened[0].md, columns: ['id', 'emb'], rowStart: 0, rowEnd: 1 })
  if (!first.length || !Array.isArray(first[0].emb) && !ArrayBuffer.isView(first[0].emb))
    die(`${opened[0].p}: no list column "emb" (VectorDBBench's vectors)`)
  const dim = first[0].emb.length
  const out = path.join(outdir, `${name}.${suffix}`)
  const fd = fs.openSync(`${out}.part`, 'w')
  header(fd, total, dim)
  fs.ftruncateSync(fd, 8 + total * dim * 4)
  const seen = new Uint8Array(total)
  const row = new Float32Array(dim)
  let done = 0
  await eachRow(opened, ['id', 'emb'], (r, p, n) => {
    const id = Number(r.id)
    if (!Number.isInteger(id) || id < 0 || id >= total)
      die(`${p}: row ${n}: id ${r.id} is outside 0..${total - 1}; the converter needs the ids 0..rows-1`)
    if (seen[id]) die(`${p}: row ${n}: id ${id} appears twice`)
    if (!r.emb || r.emb.length !== dim) die(`${p}: row ${n}: emb has ${r.emb ? r.emb.length : 0} values, the first row ${dim}`)
    seen[id] = 1
    for (let j = 0; j < dim; j++) row[j] = r.emb[j]
    fs.writeSync(fd, new Uint8Array(row.buffer), 0, dim * 4, 8 + id * dim * 4)
    if (++done % 1000000 === 0) console.error(`${out}: ${done} of ${total} rows`)
  })
  fs.fsyncSync(fd)
  fs.closeSync(fd)
  fs.renameSync(`${out}.part`, out)
  return [total, dim, out]
}

const base = await vectors(await Promise.all(train.map(open)), 'base.fbin')
const query = await vectors([await open('test.parquet')], 'query.fbin')
if (query[1] !== base[1]) die(`test.parquet has ${query[1]} dimensions, the train files ${base[1]}`)

const nb = await open('neighbors.parquet')
const q = query[0]
const firstNb = await parquetReadObjects({ file: nb.buf, metadata: nb.md, columns: ['id', 'neighbors_id'], rowStart: 0, rowEnd: 1 })
if (!firstNb.length || !firstNb[0].neighbors_id) die(`${nb.p}: no list column "neighbors_id"`)
const k = firstNb[0].neighbors_id.length
const gt = path.join(outdir, `${name}.gt.ibin`)
const gfd = fs.openSync(`${gt}.part`, 'w')
header(gfd, q, k)
fs.ftruncateSync(gfd, 8 + q * k * 4)
const ids = new Uint32Array(k)
const seen = new Uint8Array(q)
await eachRow([nb], ['id', 'neighbors_id'], (r, p, n) => {
  const id = Number(r.id)
  if (!Number.isInteger(id) || id < 0 || id >= q) die(`${p}: row ${n}: query id ${r.id} is outside 0..${q - 1}`)
  if (!r.neighbors_id || r.neighbors_id.length !== k) die(`${p}: row ${n}: ${r.neighbors_id ? r.neighbors_id.length : 0} neighbours, the first row ${k}`)
  for (let j = 0; j < k; j++) {
    const v = Number(r.neighbors_id[j])
    if (!Number.isInteger(v) || v < 0 || v >= base[0]) die(`${p}: row ${n}: neighbour ${r.neighbors_id[j]} is not a row of the train files`)
    ids[j] = v
  }
  seen[id] = 1
  fs.writeSync(gfd, new Uint8Array(ids.buffer), 0, k * 4, 8 + id * k * 4)
})
if (seen.indexOf(0) >= 0) die(`${nb.p}: no neighbours for query ${seen.indexOf(0)}`)
fs.fsyncSync(gfd)
fs.closeSync(gfd)
fs.renameSync(`${gt}.part`, gt)

console.error(`vbench dataset convert: ${base[0]} x ${base[1]} vectors, ${q} queries, ${k} neighbours each`)
console.log(`datasets:
  - name: ${name}
    path: ${base[2]}
    queries_path: ${query[2]}
    groundtruth_path: ${gt}
    metric: ${metric}`)
