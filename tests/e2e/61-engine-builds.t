#!/usr/bin/env bash
# Where the servers come from (issues 17 and 22). vbench's engines are Debian's binary packages: PostgreSQL 17 +
# pgvector 0.8.0 from trixie (db-trixie, the default) and PostgreSQL 18 + pgvector 0.8.7 from unstable (db-sid,
# `recipe: pgvector pgvector_version=0.8.7`). Part 2 runs the dev profile on 0.8.7 and a build + sweep on 0.8.0
# in the test systemd namespace, and one report over both names each version, its package, image and suite.
#
# deploy/image-build's layers stay a user feature (a user benchmarks a build of their own): part 0 checks a layer
# recipe without building, part 1 builds a small PostgreSQL extension whose source THIS TEST WRITES (a version
# function, built with pgxs and -march=x86-64-v3 in the build root build-trixie-pg17), checks the layer image,
# loads the extension in the layer's own PostgreSQL, and runs a build + sweep on a recipe that points at the
# layer, so the manifest's layer provenance (tarball, sha256, flags, target ISA against this host) is checked
# end to end. No third-party source is built.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../../deploy/systemd-ns"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
IB="$ROOT/deploy/image-build"
LAYER=db-trixie-vbtest

# --- 0. layer recipes without building anything: the user's tarball is found and checked as documented --------
mkdir -p "$SCRATCH/recipes" "$SCRATCH/src"
printf '@suite trixie\nprocps\n' >"$SCRATCH/recipes/b.list"
printf 'x' >"$SCRATCH/src/src.tar.gz"
xsha=$(sha256sum "$SCRATCH/src/src.tar.gz" | cut -d' ' -f1)
layer() { printf '@base b\n@buildroot b\n@source src.tar.gz %s\n@flags -march=x86-64-v2\n@build make\n@install make install\n' "$1" \
          >"$SCRATCH/recipes/l.list"; }
lib() { bash "$IB" --recipe-dir "$SCRATCH/recipes" --cache "$SCRATCH/images" "$@"; }
layer "$xsha"
p1=$(lib --sources "$SCRATCH/src" --path-only l); rc=$?
is "$rc" "1" "--path-only on an unbuilt layer: exit 1"
like "$p1" "$SCRATCH/images/l-" "and its path"
p2=$(VBENCH_SOURCES="$SCRATCH/src" lib --path-only l)
is "$p2" "$p1" "VBENCH_SOURCES finds the same tarball"
sed -i 's/x86-64-v2/x86-64-v3/' "$SCRATCH/recipes/l.list"
[ "$(lib --sources "$SCRATCH/src" --path-only l)" != "$p1" ]; ok $? "other flags, another cache key"
err=$(lib --path-only l 2>&1); rc=$?
[ $rc -ne 0 ]; ok $? "a layer without --sources or VBENCH_SOURCES is refused (exit $rc)"
like "$err" "name the directory that holds it with --sources DIR or VBENCH_SOURCES" "saying how to name the sources"
layer "$(printf '0%.0s' $(seq 64))"
err=$(lib --sources "$SCRATCH/src" --path-only l 2>&1)
like "$err" "src.tar.gz: sha256 is $xsha, the recipe" "a tarball whose sha256 differs from the recipe's is refused"
err=$(lib --sources "$SCRATCH/nowhere" --path-only l 2>&1)
like "$err" "src.tar.gz not found in $SCRATCH/nowhere" "a missing tarball names where it was looked for"
printf '@base b\n@source src.tar.gz %s\n@build make\n@install make install\n' "$xsha" >"$SCRATCH/recipes/l.list"
like "$(lib --sources "$SCRATCH/src" --path-only l 2>&1)" "a layer needs @buildroot" "a layer without a build root is refused"
printf '@suite trixie\n@flags -O2\nprocps\n' >"$SCRATCH/recipes/l.list"
like "$(lib --path-only l 2>&1)" "belong to a layer, which needs @base" "layer directives without @base are refused"
is "$(ls "$ROOT/deploy/images" | grep -c -v -E '^(db-trixie|db-sid|build-trixie-pg17)\.list$')" "0" \
   "the shipped image recipes are db-trixie, db-sid and the build root, nothing else"
