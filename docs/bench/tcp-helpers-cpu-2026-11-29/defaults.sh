#!/bin/bash
# device, CPU only: the helpers' new defaults by the launcher's rank count against the old defaults, interleaved
set -u
DEVOUT=$OUT
mkdir -p /tmp/j /tmp/o && tar -xJf target/gpu-pack.tar.xz -C /tmp/j
P=/tmp/j/nccl-plugin
export JMESH_PROVIDER=tcp JMESH_ADDRESSES=127.0.0.1/8
coll() { local name=$1 n=$2; shift 2; local D=$(mktemp -d)
  for r in $(seq 0 $((n-1))); do env "$@" NCCL_DEBUG=INFO timeout 100 $P/bin/nccl-net-driver \
    --plugin $P/libnccl-net-jmesh.so --rank $r --nranks $n --dir $D --coll --max 1M --window 4 --calls 300 \
    --warmup 300 --min 4K --timeout 90 > /tmp/o/$name-$r.log 2>&1 & done; wait
  echo "== $name"; grep -h "rank 0: coll timed \|FAIL" /tmp/o/$name-*.log | head -8
  grep -ho "[0-9]* helper threads ([^)]*)" /tmp/o/$name-0.log | head -1; }
for round in 1 2; do
  coll r$round-c4-old 4 JMESH_TCP_THREADS=8 JMESH_TCP_SPIN_US=1000
  coll r$round-c4-new 4 LOCAL_WORLD_SIZE=4
  coll r$round-c2-old 2 JMESH_TCP_THREADS=8 JMESH_TCP_SPIN_US=1000
  coll r$round-c2-new 2 LOCAL_WORLD_SIZE=2
done
tar -czf "$DEVOUT/cpu3.tgz" -C /tmp/o .
