#!/usr/bin/env bash
# Engines built from a source tarball with stated flags (issue 17): deploy/image-build builds the layer
# db-trixie-pgvector-0.8.6 (pgvector 0.8.6 from ../shared/vendor, `make OPTFLAGS=-march=x86-64-v3` against
# trixie's PostgreSQL 17, stripped, over a hard-linked copy of db-trixie) when the cache is cold and finds it
# when it is warm; the base image is left as it was. Then, in the test systemd namespace, the dev profile on
# `recipe: pgvector pgvector_version=0.8.6`: the server answers extversion 0.8.6, and the manifest and `vbench
# show` carry the tarball, its sha256, the flags, the target ISA; the validity section compares that ISA with
# this host's CPU (AVX-512 here: an x86-64-v3 build leaves it unused). A small campaign on the packaged 0.8.0
# gives the other side: Debian's package, built for the x86-64 baseline. Skips visibly without the vendored
# tarball (CI without ../shared/vendor) or without the namespace (the recipe checks of part 0 run anyway).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../../deploy/systemd-ns"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
IB="$ROOT/deploy/image-build"
LAYER=db-trixie-pgvector-0.8.6
SHA=5743dac39fdfa740533cf95e71b033bd5513b71dda194b3cf19464ccbf76f3fb
diag() { sed 's/^/#   /'; }

# --- 0. layer recipes without building anything: the tarball is checked and found as documented ----------------------
mkdir -p "$SCRATCH/recipes" "$SCRATCH/vendor"
printf '@suite trixie\nprocps\n' >"$SCRATCH/recipes/b.list"
printf 'x' >"$SCRATCH/vendor/src.tar.gz"
xsha=$(sha256sum "$SCRATCH/vendor/src.tar.gz" | cut -d' ' -f1)
layer() { printf '@base b\n@buildroot b\n@source src.tar.gz %s\n@flags -march=x86-64-v2\n@build make\n@install make install\n' "$1" \
          >"$SCRATCH/recipes/l.list"; }
lib() { bash "$IB" --recipe-dir "$SCRATCH/recipes" --cache "$SCRATCH/images" "$@"; }
layer "$xsha"
p1=$(lib --vendor "$SCRATCH/vendor" --path-only l); rc=$?
is "$rc" "1" "--path-only on an unbuilt layer: exit 1"
like "$p1" "$SCRATCH/images/l-" "and its path"
p2=$(VBENCH_VENDOR="$SCRATCH/vendor" lib --path-only l)
is "$p2" "$p1" "VBENCH_VENDOR finds the same tarball"
sed -i 's/x86-64-v2/x86-64-v3/' "$SCRATCH/recipes/l.list"
[ "$(lib --vendor "$SCRATCH/vendor" --path-only l)" != "$p1" ]; ok $? "other flags, another cache key"
layer "$(printf '0%.0s' $(seq 64))"
err=$(lib --vendor "$SCRATCH/vendor" --path-only l 2>&1)
like "$err" "src.tar.gz: sha256 is $xsha, the recipe" "a tarball whose sha256 differs from the recipe's is refused"
err=$(lib --vendor "$SCRATCH/nowhere" --path-only l 2>&1)
like "$err" "src.tar.gz not found (looked in: $SCRATCH/nowhere)" "a missing tarball names where it was looked for"
printf '@base b\n@source src.tar.gz %s\n@build make\n@install make install\n' "$xsha" >"$SCRATCH/recipes/l.list"
like "$(lib --vendor "$SCRATCH/vendor" --path-only l 2>&1)" "a layer needs @buildroot" "a layer without a build root is refused"
printf '@suite trixie\n@flags -O2\nprocps\n' >"$SCRATCH/recipes/l.list"
like "$(lib --path-only l 2>&1)" "belong to a layer, which needs @base" "layer directives without @base are refused"

