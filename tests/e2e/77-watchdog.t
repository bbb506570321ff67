#!/usr/bin/env bash
# The watchdog (issue 16): vbench-agent as a Type=notify service with WatchdogSec=2s under the namespace's systemd
# (deploy/systemd-ns): it says READY=1 (the start completes), its main loop keeps the watchdog fed (still the
# same process after twice the interval), it shows a STATUS=, and once it hangs (SIGSTOP) systemd kills it for
# the watchdog timeout and starts it again (Restart=on-failure): a new process, active again.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../../deploy/systemd-ns"
NS="$(cd "$(dirname "$0")/../.." && pwd)/deploy/systemd-ns"
why=$(vb_ns_skip_reason)
[ -z "$why" ] || skip_all "$why"
cd "$SCRATCH" || exit 1
cat >inner.sh <<'SH'
#!/bin/sh
systemd-run --unit=vbwd-test -p DefaultDependencies=no -p Type=notify -p WatchdogSec=2s -p Restart=on-failure \
    -p RestartSec=500ms -p TimeoutStartSec=20s "$1" --connect ipc:///tmp/vbwd-nothing.sock --id wd --roles client \
    --workdir /tmp/vbwd >/dev/null 2>&1
echo "start $?"
echo "state $(systemctl show -p ActiveState --value vbwd-test)"
pid1=$(systemctl show -p MainPID --value vbwd-test)
echo "status $(systemctl show -p StatusText --value vbwd-test)"
sleep 4
echo "fed $(systemctl show -p NRestarts --value vbwd-test) $(systemctl show -p MainPID --value vbwd-test)"
[ "${pid1:-0}" -gt 1 ] && kill -STOP "$pid1"
for i in $(seq 1 80); do
    n=$(systemctl show -p NRestarts --value vbwd-test)
    [ "${n:-0}" -ge 1 ] && break
    sleep 0.25
done
sleep 1
echo "restarts $(systemctl show -p NRestarts --value vbwd-test)"
echo "pids $pid1 $(systemctl show -p MainPID --value vbwd-test)"
echo "state2 $(systemctl show -p ActiveState --value vbwd-test)"
echo "timeouts $(journalctl -u vbwd-test --no-pager | grep -c -i 'watchdog timeout')"
systemctl stop vbwd-test
SH
chmod +x inner.sh
# The namespace's /tmp is private: the binaries go in with --share, wherever the checkout is (/tmp included).
out=$(timeout 180 "$NS" --share "$VB_BIN" -- ./inner.sh "$VB_BIN/vbench-agent" 2>/dev/null)
val() { printf '%s\n' "$out" | sed -n "s/^$1 //p"; }
is "$(val start)" 0 "a Type=notify agent starts: it said READY=1"
is "$(val state)" active "... and is active"
# "connecting to the coordinator" at READY=1, "waiting for the coordinator; idle" from the first watchdog tick
# (every half second here) on: which one systemctl reads depends on the machine's load.
like "$(val status)" "the coordinator" "its STATUS= says what it does"
set -- $(val pids)
pid1=${1:-0} pid2=${2:-0}
is "$(val fed)" "0 $pid1" "the watchdog is fed: the same process after twice WatchdogSec, no restart"
is "$(val restarts)" 1 "a hung agent (SIGSTOP) is restarted by systemd"
[ "$pid2" -gt 1 ] && [ "$pid2" != "$pid1" ]; ok $? "... as a new process ($pid1 -> $pid2)"
is "$(val state2)" active "... which is active again"
is "$(val timeouts)" 1 "systemd's journal says it was the watchdog timeout"
done_testing
