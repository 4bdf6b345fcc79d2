# Sourced (not run) by the GPU scripts that place NCCL ranks on loopback meshes (scripts/nccl-ring-bench.sh,
# scripts/tp-inference-bench.sh): where each rank sits for each placement, and a `jmesh relay` process for placements
# whose ranks share no link. Needs ROOT and PLUGIN_DIR (the plugin's install layout) set by the caller.
#
# Linux answers every address of 127/8 on lo, so each 127.0.x.0/24 below is one "cable" between the processes that
# hold an address in it, and jmesh (TCP provider) only connects two of them directly when they share one; others go
# through a node that holds both subnets. The ring is `jmesh demo --ring`'s (RingDemo): A-B on .111, B-C on .112,
# C-D on .113, D-A on .114.
JMESH_RING_NODES=(127.0.111.1/24,127.0.114.1/24 127.0.111.2/24,127.0.112.2/24 127.0.112.3/24,127.0.113.3/24
    127.0.113.4/24,127.0.114.4/24)

# jmesh_placement NAME NRANKS: sets PLACEMENT_ADDRESSES (each rank's JMESH_ADDRESSES, ';' between ranks, in local
# rank order) and PLACEMENT_RELAY (the addresses of the `jmesh relay` process the placement needs, or empty).
#   relay      2 ranks on a line, rank 0 - relay process - rank 1: every connection goes through the relay process
#   ring       4 ranks on the ring in ring order A,B,C,D: NCCL's ring (rank order) uses only cables
#   ring-diag  4 ranks placed A,C,B,D: half of NCCL's ring edges (0->1, 2->3) are diagonals, relayed by a third rank
#   direct     N ranks on one subnet (127.0.120.R/24): no relays, the baseline for the others
jmesh_placement() {
    local name=$1 n=$2 r
    PLACEMENT_ADDRESSES= PLACEMENT_RELAY=
    case $name in
        relay)
            [ "$n" -eq 2 ] || { echo "placement relay takes 2 ranks, not $n" >&2; return 1; }
            PLACEMENT_ADDRESSES="127.0.111.1/24;127.0.112.3/24" PLACEMENT_RELAY="127.0.111.2/24,127.0.112.2/24" ;;
        ring | ring-diag)
            [ "$n" -eq 4 ] || { echo "placement $name takes 4 ranks, not $n" >&2; return 1; }
            local order=(0 1 2 3)
            [ "$name" = ring-diag ] && order=(0 2 1 3)
            for r in "${order[@]}"; do PLACEMENT_ADDRESSES+="${PLACEMENT_ADDRESSES:+;}${JMESH_RING_NODES[$r]}"; done ;;
        direct)
            [ "$n" -ge 2 ] && [ "$n" -le 250 ] \
                || { echo "placement direct takes 2 to 250 ranks, not $n" >&2; return 1; }
            for ((r = 0; r < n; r++)); do
                PLACEMENT_ADDRESSES+="${PLACEMENT_ADDRESSES:+;}127.0.120.$((r + 1))/24"
            done ;;
        *) echo "unknown placement '$name' (relay, ring, ring-diag or direct)" >&2; return 1 ;;
    esac
}

# The class path of `jmesh relay`: JMESH_CLI_CP when set; else the benchmarks jar (the jmesh command,
# io.jmesh.cli.Jmesh: the plugin layout does not hold it) from JMESH_CLI_JAR or this checkout's build, followed by
# the layout's own jars (transport, verbs bindings, Log4j), which are those the jar was built against when both come
# from one build. The layout's jmesh-nccl-plugin.jar is left out: a relay runs no NCCL.
jmesh_relay_classpath() {
    if [ -n "${JMESH_CLI_CP:-}" ]; then
        echo "$JMESH_CLI_CP"
        return 0
    fi
    local jar=${JMESH_CLI_JAR:-$ROOT/benchmarks/target/jmesh-benchmarks.jar} cp j
    if [ ! -f "$jar" ]; then
        echo "no jmesh command jar at $jar: build it with the layout ('mvn -q package -pl benchmarks,nccl-shim -am" \
            "-DskipTests') and carry benchmarks/target/jmesh-benchmarks.jar, or set JMESH_CLI_JAR or JMESH_CLI_CP" >&2
        return 1
    fi
    cp=$jar
    for j in "$PLUGIN_DIR"/lib/*.jar; do
        [ "${j##*/}" = jmesh-nccl-plugin.jar ] || cp+=":$j"
    done
    echo "$cp"
}

