#!/usr/bin/env bash
# make fresh-check: does the README alone get a new user from a fresh machine to a campaign and a green test
# suite? Makes a minimal Debian 12 root (debootstrap --variant=minbase bookworm) in a scratch directory, clones
# this repository's HEAD into it (git runs here, on the host: the fresh root has no git), and runs there, as
# root, the two commands of the README's "Two commands" block exactly as written (read from README.md, not
# copied here). Prints PASS or FAIL with the time of each step; exit 0 only if both commands pass.
#
# The root is a mount point (bound onto itself), with /proc, /sys and /dev bound from the host and a tmpfs on
# /run, as on a booted machine; the mounts live in a private mount namespace, so they vanish with this script.
# Its engine-image cache (/var/cache/vbench/images inside the root) starts empty: `make test` builds every image
# from Debian's packages (../shared is bound beside the clone, read-only, as CI has it): a cold-cache run.
#
# usage: tests/fresh-check.sh        (root; about 20-30 minutes on 2 cores, most of it apt and the test suite)
#   FRESH_DIR=DIR   scratch directory (default /var/tmp/vbench-fresh.XXXXXX); FRESH_KEEP=1 keeps it afterwards
#   FRESH_MIRROR=URL   Debian mirror (default http://deb.debian.org/debian)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
die() { echo "fresh-check: $*" >&2; exit 2; }

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
command -v git >/dev/null || die "git is not installed here (the host side clones the repository)"
rev=$(git -C "$repo" rev-parse HEAD) || die "$repo is not a git repository"
[[ -z "$(git -C "$repo" status --porcelain --untracked-files=no)" ]] ||
    echo "fresh-check: note: the tree has uncommitted changes; the check runs HEAD ($rev) without them" >&2

# The README's two commands: the lines of the first ```sh block after the "## Two commands" heading.
mapfile -t cmds < <(awk '/^## Two commands/ { h = 1; next }
                         h && /^```sh/ { b = 1; next }
                         b && /^```/ { exit }
                         b && NF { print }' "$repo/README.md")
[[ ${#cmds[@]} -eq 2 ]] ||
    die "README.md: expected two commands in the first \`\`\`sh block after '## Two commands', found ${#cmds[@]}"

if [[ -n "${FRESH_DIR:-}" ]]; then mkdir -p "$FRESH_DIR"; dir=$FRESH_DIR
else dir=$(mktemp -d /var/tmp/vbench-fresh.XXXXXX); fi
root="$dir/root"

# Everything that mounts runs in this script's own mount namespace (re-exec under unshare once).
if [[ -z "${FRESH_IN_NS:-}" ]]; then
    set +e
    FRESH_IN_NS=1 FRESH_DIR=$dir unshare --mount --propagation private "$0"
    rc=$?
    set -e
    # Processes of the fresh root that outlived the check (daemons started by a test): none may be left.
    for p in /proc/[0-9]*; do
        r=$(readlink "$p/root" 2>/dev/null) || continue
        [[ "$r" == "$root" || "$r" == "$root"/* ]] || continue
        echo "fresh-check: process ${p#/proc/} ($(cat "$p/comm" 2>/dev/null)) is left in the fresh root: killed" >&2
        kill -KILL "${p#/proc/}" 2>/dev/null || true
    done
    if [[ "${FRESH_KEEP:-0}" == 1 || $rc -ne 0 ]]; then
        echo "fresh-check: the fresh root is kept in $root (logs in $dir)"
    elif findmnt -rn -o TARGET | grep -q "^$root"; then
        echo "fresh-check: something is still mounted under $root: not removing it" >&2
    else
        rm -rf --one-file-system "$root"
    fi
    exit $rc
fi

[[ ! -e "$root" ]] || die "$root exists already: remove it or choose another FRESH_DIR"
echo "fresh-check: scratch $dir, revision $rev"
for c in "${cmds[@]}"; do echo "fresh-check: README command: $c"; done
results=()
failed=0
step() { # step NAME COMMAND...: runs and times one step, output to $dir/NAME.log
    local name=$1 t0 rc; shift
    t0=$(date +%s)
    echo "fresh-check: [$name] started $(date -u +%H:%M:%S)"
    set +e
    "$@" >"$dir/$name.log" 2>&1
    rc=$?
    set -e
    local secs=$(( $(date +%s) - t0 ))
    if [[ $rc -eq 0 ]]; then results+=("PASS  $(printf '%5d' "$secs") s  $name")
    else
        results+=("FAIL  $(printf '%5d' "$secs") s  $name (exit $rc; log $dir/$name.log)")
        failed=1
        echo "fresh-check: [$name] failed (exit $rc); the end of its log:" >&2
        tail -n 40 "$dir/$name.log" | sed 's/^/  /' >&2
    fi
    echo "fresh-check: [$name] ${secs} s, exit $rc"
    return $rc
}
summary() {
    echo
    echo "fresh-check summary (revision ${rev:0:12}, Debian 12 minbase, $(nproc) CPUs):"
    printf '  %s\n' "${results[@]}"
    if [[ $failed -eq 0 ]]; then echo "fresh-check: PASS"; else echo "fresh-check: FAIL"; fi
}

mkdir -p "$root"
if ! step debootstrap debootstrap --variant=minbase bookworm "$root" "$mirror"; then summary; exit 1; fi
# The site's own certificate authorities (/usr/local/share/ca-certificates: a TLS-inspecting proxy's, say), as
# every machine of this site has them: without them the fresh root reaches Debian's archive (plain HTTP) but not
# the npm registry that 97-dataset-convert needs. ca-certificates' own install (pulled in by install-deps) adds
# them to the root's store. Nothing else of the host's is copied.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    echo "fresh-check: the site's CA certificates ($(ls /usr/local/share/ca-certificates/*.crt | wc -l)) are copied into the root"
fi
mount --bind "$root" "$root"
mount --rbind /proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=0755,nosuid,nodev fresh-run "$root/run"
clone() {
    git clone -q --no-checkout "$repo" "$root/root/vbench" && git -C "$root/root/vbench" checkout -q --detach "$rev"
}
if ! step clone clone; then summary; exit 1; fi
# shared/ beside the clone, read-only, as CI lays it (nothing in the suite reads it; bound so that the root looks
# like CI's clone).
if [[ -d "$repo/../shared" ]]; then
    mkdir -p "$root/root/shared"
    mount --bind "$(cd "$repo/../shared" && pwd)" "$root/root/shared"
    mount -o remount,bind,ro "$root/root/shared"
    echo "fresh-check: $(cd "$repo/../shared" && pwd) is bound read-only at /root/shared (beside the clone, as in CI)"
else
    echo "fresh-check: note: no ../shared beside the repository (CI has one, read-only; the suite does not need it)"
fi

# Each command as a root login on the fresh machine would run it: its own shell, in the clone, a clean
# environment.
i=0
for c in "${cmds[@]}"; do
    i=$((i + 1))
    step "readme-command-$i" chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/bash -c 'cd /root/vbench && eval "$1"' bash "$c" || true
    results[-1]="${results[-1]}: $c"
done
summary
[[ $failed -eq 0 ]]
