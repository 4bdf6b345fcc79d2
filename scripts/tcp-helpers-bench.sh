#!/usr/bin/env bash
# The TCP provider's helper threads when several ranks share a host, CPU only: nccl-net-driver's CollNet all-reduce
# (--coll, 4 and 2 ranks on loopback) under helper settings, two interleaved rounds, median us per size on rank 0.
# docs/benchmarks-decode.md ("Helper threads when several ranks share a host") has the figures.
#   usage: scripts/tcp-helpers-bench.sh crowding|candidates|defaults   (PLUGIN_DIR: the layout with its runtime)
#   crowding    4 ranks: the defaults of before, 2 helpers, no polling, every message on socket 0; then 2-rank
#               ping-pongs of 64 and 256 KiB, helpers against socket 0
#   candidates  4 ranks: helpers x polling 8x1000, 4x200, 2x200, 4x1000; 2 ranks: 8x1000, 8x200
#   defaults    the helpers sized by the launcher's rank count (LOCAL_WORLD_SIZE) against 8x1000, 4 and 2 ranks
# Logs go to OUT (target/tcp-helpers).
set -u
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
P=${PLUGIN_DIR:-$ROOT/nccl-shim/target/nccl-plugin}
OUT=${OUT:-$ROOT/target/tcp-helpers}
mkdir -p "$OUT"
export JMESH_PROVIDER=tcp JMESH_ADDRESSES=127.0.0.1/8
coll() { # NAME RANKS [VAR=VALUE...]
    local name=$1 n=$2 d r
    shift 2
    d=$(mktemp -d)
    for ((r = 0; r < n; r++)); do
        env "$@" timeout 100 "$P/bin/nccl-net-driver" --plugin "$P/libnccl-net-jmesh.so" --rank $r --nranks "$n" \
            --dir "$d" --coll --max 1M --window 4 --calls 300 --warmup 300 --min 4K --timeout 90 \
            > "$OUT/$name-$r.log" 2>&1 &
    done
    wait
    echo "== $name"
    grep -h "rank 0: coll timed \|FAIL" "$OUT/$name"-*.log | head -8
}
ping() { # NAME BYTES [VAR=VALUE...]: a 2-rank ping-pong (half a round trip is one message's time)
    local name=$1 size=$2 d r
    shift 2
    d=$(mktemp -d)
    for r in 0 1; do
        env "$@" timeout 60 "$P/bin/nccl-net-driver" --plugin "$P/libnccl-net-jmesh.so" --rank $r --nranks 2 \
            --dir "$d" --calls 3000 --min "$size" --max "$size" --timeout 50 > "$OUT/$name-$r.log" 2>&1 &
    done
    wait
    echo "== $name"
    grep -h "rank 0: ping-pong\|FAIL" "$OUT/$name"-*.log | head -3
}
OLD=(JMESH_TCP_THREADS=8 JMESH_TCP_SPIN_US=1000)
for round in 1 2; do
    case ${1:-} in
        crowding)
            coll r$round-c4-default 4 "${OLD[@]}"
            coll r$round-c4-threads2 4 JMESH_TCP_THREADS=2 JMESH_TCP_SPIN_US=1000
            coll r$round-c4-spin0 4 JMESH_TCP_THREADS=8 JMESH_TCP_SPIN_US=0
            coll r$round-c4-inline 4 "${OLD[@]}" JMESH_TCP_SOCKET0_MAX=1048576
            for size in 65536 262144; do
                ping r$round-p$size-default $size "${OLD[@]}"
                ping r$round-p$size-inline $size "${OLD[@]}" JMESH_TCP_SOCKET0_MAX=1048576
            done ;;
        candidates)
            for t in 8:1000 4:200 2:200 4:1000; do
                coll "r$round-c4-t${t%:*}s${t#*:}" 4 JMESH_TCP_THREADS=${t%:*} JMESH_TCP_SPIN_US=${t#*:}
            done
            for t in 8:1000 8:200; do
                coll "r$round-c2-t${t%:*}s${t#*:}" 2 JMESH_TCP_THREADS=${t%:*} JMESH_TCP_SPIN_US=${t#*:}
            done ;;
        defaults)
            coll r$round-c4-old 4 "${OLD[@]}"
            coll r$round-c4-new 4 LOCAL_WORLD_SIZE=4
            coll r$round-c2-old 2 "${OLD[@]}"
            coll r$round-c2-new 2 LOCAL_WORLD_SIZE=2 ;;
        *) sed -n '2,8p' "$0"; exit 2 ;;
    esac
done