JMESH_RELAY_PID=

# jmesh_relay_start ADDRESSES LOG: starts `jmesh relay` on ADDRESSES with the TCP provider (JMESH_PROVIDER), in the
# plugin layout's Java runtime (JMESH_RELAY_JAVA, else $JMESH_JAVA_HOME/bin/java, else the layout's jre/), its
# output to LOG, and returns once it relays (it then answers route discovery, so ranks started after it find it).
jmesh_relay_start() {
    local addresses=$1 log=$2 cp i
    local java=${JMESH_RELAY_JAVA:-${JMESH_JAVA_HOME:-$PLUGIN_DIR/jre}/bin/java}
    jmesh_relay_stop
    cp=$(jmesh_relay_classpath) || return 1
    [ -x "$java" ] || { echo "no Java runtime at $java for jmesh relay (scripts/nccl-runtime.sh)" >&2; return 1; }
    # the options of ./jmesh: jmesh's methods compile after a tenth of the JIT's usual calls (a relay's data path
    # runs once per chunk); INFO adds its links and threads to the line that says it relays; sun.nio.ch: it splices
    JMESH_LOG_LEVEL=${JMESH_RELAY_LOG_LEVEL:-info} "$java" --enable-native-access=ALL-UNNAMED \
        --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
        -XX:CompileCommand=quiet "-XX:CompileCommand=CompileThresholdScaling,io.jmesh.*::*,0.1" \
        ${JMESH_RELAY_JAVA_OPTS:-} -cp "$cp" io.jmesh.cli.Jmesh relay --addresses "$addresses" \
        --provider "${JMESH_PROVIDER:-tcp}" > "$log" 2>&1 &
    JMESH_RELAY_PID=$!
    for ((i = 0; i < 300; i++)); do
        grep -q '^jmesh relay: relaying' "$log" 2>/dev/null && return 0
        if ! kill -0 "$JMESH_RELAY_PID" 2>/dev/null; then
            wait "$JMESH_RELAY_PID"
            echo "jmesh relay on $addresses exited (status $?) before it relayed:" >&2
            tail -20 "$log" >&2
            JMESH_RELAY_PID=
            return 1
        fi
        sleep 0.1
    done
    echo "jmesh relay on $addresses did not start within 30 s:" >&2
    tail -20 "$log" >&2
    jmesh_relay_stop
    return 1
}

# jmesh_relay_alive: whether the relay started last still runs (one that died mid-job failed that job)
jmesh_relay_alive() {
    [ -n "$JMESH_RELAY_PID" ] && kill -0 "$JMESH_RELAY_PID" 2>/dev/null
}

# jmesh_relay_stop: ends the relay started last (SIGTERM, SIGKILL after 5 s); nothing when none runs
jmesh_relay_stop() {
    local pid=$JMESH_RELAY_PID i
    [ -n "$pid" ] || return 0
    JMESH_RELAY_PID=
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < 50; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    return 0
}

# jmesh_relay_trap: a relay must not outlive the script, whether it ends, fails or is stopped (timeout sends TERM);
# INT and TERM exit through the EXIT trap so the relay goes the same way. A job the script waits on in the
# background (its pid in JMESH_JOB_PID) is stopped too: bash runs a trap only once the foreground command is done,
# so a script that must stop promptly runs its jobs in the background and waits for them.
JMESH_JOB_PID=
jmesh_relay_trap() {
    trap '[ -z "$JMESH_JOB_PID" ] || kill -TERM "$JMESH_JOB_PID" 2>/dev/null; jmesh_relay_stop' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}
