#!/usr/bin/env bash
# Tensor-parallel inference through NCCL on one machine with two GPUs: a ~330 M parameter Llama-style model (made
# here from a fixed seed: nothing can be downloaded on the GPU machines) generates 64 tokens greedily, three ways in
# one run: on one GPU (the reference), tensor-parallel over two ranks through the jmesh plugin, and through NCCL's
# Socket transport. Each tensor-parallel run must give the reference's tokens and logits (scripts/tp_inference.py).
# Needs the install layout with its bundled runtime (scripts/nccl-runtime.sh) and torch with transformers (PYTHON,
# default /opt/torch/.venv/bin/python). Writes logs and JSON results to OUT (default target/tp-inference).
#   usage: scripts/tp-inference-bench.sh
# PLACEMENT (unset: the above, over the machine's own interface) puts the jmesh run's ranks on a loopback mesh of
# scripts/relay-lib.sh instead, one jmesh run per placement in the list: relay (2 ranks, every connection through a
# `jmesh relay` process, which needs the jmesh command's jar: see there), ring or ring-diag (4 ranks on a switchless
# ring; ring-diag puts half of NCCL's ring edges on diagonals that a third rank relays), direct (NRANKS ranks, default
# as the others or 2, on one subnet). Every rank is then a node of its own (NCCL_HOSTID), in the Socket run too,
# which has as many ranks. The placements of one run must agree on the number of ranks.
# SOCKETS: NCCL's Socket runs, "socket socket-best" by default (its defaults; 4 sockets and 1 thread per connection).
# JMESH_VARIANTS (e.g. "JMESH_TCP_EAGER_THRESHOLD=0"): one more jmesh run per round for each setting, labelled
# jmesh-<setting> (without PLACEMENT only); settings joined by commas make one variant.
# ROUNDS (1): runs of every configuration in turn, interleaved so that rounds see the same machine; with more than
# one, the runs are labelled -r1, -r2, ... and a summary table ends the output.
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PLUGIN_DIR=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin}
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python}
OUT=${OUT:-$ROOT/target/tp-inference}
MODEL=${MODEL:-/tmp/jmesh-tp-model}
PLACEMENT=${PLACEMENT:-}
ROUNDS=${ROUNDS:-1}
SOCKETS=${SOCKETS-socket socket-best}
mkdir -p "$OUT"
status=0
NPROC=2
if [ -n "$PLACEMENT" ]; then
    . "$ROOT/scripts/relay-lib.sh"
    jmesh_relay_trap
    NPROC=${NRANKS:-}
    for p in $PLACEMENT; do
        case $p in
            relay) n=2 ;;
            ring | ring-diag) n=4 ;;
            direct) continue ;;
            *) echo "unknown placement '$p' (relay, ring, ring-diag or direct)"; exit 2 ;;
        esac
        [ -z "$NPROC" ] || [ "$NPROC" -eq $n ] \
            || { echo "PLACEMENT='$PLACEMENT' mixes 2 and 4 ranks: run them apart"; exit 2; }
        NPROC=$n
    done
    NPROC=${NPROC:-2}
    # each rank a node of its own, in every run of this job; the loopback meshes exist only for the TCP provider
    export JMESH_BENCH_HOSTID=jmesh-tp JMESH_PROVIDER=tcp
fi

# Never let NVLink multicast start: these three stay set in every environment started from here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export JMESH_JAVA_HOME=${JMESH_JAVA_HOME:-$PLUGIN_DIR/jre} JMESH_PROVIDER=${JMESH_PROVIDER:-tcp}
[ -f "$PLUGIN_DIR/libnccl-net-jmesh.so" ] || { echo "no plugin in $PLUGIN_DIR (build it: mvn package -pl nccl-shim -am)"; exit 2; }
[ -x "$JMESH_JAVA_HOME/bin/java" ] || { echo "no Java runtime at $JMESH_JAVA_HOME (scripts/nccl-runtime.sh)"; exit 2; }
[ -f "$MODEL/model.safetensors" ] || "$PYTHON" "$ROOT/scripts/tp_inference.py" --make --model "$MODEL" || exit 2
if [ "$NPROC" -ne 2 ]; then
    gpus=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null) || gpus=0
    [ "$gpus" -ge "$NPROC" ] \
        || { echo "$NPROC tensor-parallel ranks need $NPROC GPUs, this machine has $gpus"; exit 2; }
fi

echo "== one GPU: the reference"
CUDA_VISIBLE_DEVICES=0 "$PYTHON" "$ROOT/scripts/tp_inference.py" --reference --model "$MODEL" --out "$OUT" \
    --label single > "$OUT/single.log" 2>&1 || { echo "the one-GPU run FAILED"; tail -30 "$OUT/single.log"; exit 1; }
grep -E '^single:' "$OUT/single.log"