is "$(grep -l '^@base' "$ROOT"/deploy/images/*.list | wc -l)" "0" "no shipped recipe is a layer: every engine is a package"

why=$(vb_ns_skip_reason)
[ -n "$why" ] || [ "$(id -u)" -eq 0 ] || why="building an image needs root"
[ -z "$why" ] || skip_all "the layer build and the campaigns: $why"
vb_ensure_image db-trixie
vb_ensure_image db-sid
base=$(bash "$IB" --path-only db-trixie) || { ok 1 "the engine image db-trixie is built"; done_testing; exit 1; }
sid=$(bash "$IB" --path-only db-sid) || { ok 1 "the engine image db-sid is built"; done_testing; exit 1; }

# --- 1. a layer of the test's own: a PostgreSQL extension with a version function -------------------------------
mkdir -p "$SCRATCH/ext/vbtest-1.0" "$SCRATCH/layer-src" "$SCRATCH/layer-recipes"
cat >"$SCRATCH/ext/vbtest-1.0/vbtest.c" <<'C'
/* A test extension: its version and the flags it was built with. */
#include "postgres.h"
#include "fmgr.h"
#include "utils/builtins.h"
PG_MODULE_MAGIC;
PG_FUNCTION_INFO_V1(vbtest_version);
Datum vbtest_version(PG_FUNCTION_ARGS) {
#ifdef __AVX2__
    PG_RETURN_TEXT_P(cstring_to_text("vbtest 1.0 avx2"));
#else
    PG_RETURN_TEXT_P(cstring_to_text("vbtest 1.0 baseline"));
#endif
}
C
printf "default_version = '1.0'\nmodule_pathname = '\$libdir/vbtest'\nrelocatable = true\n" >"$SCRATCH/ext/vbtest-1.0/vbtest.control"
printf "CREATE FUNCTION vbtest_version() RETURNS text AS 'MODULE_PATHNAME' LANGUAGE C STRICT;\n" \
    >"$SCRATCH/ext/vbtest-1.0/vbtest--1.0.sql"
printf 'MODULES = vbtest\nEXTENSION = vbtest\nDATA = vbtest--1.0.sql\nPG_CONFIG ?= pg_config\nPGXS := $(shell $(PG_CONFIG) --pgxs)\ninclude $(PGXS)\n' \
    >"$SCRATCH/ext/vbtest-1.0/Makefile"
# A byte-for-byte reproducible tarball, so that the layer's key (and its cache entry) is the same every run.
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$SCRATCH/ext" -cf - vbtest-1.0 | gzip -n \
    >"$SCRATCH/layer-src/vbtest-1.0.tar.gz"
