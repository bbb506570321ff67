# Test helper (sourced): boots a private systemd as PID 1 of a new PID + mount namespace, so tests can start
# real transient units over sd-bus on a host where systemd is not PID 1, and always tears it down.
#
#   vb_ns_start [DIR...]   boot; each DIR (e.g. $SCRATCH) stays visible at the same path inside
#   vb_ns_run CMD...       run CMD inside the namespace (its PID + mount namespace, its /run, its systemctl)
#   vb_ns_stop             kill the namespace's PID 1 (and with it every process inside), remove its cgroups,
#                          check the host's /tmp canary; also runs from the EXIT trap
#   vb_ns_skip_reason      prints why the namespace cannot be booted here (empty when it can)
# After vb_ns_start: VB_NS_PID (host PID of the namespace's systemd), VB_NS_BUS (sd-bus address of its private
# socket, valid inside), VB_NS_JOURNAL (its journal directory seen from the host), VB_NS_CGROUP (its cgroup root,
# the same path in every hierarchy), VB_NS_LOG (output of the setup and anything systemd prints before its journal
# is up; after that systemd logs into its own journal: vb_ns_run journalctl).
#
# Bus clients must run inside (vb_ns_run): systemd accepts a connection on its private socket only from a peer
# whose PID it can see (SO_PEERCRED), and a process of the parent PID namespace shows up as PID 0 there, so a
# host-side client is dropped right after connect ("Broken pipe"), even through /proc/PID/root/run/systemd/private.
# Inside, MainPID, /proc and cgroup.procs all speak the namespace's PIDs, as they would on a real host.
#
# Why it is built this way (SPEC 7):
# - The default boot runs systemd-tmpfiles (which empties /tmp) and starts every enabled service. Here systemd
#   boots a target of our own with DefaultDependencies=no that wants only journald; sysinit.target, basic.target,
#   the tmpfiles, sysctl, udev, random-seed and utmp units are masked in the namespace, so a unit that pulls
#   them in by accident fails instead of touching the host. /tmp, /run and /dev are private tmpfs inside, and a
#   canary file in the host's /tmp proves that /tmp survived.
# - /dev is private (the needed nodes bound in, a new devpts instance) because systemd and journald's sockets
#   create symlinks such as /dev/log, and /dev is the host's devtmpfs otherwise.
# - cgroups: this host is a v1/v2 hybrid. systemd takes its root cgroup from its own place in the name=systemd
#   hierarchy, so before exec the namespace's first process is moved into a fresh child cgroup
#   (<our memory cgroup>/vbench-ns-PID, the same path in every mounted hierarchy except cpuset, which systemd
#   does not use on v1); systemd then creates init.scope and system.slice below it, writable because we are root.
#   The host's memory limit accounting (our own memory cgroup) still covers everything inside.
# - If this shell dies without running its trap, the namespace still dies: setpriv gives unshare a parent-death
#   signal and unshare --kill-child gives one to systemd.

VB_NS_PID=
VB_NS_UNSHARE_PID=
VB_NS_BUS=
VB_NS_JOURNAL=
VB_NS_CGROUP=
VB_NS_LOG=
VB_NS_CANARY=
VB_NS_CG_DIRS=()
VB_NS_SYSTEMD=${VB_NS_SYSTEMD:-/lib/systemd/systemd}
VB_NS_BOOT_TIMEOUT=${VB_NS_BOOT_TIMEOUT:-30}

# Units masked inside the namespace: everything a default boot would run that writes to shared state.
VB_NS_MASKED="sysinit.target basic.target local-fs.target sockets.target timers.target paths.target
  default.target multi-user.target graphical.target rescue.target emergency.target
  systemd-tmpfiles-setup.service systemd-tmpfiles-setup-dev.service systemd-tmpfiles-clean.service
  systemd-tmpfiles-clean.timer systemd-sysctl.service systemd-udevd.service systemd-udev-trigger.service
  systemd-modules-load.service systemd-random-seed.service systemd-update-utmp.service
  systemd-journal-flush.service systemd-journald-audit.socket systemd-journald-dev-log.socket
  systemd-binfmt.service systemd-machine-id-commit.service systemd-firstboot.service"