why=$(vb_ns_skip_reason)
if [ -z "$why" ]; then
    probe=$(bash "$IB" --path-only "$LAYER" 2>&1 >/dev/null)
    case "$probe" in *"not found"*) why="no vendored pgvector-0.8.6.tar.gz (${probe#*: })" ;; esac
fi
[ -n "$why" ] || [ "$(id -u)" -eq 0 ] || why="building an image needs root"
skip_rest() { T_N=$((T_N + 1)); echo "ok $T_N # SKIP the layer build and the campaigns: $1"; done_testing; exit; }
[ -z "$why" ] || skip_rest "$why"
vb_ensure_image db-trixie
base=$(bash "$IB" --path-only db-trixie) || skip_rest "no engine image db-trixie"

# --- 1. the layer: built when cold, found when warm -----------------------------------------------------------------
path=$(bash "$IB" --path-only "$LAYER"); cold=$?
t0=$(date +%s%N)
built=$(bash "$IB" "$LAYER" 2>"$SCRATCH/layer.err")
ok $? "image-build $LAYER ($([ $cold -eq 1 ] && echo "cold: built" || echo "warm: cached") in $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
[ -n "$built" ] || { diag <"$SCRATCH/layer.err"; done_testing; exit 1; }
is "$built" "$path" "at the path --path-only names"
t0=$(date +%s%N)
again=$(bash "$IB" "$LAYER" 2>&1)
is "$again" "$built" "a second call is a no-op that prints the same path ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
lf() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$built/vbench-layer.txt"; }
is "$(lf source)" "pgvector-0.8.6.tar.gz" "vbench-layer.txt names the tarball"
is "$(lf source_sha256)" "$SHA" "and its sha256"
is "$(lf flags)" "-march=x86-64-v3" "the flags"
is "$(lf target_isa)" "x86-64-v3" "the target ISA"
like "$(lf built_with)" "postgresql-server-dev-17 17" "what it was built against"
like "$(lf files)" "/usr/lib/postgresql/17/lib/vector.so" "the files it installed"
secs=$(lf build_seconds)
diag <<<"compile: ${secs}s; layer: $(awk -F'\t' '$1 == "build_seconds" { print $2 }' "$built/vbench-image.txt")s"
ctl() { sed -n "s/^default_version = '\(.*\)'/\1/p" "$1/usr/share/postgresql/17/extension/vector.control"; }
is "$(ctl "$built")" "0.8.6" "the layer's extension is 0.8.6"
is "$(ctl "$base")" "0.8.0" "the base image still holds Debian's 0.8.0"
[ "$(stat -c %i "$built/usr/lib/postgresql/17/lib/vector.so")" != "$(stat -c %i "$base/usr/lib/postgresql/17/lib/vector.so")" ]
ok $? "vector.so is a file of its own, not a link into the base"
[ "$(stat -c %i "$built/usr/sbin/mariadbd")" = "$(stat -c %i "$base/usr/sbin/mariadbd")" ]
ok $? "what the layer leaves alone is shared with the base (hard links)"
readelf -S "$built/usr/lib/postgresql/17/lib/vector.so" | grep -q '\.symtab'
[ $? -ne 0 ]; ok $? "vector.so is stripped"
is "$(awk -F'\t' '$1 == "postgresql-17-pgvector"' "$built/vbench-packages.txt" | wc -l)" "0" \
   "the replaced package leaves the layer's package list"
bc=usr/lib/postgresql/17/lib/bitcode/vector/src/vector.bc
if [ -e "$built/$bc" ]; then ! cmp -s "$built/$bc" "$base/$bc"; else true; fi
ok $? "no JIT bitcode of 0.8.0 is left beside 0.8.6"

# --- 2. the dev campaign on 0.8.6 in the namespace -----------------------------------------------------------------
vb_ns_start "$SCRATCH" "$ROOT"
ok $? "systemd boots in a namespace"
[ -n "$VB_NS_PID" ] || { done_testing; exit 1; }
m() { q "$1" "SELECT value FROM manifest WHERE key = '$2'"; }
sed -e 's/^name: dev$/name: dev-pgv086/' -e 's/^    recipe: pgvector$/    recipe: pgvector pgvector_version=0.8.6/' \
    "$ROOT/profiles/dev.yml" >"$SCRATCH/dev-pgv086.yml"
