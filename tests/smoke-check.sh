#!/usr/bin/env bash
# make smoke-check (issue 16, "what must be shown" 1): `vbench run --profile smoke --engines pgvector,mariadb`
# inside the test systemd namespace (deploy/systemd-ns), with the orchestrator starting both servers from their
# recipes and the engine image. Prints the estimate the run printed at its start, the truth (the campaign's wall
# time, as the coordinator measured it: estimate.actual_s) and their ratio, and PASS when every item is done and
# the estimate is within a factor of 1.5 of the truth, else FAIL (exit 1). Not part of `make test`: it takes tens
# of minutes on a small host (the README says how long it took here).
#
# usage: tests/smoke-check.sh     (root; builds the engine image first if it is missing, ~3 min)
#   SMOKE_OUT=FILE    results database (default results.db/smoke-check-YYYYmmdd-HHMMSS.sqlite)
#   SMOKE_ENGINES=a,b engines (default pgvector,mariadb)
#   SMOKE_PROFILE=P   another profile (name or file; default smoke)
#   SMOKE_NO_HISTORY=1 as on a host with no history (issue 36.6): the run's cache is a new empty directory, so the
#                     estimate has no measured rates and `run` decides, as a user's would, whether to probe first
# The estimate uses the rates measured on this host before (the history under the cache, $VBENCH_CACHE or
# /var/cache/vbench), as a user's run would; the run adds its own rates to that history at the end.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 2
die() { echo "smoke-check: $*" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || die "needs root (systemd in a namespace, the servers' units)"
[[ -x bin/vbench ]] || die "bin/vbench is missing: run make first"
bash deploy/image-build db-trixie >/dev/null || die "the engine image db-trixie cannot be built (deploy/image-build db-trixie)"
mkdir -p results.db
out=${SMOKE_OUT:-results.db/smoke-check-$(date +%Y%m%d-%H%M%S).sqlite}
engines=${SMOKE_ENGINES:-pgvector,mariadb}
profile=${SMOKE_PROFILE:-smoke}
log=${out%.sqlite}.log
cache=()
if [[ -n ${SMOKE_NO_HISTORY:-} ]]; then
    fresh=$(mktemp -d /var/tmp/vbench-smoke-cache.XXXXXX)   # not /tmp: the namespace gives it a small tmpfs
    cache=(--cache-dir "$fresh")
    echo "smoke-check: no history: the cache (and its history) is the new directory $fresh"
fi

t0=$(date +%s)
deploy/systemd-ns -- bin/vbench run --profile "$profile" --engines "$engines" --out "$out" "${cache[@]}" 2>&1 | tee "$log" |
    grep --line-buffered -v '^\[' # the progress lines stay in the log
rc=${PIPESTATUS[0]}
wall=$(($(date +%s) - t0))

m() { sqlite3 -batch -noheader "$out" "SELECT value FROM manifest WHERE key = '$1'" 2>/dev/null; }
est=$(m estimate.total_s)
act=$(m estimate.actual_s)
left=$(sqlite3 -batch -noheader "$out" "SELECT COUNT(*) FROM plan WHERE status <> 'done'" 2>/dev/null)
echo
echo "smoke-check: vbench run exited $rc after $wall s (with the namespace's boot and teardown); $out"
grep '^estimate: ' "$log" | head -1 | sed 's/^/smoke-check: printed at the start: /'
grep '^calibrating: ' "$log" | sed 's/^/smoke-check: /'
if [[ -z "$est" || -z "$act" ]]; then
    echo "smoke-check: FAIL: no estimate.total_s / estimate.actual_s in the manifest"
    exit 1
fi
ratio=$(awk -v a="$act" -v e="$est" 'BEGIN { printf "%.2f", a / e }')
printf 'smoke-check: estimate %.0f s (%.1f min), truth %.0f s (%.1f min), truth / estimate %s\n' \
    "$est" "$(awk -v s="$est" 'BEGIN { print s / 60 }')" "$act" "$(awk -v s="$act" 'BEGIN { print s / 60 }')" "$ratio"
# every configuration's estimate (a matrix entry has several: pgvector[variant=halfvec])
sqlite3 -batch -noheader -separator ' ' "$out" "SELECT substr(key, 17, length(key) - 18), value FROM manifest
    WHERE key LIKE 'estimate.engine.%' ORDER BY rowid" 2>/dev/null |
    while read -r e s; do printf 'smoke-check:   %s: estimated %s s\n' "$e" "$s"; done
verdict=PASS
[[ $rc -eq 0 && "$left" == 0 ]] || { verdict=FAIL; echo "smoke-check: $left items not done (exit $rc)"; }
awk -v r="$ratio" 'BEGIN { exit !(r >= 1 / 1.5 && r <= 1.5) }' ||
    { verdict=FAIL; echo "smoke-check: the estimate is off by more than a factor of 1.5"; }
echo "smoke-check: $verdict"
[[ $verdict == PASS ]]
