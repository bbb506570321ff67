#!/usr/bin/env bash
# vbench dataset fetch over real HTTP on loopback (tests/e2e/range-server.py), on a fixture TEXMEX archive served
# under the registry's name (texmex-siftsmall: siftsmall.tar.gz, same shape): a transfer cut in the middle leaves
# FILE.part and exit 3, the second fetch resumes it with an HTTP Range request, verifies it and unpacks the members
# the dataset needs; retries resume within one command; a corrupted copy (at the source or in the cache) is refused
# by its checksum; a size that differs is refused; a local directory mirror (file://) resumes too; an unpack cut
# off is done again; an archive with a ".." member is refused; a file of another shape than the registry's is
# refused and moved aside; a big-ann cut fetches only its bytes (Range) and resumes; `vbench run` on a profile
# that names a registry dataset refuses with the fetch command under --no-fetch, and fetches it from a mirror.
. "$(dirname "$0")/lib.sh"
need /usr/bin/python3 sha256sum
/usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null ||
    skip_all "python3-h5py/python3-numpy missing (bash deploy/install-deps --with-tests)"

mirror="$SCRATCH/mirror"
src="$SCRATCH/src"
mkdir -p "$mirror" "$src"
# the fixture: TEXMEX's layout (DIR/DIR_base.fvecs ...) with siftsmall's shape: 10000 x 128, 100 queries, 100
# neighbours each; SIFT-like integer values so that gzip has something to do. ARCHIVE [BASE_ROWS BASE_DIM] [EVIL]
mk_texmex() {
/usr/bin/python3 - "$@" <<'PY'
import io, sys, tarfile, numpy as np
out = sys.argv[1]
rows, dim = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (10000, 128)
evil = len(sys.argv) > 4
rng = np.random.default_rng(7)
def fvecs(a):
    n, d = a.shape
    return np.hstack([np.full((n, 1), d, np.int32).view(np.float32), a.astype(np.float32)]).tobytes()
def ivecs(a):
    n, d = a.shape
    return np.hstack([np.full((n, 1), d, np.int32), a.astype(np.int32)]).tobytes()
files = {"siftsmall/siftsmall_base.fvecs": fvecs(rng.integers(0, 64, (rows, dim))),
         "siftsmall/siftsmall_query.fvecs": fvecs(rng.integers(0, 64, (100, 128))),
         "siftsmall/siftsmall_groundtruth.ivecs": ivecs(rng.integers(0, 10000, (100, 100))),
         "siftsmall/siftsmall_learn.fvecs": fvecs(rng.integers(0, 64, (50, 128)))}
if evil:
    files["../evil"] = b"outside"
with tarfile.open(out, "w:gz", compresslevel=1) as t:
    for name, data in files.items():
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
        if not evil:
            with open(out + "." + name.split("_")[-1], "wb") as f:
                f.write(data)
PY
}
mk_texmex "$mirror/siftsmall.tar.gz"
mv "$mirror"/siftsmall.tar.gz.base.fvecs "$mirror"/siftsmall.tar.gz.query.fvecs "$mirror"/siftsmall.tar.gz.groundtruth.ivecs "$src"/
rm -f "$mirror"/siftsmall.tar.gz.learn.fvecs
arc=siftsmall.tar.gz
good_sha=$(sha256sum "$mirror/$arc" | cut -d' ' -f1)
size=$(stat -c %s "$mirror/$arc")
cut=$((size / 3))

/usr/bin/python3 "$(dirname "$0")/range-server.py" "$mirror" "$SCRATCH/port" &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$SCRATCH"' EXIT
[ -n "${KEEP:-}" ] && trap 'kill $srv 2>/dev/null' EXIT
for _ in $(seq 50); do [ -s "$SCRATCH/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$SCRATCH/port")"
cache="$SCRATCH/cache"
dest="$cache/datasets/$arc"
members() { # DIR: the three members unpacked, byte for byte the source's
    cmp -s "$1/texmex-siftsmall.base.fvecs" "$src/siftsmall.tar.gz.base.fvecs" &&
        cmp -s "$1/texmex-siftsmall.query.fvecs" "$src/siftsmall.tar.gz.query.fvecs" &&
        cmp -s "$1/texmex-siftsmall.gt.ivecs" "$src/siftsmall.tar.gz.groundtruth.ivecs"
}