SHA=$(sha256sum "$SCRATCH/layer-src/vbtest-1.0.tar.gz" | cut -d' ' -f1)
cp "$ROOT/deploy/images/db-trixie.list" "$ROOT/deploy/images/build-trixie-pg17.list" "$SCRATCH/layer-recipes/"
cat >"$SCRATCH/layer-recipes/$LAYER.list" <<REC
# db-trixie with the test's own extension vbtest 1.0 (tests/e2e/61-engine-builds.t writes its source)
@base db-trixie
@buildroot build-trixie-pg17
@source vbtest-1.0.tar.gz $SHA
@version 1.0
@flags -march=x86-64-v3
@build make COPT="\$VB_FLAGS" PG_CONFIG=/usr/lib/postgresql/17/bin/pg_config
@install make install DESTDIR="\$VB_DEST" PG_CONFIG=/usr/lib/postgresql/17/bin/pg_config
REC
ib_layer() { bash "$IB" --recipe-dir "$SCRATCH/layer-recipes" --sources "$SCRATCH/layer-src" "$@"; }
path=$(ib_layer --path-only "$LAYER"); cold=$?
t0=$(date +%s%N)
built=$(ib_layer "$LAYER" 2>"$SCRATCH/layer.err")
ok $? "image-build $LAYER ($([ $cold -eq 1 ] && echo "cold: built" || echo "warm: cached") in $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
[ -n "$built" ] || { diag <"$SCRATCH/layer.err"; done_testing; exit 1; }
is "$built" "$path" "at the path --path-only names"
is "$(ib_layer "$LAYER" 2>&1)" "$built" "a second call is a no-op that prints the same path"
lf() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$built/vbench-layer.txt"; }
is "$(lf source)" "vbtest-1.0.tar.gz" "vbench-layer.txt names the tarball"
is "$(lf source_sha256)" "$SHA" "and its sha256"
is "$(lf flags)" "-march=x86-64-v3" "the flags"
is "$(lf target_isa)" "x86-64-v3" "the target ISA"
like "$(lf built_with)" "postgresql-server-dev-17 17" "what it was built against"
like "$(lf files)" "/usr/lib/postgresql/17/lib/vbtest.so" "the files it installed"
[ ! -e "$base/usr/lib/postgresql/17/lib/vbtest.so" ]; ok $? "the base image is left as it was"
[ "$(stat -c %i "$built/usr/sbin/mariadbd")" = "$(stat -c %i "$base/usr/sbin/mariadbd")" ]
ok $? "what the layer leaves alone is shared with the base (hard links)"
readelf -S "$built/usr/lib/postgresql/17/lib/vbtest.so" | grep -q '\.symtab'
[ $? -ne 0 ]; ok $? "vbtest.so is stripped"
# The extension loads in the layer's own PostgreSQL (single-user mode, in the image, as its postgres user).
rm -rf "$built/tmp/vbtest-pg"
answer=$(chroot --userspec=postgres:postgres "$built" /bin/sh -c '
    /usr/lib/postgresql/17/bin/initdb -D /tmp/vbtest-pg -U postgres >/dev/null 2>&1 || exit 3
    printf "CREATE EXTENSION vbtest;\nSELECT vbtest_version();\n" |
        /usr/lib/postgresql/17/bin/postgres --single -D /tmp/vbtest-pg postgres 2>&1' 2>&1)
rm -rf "$built/tmp/vbtest-pg"
like "$answer" '"vbtest 1.0 avx2"' "the layer's extension answers in its PostgreSQL, built with AVX2 as its flags say"

vb_ns_start "$SCRATCH" "$ROOT"
ok $? "systemd boots in a namespace"
[ -n "$VB_NS_PID" ] || { done_testing; exit 1; }
m() { q "$1" "SELECT value FROM manifest WHERE key = '$2'"; }
# The three campaigns below check where each server came from and how it was built (manifest, findings, report),
# none of which depends on the corpus: dev's profile on a quarter of its rows at 32 dimensions and shorter windows
# (every phase still runs; 1 % of 5,000 rows is 50, above k).
small_dev() {
    sed -e 's/^    rows: 20000$/    rows: 5000/' -e 's/^    dim: 96$/    dim: 32/' -e 's/^    queries: 500$/    queries: 200/' \
        -e 's/synth-angular-20k/synth-angular-5k-32/' -e 's/churn: {fraction: 0.1, limit_s: 600, queries: 500,/churn: {fraction: 0.1, limit_s: 600, queries: 200,/' \
        -e 's/window_s: 2, repeats: 1, warmup_s: 0.5/window_s: 1, repeats: 1, warmup_s: 0.2/' "$@"
}
# A recipe directory where pgvector runs from the layer (the user's way to benchmark a build of their own).
mkdir -p "$SCRATCH/engines"
sed "s/^    packaged: {image: db-trixie}$/    packaged: {image: $LAYER}/" "$ROOT/deploy/engines/pgvector.yml" >"$SCRATCH/engines/pgvector.yml"
grep -q "packaged: {image: $LAYER}" "$SCRATCH/engines/pgvector.yml"; ok $? "a recipe that runs pgvector from the layer"
sed -e 's/^name: dev$/name: dev-layer/' -e '/^  concurrency:/d' -e '/^  filtered:/d' -e '/^  churn:/d' \
    -e '/^    phases: {filtered:/d' "$ROOT/profiles/dev.yml" | small_dev >"$SCRATCH/layer.yml"
ldb=$SCRATCH/layer.sqlite
vb_ns_run env VBENCH_RECIPES="$SCRATCH/engines" "$VBENCH" run --profile "$SCRATCH/layer.yml" --engines pgvector \
    --out "$ldb" >/dev/null 2>"$SCRATCH/layer-run.err"
rc=$?; ok $rc "a build + sweep on the layer exits 0"; [ $rc -eq 0 ] || tail -20 "$SCRATCH/layer-run.err" | diag
like "$(m "$ldb" "server.pgvector.unit.root_directory")" "/$LAYER-" "the server ran from the layer image"
is "$(m "$ldb" "server.pgvector.provenance.source")" "tarball vbtest-1.0.tar.gz" "the manifest's source: the tarball"
is "$(m "$ldb" "server.pgvector.provenance.source_sha256")" "$SHA" "its sha256"
is "$(m "$ldb" "server.pgvector.provenance.flags")" "-march=x86-64-v3" "the compiler flags"
is "$(m "$ldb" "server.pgvector.provenance.target_isa")" "x86-64-v3" "the target ISA"
# What this host's /proc/cpuinfo lacks of x86-64-v3 (orchestrator/isa.c's list; a virtual machine may hide a
# flag, such as LZCNT's "abm", from the guest): the manifest must name exactly that, and a finding must follow.
host_flags=" $(grep -m1 '^flags' /proc/cpuinfo | sed 's/^[^:]*: *//') "
v3_lacks=
for f in lm cmov cx8 fpu fxsr mmx syscall sse sse2 cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3 \
         avx avx2 bmi1 bmi2 f16c fma abm movbe xsave; do
    case "$host_flags" in *" $f "*) ;; *) v3_lacks="$v3_lacks${v3_lacks:+ }$f" ;; esac
