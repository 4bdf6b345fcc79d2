#!/usr/bin/env bash
# ad-hoc: what the plugin's JIT compiles after the driver's settle rounds called it quiet: a 64 KiB --oneway driver
# run with -XX:+PrintCompilation and deoptimization logging, the process's elapsed seconds noted when the settle ends;
# JMESH_EXTRA_OPTS goes in front (jit-log-early: the CompileThresholdScaling command before it became a default)
#   testbed/run --out DIR -t 1800 -e JMESH_PLUGIN [-e JMESH_EXTRA_OPTS] pair -- bash jit-guest.sh
set -uo pipefail
P=${JMESH_PLUGIN:?}
out=$TESTBED_OUT/jit; mkdir -p "$out"
rank=1; [[ $TESTBED_NAME == a ]] && rank=0
dir=$TESTBED_SHARED/driver-jit; mkdir -p "$dir"
log=$out/jit-rank$rank.log
testbed-barrier start 900
env -u JAVA_HOME JMESH_PROVIDER=rdma JMESH_HANDSHAKE_TIMEOUT_MS=60000 \
    JMESH_JVM_OPTS="${JMESH_EXTRA_OPTS:-} -XX:+PrintCompilation -Xlog:deoptimization=debug:stdout:uptime,tid" timeout 900 \
    "$P/bin/nccl-net-driver" --plugin "$P/libnccl-net-jmesh.so" --rank $rank --nranks 2 --dir "$dir" --timeout 600 \
    --oneway --window 8 --group 1 --warmup 4096 --min 65536 --max 65536 --iters 4096 --settle 60 > "$log" 2>&1 &
pid=$!
while kill -0 $pid 2>/dev/null && ! grep -q "bandwidth:" "$log"; do sleep 1; done
echo "settled at process elapsed $(ps -o etimes= -p $pid) s" > "$out/settled-$TESTBED_NAME.txt"
while kill -0 $pid 2>/dev/null; do
  echo "$(ps -o etimes= -p $pid) $(grep -c . "$log")" >> "$out/settled-$TESTBED_NAME.txt"; sleep 5; done
wait $pid || echo "jit[$TESTBED_NAME]: FAILED"
testbed-barrier done 900
