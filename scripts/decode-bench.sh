#!/usr/bin/env bash
# Decode as inference engines run it: a Llama-style decode step captured in one CUDA graph and replayed token by
# token (scripts/decode_graph.py), tensor parallel over NRANKS ranks of one GPU machine, each rank a node of its own
# (NCCL_HOSTID), in one run and interleaved rounds: the bounds (one GPU; NVLink; the ranks with the all_reduces left
# out), NCCL's Socket transport (its defaults, and 4 sockets with 1 thread), and the jmesh plugin on each PLACEMENT
# (direct: one subnet; ring, ring-diag: 4 ranks on a switchless ring, scripts/relay-lib.sh), with CollNet when
# COLLNET=1. Every tensor-parallel run's tokens must be the one-GPU run's. Needs the install layout with its bundled
# runtime (scripts/nccl-runtime.sh) and torch (PYTHON, default /opt/torch/.venv/bin/python).
#   usage: scripts/decode-bench.sh
# Environment: NRANKS (2; 4 takes the ring placements), CONFIG (small: the 334 M model, 4 KiB all_reduces; wide:
# hidden 4096, 16 KiB), TOKENS (128 timed per run), ROUNDS (2), PLACEMENT ("direct", with 4 ranks "direct ring"),
# COLLNET (0; 1 adds jmesh with NCCL_COLLNET_ENABLE=1 on the first placement), BOUNDS ("single nvlink compute"),
# SOCKETS ("socket socket-best"), OUT (target/decode), RUN_TIMEOUT_S (150 per run).
# The summary ends the output: per configuration, tokens/s of every round and the median, per-token median/p90 us,
# and the time per all_reduce (the step's time above the compute-only run, over its all_reduces).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PLUGIN_DIR=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin}
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python}
OUT=${OUT:-$ROOT/target/decode}
NRANKS=${NRANKS:-2}
CONFIG=${CONFIG:-small}
TOKENS=${TOKENS:-128}
ROUNDS=${ROUNDS:-2}
COLLNET=${COLLNET:-0}
BOUNDS=${BOUNDS-single nvlink compute}
SOCKETS=${SOCKETS-socket socket-best}
RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-150}
if [ "$NRANKS" -eq 4 ]; then PLACEMENT=${PLACEMENT-direct ring}; else PLACEMENT=${PLACEMENT-direct}; fi
. "$ROOT/scripts/relay-lib.sh"
jmesh_relay_trap
mkdir -p "$OUT"
status=0

# Never let NVLink multicast start: these three stay set in every environment started from here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export JMESH_JAVA_HOME=${JMESH_JAVA_HOME:-$PLUGIN_DIR/jre} JMESH_PROVIDER=${JMESH_PROVIDER:-tcp}
unset NCCL_ALGO NCCL_PROTO JMESH_ADDRESSES JMESH_BENCH_ADDRESSES NCCL_COLLNET_ENABLE
[ -f "$PLUGIN_DIR/libnccl-net-jmesh.so" ] || { echo "no plugin in $PLUGIN_DIR (build it: mvn package -pl nccl-shim -am)"; exit 2; }
[ -x "$JMESH_JAVA_HOME/bin/java" ] || { echo "no Java runtime at $JMESH_JAVA_HOME (scripts/nccl-runtime.sh)"; exit 2; }
gpus=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null) || gpus=0
[ "$gpus" -ge 1 ] || { echo "no GPU seen by $PYTHON's torch"; exit 2; }
[ "$gpus" -ge "$NRANKS" ] || echo "$NRANKS ranks share $gpus GPU(s): a logic check (tokens, NCCL's choices), not a timing"

ARGS=(--config "$CONFIG" --tokens "$TOKENS" --out "$OUT")

echo "== one GPU: the reference tokens ($CONFIG)"
CUDA_VISIBLE_DEVICES=0 timeout "$RUN_TIMEOUT_S" "$PYTHON" "$ROOT/scripts/decode_graph.py" --reference "${ARGS[@]}" \
    --label single-ref > "$OUT/single-ref.log" 2>&1 || { echo "the one-GPU run FAILED"; tail -30 "$OUT/single-ref.log"; exit 1; }
grep -E '^single-ref:' "$OUT/single-ref.log"

