#!/usr/bin/env bash
# deploy/image-build without the network: recipe errors name file and line, a missing recipe is named, the
# cache key is the recipe's content, --path-only builds nothing, a failing debootstrap (a stand-in on PATH)
# leaves neither an image nor a temporary directory behind and shows debootstrap's own words, a missing debootstrap
# is installed through apt (a stub), and a finished image is found again without building (a no-op that prints its
# path).
. "$(dirname "$0")/../lib/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_IMG="$ROOT/deploy/image-build"
recipes="$SCRATCH/recipes"
cache="$SCRATCH/images"
mkdir -p "$recipes" "$SCRATCH/bin"
ib() { "$BUILD_IMG" --recipe-dir "$recipes" --cache "$cache" "$@"; }

err=$(ib nosuch 2>&1)
[ $? -ne 0 ]; ok $? "a missing recipe fails"
like "$err" "no recipe for image 'nosuch'" "and is named"
err=$(ib '../etc' 2>&1)
[ $? -ne 0 ]; ok $? "an image name with a path in it is refused"

printf '@suite trixie\n@bogus x\nprocps\n' >"$recipes/bad1.list"
err=$(ib bad1 2>&1)
like "$err" "bad1.list:2: unknown directive @bogus" "an unknown directive names file and line"
printf '# comment\nprocps Bad_Name\n' >"$recipes/bad2.list"
err=$(ib bad2 2>&1)
like "$err" "bad2.list:2: 'Bad_Name' is not a Debian package name" "a bad package name names file and line"
printf '# nothing\n\n' >"$recipes/empty.list"
err=$(ib empty 2>&1)
like "$err" "lists no packages" "a recipe without packages is refused"

printf '@suite trixie\nprocps # the only package\n' >"$recipes/tiny.list"
key=$(sha256sum "$recipes/tiny.list" | cut -c1-16)
path=$(ib --path-only tiny)
[ $? -eq 1 ]; ok $? "--path-only: exit 1 when the image is not built"
is "$path" "$cache/tiny-$key" "the cache key is the first 16 hex digits of the recipe's sha256"
[ ! -e "$cache/tiny-$key" ]; ok $? "--path-only builds nothing"

if [ "$(id -u)" -eq 0 ]; then
    cat >"$SCRATCH/bin/debootstrap" <<'SH'
#!/bin/sh
echo "I: Retrieving InRelease"
echo "E: Couldn't find these debs: procps"
mkdir -p "$4/debootstrap" && echo "half a root" >"$4/etc-half"
exit 1
SH
    chmod +x "$SCRATCH/bin/debootstrap"
    err=$(PATH="$SCRATCH/bin:$PATH" ib tiny 2>&1)
    [ $? -ne 0 ]; ok $? "a failing debootstrap fails the build"
    like "$err" "Couldn't find these debs: procps" "the error shows debootstrap's own words"
    like "$err" "debootstrap failed for tiny" "and says what failed"
    [ ! -e "$cache/tiny-$key" ] && [ -z "$(ls -A "$cache" | grep '\.tmp\.')" ]
    ok $? "no image and no temporary directory are left behind"

    # A successful first build exits 0 and prints the image's path (it used to exit 1: the EXIT trap's last
    # test failed under set -e). The stand-in makes a root that holds only a shell, its libraries and a
    # dpkg-query that lists the recipe's package, which is all image-build runs inside it.
    cat >"$SCRATCH/bin/debootstrap" <<'SH'
