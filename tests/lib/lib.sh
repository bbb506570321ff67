# Shared helpers for the end-to-end tests: TAP output, a scratch directory, sqlite queries.
# Each test runs the real binaries (bin/vbench, bin/vbench-agent) as separate processes.
set -u
VB_BIN=${VB_BIN:-$(cd "$(dirname "$0")/../.." && pwd)/bin}
VBENCH="$VB_BIN/vbench"
T_N=0
T_FAILED=0
VB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VB_TEST_NAME=$(basename "$0")
# The gate: where every test can run (tests/required-here: root, systemd, debootstrap), VB_REQUIRED=1 and a skip
# is a failure naming its cause. make test (tests/run-suite) sets it for the whole suite; a test run alone asks.
if [ -z "${VB_REQUIRED:-}" ]; then
    VB_REQUIRED=0
    bash "$VB_ROOT/tests/required-here" >/dev/null 2>&1 && VB_REQUIRED=1
fi
SCRATCH=$(mktemp -d /tmp/vbench-test.XXXXXX)
export VBENCH_CACHE="$SCRATCH/cache"
trap '[ -n "${VB_KEEP_SCRATCH:-}" ] || rm -rf "$SCRATCH"' EXIT

# fail_note LINE: a failed check's explanation, in the TAP (stdout) and on stderr: prove shows a test's stderr but
# not its TAP, so a CI log then names the failed check and says why, not only its number.
# Both also go to $VB_FAIL_LOG when make test set it: tests/run-suite prints that digest just before prove's summary,
# where a CI log that keeps only its last lines still shows what failed and why.
fail_log() { [ -z "${VB_FAIL_LOG:-}" ] || printf '%s\t%s\n' "$(basename "$0")" "$1" >>"$VB_FAIL_LOG"; }
fail_note() { echo "$1"; echo "$1" >&2; fail_log "$1"; }
# diag: a command's output as TAP comments (indented); once a check of this test has failed, the first 12 lines go to
# $VB_FAIL_LOG as well (what a failed campaign printed, say, is then in make test's digest).
diag() {
    local out
    out=$(sed 's/^/#   /')
    [ -n "$out" ] || return 0
    printf '%s\n' "$out"
    [ "${T_FAILED:-0}" -eq 0 ] || printf '%s\n' "$out" | head -12 | while IFS= read -r l; do fail_log "$l"; done
}
ok() { # ok CONDITION-EXIT-CODE NAME...
    local rc=$1; shift
    T_N=$((T_N + 1))
    if [ "$rc" -eq 0 ]; then echo "ok $T_N - $*"; else
        echo "not ok $T_N - $*"; T_FAILED=$((T_FAILED + 1))
        echo "# $(basename "$0") failed #$T_N - $*" >&2
        fail_log "not ok $T_N - $*"
    fi
}
is() { # is GOT WANT NAME...: GOT is WANT. WANT may not be empty: two empty strings (a query of a missing database,
       # a variable never set) are no match. A value that must be empty is is_empty's.
    local got=$1 want=$2; shift 2
    if [ -z "$want" ]; then
        ok 1 "$*"; fail_note "#   is: an empty WANT (got '$got'): use is_empty for a value that must be empty"
        return 1
    fi
    [ "$got" = "$want" ]; local rc=$?
    ok $rc "$*"
    [ $rc -eq 0 ] || fail_note "#   got '$got', want '$want'"
}
is_empty() { # is_empty GOT NAME...: GOT is the empty string
    local got=$1; shift
    [ -z "$got" ]; local rc=$?
    ok $rc "$*"
    [ $rc -eq 0 ] || fail_note "#   got '$(printf %s "$got" | head -c 600)', want nothing"
}
like() { # like TEXT SUBSTRING NAME...
    local text=$1 sub=$2; shift 2
    case "$text" in *"$sub"*) ok 0 "$*" ;; *) ok 1 "$*"; fail_note "#   '$sub' not in: $(printf %s "$text" | head -c 600)" ;; esac
}
unlike() { # unlike TEXT SUBSTRING NAME...: TEXT does not contain SUBSTRING
    local text=$1 sub=$2; shift 2
    case "$text" in *"$sub"*) ok 1 "$*"; fail_note "#   '$sub' is in: $(printf %s "$text" | head -c 600)" ;; *) ok 0 "$*" ;; esac
}
# vb_on_exit CMD: CMD runs at the test's exit, before what the EXIT trap does already (a server's stop before
# the removal of the scratch directory it lives in); nothing when the trap runs CMD already.
vb_on_exit() {
    local prev
    eval "prev=($(trap -p EXIT))"          # trap -- 'COMMANDS' EXIT
    prev=${prev[2]:-}
    case "$prev" in *"$1"*) return 0 ;; esac
    # shellcheck disable=SC2064
    trap "$1; $prev" EXIT
}
# vb_profile FILE NAME DATASET <<'YML' ... YML: a test's profile: its name, k 10, one synthetic dataset "s" of DATASET
# (e.g. "rows: 3000, queries: 50, dim: 16, metric: euclidean, seed: 2"), then stdin (its engines and phases).
vb_profile() {
    { printf 'name: %s\nk: 10\ndatasets:\n  - {name: s, source: synthetic, %s}\n' "$2" "$3"; cat; } >"$1"
}
# Query a results database; never creates one (the sqlite3 shell would create a missing file).
q() { [ -e "$1" ] || return 1; sqlite3 -batch -noheader "$@"; }
# vb_image_path NAME: the engine image's directory (image-path.sh, shared with the server helpers).
. "$VB_ROOT/tests/lib/image-path.sh"
# vb_ensure_image NAME...: makes sure the engine images exist (builds one on first use: a few minutes, cached
# afterwards), so the server tests run on a fresh machine instead of skipping. Only root can build them; others get
# what exists (and their tests skip, saying why). As root an image that cannot be built fails the test at once,
# with the build's own last words: never a skip.
vb_ensure_image() {
    local name
    [ "$(id -u)" -eq 0 ] || return 0
    for name in "$@"; do
        bash "$VB_ROOT/deploy/image-build" "$name" >/dev/null 2>"$SCRATCH/image-build.log" && continue
        skip_note failed "the engine image $name could not be built"
        T_N=$((T_N + 1)); T_FAILED=$((T_FAILED + 1))
        echo "not ok $T_N - the engine image $name is built (deploy/image-build $name)"
        fail_note "# $VB_TEST_NAME: the engine image $name could not be built, so this test cannot run:"
        tail -15 "$SCRATCH/image-build.log" | sed 's/^/#   /' | tee /dev/stderr
        done_testing
        exit 1
    done
}
# need CMD...: a test that calls CMD (outside a minimal Debian: `bash deploy/install-deps --with-tests` installs
# them all) skips as a whole (skip_all), with the reason, when one is missing; call it before any check.
need() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || skip_all "$c is not installed (bash deploy/install-deps --with-tests installs it)"
    done
}
# skip_note KIND REASON: one line in $VB_SKIP_LOG (FILE, skip | required | failed, REASON) when make test asks for
# it; tests/run-suite counts them by reason.
skip_note() {
    [ -n "${VB_SKIP_LOG:-}" ] || return 0
    printf '%s\t%s\t%s\n' "$VB_TEST_NAME" "$1" "$2" >>"$VB_SKIP_LOG"
}
# skip REASON...: one check that cannot run here, shown as skipped (TAP "ok N # SKIP reason"), never as passed.
# Where every test is required (VB_REQUIRED=1) it is a failure that names the reason.
skip() {
    T_N=$((T_N + 1))
    if [ "$VB_REQUIRED" = 1 ]; then
        skip_note required "$*"
        T_FAILED=$((T_FAILED + 1))
        echo "not ok $T_N - required here (root, systemd, debootstrap: tests/required-here), but skipped: $*"
        echo "# $VB_TEST_NAME failed #$T_N - required here, but skipped: $*" >&2
    else
        skip_note skip "$*"
        echo "ok $T_N # SKIP $*"
    fi
}
# skip_all REASON...: the whole test cannot run here: the plan "1..0 # SKIP reason" and exit 0 (after some checks
# already ran: one skipped check and the plan). Where every test is required, one failed check naming the reason.
skip_all() {
    if [ "$T_N" -gt 0 ] || [ "$VB_REQUIRED" = 1 ]; then
        skip "$*"
        done_testing
        exit
    fi
    skip_note skip "$*"
    echo "1..0 # SKIP $*"
    exit 0
}
done_testing() { echo "1..$T_N"; [ "$T_FAILED" -eq 0 ]; }
# wait_until TIMEOUT_S COMMAND...: runs COMMAND every 0.05 s until it succeeds (0) or TIMEOUT_S seconds have
# passed (1). A deadline in seconds, not a count of polls: on a loaded machine each poll takes longer.
# vb_agent_stopped PARENT: a child of PARENT (a `vbench run`'s local agent) in state T, stopped by its
# VBENCH_AGENT_FAULT=stop-after-...; its pid into $agent. For wait_until: wait_until 120 vb_agent_stopped "$pid"
vb_agent_stopped() {
    local p
    for p in $(pgrep -P "$1"); do
        [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = T ] && { agent=$p; return 0; }
    done
    return 1
}

