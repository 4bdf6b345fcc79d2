#!/usr/bin/env bash
# Real NCCL through the jmesh plugin with ranks placed on loopback meshes, so that connections go through relays:
# with 2 ranks a line whose middle is a `jmesh relay` process (configuration relay), with 4 ranks a switchless ring in
# ring order (ring) and placed A,C,B,D (ring-diag: half of NCCL's ring edges are diagonals, relayed by a third rank);
# beside them, in the same run, the same job with all ranks on one subnet (direct: no relays) and through NCCL's
# Socket transport (socket: its defaults; socket-best: 4 sockets, 1 thread). Every rank is a node of its own
# (NCCL_HOSTID), NCCL's P2P and SHM are off. Each configuration runs every collective (scripts/nccl_ring_bench.py),
# each element checked, busbw per size and NCCL's init time; then a soak of mixed collectives on the relayed
# configuration with jmesh's liveness at its default. A summary table ends the run; the exit status is 1 when any
# element was wrong, any operation failed or any rank or relay died. See docs/benchmarks-gpu-relay.md.
#   usage: scripts/nccl-ring-bench.sh [--quick]        (--quick: SIZES=1,16 ITERS=3 SOAK_S=60)
# Environment:
#   PLUGIN_DIR  the install layout with its runtime (scripts/nccl-runtime.sh); default nccl-shim/target/nccl-plugin
#   PYTHON      torch with CUDA (/opt/torch/.venv/bin/python)      OUT  logs and JSON (target/nccl-ring)
#   NRANKS      2 or 4 (default: the GPUs, at most 4; more ranks than GPUs share them, for a logic check only)
#   CONFIGS     default "relay direct socket socket-best" (2 ranks), "ring ring-diag direct socket socket-best" (4);
#               set and empty: the soak alone
#   SIZES       MiB (1,4,16,64,256)     ITERS  timed runs per size (10)
#   SOAK_S      seconds of soak (300; 0: none)     SOAK_CONFIG  relay (2 ranks) or ring-diag (4)
#   BUDGET_S    the whole run's seconds (560): configurations that would not finish before the soak's share of it
#               are skipped and named as such, so that one run fits a 10-minute command
#   OP_TIMEOUT_S  an operation that takes longer fails its job (60)
#   WARMUP_S    untimed seconds of every size's all_reduce and all_gather before timing, in each job (0): the
#               plugin's JVM compiles its hot path meanwhile (docs/benchmarks-gpu.md: cold, 1-4 MiB measure the JIT)
#   JMESH_CLI_JAR / JMESH_CLI_CP  where `jmesh relay` comes from (scripts/relay-lib.sh): by default this checkout's
#               benchmarks/target/jmesh-benchmarks.jar with the layout's jars
# JMESH_* settings in the environment reach the benchmark jobs (e.g. JMESH_LIVENESS_TIMEOUT_MS=0); the soak runs
# without JMESH_LIVENESS_TIMEOUT_MS, at jmesh's default, since surviving liveness over relays is part of its test.
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PLUGIN_DIR=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin}
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python}
OUT=${OUT:-$ROOT/target/nccl-ring}
SIZES=${SIZES:-1,4,16,64,256}
ITERS=${ITERS:-10}
SOAK_S=${SOAK_S:-300}
if [ "${1:-}" = "--quick" ]; then SIZES=1,16 ITERS=3 SOAK_S=60; fi
BUDGET_S=${BUDGET_S:-560}
OP_TIMEOUT_S=${OP_TIMEOUT_S:-60}
WARMUP_S=${WARMUP_S:-0}
. "$ROOT/scripts/relay-lib.sh"
jmesh_relay_trap
mkdir -p "$OUT"
status=0
START=$SECONDS

# Never let NVLink multicast start: these three stay set in every environment started from here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# Force NCCL onto a network transport between the GPUs of this host, each rank a node of its own.
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 JMESH_BENCH_HOSTID=jmesh-ring-bench
# the loopback meshes exist only for the TCP provider
export JMESH_JAVA_HOME=${JMESH_JAVA_HOME:-$PLUGIN_DIR/jre} JMESH_PROVIDER=tcp
# each configuration sets its own; an algorithm choice left over would mislabel "NCCL's default"
unset NCCL_ALGO JMESH_ADDRESSES JMESH_BENCH_ADDRESSES