vb_ns_skip_reason() {
    [ "$(id -u)" -eq 0 ] || { echo "needs root (unshare, cgroups)"; return; }
    [ -x "$VB_NS_SYSTEMD" ] || { echo "no systemd binary at $VB_NS_SYSTEMD"; return; }
    local c
    for c in unshare nsenter setpriv systemctl; do
        command -v "$c" >/dev/null || { echo "$c is not installed"; return; }
    done
    [ -d /sys/fs/cgroup ] || { echo "no /sys/fs/cgroup"; return; }
}

# The cgroup hierarchies mounted under /sys/fs/cgroup (v1 ones and the v2 one), one mount point per line.
vb_ns__hierarchies() {
    awk '$5 ~ "^/sys/fs/cgroup" { for (i = 7; i <= NF; i++) if ($i == "-") break;
         if ($(i+1) == "cgroup" || $(i+1) == "cgroup2") print $5 }' /proc/self/mountinfo |
        grep -v '/cpuset$' || true
}

# Is PID running (a zombie, which kill -0 still finds, is not)?
vb_ns__alive() {
    case "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" in Z|X|"") return 1 ;; *) return 0 ;; esac
}

# Where the namespace's cgroups go: below our own memory cgroup (v1), else our v2 cgroup, else the root.
vb_ns__cgroup_base() {
    local base
    base=$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
    [ -n "$base" ] || base=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
    [ "$base" = "/" ] && base=
    echo "$base"
}