wait_until() {
    local deadline=$(($(date +%s) + $1)); shift
    while [ "$(date +%s)" -lt "$deadline" ]; do
        "$@" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}
wait_sql() { # wait_sql DB SQL-COUNT MIN TIMEOUT_S: polls until the count reaches MIN
    local db=$1 sql=$2 min=$3 deadline=$(($(date +%s) + $4)) n
    while [ "$(date +%s)" -lt "$deadline" ]; do
        n=$(q "$db" "$sql" 2>/dev/null || echo 0)
        [ "${n:-0}" -ge "$min" ] && return 0
        sleep 0.1
    done
    return 1
}

wait_status() { # wait_status DB KEY STATUS... TIMEOUT_S: polls the plan row until it has one of the statuses;
    # prints the status it saw (the last one on timeout, "none" for no row)
    local db=$1 key=$2 t=${*: -1} st deadline
    deadline=$(($(date +%s) + t))
    while [ "$(date +%s)" -lt $deadline ]; do
        st=$(q "$db" "SELECT status FROM plan WHERE key = '$key'" 2>/dev/null)
        for want in "${@:3:$#-3}"; do [ "$st" = "$want" ] && { echo "$st"; return 0; }; done
        sleep 0.1
    done
    echo "${st:-none}"; return 1
}