run() { # label, then decode_graph.py options up to --, then environment assignments
    local label=$1 opts=()
    shift
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    echo "== $label: ${opts[*]} $*"
    if [ "${opts[0]:-}" = --reference ]; then
        env "$@" CUDA_VISIBLE_DEVICES=0 timeout "$RUN_TIMEOUT_S" "$PYTHON" "$ROOT/scripts/decode_graph.py" \
            "${ARGS[@]}" "${opts[@]}" --label "$label" > "$OUT/$label.log" 2>&1
    else
        env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,TUNING timeout "$RUN_TIMEOUT_S" "$PYTHON" \
            -m torch.distributed.run --nproc_per_node="$NRANKS" --master_port=$((29500 + RANDOM % 1000)) \
            "$ROOT/scripts/decode_graph.py" "${ARGS[@]}" "${opts[@]}" --expect "$OUT/single-ref.json" \
            --label "$label" > "$OUT/$label.log" 2>&1
    fi
    local rc=$?
    grep -E "^$label:" "$OUT/$label.log"
    grep -m2 -E 'Loaded net plugin|Loaded collnet plugin|CollNet|jmesh NCCL plugin' "$OUT/$label.log"
    if [ $rc -ne 0 ]; then echo "$label FAILED (exit $rc)"; tail -30 "$OUT/$label.log"; status=1; fi
}
NET_OFF=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 JMESH_BENCH_HOSTID=jmesh-decode)
JMESH_ENV=("${NET_OFF[@]}" NCCL_NET_PLUGIN=jmesh NCCL_NET=jmesh
    LD_LIBRARY_PATH="$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
labels=()
round() { # suffix
    local sfx=$1 p b label first=1
    for b in $BOUNDS; do
        case $b in
            single) run "single$sfx" --reference -- ;;
            nvlink) run "nvlink$sfx" -- NCCL_NET_PLUGIN=none ;;
            compute) run "compute$sfx" --no-allreduce -- "${NET_OFF[@]}" NCCL_NET_PLUGIN=none ;;
            *) echo "unknown bound '$b' (single, nvlink or compute)"; exit 2 ;;
        esac
        [ -n "$sfx" ] && [ "$sfx" != -r1 ] || labels+=("$b")
    done
    for p in $SOCKETS; do
        case $p in
            socket) run "socket$sfx" -- "${NET_OFF[@]}" NCCL_NET_PLUGIN=none NCCL_NET=Socket ;;
            socket-best) run "socket-best$sfx" -- "${NET_OFF[@]}" NCCL_NET_PLUGIN=none NCCL_NET=Socket \
                NCCL_NSOCKS_PERTHREAD=4 NCCL_SOCKET_NTHREADS=1 ;;
            *) echo "unknown Socket configuration '$p' (socket or socket-best)"; exit 2 ;;
        esac
        [ -n "$sfx" ] && [ "$sfx" != -r1 ] || labels+=("$p")
    done
    for p in $PLACEMENT; do
        jmesh_placement "$p" "$NRANKS" || exit 2
        [ -z "$PLACEMENT_RELAY" ] || { echo "placement $p needs a relay process: not in this benchmark"; exit 2; }
        label="jmesh-$p"
        run "$label$sfx" -- "${JMESH_ENV[@]}" JMESH_BENCH_ADDRESSES="$PLACEMENT_ADDRESSES"
        [ -n "$sfx" ] && [ "$sfx" != -r1 ] || labels+=("$label")
        if [ "$COLLNET" = 1 ] && [ $first = 1 ]; then
            # NCCL sizes a CollNet step by its own buffers, up to 512 KiB a channel (docs/nccl.md, CollNet)
            run "$label-collnet$sfx" -- "${JMESH_ENV[@]}" JMESH_BENCH_ADDRESSES="$PLACEMENT_ADDRESSES" \
                NCCL_COLLNET_ENABLE=1 JMESH_COLLNET_MAX_BYTES="${JMESH_COLLNET_MAX_BYTES:-4194304}"
            [ -n "$sfx" ] && [ "$sfx" != -r1 ] || labels+=("$label-collnet")
        fi
        first=0
    done
}
for ((i = 1; i <= ROUNDS; i++)); do
    echo "== round $i of $ROUNDS"
    round "$([ "$ROUNDS" -gt 1 ] && echo "-r$i")"
done

"$PYTHON" - "$OUT" "$ROUNDS" "${labels[@]}" <<'PY'
import json, os, statistics, sys
out, rounds, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(label, i):
    f = os.path.join(out, f"{label}-r{i}.json" if rounds > 1 else f"{label}.json")
    return json.load(open(f)) if os.path.exists(f) else None
runs = {l: [load(l, i) for i in range(1, rounds + 1)] for l in labels}
def med(label, key):
    ok = [r[key] for r in runs.get(label, []) if r]
    return statistics.median(ok) if ok else None
compute = med("compute", "token_ms_median")
best = max((med(l, "tokens_per_s") or 0) for l in ("socket", "socket-best"))
print(f"== summary: {rounds} interleaved round(s); tokens/s per round and median; per-token median/p90 us (median of"
      " rounds); us per all_reduce = (token - compute-only) / all_reduces; x Socket best = tokens/s over the better"
      " Socket setting's")
for label in labels:
    rs = runs[label]
    cells = " ".join(f"{r['tokens_per_s']:7.1f}" if r else "   FAIL" for r in rs)
    tps, m, p = med(label, "tokens_per_s"), med(label, "token_ms_median"), med(label, "token_ms_p90")
    n = next((r["allreduces_per_token"] for r in rs if r), 0)
    per = f"{(m - compute) * 1000 / n:7.1f}" if m and compute and n else "      -"
    vs = f"{tps / best:5.2f}" if tps and best else "    -"
    match = all(r.get("tokens_match", True) for r in rs if r and (r["allreduce"] or r["ranks"] == 1))
    print(f"{label:22s} {cells}  median {tps or 0:7.1f}  {(m or 0) * 1000:7.0f}/{(p or 0) * 1000:7.0f} us"
          f"  per all_reduce {per} us  x Socket best {vs}{'' if match else '  TOKENS DIFFER'}")
PY
echo "results in $OUT"
exit $status
