#!/usr/bin/env bash
# The README is the front door: short (under 200 lines), every page and file it names exists, and every command
# in its code blocks works as written. The tour's commands run here, in that order, in a scratch directory with
# this build's binaries (bin/vbench is $VB_BIN/vbench): run dev, show, show --json, status, report, run --check.
# `vbench image build` runs as root (a no-op when the image is cached). The server campaign under
# deploy/systemd-ns is the one tests/e2e/62-orchestrator.t runs (checked: the same command line there); the two
# commands of "Two commands" are what `make fresh-check` runs on a fresh root. The dev campaign it runs is checked in
# full by dev-campaign.sh (results, manifest, show, status, concurrency, the campaign's time).
. "$(dirname "$0")/../lib/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
README=$ROOT/README.md

lines=$(wc -l <"$README")
[ "$lines" -lt 200 ]; ok $? "README.md is under 200 lines ($lines)"

# Every docs/, tests/ and deploy/ path it names exists.
missing=
for p in $(grep -o -E '`(docs|tests|deploy)/[A-Za-z0-9_./-]+`' "$README" | tr -d '`' | sort -u); do
    [ -e "$ROOT/$p" ] || missing="$missing $p"
done
for p in $(grep -o -E '\((docs/[A-Za-z0-9_./-]+)\)' "$README" | tr -d '()' | sort -u); do
    [ -e "$ROOT/$p" ] || missing="$missing $p"
done
is "${missing:-none}" "none" "every docs/, tests/ and deploy/ path the README names exists"

# The commands of its ```sh blocks, after "Two commands": one per line, the comment cut off.
cmds=$(awk '/^## Two commands/ {two = 1} /^```sh/ {inb = 1; blk++; next} /^```/ {inb = 0; next}
            inb && blk > 1 { sub(/[ \t]+#.*$/, ""); if (NF) print }' "$README")
n=$(printf '%s\n' "$cmds" | grep -c .)
[ "$n" -ge 6 ]; ok $? "the README's code blocks hold the tour's commands ($n)"

tour=$SCRATCH/tour
mkdir -p "$tour"
ran=0
while IFS= read -r c; do
    [ -n "$c" ] || continue
    case "$c" in
        "deploy/systemd-ns -- bin/vbench "*)
            inner=${c#deploy/systemd-ns -- bin/vbench }
            grep -q -F -- "\"\$VBENCH\" $inner" "$ROOT/tests/e2e/62-orchestrator.t"
            ok $? "'$c' is the campaign tests/e2e/62-orchestrator.t runs under the namespace"
            continue ;;
        "bin/vbench image build "*)
            if [ "$(id -u)" -ne 0 ]; then skip "'$c' needs root"; continue; fi ;;
        bin/vbench*) ;;
        *) ok 1 "'$c': a command this test does not know how to check (teach it)"; continue ;;
    esac
    args=${c#bin/vbench}
    # shellcheck disable=SC2086  # the README's words, split as a shell would
    (cd "$tour" && "$VBENCH" $args) >"$SCRATCH/cmd.out" 2>"$SCRATCH/cmd.err"
    rc=$?
    ok $rc "'$c' works as written (exit $rc)"
    [ $rc -eq 0 ] || tail -5 "$SCRATCH/cmd.err" | sed 's/^/#   /'
    case "$c" in
        "bin/vbench run --profile dev")
            db=$(ls "$tour"/results.db/dev-*.sqlite 2>/dev/null | head -1)
            [ -n "$db" ]; ok $? "it wrote results.db/dev-YYYYmmdd-HHMMSS.sqlite"
            like "$(cat "$SCRATCH/cmd.out")" "Recall sweep" "and printed the tables"
            # what the campaign measured and recorded: dev-campaign.sh's checks, on this run
            cp "$SCRATCH/cmd.out" "$SCRATCH/out.txt"; cp "$SCRATCH/cmd.err" "$SCRATCH/err.txt"
            . "$(dirname "$0")/../lib/dev-campaign.sh" ;;
        "bin/vbench show --json")
            python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$SCRATCH/cmd.out"
            ok $? "show --json prints one JSON document" ;;
        "bin/vbench report")
            [ -s "$(ls -d "$tour"/results.db/dev-*-report 2>/dev/null | head -1)/report.html" ]
            ok $? "report.html beside the database" ;;
        "bin/vbench run --check --profile smoke")
            like "$(cat "$SCRATCH/cmd.out" "$SCRATCH/cmd.err")" "estimate:" "the check prints the estimate"
            [ -z "$(ls "$tour"/results.db/smoke-* 2>/dev/null)" ]; ok $? "and creates nothing" ;;
    esac
    ran=$((ran + 1))
done <<<"$cmds"
[ "$ran" -ge 6 ]; ok $? "the tour's commands ran ($ran)"

# Every command the manual's table names answers --help.
for sub in $(grep -o -E '^\| `vbench [a-z]+' "$ROOT/docs/commands.md" | awk '{print $3}' | sort -u); do
    "$VBENCH" "$sub" --help >/dev/null 2>&1
    ok $? "vbench $sub --help"
done
done_testing