done
is "$(q "$ldb" "SELECT COUNT(*) FROM manifest WHERE key = 'server.pgvector.provenance.isa_missing' AND value = '$v3_lacks'")" "1" \
   "isa_missing names what this host lacks of x86-64-v3 (${v3_lacks:-nothing})"
findings=$(q "$ldb" "SELECT \"check\" || ': ' || detail FROM v_validity WHERE engine = 'pgvector' AND \"check\" IN
                     ('SIMD narrower than host', 'ISA not on host')")
if [ -n "$v3_lacks" ]; then
    like "$findings" "ISA not on host: built for x86-64-v3, which needs $v3_lacks" \
         "this host lacks $v3_lacks: the build's finding says so"
else
    case "$findings" in *"ISA not on host"*) ok 1 "a host with all of x86-64-v3: no ISA finding" ;;
        *) ok 0 "a host with all of x86-64-v3: no ISA finding" ;; esac
fi

# --- 2. two pgvector versions from Debian's packages, side by side ---------------------------------------------
sed -e 's/^name: dev$/name: dev-pgv087/' -e 's/^    recipe: pgvector$/    recipe: pgvector pgvector_version=0.8.7/' \
    "$ROOT/profiles/dev.yml" | small_dev >"$SCRATCH/dev-pgv087.yml"
grep -q 'pgvector_version=0.8.7' "$SCRATCH/dev-pgv087.yml"; ok $? "the dev profile, with pgvector on pgvector_version=0.8.7"
grep -q '^    rows: 5000$' "$SCRATCH/dev-pgv087.yml" && grep -q 'window_s: 1,' "$SCRATCH/dev-pgv087.yml"
ok $? "and on 5,000 rows with 1 s windows (small_dev applied)"
db=$SCRATCH/v087.sqlite
t0=$(date +%s)
vb_ns_run "$VBENCH" run --profile "$SCRATCH/dev-pgv087.yml" --engines pgvector --out "$db" >"$SCRATCH/v087.out" 2>"$SCRATCH/v087.err"
rc=$?
ok $rc "vbench run (dev, pgvector 0.8.7 on PostgreSQL 18) exits 0 ($(($(date +%s) - t0)) s)"
[ $rc -eq 0 ] || tail -30 "$SCRATCH/v087.err" | diag
is "$(q "$db" "SELECT COUNT(DISTINCT phase) || '/' || SUM(status <> 'done') FROM plan")" "5/0" \
   "all five phases ran and every item is done"