#!/bin/sh
set -e
root=$4
mkdir -p "$root/bin" "$root/usr/bin"
cp /bin/sh "$root/bin/sh"
for lib in $(ldd /bin/sh | grep -o '/[^ ]*'); do mkdir -p "$root$(dirname "$lib")"; cp "$lib" "$root$lib"; done
printf '#!/bin/sh\nprintf "procps\\t2:4.0.4-9\\n"\n' >"$root/usr/bin/dpkg-query"
chmod +x "$root/usr/bin/dpkg-query"
echo "I: Base system installed successfully."
SH
    cache1="$SCRATCH/images-first"
    out=$(PATH="$SCRATCH/bin:$PATH" "$BUILD_IMG" --recipe-dir "$recipes" --cache "$cache1" tiny 2>"$SCRATCH/first.err")
    rc=$?
    is "$rc" "0" "a successful first build exits 0"
    [ $rc -eq 0 ] || sed 's/^/#   /' "$SCRATCH/first.err"
    is "$out" "$cache1/tiny-$key" "and prints the image's path"
    is "$(cat "$cache1/tiny-$key/vbench-packages.txt" 2>/dev/null)" "procps	2:4.0.4-9" "the image lists its packages"
    [ -z "$(ls -A "$cache1" | grep '\.tmp\.')" ]; ok $? "no temporary directory is left after a build"

    # Issue 36.16: after deploy/install-deps without --with-tests debootstrap is missing, and the README's
    # `vbench image build db-trixie` stopped there. The build installs it, as root, saying so. PATH is a directory
    # of links to every command of this host but debootstrap and apt-get, plus a stub apt-get that stands for apt:
    # it records how it was called and "installs" the stand-in debootstrap above into that directory. The host's own
    # debootstrap is neither used nor touched (the other tests need it). /usr/bin:/bin come last, for the commands
    # run chrooted in the image (its dpkg-query); debootstrap is in neither.
    nodeb="$SCRATCH/nodeb"
    mkdir -p "$nodeb"
    for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
        [ -d "$d" ] || continue
        for f in "$d"/*; do
            b=${f##*/}
            case $b in debootstrap|apt-get) continue ;; esac
            [ -x "$f" ] && [ ! -e "$nodeb/$b" ] && ln -s "$f" "$nodeb/$b"
        done
    done
    cp "$SCRATCH/bin/debootstrap" "$SCRATCH/debootstrap-standin"
    cat >"$nodeb/apt-get" <<SH
#!/bin/sh
# stands for apt: records the call; "install ... debootstrap" puts the stand-in debootstrap on PATH
echo "apt-get \$*" >>"$SCRATCH/apt.log"
case " \$* " in *" install "*" debootstrap "*) cp "$SCRATCH/debootstrap-standin" "$nodeb/debootstrap" ;; esac
SH
    chmod +x "$nodeb/apt-get"
    npath="$nodeb:/usr/bin:/bin"
    PATH="$npath" command -v debootstrap >/dev/null; [ $? -ne 0 ]; ok $? "the test's PATH has no debootstrap"
    cache2="$SCRATCH/images-nodeb"
    out=$(PATH="$npath" "$BUILD_IMG" --recipe-dir "$recipes" --cache "$cache2" tiny 2>"$SCRATCH/nodeb.err")
    rc=$?
    is "$rc" "0" "without debootstrap, a build as root installs it and builds"
    [ $rc -eq 0 ] || tail -5 "$SCRATCH/nodeb.err" | diag
    is "$(cat "$SCRATCH/apt.log" 2>/dev/null)" "apt-get install -y -q debootstrap" "it asked apt for debootstrap, once"
    like "$(cat "$SCRATCH/nodeb.err")" "debootstrap is not installed; installing it (apt-get install -y debootstrap)" \
         "and said so"
    is "$out" "$cache2/tiny-$key" "the image is built and its path printed"
    [ -x /usr/sbin/debootstrap ] || [ -x /usr/bin/debootstrap ]; ok $? "the host's own debootstrap is still there"
    # apt cannot install it: apt-get update is tried, then the build stops saying what to do
    rm -f "$nodeb/debootstrap" "$SCRATCH/apt.log"
    printf '#!/bin/sh\necho "apt-get $*" >>"%s"\necho "E: Unable to locate package debootstrap" >&2\nexit 100\n' \
        "$SCRATCH/apt.log" >"$nodeb/apt-get"
    err=$(PATH="$npath" "$BUILD_IMG" --recipe-dir "$recipes" --cache "$SCRATCH/images-nodeb2" tiny 2>&1)
    [ $? -ne 0 ]; ok $? "when apt cannot install debootstrap, the build fails"
    is "$(tr '\n' ';' <"$SCRATCH/apt.log")" "apt-get install -y -q debootstrap;apt-get update -q;" \
       "after an apt-get update (the lists may be old); no install after a failed update"
    like "$err" "debootstrap could not be installed" "and says debootstrap is missing"
    like "$err" "Unable to locate package debootstrap" "with apt's own words"

    # A finished image (here made by hand) is found without building: no debootstrap is called.
    mkdir -p "$cache/tiny-$key"
    printf 'procps\t2:4.0.4-9\n' >"$cache/tiny-$key/vbench-packages.txt"
    out=$(PATH="$SCRATCH/bin:$PATH" ib tiny 2>&1)
    ok $? "a built image is a no-op"
    is "$out" "$cache/tiny-$key" "that prints the image's path"
    is "$(ib --path-only tiny)" "$cache/tiny-$key" "--path-only finds it too"
    printf '@suite trixie\nprocps\n' >"$recipes/tiny.list"
    [ "$(ib --path-only tiny)" != "$cache/tiny-$key" ]
    ok $? "changing the recipe changes the key"
else
    skip "not root: the build paths are not tested"
fi
done_testing