wait_pid() { # wait_pid PID TIMEOUT_S: waits for a child to exit; its status in WAIT_RC (124 on timeout)
    local pid=$1 deadline=$(($(date +%s) + $2))
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$(date +%s)" -ge "$deadline" ]; then WAIT_RC=124; return 1; fi
        sleep 0.1
    done
    wait "$pid"
    WAIT_RC=$?
    return 0
} 2>/dev/null   # not bash's "Killed" notice for a child that died of a signal: WAIT_RC says it

# vb_report_section_shot HTML SECTION PNG: the report's head and its section SECTION alone, drawn by headless
# Chromium (JavaScript off, no network) into PNG, 1,100 pixels wide; a check each: extracted, drawn, not blank; the
# picture kept as an artifact (VB_ARTIFACTS, default results.db/artifacts) as report-SECTION.png.
vb_report_section_shot() {
    local html=$1 section=$2 png=$3 dir
    dir=$(mktemp -d "$SCRATCH/shot.XXXXXX")
    /usr/bin/python3 - "$html" "$section" "$dir/section.html" <<'PY'
import sys
t = open(sys.argv[1]).read()
head = t[:t.index("<body")]
i = t.index('<section id="%s">' % sys.argv[2])
j = t.index("</section>", i) + len("</section>")
open(sys.argv[3], "w").write(head + "<body>" + t[i:j] + "</body></html>")
PY
    ok $? "the $section section extracted from the report"
    mkdir -p "$dir/profile/Default"
    echo '{"profile":{"default_content_setting_values":{"javascript":2}}}' > "$dir/profile/Default/Preferences"
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
        --disable-sync --no-first-run --user-data-dir="$dir/profile" --proxy-server=127.0.0.1:9 \
        --proxy-bypass-list='<-loopback>' --window-size=1100,2600 --screenshot="$png" \
        "file://$dir/section.html" >/dev/null 2>"$dir/chromium.log"
    ok $? "Chromium renders the report's $section section"
    /usr/bin/python3 - "$png" <<'PY'
import sys
from PIL import Image
shot = Image.open(sys.argv[1]).convert("RGB")
assert len(shot.getcolors(1 << 24)) > 50, "the screenshot is blank"
PY
    ok $? "the screenshot of the $section section is not blank"
    local artifacts=${VB_ARTIFACTS:-$VB_ROOT/results.db/artifacts}
    mkdir -p "$artifacts" && cp "$png" "$artifacts/report-$section.png" && echo "# screenshot: $artifacts/report-$section.png"
}

# vb_report_overflow HTML: the report's tables that do not fit their page in headless Chromium, 1400 pixels wide
# (issue 36.15), one per line as "section: first header cells (scroll width > visible width)"; empty when every
# table fits. The report itself forbids scripts (its CSP); this measures a copy without the CSP, with a script
# that compares each table's scroll width with its box and writes the result into the page, read with --dump-dom.
vb_report_overflow() {
    local html=$1 dir
    dir=$(mktemp -d "$SCRATCH/overflow.XXXXXX")
    sed 's/<meta http-equiv="Content-Security-Policy"[^>]*>//' "$html" > "$dir/page.html"
    cat >> "$dir/page.html" <<'JS'
<script>
(function () {
  var out = [];
  document.querySelectorAll('div.scroll').forEach(function (d) {
    if (d.scrollWidth > d.clientWidth + 1) {
      var s = d.closest('section'), th = d.querySelectorAll('th'), names = [];
      for (var i = 0; i < th.length && i < 3; i++) names.push(th[i].textContent);
      out.push((s ? s.id : '?') + ': ' + names.join(' ') + ' (' + d.scrollWidth + ' > ' + d.clientWidth + ')');
    }
  });
  if (document.documentElement.scrollWidth > window.innerWidth) out.push('page: ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
  var p = document.createElement('pre'); p.id = 'vb-overflow'; p.textContent = out.join('\n'); document.body.appendChild(p);
})();
</script>
JS
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
        --disable-sync --no-first-run --user-data-dir="$dir/profile" --proxy-server=127.0.0.1:9 \
        --proxy-bypass-list='<-loopback>' --window-size=1400,900 --virtual-time-budget=3000 \
        --dump-dom "file://$dir/page.html" 2>/dev/null > "$dir/dom.html"
    grep -q 'id="vb-overflow"' "$dir/dom.html" || { echo "measurement: Chromium did not run the measuring script"; return 1; }
    perl -0ne 'print "$1\n" if m{<pre id="vb-overflow">(.*?)</pre>}s' "$dir/dom.html" | sed '/^$/d; s/&gt;/>/g'
}
