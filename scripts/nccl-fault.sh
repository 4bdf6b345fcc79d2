#!/usr/bin/env bash
# Faults under real NCCL: one rank (or the relay process between two ranks) frozen (SIGSTOP) or killed in the middle
# of all_reduces, through jmesh (TCP provider, liveness JMESH_LIVENESS_TIMEOUT_MS, 5 s here by default) and through
# NCCL's Socket transport; for each case how long every other rank takes to get an NCCL error and the cause it
# names, how long ncclCommAbort takes, and whether a new communicator in the same processes (the failed node
# replaced) then works and what the old one left behind (scripts/nccl_fault.py says how). Every rank is a node of its
# own (NCCL_HOSTID), NCCL's P2P and SHM are off. Placements as scripts/relay-lib.sh's: 2 ranks on one subnet and
# through a `jmesh relay` process; 4 ranks on one subnet and on the ring placed A,C,B,D (each diagonal relayed by a
# rank). A table ends the run (docs/nccl-faults.md explains it); the exit status is 1 when a case failed.
#   usage: scripts/nccl-fault.sh [CASE...]   (default: all; names as in the table, e.g. j2-direct-kill s4-freeze)
# Environment:
#   PLUGIN_DIR  the install layout with its runtime (scripts/nccl-runtime.sh); default nccl-shim/target/nccl-plugin
#   PYTHON      torch with CUDA (/opt/torch/.venv/bin/python)      OUT  logs and JSON (target/nccl-fault)
#   CAP_S       a survivor with no error this long after the fault gives up and aborts (25)
#   GENS        communicators made one after another after the fault, in the same processes (3)
#   BUDGET_S    the whole run's seconds (570): cases that would not fit are skipped and named
#   JMESH_CLI_JAR / JMESH_CLI_CP  where `jmesh relay` comes from (scripts/relay-lib.sh)
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PLUGIN_DIR=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin}
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python}
OUT=${OUT:-$ROOT/target/nccl-fault}
CAP_S=${CAP_S:-25}
GENS=${GENS:-3}
BUDGET_S=${BUDGET_S:-570}
. "$ROOT/scripts/relay-lib.sh"
mkdir -p "$OUT"
START=$SECONDS

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=${NCCL_DEBUG:-INFO} NCCL_DEBUG_SUBSYS=${NCCL_DEBUG_SUBSYS:-INIT,NET}
# every log line with its time to the millisecond: where an abort spends its time
export NCCL_DEBUG_TIMESTAMP_LEVELS=ALL NCCL_DEBUG_TIMESTAMP_FORMAT='[%T.%3f] '
export JMESH_JAVA_HOME=${JMESH_JAVA_HOME:-$PLUGIN_DIR/jre} JMESH_PROVIDER=tcp
export JMESH_LIVENESS_TIMEOUT_MS=${JMESH_LIVENESS_TIMEOUT_MS:-5000}
unset NCCL_ALGO JMESH_ADDRESSES JMESH_BENCH_ADDRESSES NCCL_HOSTID

[ -f "$PLUGIN_DIR/libnccl-net-jmesh.so" ] \
    || { echo "no plugin in $PLUGIN_DIR (build it: mvn package -pl nccl-shim -am)"; exit 2; }
[ -x "$JMESH_JAVA_HOME/bin/java" ] || { echo "no Java runtime at $JMESH_JAVA_HOME (scripts/nccl-runtime.sh)"; exit 2; }
RELAY_CP=$(jmesh_relay_classpath) || exit 2
gpus=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null) || gpus=0
[ "$gpus" -ge 1 ] || { echo "no GPU seen by $PYTHON's torch"; exit 2; }
{
    echo "host: $(hostname) $(uname -r), $(nproc) CPUs, $gpus GPU(s)$([ "$gpus" -lt 4 ] && echo ': ranks share them')"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -4
    "$PYTHON" -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
    "$JMESH_JAVA_HOME/bin/java" -version 2>&1 | head -1
    echo "JMESH_LIVENESS_TIMEOUT_MS=$JMESH_LIVENESS_TIMEOUT_MS CAP_S=$CAP_S GENS=$GENS BUDGET_S=$BUDGET_S" \
        "NCCL_NET_PLUGIN_REF_COUNT=${NCCL_NET_PLUGIN_REF_COUNT-unset}"
} 2>&1 | tee "$OUT/machine.txt"

# case NAME: sets N, VICTIM, FAULT, ENVS (the transport's settings), PLACEMENT and RELAY
case_env() {
    local name=$1 rest
    PLACEMENT_ADDRESSES= PLACEMENT_RELAY=
    FAULT=${name##*-}
    rest=${name%-*}
    N=${rest:1:1}
    case $rest in
        j2-direct) jmesh_placement direct 2; VICTIM=1 ;;
        j2-relay) jmesh_placement relay 2; VICTIM=relay ;;
        j4-direct) jmesh_placement direct 4; VICTIM=2 ;;
        j4-ring) jmesh_placement ring-diag 4; VICTIM=2 ;;
        s2) VICTIM=1 ;;
        s4) VICTIM=2 ;;
        *) echo "unknown case $name" >&2; return 1 ;;
    esac
    case $FAULT in freeze | kill) ;; *) echo "unknown fault in $name" >&2; return 1 ;; esac
    case $rest in
        j*) ENVS=(NCCL_NET_PLUGIN=jmesh NCCL_NET=jmesh LD_LIBRARY_PATH="$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") ;;
        s*) ENVS=(NCCL_NET_PLUGIN=none NCCL_NET=Socket) ;;
    esac
}

CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(j2-direct-freeze j2-direct-kill s2-freeze s2-kill j2-relay-freeze j2-relay-kill
    j4-direct-freeze j4-direct-kill s4-freeze s4-kill j4-ring-freeze j4-ring-kill)
status=0 longest=40 skipped=()
for c in "${CASES[@]}"; do
    case_env "$c" || { status=1; continue; }
    left=$((BUDGET_S - (SECONDS - START)))
    if [ "$left" -lt "$longest" ]; then
        skipped+=("$c")
        continue
    fi
    t0=$SECONDS
    echo "== $c: $N ranks, victim $VICTIM, $FAULT (${ENVS[*]//$PLUGIN_DIR/\$PLUGIN_DIR})"
    env "${ENVS[@]}" timeout -k 10 "$left" "$PYTHON" "$ROOT/scripts/nccl_fault.py" drive --case "$c" --nranks "$N" \
        --victim "$VICTIM" --fault "$FAULT" --out "$OUT" --cap-s "$CAP_S" --gens "$GENS" --placement "$PLACEMENT_ADDRESSES" \
        --relay "$PLACEMENT_RELAY" --relay-cp "$RELAY_CP" --java "$JMESH_JAVA_HOME/bin/java" \
        > "$OUT/$c.driver.log" 2>&1 || status=1
    tail -3 "$OUT/$c.driver.log"
    case $c in
        j*) grep -q 'Loaded net plugin jmesh' "$OUT/$c"/rank0-gen0.log \
            || { echo "$c: NCCL's log does not show the jmesh plugin loaded"; status=1; } ;;
    esac
    longest=$((SECONDS - t0 > longest ? SECONDS - t0 : longest))
    echo "   ($((SECONDS - t0)) s)"
done
echo "== summary ($((SECONDS - START)) s; logs and JSON in $OUT)"
"$PYTHON" "$ROOT/scripts/nccl_fault.py" summary --out "$OUT" | tee "$OUT/summary.md" || status=1
[ ${#skipped[@]} -eq 0 ] || echo "not run for lack of time (BUDGET_S=$BUDGET_S): ${skipped[*]}"
exit $status