grep -q 'pgvector_version=0.8.6' "$SCRATCH/dev-pgv086.yml"; ok $? "the dev profile, with pgvector on pgvector_version=0.8.6"
db=$SCRATCH/v086.sqlite
t0=$(date +%s)
vb_ns_run "$VBENCH" run --profile "$SCRATCH/dev-pgv086.yml" --engines pgvector --out "$db" >"$SCRATCH/v086.out" 2>"$SCRATCH/v086.err"
rc=$?
ok $rc "vbench run (dev, pgvector 0.8.6) exits 0 ($(($(date +%s) - t0)) s)"
[ $rc -eq 0 ] || tail -30 "$SCRATCH/v086.err" | diag
is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every item is done"
like "$(m "$db" "engine.pgvector.version")" "pgvector 0.8.6" "the server answers extversion 0.8.6"
like "$(m "$db" "server.pgvector.unit.root_directory")" "/$LAYER-" "the server ran from the layer image"
is "$(m "$db" "server.pgvector.recipe.parameter.pgvector_version")" "0.8.6" "the manifest has the recipe parameter"
is "$(m "$db" "server.pgvector.provenance.source")" "tarball pgvector-0.8.6.tar.gz" "the source: the tarball"
is "$(m "$db" "server.pgvector.provenance.source_sha256")" "$SHA" "its sha256"
is "$(m "$db" "server.pgvector.provenance.flags")" "-march=x86-64-v3" "the compiler flags"
is "$(m "$db" "server.pgvector.provenance.target_isa")" "x86-64-v3" "the target ISA"
# What this host's /proc/cpuinfo lacks of x86-64-v3 (orchestrator/isa.c's list; a virtual machine may hide a
# flag, such as LZCNT's "abm", from the guest): the manifest must name exactly that, and a finding must follow.
host_flags=" $(grep -m1 '^flags' /proc/cpuinfo | sed 's/^[^:]*: *//') "
v3_lacks=
for f in lm cmov cx8 fpu fxsr mmx syscall sse sse2 cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3 \
         avx avx2 bmi1 bmi2 f16c fma abm movbe xsave; do
    case "$host_flags" in *" $f "*) ;; *) v3_lacks="$v3_lacks${v3_lacks:+ }$f" ;; esac
done
is "$(m "$db" "server.pgvector.provenance.isa_missing")" "$v3_lacks" \
   "isa_missing names what this host lacks of x86-64-v3 (${v3_lacks:-nothing})"
like "$(m "$db" "server.pgvector.package.postgresql-17-pgvector")" "replaced by a build of pgvector-0.8.6.tar.gz" \
     "the package version says it was replaced"
show=$("$VBENCH" show "$db")
like "$show" "Engine provenance" "vbench show has the provenance table"
like "$show" "$SHA" "with the sha256"
like "$show" "tarball pgvector-0.8.6.tar.gz" "and the source"
findings=$(q "$db" "SELECT \"check\" || ': ' || detail FROM v_validity WHERE engine = 'pgvector' AND \"check\" IN
                    ('SIMD narrower than host', 'ISA not on host')")
if grep -qw avx512f /proc/cpuinfo; then
    like "$findings" "SIMD narrower than host: vector kernels built for x86-64-v3 use at most AVX2 (256 bits); the host of the server has AVX-512 (512 bits)" \
         "AVX-512 on this host, an x86-64-v3 build: a validity finding"
    like "$show" "SIMD narrower than host" "in vbench show's validity section"
else
    case "$findings" in *"SIMD narrower"*) ok 1 "no AVX-512 on this host: no SIMD finding for an x86-64-v3 build" ;;
        *) ok 0 "no AVX-512 on this host: no SIMD finding for an x86-64-v3 build" ;; esac
