#!/usr/bin/env bash
# ad-hoc: perf profiles of both guests of 'pair' (perf record -a, cpu-clock, 15 s) during a 64 KiB --oneway driver run
# of the plugin (JMESH_PLUGIN) and then of the C plugin (JMESH_REF_PLUGIN), recorded once the driver's settle rounds
# are over (its log says the JIT was quiet), the JVM writing its perf map at exit.
#   testbed/run --out DIR -t 1800 -e JMESH_PLUGIN -e JMESH_REF_PLUGIN pair -- bash prof-guest.sh
set -uo pipefail
P=${JMESH_PLUGIN:?}; REF=${JMESH_REF_PLUGIN:?}
out=$TESTBED_OUT/prof; mkdir -p "$out"; step=0
rank=1; [[ $TESTBED_NAME == a ]] && rank=0
C=/sys/class/infiniband/rxe0/ports/1/hw_counters
BW=(--oneway --window 8 --group 1 --warmup 4096 --min 65536 --max 65536 --iters 4096 --settle 60)
run() { local name=$1 lib=$2; shift 2; local dir=$TESTBED_SHARED/driver-$step; step=$((step + 1)); mkdir -p "$dir"
  local log=$out/$name-rank$rank.log
  env -u JAVA_HOME JMESH_PROVIDER=rdma JMESH_HANDSHAKE_TIMEOUT_MS=60000 \
      JMESH_JVM_OPTS="-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit" timeout 900 "$P/bin/nccl-net-driver" \
      --plugin "$lib" --rank $rank --nranks 2 --dir "$dir" --timeout 600 "$@" > "$log" 2>&1 &
  local pid=$!
  while kill -0 $pid 2>/dev/null && ! grep -q "JIT was quiet\|bandwidth:" "$log"; do sleep 1; done
  sleep 3
  echo "$(date +%s) $(cat $C/sent_pkts) $(cat $C/rcvd_pkts) $(head -1 /proc/stat)" > "$out/$name-window-$TESTBED_NAME.txt"
  perf record -e cpu-clock -F 999 -a -g -o "/tmp/$name.data" -- sleep 15 > "$out/$name-record-$TESTBED_NAME.log" 2>&1
  echo "$(date +%s) $(cat $C/sent_pkts) $(cat $C/rcvd_pkts) $(head -1 /proc/stat)" >> "$out/$name-window-$TESTBED_NAME.txt"
  wait $pid || echo "prof[$TESTBED_NAME]: FAILED: $name"
}
testbed-barrier jmesh 900; run jmesh "$P/libnccl-net-jmesh.so" "${BW[@]}"
testbed-barrier ref 900; run ref "$REF" --plain "${BW[@]}"
for t in jmesh ref; do
  perf report -i "/tmp/$t.data" --no-children --sort comm,dso --stdio -g none 2>/dev/null | grep -v '^#' \
      | grep -v '^$' > "$out/$t-dso-$TESTBED_NAME.txt"
  perf report -i "/tmp/$t.data" --no-children --sort comm,dso,sym --stdio -g none 2>/dev/null | grep -v '^#' \
      | grep -v '^$' | head -200 > "$out/$t-sym-$TESTBED_NAME.txt"
done
testbed-barrier done 900
