#!/usr/bin/env bash
# deploy/systemd-ns as a command (the README's way to run a server campaign where systemd is not PID 1): the
# command runs under the namespace's own systemd, in the caller's working directory (here under /tmp, which is
# private inside and carried in), with its exit status passed on; `vbench run` gets the namespace's bus unless it
# names one; a Ctrl-C (SIGINT to the process group) is the command's to handle; nothing is left afterwards; a
# namespace that cannot boot is exit 125.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../../deploy/systemd-ns"
NS="$(cd "$(dirname "$0")/../.." && pwd)/deploy/systemd-ns"
why=$(vb_ns_skip_reason)
[ -z "$why" ] || skip_all "$why"
need setsid

# Namespace cgroups already there (another test's, running or killed): not this test's to judge.
ns_cgroups() { find /sys/fs/cgroup -maxdepth 6 -type d -name "vbench-ns-*" 2>/dev/null | sort; }
ns_cgroups >"$SCRATCH/cgroups-before"

cd "$SCRATCH" || exit 1
echo "from the host" >here.txt
out=$("$NS" -- sh -c 'systemctl is-system-running; cat here.txt; echo "pid $$"; exit 7' 2>"$SCRATCH/err1")
rc=$?
is "$rc" "7" "the command's exit status is passed on"
like "$out" "running" "it runs under a systemd that has booted its own target"
like "$out" "from the host" "in the caller's working directory, carried in from the host's /tmp"
pid_in=$(printf '%s\n' "$out" | sed -n 's/^pid //p')
[ -n "$pid_in" ] && [ "$pid_in" -lt 1000 ]; ok $? "in a PID namespace of its own (pid $pid_in inside)"
cg=$(sed -n 's/.*systemd is up (host PID \([0-9]*\)).*/\1/p' "$SCRATCH/err1")
[ -n "$cg" ] && ! kill -0 "$cg" 2>/dev/null; ok $? "the namespace's systemd (host pid ${cg:-unknown}) is gone afterwards"
left=$(ns_cgroups | comm -13 "$SCRATCH/cgroups-before" - | while read -r d; do
           kill -0 "${d##*-}" 2>/dev/null || echo "$d"; done)
is_empty "$left" "no cgroup of a finished namespace is left"

# vbench's run and resume talk to the namespace's systemd: the bus is added unless the command names one.
mkdir -p "$SCRATCH/fake"
printf '#!/bin/sh\necho "$*"\n' >"$SCRATCH/fake/vbench"
chmod +x "$SCRATCH/fake/vbench"
is "$("$NS" -- "$SCRATCH/fake/vbench" run --profile dev 2>/dev/null)" "run --bus unix:path=/run/systemd/private --profile dev" \
   "vbench run gets --bus unix:path=/run/systemd/private"
is "$("$NS" -- "$SCRATCH/fake/vbench" resume --bus=unix:path=/x 2>/dev/null)" "resume --bus=unix:path=/x" \
   "a command that names its bus keeps it"
is "$("$NS" -- "$SCRATCH/fake/vbench" show x 2>/dev/null)" "show x" "other commands are left as they are"

# Ctrl-C: SIGINT to the whole process group reaches the command, which decides; its status is passed on. (A
# background job of this script starts with SIGINT ignored, which no shell below could trap again, so perl
# restores the default first, as a terminal would have it.)
setsid perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die' \
    "$NS" -- sh -c 'echo up; trap "exit 3" INT; sleep 60 & wait' >"$SCRATCH/int.out" 2>&1 &
spid=$!
wait_until 120 grep -q '^up' "$SCRATCH/int.out"   # the namespace boots first: seconds on a loaded machine
kill -INT -- "-$spid"
t0=$(date +%s)
wait "$spid"
rc=$?
is "$rc" "3" "a SIGINT to the process group is the command's: it exits 3 and that is passed on ($(( $(date +%s) - t0 )) s)"

err=$(VB_NS_SYSTEMD=/nonexistent/systemd "$NS" -- true 2>&1)
rc=$?
is "$rc" "125" "a namespace that cannot boot is exit 125"
like "$err" "no systemd binary at /nonexistent/systemd" "and says why"
"$NS" 2>/dev/null; is "$?" "2" "no command is a usage error"
done_testing
