#!/usr/bin/env bash
# Real NCCL through the jmesh plugin on one GPU machine (two ranks, one per GPU), against NCCL's built-in Socket
# transport in the same run. Needs the install layout with a bundled Java runtime (scripts/nccl-runtime.sh), torch and
# torchrun (PYTHON, default /opt/torch/.venv/bin/python). Writes logs and JSON results to OUT (default
# target/nccl-gpu). See docs/nccl.md and docs/benchmarks-gpu.md.
#   usage: scripts/nccl-gpu-bench.sh [--quick]
# Environment: PLUGIN_DIR (the install layout), PYTHON, OUT, SIZES (MiB, default 1,4,16,64,256; set empty beside
# SIZES_KIB for the KiB sizes only), SIZES_KIB (KiB, e.g. 4,8,16,32,64,128,256,512,1024: timed before SIZES, for
# small-message latency), ITERS (10: timed iterations from 1 MiB), LAT_ITERS (200: timed iterations below 1 MiB),
# ROUNDS (1: each of Socket, jmesh and Socket's best once; 2 or more interleave them, labels -r1, -r2, ...),
# JMESH_VARIANTS (e.g. "JMESH_TCP_SPIN_US=20 JMESH_TCP_THREADS=4": one more jmesh run per round for each setting;
# settings joined by commas make one variant, e.g. "JMESH_TCP_EAGER_THRESHOLD=4096,JMESH_TCP_SOCKET0_MAX=4096"),
# JMESH_SOCKETS_SWEEP (e.g. "1 8": extra jmesh runs with that many TCP sockets per connection),
# WARMUP_S (0: untimed seconds of every size's ops before timing, in each run; a JVM's JIT compiles meanwhile).
# Every run's rows give the median and p90 of their per-iteration times; a latency summary (us, median of the rounds,
# jmesh against Socket's best and Socket) ends the output.
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PLUGIN_DIR=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin}
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python}
OUT=${OUT:-$ROOT/target/nccl-gpu}
SIZES_KIB=${SIZES_KIB:-}
SIZES=${SIZES-1,4,16,64,256}
# SIZES set empty still means the default, as it did before SIZES_KIB; beside SIZES_KIB it means no MiB sizes
[ -n "$SIZES" ] || [ -n "$SIZES_KIB" ] || SIZES=1,4,16,64,256
ITERS=${ITERS:-10}
LAT_ITERS=${LAT_ITERS:-200}
[ "${1:-}" = "--quick" ] && { SIZES=1,16; ITERS=3; LAT_ITERS=20; }
# without SIZES_KIB the Python gets the same arguments as before it took KiB sizes
SIZE_ARGS=(--sizes-mib "$SIZES" --iters "$ITERS")
[ -z "$SIZES_KIB" ] || SIZE_ARGS+=(--sizes-kib "$SIZES_KIB" --lat-iters "$LAT_ITERS")
mkdir -p "$OUT"
status=0

# Never let NVLink multicast start: these three stay set in every environment started from here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# Force NCCL onto a network transport between the two GPUs of this host.
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
export JMESH_JAVA_HOME=${JMESH_JAVA_HOME:-$PLUGIN_DIR/jre} JMESH_PROVIDER=${JMESH_PROVIDER:-tcp}

[ -f "$PLUGIN_DIR/libnccl-net-jmesh.so" ] || { echo "no plugin in $PLUGIN_DIR (build it: mvn package -pl nccl-shim -am)"; exit 2; }
[ -x "$JMESH_JAVA_HOME/bin/java" ] || { echo "no Java runtime at $JMESH_JAVA_HOME (scripts/nccl-runtime.sh)"; exit 2; }
{
    echo "host: $(hostname) $(uname -r)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -4
    "$PYTHON" -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
    "$JMESH_JAVA_HOME/bin/java" -version 2>&1 | head -1
    nproc
} 2>&1 | tee "$OUT/machine.txt"

echo "== 1. driver smoke: jmesh over TCP between two processes on this host"
rm -rf "$OUT/driver" && mkdir -p "$OUT/driver"
for r in 0 1; do
    NCCL_DEBUG=INFO timeout 180 "$PLUGIN_DIR/bin/nccl-net-driver" --plugin "$PLUGIN_DIR/libnccl-net-jmesh.so" \
        --rank $r --nranks 2 --dir "$OUT/driver" --min 4K --max 4M --iters 64 --log-level 3 --timeout 120 \
        > "$OUT/driver/rank$r.log" 2>&1 &
