#!/usr/bin/env bash
# vbench dataset fetch over real HTTP on loopback (tests/lib/range-server.py), on a fixture TEXMEX archive served
# under the registry's name (texmex-siftsmall: siftsmall.tar.gz, same shape): a transfer cut in the middle leaves
# FILE.part and exit 3, the second fetch resumes it with an HTTP Range request, verifies it and unpacks the members
# the dataset needs; retries resume within one command; a corrupted copy (at the source or in the cache) is refused
# by its checksum; a size that differs is refused; a local directory mirror (file://) resumes too; an unpack cut
# off is done again; an archive with a ".." member is refused; a file of another shape than the registry's is
# refused and moved aside; a big-ann cut fetches only its bytes (Range) and resumes; `vbench run` on a profile
# that names a registry dataset refuses with the fetch command under --no-fetch, and fetches it from a mirror.
. "$(dirname "$0")/../lib/lib.sh"
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

/usr/bin/python3 "$(dirname "$0")/../lib/range-server.py" "$mirror" "$SCRATCH/port" &
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

# 12. Real data from Debian's own package (issue 35): fashion-mnist-784-euclidean from dataset-fashion-mnist. Removed
# first, so the fetch is seen to install it; then listed, described (vbench's exact ground truth for 50 queries to
# k = 100 against numpy's brute force over the package's own files), a tiny campaign on a seeded subset, a truncated
# and a corrupted copy of a real IDX file refused with the file and the byte offset.
pkg=dataset-fashion-mnist
fm=/usr/share/datasets/fashion-mnist
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    skip "the Debian package part needs root and apt-get (dataset-fashion-mnist is installed and removed)"
else
    apt-get remove -y "$pkg" >"$SCRATCH/apt-rm.log" 2>&1
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'
    is "$?" "1" "$pkg is not installed before the fetch"
    # not root: the one apt command that installs it, nothing done
    if command -v setpriv >/dev/null; then
        setpriv --reuid=65534 --regid=65534 --clear-groups "$VBENCH" dataset fetch fashion-mnist-784-euclidean \
            >"$SCRATCH/o-fm0" 2>"$SCRATCH/e-fm0"
        is "$?" "1" "not root: the fetch exits 1"
        like "$(cat "$SCRATCH/e-fm0")" "run
  apt-get install -y $pkg" "and prints the one apt command that installs the package"
    else
        skip "setpriv is not here (util-linux): the fetch as another user is not tried"
    fi
    # run --no-fetch: neither the package nor the download is here, and neither is fetched
    printf 'name: nf\ndatasets:\n  - {name: fm, registry: fashion-mnist-784-euclidean}\nengines:\n  - {name: exact}\nphases:\n  build:\n' \
        >"$SCRATCH/nf.yml"
    out=$("$VBENCH" run --profile "$SCRATCH/nf.yml" --out "$SCRATCH/nf.sqlite" --cache-dir "$SCRATCH/cache-fm" --no-fetch \
        --quiet 2>&1)
    is "$?" "2" "run --no-fetch without the package and the download is refused"
    like "$out" "or install Debian's package that ships it (apt-get install -y $pkg)" "naming the package's apt command too"
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'
    is "$?" "1" "--no-fetch installed nothing"
    "$VBENCH" dataset fetch fashion-mnist-784-euclidean --cache-dir "$SCRATCH/cache-fm" >"$SCRATCH/o-fm1" 2>"$SCRATCH/e-fm1"
    rc=$?
    ok $rc "as root, vbench dataset fetch fashion-mnist-784-euclidean exits 0"
    [ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/e-fm1" | tail -5
    ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null)
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' && [ -s "$fm/train-images-idx3-ubyte.gz" ]
    ok $? "it installed $pkg ($ver): its IDX files are under $fm"
    like "$(cat "$SCRATCH/e-fm1")" "apt-get install -y $pkg" "saying the apt command it ran"
    like "$(cat "$SCRATCH/o-fm1")" "Debian's package $pkg $ver, installed" "and that the package is the dataset"
    like "$("$VBENCH" dataset list --cache-dir "$SCRATCH/cache-fm" | grep '^fashion-mnist-784-euclidean ')" \
        "deb|hdf5  60000x784, 10000" "dataset list shows it with its sources (the package, else the HDF5 download)"
    like "$("$VBENCH" dataset list --cache-dir "$SCRATCH/cache-fm" | grep '^fashion-mnist-784-euclidean ')" \
        "deb $pkg ($ver)" "and the installed package's version"

    # --hdf5: ann-benchmarks' download instead of the package (from an empty mirror here: the attempt is what is seen)
    mkdir -p "$SCRATCH/empty-mirror"
    "$VBENCH" dataset fetch fashion-mnist-784-euclidean --hdf5 --mirror "$SCRATCH/empty-mirror" --retries 0 \
        --cache-dir "$SCRATCH/cache-fm" >/dev/null 2>"$SCRATCH/e-fm-h5"
    is "$?" "1" "--hdf5 takes the publisher's download even with the package installed (none in an empty mirror)"
    like "$(cat "$SCRATCH/e-fm-h5")" "empty-mirror/fashion-mnist-784-euclidean.hdf5" "it looked for the HDF5 file"

    # vbench's exact ground truth (datasets/groundtruth.c) to k = 100 for 50 queries against numpy's brute force
    "$VBENCH" dataset info fashion-mnist-784-euclidean --queries 50 --k 100 --gt-out "$SCRATCH/gt100.txt" \
        --cache-dir "$SCRATCH/cache-fm" >"$SCRATCH/info" 2>"$SCRATCH/info.err"
    ok $? "vbench dataset info computes the ground truth of 50 queries to k = 100" || sed 's/^/#   /' "$SCRATCH/info.err"
    like "$(cat "$SCRATCH/info")" "60000 rows x 784, 10000 queries, euclidean" "info: the shape and the metric"
    like "$(cat "$SCRATCH/info")" "classes      10 (rows / queries per class: 0: 6000/1000" "info: 10 classes of 6000 rows and 1000 queries"
    like "$(cat "$SCRATCH/info")" "duplicates   0 corpus rows equal to an earlier corpus row; 0 queries equal to a corpus row" \
        "info: no duplicate row and no query equal to a row (as measured from outside, issue 35)"
    like "$(cat "$SCRATCH/info")" "ties         0 of 50 sampled queries have the 100th and 101st distance equal" \
        "info: no tie between the 100th and the 101st neighbour of 50 queries"
    like "$("$VBENCH" dataset info fashion-mnist-784-euclidean --cache-dir "$SCRATCH/cache-fm" 2>&1)" \
        "ties         0 of 200 sampled queries have the 10th and 11th distance equal; 0 have the 11th within 1e-3 of the 10th" \
        "info: no tie at the 10th neighbour of 200 queries (as measured from outside, issue 35)"
    cat >"$SCRATCH/gtcheck.py" <<'PY'
