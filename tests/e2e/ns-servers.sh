# The start of a test that runs campaigns on the packaged servers (db-trixie: PostgreSQL 17 + pgvector, MariaDB
# 11.8) started by the orchestrator as systemd units, in a namespace booted once for all its checks
# (deploy/systemd-ns). Sourced after lib.sh. vb_ns_servers_boot: ensures the image (building it if it is missing,
# or failing the test where it cannot be built), skips where systemd cannot boot in a namespace (a failure where
# every test is required), boots it as check 1 and stops it at the exit. Sets ROOT (diag is lib.sh's).
. "$(dirname "${BASH_SOURCE[0]}")/../../deploy/systemd-ns"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

vb_ns_servers_boot() {
    vb_ensure_image db-trixie
    local why
    why=$(vb_ns_skip_reason)
    [ -n "$why" ] || [ -x "$(vb_image_path db-trixie)/usr/sbin/mariadbd" ] ||
        why="no engine image db-trixie (vbench image build db-trixie)"
    [ -z "$why" ] || skip_all "$why"
    vb_ns_start "$SCRATCH" "$ROOT"
    ok $? "systemd boots in a namespace"
    [ -n "$VB_NS_PID" ] || { done_testing; exit 1; }
    trap 'vb_ns_stop; rm -rf "$SCRATCH"' EXIT
}