done
wait
grep -h 'driver:' "$OUT/driver/rank0.log" | tail -12
grep -q 'PASS' "$OUT/driver/rank0.log" && grep -q 'PASS' "$OUT/driver/rank1.log" || { echo "driver smoke FAILED"; tail -20 "$OUT"/driver/rank*.log; status=1; }
# a ping-pong of striped messages, then each side sends 8 and waits on its receives only: the sends must arrive
# without another call on the sender (they did not before 2026-11-26 with the helper threads on many CPUs)
rm -rf "$OUT/driver-pingpong" && mkdir -p "$OUT/driver-pingpong"
for r in 0 1; do
    timeout 60 "$PLUGIN_DIR/bin/nccl-net-driver" --plugin "$PLUGIN_DIR/libnccl-net-jmesh.so" --rank $r --nranks 2 \
        --dir "$OUT/driver-pingpong" --calls 1000 --min 512K --max 512K --warm-seconds 1 --timeout 30 \
        > "$OUT/driver-pingpong/rank$r.log" 2>&1 &
done
wait
grep -h 'ping-pong' "$OUT/driver-pingpong/rank0.log"
grep -q 'PASS' "$OUT/driver-pingpong/rank0.log" && grep -q 'PASS' "$OUT/driver-pingpong/rank1.log" \
    || { echo "driver ping-pong FAILED"; tail -5 "$OUT"/driver-pingpong/rank*.log; status=1; }

START=$SECONDS
run_torch() { # label, time limit (s), then environment assignments
    local label=$1 limit=$2
    shift 2
    echo "== torch $label: $*"
    # a run that dies before writing its JSON must not leave an earlier job's in OUT for the summary to read
    rm -f "$OUT/$label.json"
    env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout "$limit" "$PYTHON" -m torch.distributed.run \
        --nproc_per_node=2 --master_port=$((29500 + RANDOM % 1000)) "$ROOT/scripts/nccl_torch_bench.py" \
        --label "$label" --out "$OUT" "${SIZE_ARGS[@]}" --warmup-s "${WARMUP_S:-0}" > "$OUT/$label.log" 2>&1
    local rc=$?
    grep -E '^(==|op |all_)' "$OUT/$label.log"
    grep -m3 -E 'NET/Plugin|Using network|Loaded net plugin|jmesh NCCL plugin' "$OUT/$label.log"
    if [ $rc -ne 0 ]; then echo "torch $label FAILED (exit $rc)"; tail -40 "$OUT/$label.log"; status=1; fi
}

