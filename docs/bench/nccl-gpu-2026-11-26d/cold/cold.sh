#!/usr/bin/env bash
# ad-hoc: jmesh cold (no warm-up), with and without earlier JIT compilation
set -uo pipefail
P=$PWD/nccl-shim/target/nccl-plugin; R=/tmp/res/cold; mkdir -p $R
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
export JMESH_JAVA_HOME=$P/jre JMESH_PROVIDER=tcp
run() { label=$1; shift; env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout 120 /opt/torch/.venv/bin/python -m torch.distributed.run --nproc_per_node=2 --master_port=$((29500+RANDOM%1000)) scripts/nccl_torch_bench.py --label $label --out $R --sizes-mib 1,4 --iters 20 > $R/$label.log 2>&1; echo "== $label rc=$?"; grep -E '^all_' $R/$label.log; }
J=(NCCL_NET_PLUGIN=jmesh NCCL_NET=jmesh LD_LIBRARY_PATH=$P)
for r in 1 2; do
  run cold-jmesh-r$r "${J[@]}"
  run cold-jmesh-cts005-r$r "${J[@]}" JMESH_JVM_OPTS=-XX:CompileThresholdScaling=0.05
  run cold-socket4-r$r NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_NSOCKS_PERTHREAD=4 NCCL_SOCKET_NTHREADS=1
done