like "$(m "$db" "engine.pgvector.version")" "pgvector 0.8.7" "the server answers extversion 0.8.7"
like "$(m "$db" "server.pgvector.probe_answer")" "PostgreSQL 18" "on PostgreSQL 18"
like "$(m "$db" "server.pgvector.unit.root_directory")" "/db-sid-" "the server ran from db-sid"
is "$(m "$db" "server.pgvector.image.name")" "db-sid" "the manifest names the image"
is "$(m "$db" "server.pgvector.image.suite")" "sid" "and its Debian suite"
is "$(m "$db" "server.pgvector.recipe.parameter.pgvector_version")" "0.8.7" "and the recipe parameter"
like "$(m "$db" "server.pgvector.package.postgresql-18-pgvector")" "0.8.7-" "the package version of pgvector"
like "$(m "$db" "server.pgvector.package.postgresql-18")" "18." "and of PostgreSQL"
like "$(m "$db" "server.pgvector.provenance.source")" "package postgresql-18-pgvector 0.8.7" "the source: Debian's package"
is "$(m "$db" "server.pgvector.provenance.target_isa")" "x86-64" "built for the x86-64 baseline"
is "$(m "$db" "server.pgvector.provenance.build_simd")" "SSE2" "whose widest SIMD is SSE2"
show=$("$VBENCH" show --wide "$db")   # the provenance rows whole, as they are
like "$show" "Engine provenance" "vbench show has the provenance table"
like "$show" "package postgresql-18-pgvector 0.8.7" "with the package"
like "$show" "db-sid" "and the image"
simd=$(q "$db" "SELECT detail FROM v_validity WHERE engine = 'pgvector' AND \"check\" = 'SIMD narrower than host'")
if grep -qw avx2 /proc/cpuinfo; then
    like "$simd" "built for x86-64 use at most SSE2" "an AVX2 host and a baseline build: the SIMD finding"
else
    [ -z "$simd" ]; ok $? "a host without AVX2: a baseline build is not narrower than it, no SIMD finding"
fi

# The packaged 0.8.0 on PostgreSQL 17: its build and recall sweep (what the side-by-side report needs).
sed -e 's/^name: dev$/name: dev-pgv080/' -e 's/^    recipe: pgvector$/    recipe: pgvector pgvector_version=packaged/' \
    -e '/^  concurrency:/d' -e '/^  filtered:/d' -e '/^  churn:/d' -e '/^    phases: {filtered:/d' "$ROOT/profiles/dev.yml" |
    small_dev >"$SCRATCH/pkg.yml"
pkg=$SCRATCH/pkg.sqlite
vb_ns_run "$VBENCH" run --profile "$SCRATCH/pkg.yml" --engines pgvector --out "$pkg" >/dev/null 2>"$SCRATCH/pkg.err"
rc=$?; ok $rc "a campaign on the packaged pgvector 0.8.0 exits 0"; [ $rc -eq 0 ] || tail -20 "$SCRATCH/pkg.err" | diag
like "$(m "$pkg" "engine.pgvector.version")" "pgvector 0.8.0" "the server answers extversion 0.8.0"
like "$(m "$pkg" "server.pgvector.probe_answer")" "PostgreSQL 17" "on PostgreSQL 17"
like "$(m "$pkg" "server.pgvector.provenance.source")" "package postgresql-17-pgvector 0.8.0" "the source: Debian's package"
is "$(m "$pkg" "server.pgvector.image.suite")" "trixie" "from trixie"
like "$(m "$pkg" "server.pgvector.unit.root_directory")" "/db-trixie-" "it ran from db-trixie"
is "$(vb_ns_run systemctl list-units --all --no-legend --plain 'vbench-*.service' | awk '$3 == "active"' | wc -l)" \
   "0" "no server unit is left running"

# The two versions side by side: one report over both campaigns, with each one's provenance.
"$VBENCH" report "$db" "$pkg" -o "$SCRATCH/side" --quiet >/dev/null 2>"$SCRATCH/side.err"
ok $? "vbench report over the 0.8.7 and the 0.8.0 campaign" || tail -5 "$SCRATCH/side.err" | diag
side=$(cat "$SCRATCH/side/report.html" 2>/dev/null)
like "$side" "pgvector 0.8.7" "the report shows the 0.8.7 server's version"
like "$side" "pgvector 0.8.0" "and the 0.8.0 one's"
like "$side" "package postgresql-18-pgvector 0.8.7" "with where each came from: the sid package"
like "$side" "package postgresql-17-pgvector 0.8.0" "and the trixie package"
like "$side" "How the servers were built" "Known asymmetries says how the servers were built"
like "$side" "may understate what the same version does" "and that a baseline build may understate a wider host"
vb_ns_stop
ok $? "the namespace tears down"
done_testing
