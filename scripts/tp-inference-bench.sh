#!/usr/bin/env bash
# Tensor-parallel inference through NCCL on one machine with two GPUs: a ~330 M parameter Llama-style model (made
# here from a fixed seed: nothing can be downloaded on the GPU machines) generates 64 tokens greedily, three ways in
# one run: on one GPU (the reference), tensor-parallel over two ranks through the jmesh plugin, and through NCCL's
# Socket transport. Each tensor-parallel run must give the reference's tokens and logits (scripts/tp_inference.py).
# Needs the install layout with its bundled runtime (scripts/nccl-runtime.sh) and torch with transformers (PYTHON,
# default /opt/torch/.venv/bin/python). Writes logs and JSON results to OUT (default target/tp-inference).
#   usage: scripts/tp-inference-bench.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PLUGIN_DIR=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin}
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python}
OUT=${OUT:-$ROOT/target/tp-inference}
MODEL=${MODEL:-/tmp/jmesh-tp-model}
mkdir -p "$OUT"
status=0

# Never let NVLink multicast start: these three stay set in every environment started from here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export JMESH_JAVA_HOME=${JMESH_JAVA_HOME:-$PLUGIN_DIR/jre} JMESH_PROVIDER=${JMESH_PROVIDER:-tcp}
[ -f "$PLUGIN_DIR/libnccl-net-jmesh.so" ] || { echo "no plugin in $PLUGIN_DIR (build it: mvn package -pl nccl-shim -am)"; exit 2; }
[ -x "$JMESH_JAVA_HOME/bin/java" ] || { echo "no Java runtime at $JMESH_JAVA_HOME (scripts/nccl-runtime.sh)"; exit 2; }
[ -f "$MODEL/model.safetensors" ] || "$PYTHON" "$ROOT/scripts/tp_inference.py" --make --model "$MODEL" || exit 2

echo "== one GPU: the reference"
CUDA_VISIBLE_DEVICES=0 "$PYTHON" "$ROOT/scripts/tp_inference.py" --reference --model "$MODEL" --out "$OUT" \
    --label single > "$OUT/single.log" 2>&1 || { echo "the one-GPU run FAILED"; tail -30 "$OUT/single.log"; exit 1; }
grep -E '^single:' "$OUT/single.log"

tp() { # label, then environment assignments; NCCL must go through a network transport between the two GPUs
    local label=$1
    shift
    echo "== two ranks, tensor-parallel: $label ($*)"
    env "$@" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout 300 \
        "$PYTHON" -m torch.distributed.run --nproc_per_node=2 --master_port=$((29500 + RANDOM % 1000)) \
        "$ROOT/scripts/tp_inference.py" --model "$MODEL" --out "$OUT" --label "$label" > "$OUT/$label.log" 2>&1
    local rc=$?
    grep -E "^$label:" "$OUT/$label.log"
    grep -m2 -E 'Loaded net plugin|Using network|jmesh NCCL plugin' "$OUT/$label.log"
    if [ $rc -ne 0 ]; then echo "$label FAILED (exit $rc)"; tail -40 "$OUT/$label.log"; status=1; fi
}
tp jmesh NCCL_NET_PLUGIN=jmesh NCCL_NET=jmesh LD_LIBRARY_PATH="$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
grep -q 'Loaded net plugin jmesh' "$OUT/jmesh.log" || { echo "NCCL's log does not show the jmesh plugin loaded"; status=1; }
tp socket NCCL_NET_PLUGIN=none NCCL_NET=Socket
echo "results in $OUT"
exit $status
