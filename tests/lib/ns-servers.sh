# The start of a test that runs campaigns on the packaged servers (db-trixie: PostgreSQL 17 + pgvector, MariaDB
# 11.8) started by the orchestrator as systemd units, in a namespace booted once for all its checks
# (deploy/systemd-ns). Sourced after lib.sh. vb_ns_servers_boot: ensures the image (building it if it is missing,
# or failing the test where it cannot be built), skips where systemd cannot boot in a namespace (a failure where
# every test is required), boots it as check 1 and stops it at the exit. Sets ROOT (diag is lib.sh's). Other
# images the test needs too: vb_ns_servers_boot db-trixie db-sid.
. "$(dirname "${BASH_SOURCE[0]}")/../../deploy/systemd-ns"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# vb_ns_campaign PROFILE DB WHAT: `vbench run --quiet` of PROFILE into DB inside the namespace as one check ("WHAT
# exits 0 (N s)"), with the tail of its stderr and the plan's unfinished items when it fails; its output in DB.out
# and DB.err. Returns run's exit status.
vb_ns_campaign() {
    local profile=$1 db=$2 what=$3 t0 rc
    t0=$(date +%s)
    vb_ns_run "$VBENCH" run --profile "$profile" --out "$db" --quiet >"$db.out" 2>"$db.err"
    rc=$?
    ok $rc "$what exits 0 ($(($(date +%s) - t0)) s)"
    [ $rc -eq 0 ] || tail -20 "$db.err" | diag
    q "$db" "SELECT key, status, error FROM plan WHERE status <> 'done'" | diag
    return $rc
}

vb_ns_servers_boot() { # vb_ns_servers_boot [IMAGE...]: the images to ensure (db-trixie by default)
    vb_ensure_image "${@:-db-trixie}"
    local why
    why=$(vb_ns_skip_reason)
    [ -n "$why" ] || [ -x "$(vb_image_path db-trixie)/usr/sbin/mariadbd" ] ||
        why="no engine image db-trixie (vbench image build db-trixie)"
    [ -z "$why" ] || skip_all "$why"
    vb_ns_start "$SCRATCH" "$ROOT"
    ok $? "systemd boots in a namespace"
    [ -n "$VB_NS_PID" ] || { done_testing; exit 1; }
    # vb_ns_start put vb_ns_stop in front of the EXIT trap, before lib.sh's removal of $SCRATCH (VB_KEEP_SCRATCH keeps it)
}
