#!/usr/bin/env bash
# Runs a whole campaign (every phase, both embedded engines) with the coordinator and the agent under valgrind
# memcheck: the core paths, end to end. Fails on any memory error or definite leak in either process.
set -u
bin=${1:-bin}
dir=$(mktemp -d /tmp/vbench-valgrind.XXXXXX)
trap 'rm -rf "$dir"' EXIT
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --track-fds=no)
cat >"$dir/agent" <<SH
#!/bin/sh
exec ${vg[*]} --log-file=$dir/agent.%p.log $PWD/$bin/vbench-agent "\$@"
SH
chmod +x "$dir/agent"
VBENCH_AGENT="$dir/agent" VBENCH_CACHE="$dir/cache" "${vg[@]}" --log-file="$dir/coordinator.log" \
    "$bin/vbench" run --profile tests/profiles/tiny.yml --out "$dir/tiny.sqlite" --quiet
rc=$?
ls "$dir"/*.log | grep -q "agent\." || { echo "valgrind campaign: the agent did not run under valgrind"; exit 1; }
problems=$(cat "$dir"/*.log | grep -v '^==[0-9]*== *$' || true)
if [ $rc -ne 0 ] || [ -n "$problems" ]; then
    echo "valgrind campaign: exit $rc"
    cat "$dir"/*.log
    exit 1
fi
items=$(sqlite3 "$dir/tiny.sqlite" "SELECT COUNT(*) FROM plan WHERE status = 'done'")
echo "valgrind campaign: clean (coordinator and agent, $items items done)"
