# Three hosts on one machine for the multi-host tests (sourced after lib.sh): network namespaces joined by veth
# links, each process started in its host's network namespace and its own UTS namespace (so it reports the
# host's name), and CURVE keys for all three made with `vbench keys`.
#
#   coord  10.77.1.1 (link to bench) and 10.77.2.1 (link to orch)   the coordinator listens on 10.77.1.1
#   bench  10.77.1.2                                                  the client agent
#   orch   10.77.2.2, routed through coord                            the agent with role orchestrator
#
#   orch2  10.77.3.2, routed through coord                            a second orchestrator (hosts_up_orch2)
#
# hosts_up makes them (root only: without root the test skips); hosts_up_orch2 adds orch2 and lets coord route
# between the hosts (the client and the orchestrators reach each other's servers); on_host HOST CMD... runs CMD there, keeping
# its PID (ip netns exec, unshare and sh all exec), so `on_host bench vbench-agent ... &` gives the agent's
# PID in $!; link_down / link_up cut and restore the bench host's only link (wait_sql / wait_pid, the waits with a
# deadline, are in lib.sh); everything started is stopped and the namespaces removed on exit.
HOSTS_TAG=$$
NS_coord="vbt-c-$HOSTS_TAG"
NS_bench="vbt-b-$HOSTS_TAG"
NS_orch="vbt-o-$HOSTS_TAG"
NS_orch2="vbt-p-$HOSTS_TAG"
BENCH_IF="vb$HOSTS_TAG"
COORD_ADDR=10.77.1.1
PORT=5555
ENDPOINT="tcp://$COORD_ADDR:$PORT"
KEYS="$SCRATCH/keys"
HOST_PIDS=""

hosts_cleanup() {
    local p
    for p in $HOST_PIDS; do kill -9 "$p" 2>/dev/null; done
    for p in $HOST_PIDS; do wait "$p" 2>/dev/null; done
    ip netns del "$NS_coord" 2>/dev/null
    ip netns del "$NS_bench" 2>/dev/null
    ip netns del "$NS_orch" 2>/dev/null
    ip netns del "$NS_orch2" 2>/dev/null
    if [ -n "${VB_KEEP:-}" ]; then echo "# kept $SCRATCH (VB_KEEP)"; else rm -rf "$SCRATCH"; fi
}
trap hosts_cleanup EXIT

hosts_skip_unless_root() {
    command -v ip >/dev/null || skip_all "ip (iproute2) is not installed (bash deploy/install-deps --with-tests)"
    if [ "$(id -u)" -ne 0 ] || ! ip netns add "vbt-probe-$HOSTS_TAG" 2>/dev/null; then
        skip_all "needs root and network namespaces (ip netns)"
    fi
    ip netns del "vbt-probe-$HOSTS_TAG"
}

hosts_up() {
    hosts_skip_unless_root
    ip netns add "$NS_coord" && ip netns add "$NS_bench" && ip netns add "$NS_orch" || return 1
    ip link add "vc1$HOSTS_TAG" netns "$NS_coord" type veth peer name "$BENCH_IF" netns "$NS_bench" || return 1
    ip link add "vc2$HOSTS_TAG" netns "$NS_coord" type veth peer name "vo$HOSTS_TAG" netns "$NS_orch" || return 1
    ip -n "$NS_coord" addr add 10.77.1.1/24 dev "vc1$HOSTS_TAG"
    ip -n "$NS_coord" addr add 10.77.2.1/24 dev "vc2$HOSTS_TAG"
    ip -n "$NS_bench" addr add 10.77.1.2/24 dev "$BENCH_IF"
    ip -n "$NS_orch" addr add 10.77.2.2/24 dev "vo$HOSTS_TAG"
    local ns
    for ns in "$NS_coord" "$NS_bench" "$NS_orch"; do ip -n "$ns" link set lo up; done
    ip -n "$NS_coord" link set "vc1$HOSTS_TAG" up && ip -n "$NS_coord" link set "vc2$HOSTS_TAG" up &&
        ip -n "$NS_bench" link set "$BENCH_IF" up && ip -n "$NS_orch" link set "vo$HOSTS_TAG" up || return 1
    ip -n "$NS_orch" route add default via 10.77.2.1 || return 1
    ip -n "$NS_bench" route get "$COORD_ADDR" >/dev/null && ip -n "$NS_orch" route get "$COORD_ADDR" >/dev/null
}