vb_ns_start() {
    local why
    why=$(vb_ns_skip_reason)
    [ -z "$why" ] || { echo "vb_ns_start: $why" >&2; return 1; }
    [ -z "$VB_NS_PID" ] || { echo "vb_ns_start: already running (pid $VB_NS_PID)" >&2; return 1; }
    local dir=${SCRATCH:-$(mktemp -d /tmp/vbench-ns.XXXXXX)}
    VB_NS_LOG="$dir/systemd-ns.log"
    : >"$VB_NS_LOG"

    # Tear down on any exit, before whatever the test's own EXIT trap does.
    local prev
    prev=$(trap -p EXIT | sed -e "s/^trap -- '//" -e "s/' EXIT\$//")
    # shellcheck disable=SC2064
    trap "vb_ns_stop; $prev" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    local c
    for c in /tmp/vbench-ns-canary.*.*; do  # canaries of killed tests: vbench-ns-canary.PID.XXXXXX
        [ -f "$c" ] || continue
        c=${c#/tmp/vbench-ns-canary.}
        kill -0 "${c%%.*}" 2>/dev/null || rm -f "/tmp/vbench-ns-canary.$c"
    done
    VB_NS_CANARY=$(mktemp "/tmp/vbench-ns-canary.$$.XXXXXX")
    echo "if this file disappears, something emptied the host's /tmp" >"$VB_NS_CANARY"

    # Empty cgroups left by a namespace whose test was killed outright (no trap ran): remove them.
    local base stale h
    base=$(vb_ns__cgroup_base)
    for h in $(vb_ns__hierarchies); do
        for stale in "$h$base"/vbench-ns-*; do
            [ -d "$stale" ] && ! kill -0 "${stale##*-}" 2>/dev/null &&
                find "$stale" -depth -type d -exec rmdir {} + 2>/dev/null
        done
    done

    # A fresh cgroup, the same path in every hierarchy; intermediate directories we create are removed later.
    VB_NS_CGROUP="$base/vbench-ns-$$"
    VB_NS_CG_DIRS=()
    local d p
    for h in $(vb_ns__hierarchies); do
        p=
        for d in $(echo "${VB_NS_CGROUP#/}" | tr / ' '); do
            p="$p/$d"
            if [ ! -d "$h$p" ]; then
                mkdir "$h$p" || { echo "vb_ns_start: cannot create cgroup $h$p" >&2; return 1; }
                VB_NS_CG_DIRS+=("$h$p")
            fi
        done
    done

    # The script that runs as PID 1 of the new namespaces until it execs systemd.
    local shares="$*"
    case " $shares " in *" $dir "*) ;; *) shares="$shares $dir" ;; esac
    local inner
    inner=$(cat <<'INNER'
set -e
# Private /run first: it holds the staging points for the directories shared with the host.
mount -t tmpfs -o mode=0755,nosuid,nodev,size=64m vbench-run /run
i=0
for d in $VB_SHARES; do
    mkdir -p /run/vbench-share/$i
    mount --rbind "$d" /run/vbench-share/$i
    i=$((i + 1))
done
mount -t tmpfs -o mode=1777,nosuid,nodev,size=256m vbench-tmp /tmp
# Private /dev with the usual nodes bound from the host's, a new devpts and a fresh /dev/shm.
mkdir -p /run/vbench-olddev
mount --rbind /dev /run/vbench-olddev
mount -t tmpfs -o mode=0755,nosuid,size=4m vbench-dev /dev
for n in null zero full random urandom tty; do
    touch /dev/$n
    mount --bind /run/vbench-olddev/$n /dev/$n
done
umount -l /run/vbench-olddev
rmdir /run/vbench-olddev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev vbench-shm /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
i=0
for d in $VB_SHARES; do
    mkdir -p "$d"
    mount --move /run/vbench-share/$i "$d"
    i=$((i + 1))
done
rmdir /run/vbench-share/* /run/vbench-share 2>/dev/null || true

mkdir -p /run/systemd/system /run/systemd/journald.conf.d
cat >/run/systemd/system/vbench-test.target <<'EOF'
[Unit]
Description=vbench test namespace (nothing but journald)
DefaultDependencies=no
Wants=systemd-journald.service
EOF
for u in $VB_MASKED; do ln -s /dev/null /run/systemd/system/$u; done
cat >/run/systemd/journald.conf.d/vbench.conf <<'EOF'
[Journal]
Storage=volatile
RuntimeMaxUse=32M
ReadKMsg=no
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
Audit=no
EOF
exec env -i container=vbench-test PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    "$VB_SYSTEMD" --system --unit=vbench-test.target --log-target=journal --log-level=info --show-status=no
INNER
)
    # The subshell moves itself into the fresh cgroups, then becomes setpriv -> unshare -> (fork) sh -> systemd.
    (
        for h in $(vb_ns__hierarchies); do echo "$BASHPID" >"$h$VB_NS_CGROUP/cgroup.procs"; done
        exec env VB_SHARES="$shares" VB_MASKED="$(echo $VB_NS_MASKED)" VB_SYSTEMD="$VB_NS_SYSTEMD" \
            setpriv --pdeathsig KILL \
            unshare --pid --fork --kill-child=KILL --mount --mount-proc --propagation private \
            sh -c "$inner"
    ) </dev/null >>"$VB_NS_LOG" 2>&1 &
    VB_NS_UNSHARE_PID=$!

    # Wait for the forked child (PID 1 inside) to become systemd, then for its private socket to answer.
    local deadline=$(( $(date +%s) + VB_NS_BOOT_TIMEOUT )) child= state=
    while [ "$(date +%s)" -lt "$deadline" ]; do
        if ! vb_ns__alive "$VB_NS_UNSHARE_PID"; then
            echo "vb_ns_start: the namespace died while booting; its logs:" >&2
            sed 's/^/  /' "$VB_NS_LOG" | tail -30 >&2
            vb_ns_stop
            return 1
        fi
        # Read the child anew each time: before unshare runs, the launching subshell's own short-lived children
        # (its command substitutions) show up here too, and a PID cached then would be waited on forever.
        child=$(cat "/proc/$VB_NS_UNSHARE_PID/task/$VB_NS_UNSHARE_PID/children" 2>/dev/null | awk '{print $1}')
        if [ -n "$child" ] && [ "$(cat "/proc/$child/comm" 2>/dev/null)" = "systemd" ] &&
           [ -S "/proc/$child/root/run/systemd/private" ]; then
            VB_NS_PID=$child
            state=$(vb_ns_run systemctl is-system-running 2>/dev/null)
            case "$state" in running|degraded) break ;; esac
        fi
        sleep 0.1   # boot polling in the test helper only; the C code waits on D-Bus signals
    done
    VB_NS_PID=$child
    case "$state" in
        running|degraded) ;;
        *) echo "vb_ns_start: systemd did not reach vbench-test.target within ${VB_NS_BOOT_TIMEOUT}s" \
                "(state '${state:-no answer}'); its logs:" >&2
           { cat "$VB_NS_LOG"; [ -n "$VB_NS_PID" ] && vb_ns_run journalctl --no-pager -n 20; } 2>&1 |
               sed 's/^/  /' | tail -40 >&2
           vb_ns_stop
           return 1 ;;
    esac
    VB_NS_BUS="unix:path=/run/systemd/private"
    VB_NS_JOURNAL="/proc/$VB_NS_PID/root/run/log/journal"
    export VB_NS_PID VB_NS_BUS VB_NS_JOURNAL VB_NS_CGROUP VB_NS_LOG
    return 0
}

vb_ns_run() {
    [ -n "$VB_NS_PID" ] || { echo "vb_ns_run: no namespace" >&2; return 1; }
    nsenter --target "$VB_NS_PID" --mount --pid -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_PAGER= "$@"
}

# Kill everything, wait until the cgroups are empty, remove them; fail if the host's /tmp lost its canary.
vb_ns_stop() {
    local rc=0
    if [ -n "$VB_NS_PID" ] && kill -0 "$VB_NS_PID" 2>/dev/null; then
        kill -KILL "$VB_NS_PID" 2>/dev/null || true
    fi
    # unshare reaps its child (the namespace's PID 1) and exits; kill it only if it does not, since a killed
    # unshare leaves its child as a zombie of the host's PID 1.
    if [ -n "$VB_NS_UNSHARE_PID" ]; then
        local n
        for n in $(seq 50); do
            vb_ns__alive "$VB_NS_UNSHARE_PID" || break
            sleep 0.1
        done
        kill -KILL "$VB_NS_UNSHARE_PID" 2>/dev/null || true
        wait "$VB_NS_UNSHARE_PID" 2>/dev/null || true
    fi
    if [ -n "$VB_NS_CGROUP" ]; then
        local h i left=1
        for i in $(seq 50); do
            left=0
            for h in $(vb_ns__hierarchies); do
                [ -d "$h$VB_NS_CGROUP" ] || continue
                if [ -n "$(find "$h$VB_NS_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null)" ]; then left=1; fi
            done
            [ $left -eq 0 ] && break
            sleep 0.1
        done
        if [ $left -ne 0 ]; then
            echo "vb_ns_stop: processes are left in $VB_NS_CGROUP" >&2
            rc=1
        fi
        for h in $(vb_ns__hierarchies); do
            [ -d "$h$VB_NS_CGROUP" ] && find "$h$VB_NS_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null
        done
        for ((i = ${#VB_NS_CG_DIRS[@]} - 1; i >= 0; i--)); do rmdir "${VB_NS_CG_DIRS[$i]}" 2>/dev/null; done
        for h in $(vb_ns__hierarchies); do
            if [ -d "$h$VB_NS_CGROUP" ]; then echo "vb_ns_stop: cannot remove $h$VB_NS_CGROUP" >&2; rc=1; fi
        done
    fi
    if [ -n "$VB_NS_CANARY" ]; then
        if [ -f "$VB_NS_CANARY" ]; then rm -f "$VB_NS_CANARY"
        else echo "vb_ns_stop: the canary $VB_NS_CANARY in the host's /tmp is gone: /tmp was emptied" >&2; rc=1
        fi
    fi
    VB_NS_PID= VB_NS_UNSHARE_PID= VB_NS_CGROUP= VB_NS_CANARY= VB_NS_BUS= VB_NS_JOURNAL=
    VB_NS_CG_DIRS=()
    return $rc
}

# Is the canary still in the host's /tmp? (for tests that want to assert it while the namespace runs)
vb_ns_canary_ok() { [ -n "$VB_NS_CANARY" ] && [ -f "$VB_NS_CANARY" ]; }
