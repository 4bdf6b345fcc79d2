#!/bin/bash
# device, CPU only: the 4-rank CollNet all-reduce and the 2-rank ping-pong under TCP helper settings, interleaved
set -u
DEVOUT=$OUT
mkdir -p /tmp/j /tmp/o && tar -xJf target/gpu-pack.tar.xz -C /tmp/j
P=/tmp/j/nccl-plugin
export JMESH_PROVIDER=tcp JMESH_ADDRESSES=127.0.0.1/8
coll() { local name=$1 n=$2; shift 2; local D=$(mktemp -d)
  for r in $(seq 0 $((n-1))); do env "$@" timeout 100 $P/bin/nccl-net-driver --plugin $P/libnccl-net-jmesh.so \
    --rank $r --nranks $n --dir $D --coll --max 1M --window 4 --calls 300 --warmup 300 --min 4K --timeout 90 \
    > /tmp/o/$name-$r.log 2>&1 & done; wait
  echo "== $name"; grep -h "rank 0: coll timed \|FAIL" /tmp/o/$name-*.log | head -8; }
ping() { local name=$1 size=$2; shift 2; local D=$(mktemp -d)
  for r in 0 1; do env "$@" timeout 60 $P/bin/nccl-net-driver --plugin $P/libnccl-net-jmesh.so --rank $r --nranks 2 \
    --dir $D --calls 3000 --min $size --max $size --timeout 50 > /tmp/o/$name-$r.log 2>&1 & done; wait
  echo "== $name"; grep -h "rank 0: ping-pong\|FAIL" /tmp/o/$name-*.log | head -3; }
S=(default:X=1 threads2:JMESH_TCP_THREADS=2 spin0:JMESH_TCP_SPIN_US=0 inline:JMESH_TCP_SOCKET0_MAX=1048576)
for round in 1 2; do
  for s in "${S[@]}"; do coll "r$round-c4-${s%%:*}" 4 "${s#*:}"; done
  for size in 65536 262144; do for s in default:X=1 inline:JMESH_TCP_SOCKET0_MAX=1048576; do
    ping "r$round-p$size-${s%%:*}" $size "${s#*:}"; done; done
done
tar -czf "$DEVOUT/cpu.tgz" -C /tmp/o .