[ -f "$PLUGIN_DIR/libnccl-net-jmesh.so" ] \
    || { echo "no plugin in $PLUGIN_DIR (build it: mvn package -pl nccl-shim -am)"; exit 2; }
[ -x "$JMESH_JAVA_HOME/bin/java" ] || { echo "no Java runtime at $JMESH_JAVA_HOME (scripts/nccl-runtime.sh)"; exit 2; }
gpus=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null) || gpus=0
[ "$gpus" -ge 1 ] || { echo "no GPU seen by $PYTHON's torch"; exit 2; }
NRANKS=${NRANKS:-$((gpus >= 4 ? 4 : 2))}
case $NRANKS in
    2) CONFIGS=${CONFIGS-relay direct socket socket-best} SOAK_CONFIG=${SOAK_CONFIG:-relay} ;;
    4) CONFIGS=${CONFIGS-ring ring-diag direct socket socket-best} SOAK_CONFIG=${SOAK_CONFIG:-ring-diag} ;;
    *) echo "NRANKS must be 2 or 4, not $NRANKS"; exit 2 ;;
esac
[ "$gpus" -ge "$NRANKS" ] \
    || echo "NOTE: $NRANKS ranks on $gpus GPU(s): ranks share GPUs; a logic check, not a benchmark"
{
    echo "host: $(hostname) $(uname -r), $(nproc) CPUs"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -8
    "$PYTHON" -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(),
        "gpus", torch.cuda.device_count())'
    "$JMESH_JAVA_HOME/bin/java" -version 2>&1 | head -1
    echo "NRANKS=$NRANKS CONFIGS='$CONFIGS' SIZES=$SIZES ITERS=$ITERS SOAK_S=$SOAK_S SOAK_CONFIG=$SOAK_CONFIG" \
        "BUDGET_S=$BUDGET_S WARMUP_S=$WARMUP_S JMESH_LIVENESS_TIMEOUT_MS=${JMESH_LIVENESS_TIMEOUT_MS-unset (default)}"
    echo "relay class path: $(jmesh_relay_classpath 2>&1)"
} 2>&1 | tee "$OUT/machine.txt"

# config_env NAME: sets CFG_ENV (the job's environment assignments) and PLACEMENT_RELAY
config_env() {
    PLACEMENT_RELAY=
    case $1 in
        socket) CFG_ENV=(NCCL_NET_PLUGIN=none NCCL_NET=Socket) ;;
        socket-best) CFG_ENV=(NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_NSOCKS_PERTHREAD=4 NCCL_SOCKET_NTHREADS=1) ;;
        *)
            jmesh_placement "$1" "$NRANKS" || return 1
            CFG_ENV=(NCCL_NET_PLUGIN=jmesh NCCL_NET=jmesh
                LD_LIBRARY_PATH="$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                JMESH_BENCH_ADDRESSES="$PLACEMENT_ADDRESSES") ;;
    esac
}

