#!/usr/bin/env bash
# util/git-rev.sh, the revision the binaries carry (`vbench --version`, the manifest): a fresh minimal Debian has
# no git, so the hash is read from .git as files (a branch's ref file, packed-refs, a detached HEAD, a worktree's
# .git file); a tree without .git is "unknown", never "unknown-dirty" (what the Makefile said when git was there
# but the tree was not a repository, or when git was missing).
. "$(dirname "$0")/../lib/lib.sh"
GR="$(cd "$(dirname "$0")/../.." && pwd)/util/git-rev.sh"
nogit="$SCRATCH/nogit"       # a PATH with what the script uses and no git
mkdir -p "$nogit"
for c in sh sed cat awk cut; do ln -s "$(command -v "$c")" "$nogit/$c"; done
rev() { PATH=$nogit sh "$GR" "$1"; }
h1=0123456789abcdef0123456789abcdef01234567
h2=fedcba9876543210fedcba9876543210fedcba98

t="$SCRATCH/plain"; mkdir -p "$t"
is "$(rev "$t")" "unknown" "no git and no .git: unknown"

t="$SCRATCH/loose"; mkdir -p "$t/.git/refs/heads"
echo "ref: refs/heads/main" >"$t/.git/HEAD"; echo "$h1" >"$t/.git/refs/heads/main"
is "$(rev "$t")" "${h1:0:12}" "a branch's ref file"

t="$SCRATCH/packed"; mkdir -p "$t/.git"
echo "ref: refs/heads/main" >"$t/.git/HEAD"
printf '# pack-refs with: peeled fully-peeled sorted\n%s refs/heads/other\n%s refs/heads/main\n' "$h2" "$h1" >"$t/.git/packed-refs"
is "$(rev "$t")" "${h1:0:12}" "a branch in packed-refs"

t="$SCRATCH/detached"; mkdir -p "$t/.git"
echo "$h2" >"$t/.git/HEAD"
is "$(rev "$t")" "${h2:0:12}" "a detached HEAD"

# A worktree: .git is a file naming its git dir, whose commondir holds the shared refs.
t="$SCRATCH/wt"; c="$SCRATCH/common"; mkdir -p "$t" "$c/refs/heads" "$c/worktrees/wt"
echo "gitdir: $c/worktrees/wt" >"$t/.git"
echo "ref: refs/heads/feature" >"$c/worktrees/wt/HEAD"; echo "../.." >"$c/worktrees/wt/commondir"
echo "$h2" >"$c/refs/heads/feature"
is "$(rev "$t")" "${h2:0:12}" "a worktree's branch, through .git and commondir"

t="$SCRATCH/broken"; mkdir -p "$t/.git"
echo "ref: refs/heads/gone" >"$t/.git/HEAD"
is "$(rev "$t")" "unknown" "a HEAD whose branch has no hash: unknown"

if command -v git >/dev/null; then
    is "$(sh "$GR" "$SCRATCH/plain")" "unknown" "git installed, the tree not a repository: unknown, not unknown-dirty"
    t="$SCRATCH/repo"
    git init -q "$t" && git -C "$t" -c user.name=t -c user.email=t@t commit -q --allow-empty -m one
    want=$(git -C "$t" rev-parse --short=12 HEAD)
    is "$(sh "$GR" "$t")" "$want" "with git: git's short hash"
    is "$(rev "$t")" "$want" "without git: the same hash, read from the files"
    echo x >"$t/f"; git -C "$t" add f
    is "$(sh "$GR" "$t")" "$want-dirty" "with git: a changed tree is -dirty"
else
    skip "git is not installed: the comparison with git's own answer"
fi
done_testing