tp() { # label, then environment assignments; NCCL must go through a network transport between the GPUs
    local label=$1
    shift
    echo "== $NPROC ranks, tensor-parallel: $label ($*)"
    env "$@" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout 300 \
        "$PYTHON" -m torch.distributed.run --nproc_per_node=$NPROC --master_port=$((29500 + RANDOM % 1000)) \
        "$ROOT/scripts/tp_inference.py" --model "$MODEL" --out "$OUT" --label "$label" > "$OUT/$label.log" 2>&1
    local rc=$?
    grep -E "^$label:" "$OUT/$label.log"
    grep -m2 -E 'Loaded net plugin|Using network|jmesh NCCL plugin' "$OUT/$label.log"
    if [ $rc -ne 0 ]; then echo "$label FAILED (exit $rc)"; tail -40 "$OUT/$label.log"; status=1; fi
}
JMESH_ENV=(NCCL_NET_PLUGIN=jmesh NCCL_NET=jmesh LD_LIBRARY_PATH="$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
labels=()
round() { # suffix: one run of every configuration, jmesh's placements first, then NCCL's Socket transport
    local sfx=$1 p label
    if [ -z "$PLACEMENT" ]; then
        tp "jmesh$sfx" "${JMESH_ENV[@]}"
        grep -q 'Loaded net plugin jmesh' "$OUT/jmesh$sfx.log" \
            || { echo "NCCL's log does not show the jmesh plugin loaded"; status=1; }
        [ "${sfx:--r1}" != -r1 ] || labels+=(jmesh)
        for v in ${JMESH_VARIANTS:-}; do
            label="jmesh-$(echo "$v" | sed 's/JMESH_//g; s/,/+/g; s/[=_]/-/g' | tr 'A-Z' 'a-z')"
            [ "${sfx:--r1}" != -r1 ] || labels+=("$label")
            tp "$label$sfx" "${JMESH_ENV[@]}" ${v//,/ }
        done
    fi
    for p in $PLACEMENT; do
        label="jmesh-$p$sfx"
        [ "${sfx:--r1}" != -r1 ] || labels+=("jmesh-$p")
        jmesh_placement "$p" "$NPROC" || exit 2
        if [ -n "$PLACEMENT_RELAY" ]; then
            jmesh_relay_start "$PLACEMENT_RELAY" "$OUT/$label-relay.log" \
                || { echo "$label FAILED: no relay"; status=1; continue; }
        fi
        tp "$label" "${JMESH_ENV[@]}" JMESH_BENCH_ADDRESSES="$PLACEMENT_ADDRESSES"
        if [ -n "$PLACEMENT_RELAY" ]; then
            jmesh_relay_alive || { echo "$label: the jmesh relay process died during the run"; status=1; }
            jmesh_relay_stop
        fi
        grep -q 'Loaded net plugin jmesh' "$OUT/$label.log" \
            || { echo "NCCL's log does not show the jmesh plugin loaded"; status=1; }
        relayed=$(grep -c 'connected on dev.*through a relay node' "$OUT/$label.log")
        echo "$label: $(grep -c 'connected on dev' "$OUT/$label.log") plugin connects, $relayed through a relay node"
        case $p in
            relay | ring-diag) [ "$relayed" -gt 0 ] || { echo "$label: no connection went through a relay"; status=1; } ;;
        esac
    done
    for p in $SOCKETS; do
        [ "${sfx:--r1}" != -r1 ] || labels+=("$p")
        case $p in
            socket) tp "socket$sfx" NCCL_NET_PLUGIN=none NCCL_NET=Socket ;;
            # the setting that served NCCL's Socket transport best on these machines (docs/benchmarks-gpu.md)
            socket-best) tp "socket-best$sfx" NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_NSOCKS_PERTHREAD=4 \
                NCCL_SOCKET_NTHREADS=1 ;;
            *) echo "unknown Socket configuration '$p' (socket or socket-best)"; exit 2 ;;
        esac
    done
}
if [ "$ROUNDS" -eq 1 ]; then
    round ""
else
    for ((i = 1; i <= ROUNDS; i++)); do
        echo "== round $i of $ROUNDS"
        round "-r$i"
    done
    # one line per configuration: every round's tokens/s and per-token median and p90, from the runs' JSON
    "$PYTHON" - "$OUT" "$ROUNDS" "${labels[@]}" <<'PY'
import json, os, statistics, sys
out, rounds, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print(f"== summary: {rounds} interleaved rounds; tokens/s, then per-token median / p90 ms and the first token's ms, "
      "round by round")
for label in labels:
    runs = []
    for i in range(1, rounds + 1):
        f = os.path.join(out, f"{label}-r{i}.json")
        runs.append(json.load(open(f)) if os.path.exists(f) else None)
    ok = [r for r in runs if r]
    cells = " ".join(f"{r['tokens_per_s']:6.1f}" if r else "  FAIL" for r in runs)
    lat = " ".join(f"{r['token_ms_median']:.2f}/{r['token_ms_p90']:.2f}/{r['first_token_ms']:.0f}" if r else "FAIL"
                   for r in runs)
    med = f"{statistics.median(r['tokens_per_s'] for r in ok):6.1f}" if ok else "     -"
    print(f"{label:18s} tokens/s {cells}  median {med}   ms {lat}")
PY
fi
echo "results in $OUT"
exit $status