# run_job LABEL CONFIG LIMIT_S [python options...]: one torchrun job of the configuration, its relay around it
run_job() {
    local label=$1 config=$2 limit=$3 rc relayed connects
    shift 3
    config_env "$config" || { status=1; failed+=("$label"); return 1; }
    echo "== $label: $config, $NRANKS ranks (${CFG_ENV[*]//$PLUGIN_DIR/\$PLUGIN_DIR}) ${JOB_UNSET:+without $JOB_UNSET}"
    rm -f "$OUT/$label.json"
    if [ -n "$PLACEMENT_RELAY" ]; then
        jmesh_relay_start "$PLACEMENT_RELAY" "$OUT/$label-relay.log" \
            || { echo "$label FAILED: no relay"; status=1; failed+=("$label"); return 1; }
        echo "   jmesh relay (pid $JMESH_RELAY_PID) on $PLACEMENT_RELAY, log $label-relay.log"
    fi
    # INIT,NET: where NCCL and the plugin say which transport and route each connection took; ENV: NCCL_ALGO's uptake
    env ${JOB_UNSET:+-u "$JOB_UNSET"} "${CFG_ENV[@]}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV \
        timeout -k 15 "$limit" "$PYTHON" -m torch.distributed.run --nproc_per_node="$NRANKS" \
        --master_port=$((29500 + RANDOM % 1000)) "$ROOT/scripts/nccl_ring_bench.py" --label "$label" --out "$OUT" \
        --op-timeout-s "$OP_TIMEOUT_S" "$@" > "$OUT/$label.log" 2>&1 &
    JMESH_JOB_PID=$!
    wait "$JMESH_JOB_PID"
    rc=$?
    JMESH_JOB_PID=
    if [ -n "$PLACEMENT_RELAY" ]; then
        if ! jmesh_relay_alive; then
            echo "$label FAILED: the jmesh relay process died during the job"
            tail -5 "$OUT/$label-relay.log"
            rc=1
        fi
        jmesh_relay_stop
    fi
    grep -E '^(==|soak:|rank [0-9]+: .*(wrong|Error|error))' "$OUT/$label.log" | head -40
    case $config in
        socket*) grep -m1 -E 'Using network Socket' "$OUT/$label.log" ;;
        *)
            grep -q 'Loaded net plugin jmesh' "$OUT/$label.log" \
                || { echo "$label: NCCL's log does not show the jmesh plugin loaded"; rc=1; }
            connects=$(grep -c 'connected on dev' "$OUT/$label.log")
            relayed=$(grep -c 'connected on dev.*through a relay node' "$OUT/$label.log")
            echo "   plugin connects: $connects, of which through a relay node: $relayed"
            # the placement is the point: relayed configurations must relay, the direct one must not
            case $config in
                relay | ring-diag)
                    [ "$relayed" -gt 0 ] || { echo "$label: no connection went through a relay"; rc=1; } ;;
                direct)
                    [ "$relayed" -eq 0 ] || { echo "$label: connections went through a relay on one subnet"; rc=1; } ;;
            esac ;;
    esac
    grep -o 'NCCL_ALGO set by environment to .*' "$OUT/$label.log" | sort -u | sed 's/^/   /'
    if [ $rc -ne 0 ] || [ ! -f "$OUT/$label.json" ]; then
        echo "$label FAILED (exit $rc$([ $rc -eq 124 ] && echo ': time limit'))"
        # the cause comes first (jmesh's or NCCL's first warnings), its consequences last
        # (less the liveness thread's dropped datagrams, which can repeat by the hundred)
        grep -E 'NCCL WARN' "$OUT/$label.log" | grep -v 'dropped a datagram' | head -4
        grep -E 'Error|error|FAIL|Traceback' "$OUT/$label.log" | grep -v 'NCCL_DEBUG\|NCCL WARN' | tail -8
        status=1
        failed+=("$label")
    fi
}

soak_share=$((SOAK_S > 0 ? SOAK_S + 40 : 0)) # the soak, its start-up and its end
longest=0
labels=() skipped=() failed=()
for cfg in $CONFIGS; do
    left=$((BUDGET_S - (SECONDS - START) - soak_share))
    if [ $left -lt $((longest > 30 ? longest : 30)) ]; then
        echo "== $cfg: SKIPPED: ${left} s left of BUDGET_S before the soak, a configuration took up to ${longest} s"
        skipped+=("$cfg")
        continue
    fi
    t0=$SECONDS
    JOB_UNSET= run_job "$cfg" "$cfg" "$left" --sizes-mib "$SIZES" --iters "$ITERS" --warmup-s "$WARMUP_S"
    labels+=("$cfg")
    longest=$((SECONDS - t0 > longest ? SECONDS - t0 : longest))
    echo "   ($((SECONDS - t0)) s)"
done

soaks=()
if [ "$SOAK_S" -gt 0 ]; then
    t0=$SECONDS
    # the soak is last: from here on the relay process too runs at jmesh's default liveness
    unset JMESH_LIVENESS_TIMEOUT_MS
    JOB_UNSET=JMESH_LIVENESS_TIMEOUT_MS run_job "soak-$SOAK_CONFIG" "$SOAK_CONFIG" $((SOAK_S + 60)) --sizes-mib "" \
        --soak-s "$SOAK_S"
    soaks+=("soak-$SOAK_CONFIG")
    echo "   ($((SECONDS - t0)) s)"
fi

echo "== summary ($((SECONDS - START)) s; logs and JSON in $OUT)"
"$PYTHON" "$ROOT/scripts/nccl_ring_bench.py" --summary --out "$OUT" --labels "${labels[*]}" --soak "${soaks[*]}" \
    --failed "${failed[*]}"
[ ${#skipped[@]} -eq 0 ] \
    || echo "not run for lack of time (BUDGET_S=$BUDGET_S): ${skipped[*]}; run them with CONFIGS=... SOAK_S=0"
[ $status -eq 0 ] && echo "nccl-ring-bench: PASS" || echo "nccl-ring-bench: FAILED"
exit $status