ROUNDS=${ROUNDS:-1}
JMESH_ENV=(NCCL_NET_PLUGIN=jmesh NCCL_NET=jmesh LD_LIBRARY_PATH="$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
variant_label() { echo "jmesh-$(echo "$1" | sed 's/JMESH_//g; s/,/+/g; s/[=_]/-/g' | tr 'A-Z' 'a-z')"; }
labels=(socket jmesh socket4) sweep=()  # without -rN: the summary finds every round's run
for v in ${JMESH_VARIANTS:-}; do labels+=("$(variant_label "$v")"); done
for ((round = 1; round <= ROUNDS; round++)); do
    sfx=$([ "$ROUNDS" -gt 1 ] && echo "-r$round")
    echo "== 2. baseline: NCCL's built-in Socket transport, defaults (1 socket, no helper threads)"
    run_torch "socket$sfx" 150 NCCL_NET_PLUGIN=none NCCL_NET=Socket

    echo "== 3. PyTorch over the jmesh plugin (NCCL_NET_PLUGIN=jmesh, found on LD_LIBRARY_PATH)"
    run_torch "jmesh$sfx" 270 "${JMESH_ENV[@]}"
    grep -q 'Loaded net plugin jmesh' "$OUT/jmesh$sfx.log" || { echo "NCCL's log does not show the jmesh plugin loaded"; status=1; }

    if [ "$ROUNDS" -gt 1 ] || [ $((SECONDS - START)) -lt ${SOCKET4_BEFORE_S:-330} ]; then
        echo "== 4. baseline: NCCL Socket with 4 sockets per connection (jmesh's TCP provider uses JMESH_TCP_SOCKETS=4)"
        run_torch "socket4$sfx" 150 NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_NSOCKS_PERTHREAD=4 NCCL_SOCKET_NTHREADS=1
    else
        echo "== 4. skipped (time): NCCL Socket with 4 sockets per connection"
    fi
    for v in ${JMESH_VARIANTS:-}; do
        echo "== 4b. jmesh with $v"
        run_torch "$(variant_label "$v")$sfx" 150 "${JMESH_ENV[@]}" ${v//,/ }
    done
done

# optional: jmesh with other numbers of TCP data sockets per connection, e.g. JMESH_SOCKETS_SWEEP="1 8"
for n in ${JMESH_SOCKETS_SWEEP:-}; do
    echo "== 5. jmesh with JMESH_TCP_SOCKETS=$n"
    sweep+=("jmesh-tcp$n")
    run_torch "jmesh-tcp$n" 150 NCCL_NET_PLUGIN=jmesh NCCL_NET=jmesh JMESH_TCP_SOCKETS="$n" \
        LD_LIBRARY_PATH="$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done

# per op and size, every configuration's per-iteration median / p90 (each the median over the rounds), from the JSON
"$PYTHON" - "$OUT" "$ROUNDS" "${labels[@]}" -- "${sweep[@]}" <<'PY' || echo "latency summary FAILED"
import json, os, statistics, sys
out, rounds, rest = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cut = rest.index("--")
# the runs of every round carry -rN when there are several; the socket sweep runs once, after them, unsuffixed
runs = {l: [f"{l}-r{i}" for i in range(1, rounds + 1)] if rounds > 1 else [l] for l in rest[:cut]}
runs.update({l: [l] for l in rest[cut + 1:]})
bad, lat = [], {}  # lat[label][(op, bytes)]: [(median, p90) of each correct run]
for label, names in runs.items():
    lat[label] = {}
    for name in names:
        try:
            with open(os.path.join(out, name + ".json")) as f:
                result = json.load(f)
        except FileNotFoundError:
            bad.append(f"{name} (no JSON)")
            continue
        except (OSError, ValueError):
            bad.append(f"{name} (unreadable JSON)")
            continue
        # a run with wrong elements timed a broken transport: its times say nothing
        if not result.get("correct"):
            bad.append(f"{name} (wrong results)")
            continue
        for r in result["rows"]:
            if "time_us_median" not in r:  # written before the bench kept per-iteration times
                continue
            lat[label].setdefault((r["op"], r["bytes"]), []).append((r["time_us_median"], r["time_us_p90"]))
ops = ["all_reduce", "all_gather"]
keys = sorted({k for by_key in lat.values() for k in by_key}, key=lambda k: (ops.index(k[0]) if k[0] in ops else 9, k))


def median_of_rounds(label, key, i):
    got = lat.get(label, {}).get(key)
    return statistics.median(t[i] for t in got) if got else None


ratios = [("jmesh", "socket4"), ("jmesh", "socket")] + [(l, "socket4") for l in runs if l.startswith("jmesh-")]
cols = [(l, max(len(l), 13)) for l in runs]
print(f"== latency summary: per-iteration median/p90 us, each the median of {rounds} round(s); ratios of the medians"
      " (below 1: the first is faster)")
print(f"{'op':<11} {'size':>10} " + " ".join(f"{l:>{w}}" for l, w in cols) + "  "
      + " ".join(f"{a}/{b}" for a, b in ratios))
for key in keys:
    size = f"{key[1] >> 20:>7} MiB" if key[1] % (1 << 20) == 0 else f"{key[1] >> 10:>7} KiB"
    cells = []
    for l, w in cols:
        m, p = median_of_rounds(l, key, 0), median_of_rounds(l, key, 1)
        cells.append(f"{'FAIL' if m is None else f'{m:.1f}/{p:.1f}':>{w}}")
    quotients = []
    for a, b in ratios:
        m, base = median_of_rounds(a, key, 0), median_of_rounds(b, key, 0)
        quotients.append(f"{'-' if m is None or not base else f'{m / base:.2f}':>{len(a) + len(b) + 1}}")
    print(f"{key[0]:<11} {size} " + " ".join(cells) + "  " + " ".join(quotients))
if not keys:
    print("no correct run to summarise")
if bad:
    print("missing or failed (FAIL where no round of a configuration is left): " + ", ".join(bad))
PY
echo "results in $OUT ($((SECONDS - START)) s)"
exit $status