import gzip, sys, numpy as np
def idx_images(path):
    b = gzip.open(path).read()
    assert int.from_bytes(b[:4], "big") == 0x803
    n, r, c = (int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(3))
    return np.frombuffer(b, np.uint8, n * r * c, 16).reshape(n, r * c).astype(np.float64)
# pixels are integers: every product and sum below is an integer under 2^53 (at most 784 x 255^2), so the squared
# distances are exact in float64, whatever order BLAS adds them in
train = idx_images(sys.argv[1] + "/train-images-idx3-ubyte.gz")
test = idx_images(sys.argv[1] + "/t10k-images-idx3-ubyte.gz")
norms = np.einsum("ij,ij->i", train, train)
rows = [l.split() for l in open(sys.argv[2]).read().split("\n") if l]
k, bad = int(sys.argv[3]), []
qs = [int(l[0]) for l in rows]
dot = train @ test[qs].T
for j, l in enumerate(rows):
    q = qs[j]
    ids = np.array([int(x) for x in l[1::2]])
    dv = np.array([float(x) for x in l[2::2]])
    d = np.sqrt(norms + (test[q] * test[q]).sum() - 2 * dot[:, j])
    order = np.argsort(d, kind="stable")
    dk = d[order[k - 1]]
    # the same distance at every rank, each id's own distance, the same rows up to ties at the k-th distance
    if len(ids) != k or not np.allclose(dv, d[order[:k]], rtol=1e-6, atol=1e-4) or \
       not np.allclose(dv, d[ids], rtol=1e-6, atol=1e-4) or \
       set(ids[d[ids] < dk]) != set(order[:k][d[order[:k]] < dk]):
        bad.append(q)
