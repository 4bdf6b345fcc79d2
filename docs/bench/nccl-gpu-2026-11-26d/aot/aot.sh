#!/usr/bin/env bash
# ad-hoc: does a longer AOT training run (more method profiles, JEP 515) shorten jmesh's cold start under NCCL?
set -uo pipefail
tar -xJf target/gpu/layout.tar.xz
P=$PWD/nccl-shim/target/nccl-plugin; R=/tmp/res/aot; mkdir -p $R
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
train() { # name iters min max
  w=$(mktemp -d); t0=$SECONDS
  for r in 0 1; do
    o=""; [ $r = 0 ] && o="-XX:AOTCacheOutput=$P/lib/$1.aot -XX:+UnlockDiagnosticVMOptions -XX:-AOTAdapterCaching"
    JMESH_JAVA_HOME=$P/jre JMESH_PROVIDER=tcp JMESH_ADDRESSES=127.0.0.1/8 JMESH_JVM_OPTS="$o" $P/bin/nccl-net-driver --plugin $P/libnccl-net-jmesh.so --rank $r --nranks 2 --dir $w --min $3 --max $4 --iters $2 --window 8 --group 2 --timeout 300 --destroy-jvm > $R/train-$1-$r.log 2>&1 &
  done; wait; echo "trained $1 in $((SECONDS-t0)) s: $(ls -la $P/lib/$1.aot)"
}
train heavy 4000 4K 1M
export JMESH_JAVA_HOME=$P/jre JMESH_PROVIDER=tcp
run() { label=$1; shift; env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout 120 /opt/torch/.venv/bin/python -m torch.distributed.run --nproc_per_node=2 --master_port=$((29500+RANDOM%1000)) scripts/nccl_torch_bench.py --label $label --out $R --sizes-mib 1,4 --iters 20 > $R/$label.log 2>&1; echo "== $label rc=$?"; grep -E '^all_|AOT|aot' $R/$label.log | head -8; }
J=(NCCL_NET_PLUGIN=jmesh NCCL_NET=jmesh LD_LIBRARY_PATH=$P)
for r in 1 2; do
  run cold-jmesh-r$r "${J[@]}"
  run cold-jmesh-heavy-r$r "${J[@]}" JMESH_JVM_OPTS="-XX:AOTCache=$P/lib/heavy.aot"
  run cold-jmesh-noaot-r$r "${J[@]}" JMESH_JVM_OPTS=-XX:AOTMode=off
  run cold-socket4-r$r NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_NSOCKS_PERTHREAD=4 NCCL_SOCKET_NTHREADS=1
done
tar -cJf $OUT/res.tar.xz -C /tmp res