fi
if [ -n "$v3_lacks" ]; then
    like "$findings" "ISA not on host: built for x86-64-v3, which needs $v3_lacks" \
         "this host lacks $v3_lacks: the build's finding says so"
else
    case "$findings" in *"ISA not on host"*) ok 1 "a host with all of x86-64-v3: no ISA finding" ;;
        *) ok 0 "a host with all of x86-64-v3: no ISA finding" ;; esac
fi
# A host without what the build needs (made so by editing the recorded facts: this one has it all).
cp "$db" "$SCRATCH/noisa.sqlite"
q "$SCRATCH/noisa.sqlite" "UPDATE manifest SET value = 'avx2 fma' WHERE key = 'server.pgvector.provenance.isa_missing'"
like "$("$VBENCH" show "$SCRATCH/noisa.sqlite")" "ISA not on host" "a build for features the host lacks is a validity finding"

# --- 3. the packaged 0.8.0 beside it ---------------------------------------------------------------------------------
# The same campaign on Debian's package, its build and recall sweep (what the provenance and the side-by-side
# report need; the dev profile's other three phases would only add CPU time to the suite).
sed -e 's/^name: dev$/name: dev-pgv080/' -e 's/^    recipe: pgvector$/    recipe: pgvector pgvector_version=packaged/' \
    -e '/^  concurrency:/d' -e '/^  filtered:/d' -e '/^  churn:/d' "$ROOT/profiles/dev.yml" >"$SCRATCH/pkg.yml"
is "$(diff "$SCRATCH/dev-pgv086.yml" "$SCRATCH/pkg.yml" | grep '^[<>]' | sed 's/:.*//' | LC_ALL=C sort | tr -d '\n')" \
   "<     recipe<   churn<   concurrency<   filtered< name>     recipe> name" \
   "the packaged campaign's profile differs from the 0.8.6 one in its name, pgvector_version and the phases left out"
pkg=$SCRATCH/pkg.sqlite
vb_ns_run "$VBENCH" run --profile "$SCRATCH/pkg.yml" --engines pgvector --out "$pkg" >/dev/null 2>"$SCRATCH/pkg.err"
ok $? "a campaign on the packaged pgvector exits 0"
like "$(m "$pkg" "engine.pgvector.version")" "pgvector 0.8.0" "the server answers extversion 0.8.0"
like "$(m "$pkg" "server.pgvector.provenance.source")" "package postgresql-17-pgvector 0.8.0" "the source: Debian's package"
is "$(m "$pkg" "server.pgvector.provenance.target_isa")" "x86-64" "built for the x86-64 baseline"
is "$(m "$pkg" "server.pgvector.provenance.build_simd")" "SSE2" "whose widest SIMD is SSE2"
like "$(m "$pkg" "server.pgvector.unit.root_directory")" "/db-trixie-" "it ran from db-trixie"
[[ "$(m "$pkg" "server.pgvector.unit.root_directory")" != *pgvector* ]]; ok $? "not from the layer"
is "$(vb_ns_run systemctl list-units --all --no-legend --plain 'vbench-*.service' | awk '$3 == "active"' | wc -l)" \
   "0" "no server unit is left running"

# The two versions side by side: one report over both campaigns, with each one's provenance.
"$VBENCH" report "$db" "$pkg" -o "$SCRATCH/side" --quiet >/dev/null 2>"$SCRATCH/side.err"
ok $? "vbench report over the 0.8.6 and the packaged campaign" || sed 's/^/#   /' "$SCRATCH/side.err" | tail -5
side=$(cat "$SCRATCH/side/report.html" 2>/dev/null)
like "$side" "pgvector 0.8.6" "the report shows the 0.8.6 server's version"
like "$side" "pgvector 0.8.0" "and the packaged one's"
like "$side" "pgvector-0.8.6.tar.gz" "with where each came from"
done_testing