print("%d queries, %d differ %s" % (len(rows), len(bad), " ".join(map(str, bad[:5]))))
PY
    is "$(/usr/bin/python3 "$SCRATCH/gtcheck.py" "$fm" "$SCRATCH/gt100.txt" 100 2>&1 | tail -1)" "50 queries, 0 differ " \
        "vbench's ground truth to k = 100 equals numpy's exact brute force over the package's files on 50 queries"

    # a tiny campaign on a seeded subset (rows 5000, queries 100), hnswlib and exact, the package in the manifest
    cat >"$SCRATCH/fm.yml" <<YML
name: fm
k: 10
datasets:
  - name: fm
    registry: fashion-mnist-784-euclidean
    rows: 5000
    queries: 100
engines:
  - {name: hnswlib, m: 8, ef_construction: 64}
  - {name: exact}
phases:
  build:
  recall_sweep: {ef_search: [10, 40]}
YML
    "$VBENCH" run --profile "$SCRATCH/fm.yml" --out "$SCRATCH/fm.sqlite" --cache-dir "$SCRATCH/cache-fm" --quiet \
        >"$SCRATCH/o-fm2" 2>"$SCRATCH/e-fm2"
    rc=$?
    ok $rc "a campaign on registry: fashion-mnist-784-euclidean, rows 5000, queries 100 completes"
    [ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/e-fm2" | tail -5
    is "$(q "$SCRATCH/fm.sqlite" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every plan item done"
    is "$(q "$SCRATCH/fm.sqlite" "SELECT group_concat(rows) FROM build_result")" "5000,5000" "each build loaded the 5000 rows of the subset"
    is "$(q "$SCRATCH/fm.sqlite" "SELECT group_concat(DISTINCT queries) FROM sweep_result")" "100" "each sweep point ran the 100 queries of the subset"
    is "$(q "$SCRATCH/fm.sqlite" "SELECT group_concat(printf('%.4f', recall)) FROM sweep_result WHERE engine = 'exact'")" \
        "1.0000,1.0000" "exact's recall is 1.0 against vbench's ground truth of the subset"
    man() { q "$SCRATCH/fm.sqlite" "SELECT value FROM manifest WHERE key = '$1'"; }
    is "$(man dataset.fm.package) $(man dataset.fm.package_version)" "$pkg $ver" "the manifest names the package and its version"
    is "$(man dataset.fm.file.path)" "$fm/train-images-idx3-ubyte.gz" "and the corpus file"
    is "$(man dataset.fm.file.path.sha256)" "$(sha256sum "$fm/train-images-idx3-ubyte.gz" | cut -d' ' -f1)" "with its sha256"
    is "$(man dataset.fm.file.queries_labels_path.sha256)" "$(sha256sum "$fm/t10k-labels-idx1-ubyte.gz" | cut -d' ' -f1)" \
        "every file of the package, the labels too"
    is "$(man dataset.fm.subset)" "rows 5000 of 60000, queries 100 of 10000, seed 42 (a seeded subset)" "and the subset taken"

    # the IDX reader on real files broken as downloads and disks break them: the file and the byte offset named
    head -c 2000000 "$fm/t10k-images-idx3-ubyte.gz" >"$SCRATCH/t10k-cut.gz"
    cp "$fm/t10k-images-idx3-ubyte.gz" "$SCRATCH/t10k-bad.gz"
    printf '\377\377\377\377\377\377\377\377' | dd of="$SCRATCH/t10k-bad.gz" bs=1 seek=1000000 conv=notrunc 2>/dev/null
    for f in cut bad; do
        cat >"$SCRATCH/idx-$f.yml" <<YML
name: idx-$f
datasets:
  - {name: fm, source: idx, metric: euclidean, path: $fm/train-images-idx3-ubyte.gz, queries_path: $SCRATCH/t10k-$f.gz}
engines:
  - {name: exact}
phases:
  build:
YML
        "$VBENCH" run --profile "$SCRATCH/idx-$f.yml" --out "$SCRATCH/idx-$f.sqlite" --cache-dir "$SCRATCH/cache-fm" \
            --quiet >/dev/null 2>&1
    done
    like "$(q "$SCRATCH/idx-cut.sqlite" "SELECT error FROM plan")" \
        "t10k-cut.gz: truncated: the gzip stream breaks off at file byte 2000000 (IDX byte " \
        "a real IDX file cut short is refused, naming the file and the byte where it breaks off"
    like "$(q "$SCRATCH/idx-bad.sqlite" "SELECT error FROM plan")" "t10k-bad.gz: corrupt gzip data at file byte " \
        "a real IDX file with corrupted bytes is refused, naming the file and the byte"
fi

done_testing
