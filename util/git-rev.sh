#!/bin/sh
# Prints the revision of the source tree for the binaries (`vbench --version`, the manifest's
# vbench.git_revision): git's short hash, with -dirty when the tree differs from it. Without git (a fresh
# minimal Debian has none) the hash is read from .git as files (HEAD, the ref's file or packed-refs; a worktree's
# .git file and commondir are followed), and nothing can say whether the tree is dirty; without .git: "unknown".
# Usage: git-rev.sh [DIR]
cd "${1:-.}" || { echo unknown; exit 0; }
if command -v git >/dev/null 2>&1 && rev=$(git rev-parse --short=12 HEAD 2>/dev/null); then
    git diff --quiet HEAD 2>/dev/null || rev=$rev-dirty
    echo "$rev"
    exit 0
fi
gitdir=.git
[ -f .git ] && gitdir=$(sed -n 's/^gitdir: //p' .git)
[ -n "$gitdir" ] && [ -f "$gitdir/HEAD" ] || { echo unknown; exit 0; }
common=$gitdir
if [ -f "$gitdir/commondir" ]; then
    c=$(cat "$gitdir/commondir")
    case $c in /*) common=$c ;; *) common=$gitdir/$c ;; esac
fi
head=$(cat "$gitdir/HEAD")
hash=
case $head in
    "ref: "*)
        ref=${head#ref: }
        for d in "$gitdir" "$common"; do
            [ -z "$hash" ] && [ -f "$d/$ref" ] && hash=$(cat "$d/$ref")
        done
        [ -z "$hash" ] && [ -f "$common/packed-refs" ] &&
            hash=$(awk -v r="$ref" '$2 == r { print $1; exit }' "$common/packed-refs") ;;
    *) hash=$head ;;
esac
case $hash in
    [0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]*)
        echo "$hash" | cut -c1-12 ;;
    *) echo unknown ;;
esac
