#!/usr/bin/env bash
# ad-hoc: where each guest's one vCPU goes during 64 KiB --oneway bandwidth runs, the plugin (JMESH_PLUGIN) against the
# C plugin (JMESH_REF_PLUGIN): every second the guest's /proc/stat cpu line, the driver process's utime/stime and
# rxe's sent/received packet counters; every 10 s the driver's threads (name, utime, stime).
#   testbed/run --out DIR -t 1800 -e JMESH_PLUGIN -e JMESH_REF_PLUGIN pair -- bash cpu-guest.sh ROUNDS
set -uo pipefail
rounds=${1:-2}
P=${JMESH_PLUGIN:?}; REF=${JMESH_REF_PLUGIN:?}
out=$TESTBED_OUT/cpu; mkdir -p "$out"; step=0
rank=1; [[ $TESTBED_NAME == a ]] && rank=0
C=/sys/class/infiniband/rxe0/ports/1/hw_counters
BW=(--oneway --window 8 --group 1 --warmup 4096 --min 65536 --max 65536 --iters 1024 --settle 60)
run() { local name=$1 lib=$2; shift 2; local dir=$TESTBED_SHARED/driver-$step; step=$((step + 1)); mkdir -p "$dir"
  env -u JAVA_HOME JMESH_PROVIDER=rdma JMESH_HANDSHAKE_TIMEOUT_MS=60000 "$P/bin/nccl-net-driver" \
      --plugin "$lib" --rank $rank --nranks 2 --dir "$dir" --timeout 300 "$@" > "$out/$name-rank$rank.log" 2>&1 &
  local pid=$! n=0
  while kill -0 $pid 2>/dev/null; do
    s=$(awk '{ print $14, $15 }' /proc/$pid/stat 2>/dev/null)
    echo "$(date +%s.%N) $(head -1 /proc/stat) driver ${s:-0 0} pkts $(cat $C/sent_pkts) $(cat $C/rcvd_pkts)" \
        >> "$out/$name-samples-$TESTBED_NAME.txt"
    if ((n % 10 == 0)); then
      { echo "t $(date +%s.%N)"; for t in /proc/$pid/task/*; do
        sed -E 's/^[0-9]+ \((.*)\) (.*)$/\1|\2/' $t/stat 2>/dev/null \
          | awk -F'|' '{ split($2, f, " "); print $1 "|" f[12] "|" f[13] }'; done; } \
        >> "$out/$name-threads-$TESTBED_NAME.txt"
    fi
    n=$((n + 1)); sleep 1
  done
  wait $pid || echo "cpu[$TESTBED_NAME]: FAILED: $name"
}
for ((r = 1; r <= rounds; r++)); do
  order="jmesh ref"; ((r % 2)) || order="ref jmesh"
  for w in $order; do
    testbed-barrier "$w$r" 900
    case $w in
      jmesh) run "r$r-jmesh" "$P/libnccl-net-jmesh.so" "${BW[@]}" ;;
      ref) run "r$r-ref" "$REF" --plain "${BW[@]}" ;;
    esac
  done
  echo "cpu[$TESTBED_NAME]: round $r of $rounds done"
done
testbed-barrier done 900