# A fourth host, orch2 (10.77.3.2, linked to coord's 10.77.3.1), and routes between all of them through coord: the
# client reaches the servers of both orchestrators, and a server on one reaches a server on the other (a replica
# copies its primary). After hosts_up.
hosts_up_orch2() {
    ip netns add "$NS_orch2" || return 1
    ip link add "vc3$HOSTS_TAG" netns "$NS_coord" type veth peer name "vp$HOSTS_TAG" netns "$NS_orch2" || return 1
    ip -n "$NS_coord" addr add 10.77.3.1/24 dev "vc3$HOSTS_TAG"
    ip -n "$NS_orch2" addr add 10.77.3.2/24 dev "vp$HOSTS_TAG"
    ip -n "$NS_orch2" link set lo up && ip -n "$NS_coord" link set "vc3$HOSTS_TAG" up &&
        ip -n "$NS_orch2" link set "vp$HOSTS_TAG" up || return 1
    ip -n "$NS_orch2" route add default via 10.77.3.1 || return 1
    ip -n "$NS_bench" route add default via 10.77.1.1 || return 1
    ip netns exec "$NS_coord" sysctl -qw net.ipv4.ip_forward=1 || return 1
    ip -n "$NS_bench" route get 10.77.3.2 >/dev/null && ip -n "$NS_orch2" route get 10.77.2.2 >/dev/null
}

# on_host_systemd HOST CMD...: CMD on that host as on_host does, under a systemd of its own booted in the host's
# network namespace (deploy/systemd-ns, $SCRATCH shared), so the units an orchestrator starts there have the host's
# addresses. nsenter --net, not ip netns exec: that one mounts a fresh /sys, without the cgroup hierarchies systemd
# needs. The host's name is set once systemd booted (it sets the image's /etc/hostname in its UTS namespace). Exits
# with CMD's status once the namespace is torn down. Background it and take $!.
on_host_systemd() {
    local host=$1; shift
    local ns_var="NS_$host"
    exec nsenter --net="/run/netns/${!ns_var}" unshare --uts bash "$VB_ROOT/deploy/systemd-ns" --share "$SCRATCH" -- \
        sh -c 'hostname "$0-host" && exec "$@"' "$host" "$@"
}

# Keys: the coordinator's pair, one pair per agent name given, and the allow-list directory with their .pub.
hosts_keys() {
    "$VBENCH" keys coordinator --dir "$KEYS/coord" >/dev/null || return 1
    mkdir -p "$KEYS/allow"
    local a
    for a in "$@"; do
        "$VBENCH" keys "$a" --dir "$KEYS/$a" >/dev/null || return 1
        cp "$KEYS/$a/$a.pub" "$KEYS/allow/"
    done
}

# on_host, coordinator and agent exec: call them in the background (CMD &) or in a subshell, never directly.
on_host() { # on_host HOST CMD...: CMD on that host, as that host's name
    local host=$1; shift
    local ns_var="NS_$host"
    exec ip netns exec "${!ns_var}" unshare --uts sh -c 'hostname "$0-host" && exec "$@"' "$host" "$@"
}

# The coordinator on host coord: run|resume, then further options. Background it and take $!.
coordinator() { # coordinator run|resume OPTIONS...
    local cmd=$1; shift
    on_host coord "$VBENCH" "$cmd" --listen "$ENDPOINT" --cert "$KEYS/coord/coordinator.key" \
        --allow "$KEYS/allow" --no-local-agents --quiet "$@"
}

# An agent NAME (key pair NAME) on HOST: agent HOST NAME OPTIONS... Background it and take $!.
agent() {
    local host=$1 name=$2; shift 2
    agent_as "$host" "$name" "$KEYS/$name/$name.key" "$KEYS/coord/coordinator.pub" "$@"
}

# An agent with any id, key and pinned coordinator key (for the refusals): agent_as HOST ID CERT SERVER_KEY
# OPTIONS... Background it and take $!.
agent_as() {
    local host=$1 id=$2 cert=$3 server_key=$4; shift 4
    on_host "$host" "$VB_BIN/vbench-agent" --connect "$ENDPOINT" --id "$id" --cert "$cert" \
        --server-key "$server_key" --workdir "$SCRATCH/$id.d" "$@"
}

