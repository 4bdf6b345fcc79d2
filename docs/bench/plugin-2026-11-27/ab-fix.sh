#!/usr/bin/env bash
# ad-hoc A/B in 'pair': the plugin of two builds (JMESH_PLUGIN_OLD, JMESH_PLUGIN_NEW) and the C plugin, interleaved,
# the order reversed every other round, with rxe's hw_counters read before and after each run on both guests.
# From the repository root, each layout a copy of nccl-shim/target/nccl-plugin made with cp -a (the AOT cache checks
# the jars' times), the C plugin built by scripts/ref-plugin/build.sh; JMESH_EAGER_THRESHOLD=4096 for the eager runs:
#   testbed/run --out DIR -t 2700 [-e JMESH_EAGER_THRESHOLD] -e JMESH_PLUGIN_OLD -e JMESH_PLUGIN_NEW \
#       -e JMESH_REF_PLUGIN pair -- bash docs/bench/plugin-2026-11-26d/ab-guest.sh ROUNDS
set -uo pipefail
rounds=${1:-2}
OLD=${JMESH_PLUGIN_OLD:?}; NEW=${JMESH_PLUGIN_NEW:?}; REF=${JMESH_REF_PLUGIN:?}
dev=rxe0; out=$TESTBED_OUT/plugin; mkdir -p "$out"; step=0
rank=1; [[ $TESTBED_NAME == a ]] && rank=0
C=/sys/class/infiniband/$dev/ports/1/hw_counters
nd=$(cat /sys/class/infiniband/$dev/parent 2>/dev/null); N=/sys/class/net/$nd/statistics
dump() { { for f in $C/*; do echo "$(basename $f) $(cat $f)"; done
  for f in rx_packets tx_packets; do echo "net_$f $(cat $N/$f)"; done; } > "$out/cnt-$1-$TESTBED_NAME.txt"; }
driver() { local name=$1 layout=$2 lib=$3; shift 3; local dir=$TESTBED_SHARED/driver-$step; step=$((step + 1))
  mkdir -p "$dir"
  env -u JAVA_HOME JMESH_PROVIDER=rdma JMESH_HANDSHAKE_TIMEOUT_MS=60000 timeout 600 "$layout/bin/nccl-net-driver" \
      --plugin "$lib" --rank $rank --nranks 2 --dir "$dir" --timeout 300 "$@" > "$out/$name-rank$rank.log" 2>&1 \
      || echo "ab[$TESTBED_NAME]: FAILED: $name"; }
BW=(--oneway --window 8 --group 1 --warmup 4096 --min 65536 --max 1048576 --iters 128 --settle 60)
for ((r = 1; r <= rounds; r++)); do
  order="old new ref"; ((r % 2)) || order="ref new old"
  for w in $order; do
    testbed-barrier "$w$r" 900; dump $w$r-0
    case $w in
      old) driver "r$r-old" "$OLD" "$OLD/libnccl-net-jmesh.so" "${BW[@]}" ;;
      new) driver "r$r-new" "$NEW" "$NEW/libnccl-net-jmesh.so" "${BW[@]}" ;;
      ref) driver "r$r-ref" "$NEW" "$REF" --plain "${BW[@]}" ;;
    esac
    dump $w$r-1
  done
  echo "ab[$TESTBED_NAME]: round $r of $rounds done"
done
testbed-barrier done 900
