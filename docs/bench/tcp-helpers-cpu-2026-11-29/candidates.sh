#!/bin/bash
# device, CPU only: candidate helper defaults for several ranks per host, interleaved
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
S4=(t8s1000:JMESH_TCP_THREADS=8:JMESH_TCP_SPIN_US=1000 t4s200:JMESH_TCP_THREADS=4:JMESH_TCP_SPIN_US=200
    t2s200:JMESH_TCP_THREADS=2:JMESH_TCP_SPIN_US=200 t4s1000:JMESH_TCP_THREADS=4:JMESH_TCP_SPIN_US=1000)
S2=(t8s1000:JMESH_TCP_THREADS=8:JMESH_TCP_SPIN_US=1000 t8s200:JMESH_TCP_THREADS=8:JMESH_TCP_SPIN_US=200)
for round in 1 2; do
  for s in "${S4[@]}"; do IFS=: read -r name a b <<< "$s"; coll "r$round-c4-$name" 4 "$a" "$b"; done
  for s in "${S2[@]}"; do IFS=: read -r name a b <<< "$s"; coll "r$round-c2-$name" 2 "$a" "$b"; done
done
tar -czf "$DEVOUT/cpu2.tgz" -C /tmp/o .
