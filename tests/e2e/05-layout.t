#!/usr/bin/env bash
# The folders are the architecture (docs/design.md): each source folder sits on a level, and a file includes
# headers of its own folder or of folders on lower levels only, never of a folder on its level or above it. The
# include graph (folder -> the folders it includes) is printed as the table docs/design.md shows, and checked
# against the levels; each program links its own folders only (the Makefile's link lines, read by make -n).
. "$(dirname "$0")/../lib/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1

# level of each folder; the same number means neither may include the other
levels="util:0 datasets:1 metrics:2 engines:2 config:3 proto:4 store:5 orchestrator:5 report:6 coordinator:7 agent:7 cli:8"
level_of() { local p; for p in $levels; do [ "${p%%:*}" = "$1" ] && { echo "${p#*:}"; return; }; done; echo -1; }

folders=$(for p in $levels; do echo "${p%%:*}"; done)
echo "# folder -> folders it includes"
bad=
for d in $folders; do
    [ -d "$d" ] || { ok 1 "folder $d exists"; continue; }
    deps=$(grep -h '^#include "' "$d"/*.c "$d"/*.h "$d"/*.cc 2>/dev/null | sed 's/^#include "//; s/".*//' |
           awk -F/ 'NF > 1 { print $1 }' | sort -u | grep -v -x "$d" | tr '\n' ' ')
    printf '#   %-13s -> %s\n' "$d" "${deps:-(none)}"
    for dep in $deps; do
        case "$dep" in gen) continue ;; esac   # build/gen: the generated protobuf-c code, included as proto/...
        if [ "$(level_of "$dep")" -lt 0 ]; then bad="$bad $d->$dep(unknown folder)"
        elif [ "$(level_of "$dep")" -ge "$(level_of "$d")" ]; then
            where=$(grep -l "^#include \"$dep/" "$d"/*.[ch] "$d"/*.cc 2>/dev/null | head -3 | tr '\n' ' ')
            bad="$bad $d->$dep ($where)"
        fi
    done
done
is "${bad:-none}" "none" "no file includes a header of a folder on its level or above it"
is "$(grep -rl '#include "\.\./' --include=*.c --include=*.h --include=*.cc $folders 2>/dev/null | wc -l)" "0" \
   "no include climbs with ../"

# Each program's link line names its own folders' objects only.
links=$(make -n -B bin/vbench bin/vbench-agent 2>/dev/null | grep -E -- '-o bin/vbench(-agent)? ')
cli=$(printf '%s\n' "$links" | grep -- '-o bin/vbench ')
agent=$(printf '%s\n' "$links" | grep -- '-o bin/vbench-agent ')
[ -n "$cli" ] && [ -n "$agent" ]; ok $? "make -n shows both link lines"
objs() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n 's|^build/\([a-z]*\)/.*\.o$|\1|p' | sort -u | tr '\n' ' '; }
is "$(objs "$cli")" "cli coordinator report store " "bin/vbench links cli/, coordinator/, report/ and store/ (and the shared library)"
is "$(objs "$agent")" "agent " "bin/vbench-agent links agent/ (and the shared library, orchestrator/ in it)"

# Engine knowledge lives in engines/ (each adapter's ops: its parameters, search-time parameters, estimate
# defaults): no engine name of the registry (`vbench engines`) as a string literal in coordinator/ or config/,
# comments aside (gcc -fpreprocessed strips them). Exceptions, each FILE:NAME with its reason:
#   coordinator/calibrate.c:null YAML's null word written into the calibration profile, not the null engine
#   config/yaml_tree.c:null      YAML's null word, not the null engine
exceptions="coordinator/calibrate.c:null config/yaml_tree.c:null"   # in the order the scan below meets them
names=$("$VBENCH" engines 2>/dev/null | awk 'NR > 1 { print $1 }')
echo "# registered adapters: $(echo $names)"
case " $(echo $names) " in *" pgvector "*" redis "*) ok 0 "vbench engines lists the registry (pgvector, redis among them)" ;;
    *) ok 1 "vbench engines lists the registry (pgvector, redis among them): got '$(echo $names)'" ;; esac
found= used=
for f in coordinator/*.c config/*.c; do
    lits=$(gcc -fpreprocessed -dD -E -P "$f" 2>/dev/null | grep -o '"[a-z0-9_]*"' | tr -d '"' | sort -u)
    for n in $names; do
        printf '%s\n' "$lits" | grep -qx -- "$n" || continue
        case " $exceptions " in *" $f:$n "*) used="$used $f:$n"; continue ;; esac
        found="$found $f:\"$n\""
    done
done
is "${found:-none}" "none" "no engine name as a string literal in coordinator/*.c or config/*.c (engines/ holds what is per engine)"
# each exception is still there (the scan reads the literals; an exception no longer needed is removed)
is "$(echo $used)" "$exceptions" "the scan finds each documented exception, and only those"

# Inside coordinator/: which file calls which, from the objects (nm: the functions each file defines, T, and the
# ones it calls, U), as the table in docs/design.md §8 shows. No circle among them: the services (intake, limits,
# local_agents, plan_state, servers) and peers.c never call back into agents.c or each other in a loop; an agent
# event a service raises is posted (coordinator/agent_queue.h) and fired by campaign.c (tsort finds any loop).
objs_c=$(ls coordinator/*.c | sed 's|^|build/|; s|\.c$|.o|')
# shellcheck disable=SC2086
make --no-print-directory -s $objs_c >/dev/null 2>&1; ok $? "the coordinator's objects are built (make $(echo "$objs_c" | wc -w) objects)"
defs=$(for o in $objs_c; do nm --defined-only -g "$o" 2>/dev/null | awk -v f="$(basename "$o" .o)" '$2 == "T" { print $3, f }'; done)
edges=$(for o in $objs_c; do
    f=$(basename "$o" .o)
    nm -u "$o" 2>/dev/null | awk '{ print $2 }' | while read -r sym; do
        printf '%s\n' "$defs" | awk -v s="$sym" -v f="$f" '$1 == s && $2 != f { print f, $2 }'
    done
done | sort -u)
echo "# coordinator/ file -> the coordinator/ files whose functions it calls"
for o in $objs_c; do
    f=$(basename "$o" .o)
    printf '#   %-15s -> %s\n' "$f" "$(printf '%s\n' "$edges" | awk -v f="$f" '$1 == f { printf "%s ", $2 }')"
done
[ -n "$edges" ]; ok $? "the call graph has edges (nm read the objects)"
loops=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null)
is "${loops:-none}" "none" "no call circle among coordinator/'s files (tsort of the caller -> callee pairs)"
six="agents intake limits local_agents plan_state servers"
pairs=0
for a in $six; do for b in $six; do
    [ "$a" = "$b" ] && continue
    printf '%s\n' "$edges" | grep -qx "$a $b" && pairs=$((pairs + 1))
done; done
echo "# among the six files of the run ($six): $pairs of 30 ordered pairs call"
for svc in intake limits local_agents plan_state servers; do
    printf '%s\n' "$edges" | grep -qx "$svc agents"; [ $? -ne 0 ]; ok $? "$svc.c does not call agents.c (it posts agent events)"
done
done_testing