# The usual start: the coordinator running PROFILE into DB, the client agent bench and the orchestrator agent
# orch, each in the background with its stderr in $SCRATCH (coord.txt, BENCH_LOG or bench.txt, orch.txt). Sets
# coord, bench, orch and HOST_PIDS.
start_campaign() { # start_campaign PROFILE DB
    coordinator run --profile "$1" --out "$2" 2>"$SCRATCH/coord.txt" &
    coord=$!
    agent bench bench 2>"$SCRATCH/${BENCH_LOG:-bench.txt}" &
    bench=$!
    agent orch orch --roles orchestrator 2>"$SCRATCH/orch.txt" &
    orch=$!
    HOST_PIDS="$coord $bench $orch"
}

link_down() { ip -n "$NS_bench" link set "$BENCH_IF" down; }
link_up() { ip -n "$NS_bench" link set "$BENCH_IF" up; }

# A small campaign with all five phases, about 20 s on 2 cores: a build of 2-3 s, recall sweep points of a
# few hundred ms, windows of WINDOW_S (2) s, a churn of about 3 s (CHURN_FRACTION 0.2 of the rows). $1: extra lines for the limits section.
tiny_profile() { # tiny_profile FILE [LIMIT-LINES]; ENGINE_ENTRY: the engine's line (default
# hnswlib); FILTERED_LINE: the filtered phase's line (empty: none, for an engine without filters)
# The concurrency windows run an open loop at 200 queries/s: the fault tests need the windows' time, not their
# throughput, and a closed loop kept both cores busy for every window (CPU the whole suite paid for, issue 40).
    cat >"$1" <<YML
name: faults
datasets:
  - name: synth-small
    source: synthetic
    rows: 20000
    queries: 2000
    dim: 32
    clusters: 16
    metric: euclidean
    seed: 11
engines:
${ENGINE_ENTRY:-  - {name: hnswlib, m: 16, ef_construction: 64\}}
phases:
  build: {}
  recall_sweep: {ef_search: [10, 20, 40, 80]}
  concurrency: {clients: [1, 2], window_s: ${WINDOW_S:-2}, repeats: ${REPEATS:-2}, warmup_s: 0.2, ef_search: 40, mode: open, target_rate: 200}
${FILTERED_LINE-  filtered: {selectivity: [0.1, 0.01], queries: 100, ef_search: 40\}}
  churn: {fraction: ${CHURN_FRACTION:-0.2}, limit_s: 600, queries: 100, insert_batch: 20}
limits:
  agent_silent_s: ${SILENT_S:-5}
${2:-}
YML
}

# Every result once, every item done: the checks every fault test ends with. $1: the database.
check_complete() {
    local db=$1 ph
    is "$(q "$db" "SELECT status FROM campaign")" "finished" "the campaign finished"
    is "$(q "$db" "SELECT COUNT(*) FROM plan WHERE status <> 'done'")" "0" "every item is done"
    is "$(q "$db" "SELECT COUNT(*) FROM build_result")" "1" "one build result"
    for ph in recall_sweep:sweep_result concurrency:window_result filtered:filtered_result; do
        is "$(q "$db" "SELECT COUNT(*) || ' ' || COUNT(DISTINCT item_key) FROM ${ph#*:}")" \
           "$(q "$db" "SELECT COUNT(*) || ' ' || COUNT(*) FROM plan WHERE phase = '${ph%%:*}'")" \
           "${ph%%:*}: each item's result exactly once"
    done
    is "$(q "$db" "SELECT group_concat(stage || '=' || n, ' ') FROM (SELECT stage, COUNT(*) AS n FROM churn_result WHERE stage IN ('before', 'delete', 'maintain', 'after') GROUP BY stage ORDER BY stage)")" \
       "after=1 before=1 delete=1 maintain=1" "churn: before, delete, maintain and after once each"
    is "$(q "$db" "SELECT (rows_done = rows_planned) || ' ' || completed FROM v_churn")" "1 1" \
       "churn: every planned row reinserted ($(q "$db" "SELECT rows_done FROM v_churn")), none twice"
}