# 1. cut in the middle: exit 3, the part kept, no file
echo "$cut" > "$mirror/.cut"
"$VBENCH" dataset fetch texmex-siftsmall --mirror "$url" --retries 0 --cache-dir "$cache" >"$SCRATCH/o1" 2>"$SCRATCH/e1"
is "$?" "3" "a transfer cut in the middle exits 3 (broke off, resumable)"
like "$(cat "$SCRATCH/e1")" "$arc.part is kept" "the message says the part is kept and how to resume"
like "$(cat "$SCRATCH/e1")" "unverified" "a registry file without a published checksum is said to be unverified"
is "$(stat -c %s "$dest.part" 2>/dev/null)" "$cut" "the .part holds exactly the bytes that came"
[ ! -e "$dest" ]; ok $? "no file under the final name"

# 2. the second fetch resumes with a Range request and verifies
: > "$mirror/.log"
"$VBENCH" dataset fetch texmex-siftsmall --mirror "$url" --retries 0 --cache-dir "$cache" >"$SCRATCH/o2" 2>"$SCRATCH/e2"
rc=$?
ok $rc "the second fetch exits 0"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/e2"
is "$(cat "$mirror/.log")" "/$arc bytes=$cut-" "it asked for the rest only (Range: bytes=$cut-)"
like "$(cat "$SCRATCH/e2")" "resuming at" "it says it resumes"
is "$(sha256sum < "$dest" | cut -d' ' -f1)" "$good_sha" "the file is the mirror's, byte for byte"
is "$(cut -d' ' -f1 "$dest.sha256")" "$good_sha" "its sha256 is recorded beside it (no published checksum)"
[ ! -e "$dest.part" ]; ok $? "no .part left"
members "$cache/datasets"; ok $? "the archive's three members are unpacked under the registry's names, whole"
[ ! -e "$cache/datasets/texmex-siftsmall.learn.fvecs" ] && ! ls "$cache"/datasets/*.unpack >/dev/null 2>&1
ok $? "nothing else is unpacked and no .unpack is left"
like "$(cat "$SCRATCH/o2")" "registry: texmex-siftsmall" "it prints how a profile names it"
like "$("$VBENCH" dataset list --cache-dir "$cache" | grep '^texmex-siftsmall ')" "here+shape" \
    "dataset list shows it here and its shape checked"

# 3. a fetch of a file already here verifies it; a corrupted cached copy is refused by the recorded checksum
"$VBENCH" dataset fetch texmex-siftsmall --cache-dir "$cache" --retries 0 >/dev/null 2>"$SCRATCH/e3"
ok $? "a fetch of a file already here verifies it without a download (no mirror needed)"
like "$(cat "$SCRATCH/e3")" "recorded at its first fetch" "against the checksum recorded at its first fetch"
printf '\x55' | dd of="$dest" bs=1 seek=$((size / 2)) conv=notrunc status=none
"$VBENCH" dataset fetch texmex-siftsmall --cache-dir "$cache" --retries 0 >/dev/null 2>"$SCRATCH/e4"
is "$?" "1" "a corrupted copy in the cache is refused (exit 1)"
like "$(cat "$SCRATCH/e4")" "rm $dest" "the refusal says to delete it and fetch again"
like "$(cat "$SCRATCH/e4")" "expected $good_sha" "and names the expected checksum"

# 4. a corrupted copy at the source: refused by the recorded checksum, moved aside to .bad
rm -f "$dest" "$cache"/datasets/texmex-siftsmall.*
cp "$mirror/$arc" "$SCRATCH/mirror-good.tar.gz"
printf '\x55' | dd of="$mirror/$arc" bs=1 seek=$((size / 2)) conv=notrunc status=none
"$VBENCH" dataset fetch texmex-siftsmall --mirror "$url" --cache-dir "$cache" --retries 0 >/dev/null 2>"$SCRATCH/e5"
is "$?" "1" "a corrupted download is refused (exit 1)"
like "$(cat "$SCRATCH/e5")" "sha256" "by its sha256"
[ -e "$dest.bad" ] && [ ! -e "$dest" ]; ok $? "it is moved to .bad, nothing under the final name"
cp "$SCRATCH/mirror-good.tar.gz" "$mirror/$arc"

# 5. a URL with a published checksum: a corrupted source refused, the good one accepted; a wrong size refused
cp "$mirror/$arc" "$mirror/copy.tar.gz"
printf '\x55' | dd of="$mirror/copy.tar.gz" bs=1 seek=100 conv=notrunc status=none
"$VBENCH" dataset fetch "$url/copy.tar.gz" --sha256 "$good_sha" --cache-dir "$cache" --retries 0 >/dev/null 2>"$SCRATCH/e6"
is "$?" "1" "a URL whose content does not match --sha256 is refused"
like "$(cat "$SCRATCH/e6")" "expected $good_sha (published)" "the message names the expected checksum"
cp "$mirror/$arc" "$mirror/copy2.tar.gz"
"$VBENCH" dataset fetch "$url/copy2.tar.gz" --size $((size + 1)) --cache-dir "$cache" --retries 0 >/dev/null 2>"$SCRATCH/e7"
is "$?" "1" "a file whose size differs from --size is refused"
like "$(cat "$SCRATCH/e7")" "expected $((size + 1))" "the message names both sizes"

# 6. retries: a cut transfer resumes by itself within one command
echo "$cut" > "$mirror/.cut"
: > "$mirror/.log"
"$VBENCH" dataset fetch "$url/copy2.tar.gz" --output "$SCRATCH/copy3.tar.gz" --sha256 "$good_sha" --retries 2 >/dev/null 2>"$SCRATCH/e8"
rc=$?
ok $rc "with --retries, a cut transfer completes in one command"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/e8"
is "$(tail -1 "$mirror/.log")" "/copy2.tar.gz bytes=$cut-" "the retry resumed with a Range request"
like "$(cat "$SCRATCH/e8")" "verified (sha256 $good_sha, published)" "and verified the published checksum"

# 7. a local directory as the mirror (file://), resuming a part that is already there
cache2="$SCRATCH/cache2"
mkdir -p "$cache2/datasets"
head -c "$cut" "$mirror/$arc" > "$cache2/datasets/$arc.part"
"$VBENCH" dataset fetch texmex-siftsmall --mirror "$mirror" --cache-dir "$cache2" >/dev/null 2>"$SCRATCH/e9"
rc=$?
ok $rc "a directory mirror (file://) works"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/e9"
like "$(cat "$SCRATCH/e9")" "resuming at" "and resumes a .part there"
is "$(sha256sum < "$cache2/datasets/$arc" | cut -d' ' -f1)" "$good_sha" "the result is the mirror's file"
members "$cache2/datasets"; ok $? "and its members are unpacked"

# 7b. an unpack cut off (a half-written .unpack, a member missing) is done again, not trusted
rm "$cache2/datasets/texmex-siftsmall.base.fvecs"
head -c 1000 "$src/siftsmall.tar.gz.base.fvecs" > "$cache2/datasets/texmex-siftsmall.base.fvecs.unpack"
"$VBENCH" dataset fetch texmex-siftsmall --cache-dir "$cache2" >/dev/null 2>"$SCRATCH/e9b"
rc=$?
ok $rc "a fetch after an unpack cut off completes"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/e9b"
members "$cache2/datasets"; ok $? "the member is unpacked again from the verified archive, whole"
[ ! -e "$cache2/datasets/texmex-siftsmall.base.fvecs.unpack" ]; ok $? "the partial .unpack is gone"

# 8. vbench run on a profile naming the registry dataset
cat > "$SCRATCH/reg.yml" <<YML
name: reg
k: 10
datasets:
  - name: glove
    registry: texmex-siftsmall
engines:
  - name: hnswlib
    m: 8
    ef_construction: 64
phases:
  build:
  recall_sweep:
    ef_search: [10, 40]
YML
cache3="$SCRATCH/cache3"
out=$("$VBENCH" run --profile "$SCRATCH/reg.yml" --out "$SCRATCH/nofetch.sqlite" --cache-dir "$cache3" --no-fetch --quiet 2>&1)
is "$?" "2" "run --no-fetch with the registry dataset missing is refused"
like "$out" "vbench dataset fetch texmex-siftsmall --cache-dir $cache3" "naming the command that fetches it"
[ ! -e "$SCRATCH/nofetch.sqlite" ]; ok $? "no results database is created"
: > "$mirror/.log"
"$VBENCH" run --profile "$SCRATCH/reg.yml" --out "$SCRATCH/reg.sqlite" --cache-dir "$cache3" --mirror "$url" \
    >"$SCRATCH/o10" 2>"$SCRATCH/e10"
rc=$?
ok $rc "run fetches the registry dataset from the mirror and completes"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/e10" | tail -20
like "$(cat "$mirror/.log")" "/$arc" "the mirror served it"
is "$(sha256sum < "$cache3/datasets/$arc" | cut -d' ' -f1)" "$good_sha" "into the cache, whole"
is "$(q "$SCRATCH/reg.sqlite" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item done"
is "$(q "$SCRATCH/reg.sqlite" "SELECT COUNT(*) FROM build_result WHERE rows = 10000")" "1" "the build loaded the 10000 rows of the fetched file"
# a second run finds it in the cache: no request at all
: > "$mirror/.log"
"$VBENCH" run --profile "$SCRATCH/reg.yml" --out "$SCRATCH/reg2.sqlite" --cache-dir "$cache3" --no-fetch --quiet \
    >/dev/null 2>&1
ok $? "a second run with --no-fetch uses the cached file"
is "$(wc -c < "$mirror/.log")" "0" "without asking the mirror"

# 9. an archive holding a member outside its directory ("../evil") is refused, nothing unpacked
evil="$SCRATCH/evil"
mkdir -p "$evil"
mk_texmex "$evil/$arc" 10000 128 evil
"$VBENCH" dataset fetch texmex-siftsmall --mirror "$evil" --cache-dir "$SCRATCH/cache4" >/dev/null 2>"$SCRATCH/e11"
is "$?" "1" "an archive with a '..' member is refused"
like "$(cat "$SCRATCH/e11")" "\"../evil\" points outside" "naming the member"
[ ! -e "$SCRATCH/cache4/evil" ] && [ ! -e "$SCRATCH/evil.txt" ] && ! ls "$SCRATCH"/cache4/datasets/texmex-siftsmall.* >/dev/null 2>&1
ok $? "nothing is written, inside the cache or outside it"

# 10. a file of another shape than the registry's: 5000 x 257 has the very size of 10000 x 128 in .fvecs
wrong="$SCRATCH/wrong"
mkdir -p "$wrong"
mk_texmex "$wrong/$arc" 5000 257
"$VBENCH" dataset fetch texmex-siftsmall --mirror "$wrong" --cache-dir "$SCRATCH/cache5" >/dev/null 2>"$SCRATCH/e12"
is "$?" "1" "a fetched file whose shape differs from the registry's is refused"
like "$(cat "$SCRATCH/e12")" "texmex-siftsmall.base.fvecs: the registry says texmex-siftsmall's corpus is 10000 x 128, the file holds 5000 x 257" \
    "the message names the file, the registry's shape and the file's"
d5="$SCRATCH/cache5/datasets"
[ -e "$d5/texmex-siftsmall.base.fvecs.bad" ] && [ ! -e "$d5/texmex-siftsmall.base.fvecs" ]
ok $? "the file is moved aside to .bad, nothing under its name"
# an HDF5 file of another shape (the registry's glove-25 has 1183514 rows): refused, and its recorded checksum
# moved aside with it, so that the next fetch is not refused by the checksum of the wrong file
/usr/bin/python3 - "$wrong/glove-25-angular.hdf5" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(7)
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["distance"] = "angular"
    f.create_dataset("train", data=rng.normal(size=(2000, 25)).astype(np.float32))
    f.create_dataset("test", data=rng.normal(size=(100, 25)).astype(np.float32))
PY
"$VBENCH" dataset fetch glove-25-angular --mirror "$wrong" --cache-dir "$SCRATCH/cache5" >/dev/null 2>"$SCRATCH/e13"
is "$?" "1" "an HDF5 file of another shape is refused"
like "$(cat "$SCRATCH/e13")" "glove-25-angular's corpus (\"train\") is 1183514 x 25, the file holds 2000 x 25" "with both shapes"
[ -e "$d5/glove-25-angular.hdf5.bad" ] && [ -e "$d5/glove-25-angular.hdf5.bad.sha256" ] && [ ! -e "$d5/glove-25-angular.hdf5.sha256" ]
ok $? "the file and its recorded checksum are moved aside"
cp "$wrong/glove-25-angular.hdf5" "$d5/glove-25-angular.hdf5"
like "$("$VBENCH" dataset list --cache-dir "$SCRATCH/cache5" | grep '^glove-25-angular ')" "WRONG SHAPE" \
    "dataset list marks a file of another shape in the cache"

# 11. a big-ann cut: only the first ROWS rows' bytes are asked for (Range), the header says ROWS; cut off, it resumes
/usr/bin/python3 - "$mirror/big.u8bin" <<'PY'
import sys, numpy as np
rows, dim = 50000, 16
a = np.random.default_rng(3).integers(0, 256, (rows, dim), dtype=np.uint8)
with open(sys.argv[1], "wb") as f:
    f.write(np.array([rows, dim], np.uint32).tobytes())
    f.write(a.tobytes())
PY
want=$((8 + 1000 * 16))
: > "$mirror/.log"
echo 4000 > "$mirror/.cut"
"$VBENCH" dataset fetch "$url/big.u8bin" --cut 1000 --output "$SCRATCH/cut.u8bin" --retries 0 >/dev/null 2>"$SCRATCH/e14"
is "$?" "3" "a cut transfer cut in the middle exits 3"
is "$(cat "$mirror/.log")" "$(printf '/big.u8bin bytes=0-7\n/big.u8bin bytes=8-%d' $((want - 1)))" \
    "it asked for the header, then for the cut's bytes only"
is "$(stat -c %s "$SCRATCH/cut.u8bin.part" 2>/dev/null)" "4008" "the .part holds what came"
: > "$mirror/.log"
"$VBENCH" dataset fetch "$url/big.u8bin" --cut 1000 --output "$SCRATCH/cut.u8bin" --retries 0 >/dev/null 2>"$SCRATCH/e15"
rc=$?
ok $rc "the second fetch completes the cut"
[ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/e15"
is "$(cat "$mirror/.log")" "/big.u8bin bytes=4008-$((want - 1))" "resuming with a Range request for the rest of the cut"
is "$(stat -c %s "$SCRATCH/cut.u8bin")" "$want" "the cut has 8 + 1000 x 16 bytes"
is "$(od -An -tu4 -N8 "$SCRATCH/cut.u8bin" | xargs)" "1000 16" "its header says 1000 rows of 16"
cmp -s <(tail -c +9 "$SCRATCH/cut.u8bin") <(tail -c +9 "$mirror/big.u8bin" | head -c $((1000 * 16)))
ok $? "its rows are the first 1000 rows of the big file"
like "$(cat "$SCRATCH/e15")" "recorded in" "its checksum (of the cut, header set) is recorded"
"$VBENCH" dataset fetch "$url/big.u8bin" --cut 1000 --output "$SCRATCH/cut.u8bin" >/dev/null 2>&1
ok $? "a fetch of the cut already here verifies it"
"$VBENCH" dataset fetch "$url/big.u8bin" --cut 60000 --output "$SCRATCH/cut2.u8bin" --retries 0 >/dev/null 2>"$SCRATCH/e16"
is "$?" "1" "a cut of more rows than the file has is refused"
like "$(cat "$SCRATCH/e16")" "50000 rows x 16 dims" "saying what the header holds"

done_testing
