#!/usr/bin/env bash
# ad-hoc A/B in 'pair': one plugin layout (JMESH_PLUGIN) run two ways, "old" with the environment as given and "new"
# with JMESH_AB_NEW_ENV added (e.g. JMESH_ROUTE_PORT=0), and the C plugin (JMESH_REF_PLUGIN), interleaved, the order
# reversed every other round; rxe's hw_counters and the rxe parent netdev's packet counters read around every run.
#   testbed/run --out DIR -t 2700 -e JMESH_PLUGIN -e JMESH_AB_NEW_ENV -e JMESH_REF_PLUGIN pair -- bash ab-env.sh ROUNDS
set -uo pipefail
rounds=${1:-2}
P=${JMESH_PLUGIN:?}; REF=${JMESH_REF_PLUGIN:?}; read -r -a NEWENV <<< "${JMESH_AB_NEW_ENV:?}"
dev=rxe0; out=$TESTBED_OUT/plugin; mkdir -p "$out"; step=0
rank=1; [[ $TESTBED_NAME == a ]] && rank=0
C=/sys/class/infiniband/$dev/ports/1/hw_counters
nd=$(cat /sys/class/infiniband/$dev/parent 2>/dev/null || ls /sys/class/net | grep -v lo | head -1)
N=/sys/class/net/$nd/statistics
dump() { { for f in $C/*; do echo "$(basename $f) $(cat $f)"; done
  for f in rx_packets tx_packets; do echo "net_$f $(cat $N/$f)"; done
  echo "neigh $(ip -4 neigh show dev $nd 2>/dev/null | wc -l)"; } > "$out/cnt-$1-$TESTBED_NAME.txt"; }
driver() { local name=$1 lib=$2; shift 2; local -a extra=(); [[ $name == *new* ]] && extra=("${NEWENV[@]}")
  local dir=$TESTBED_SHARED/driver-$step; step=$((step + 1)); mkdir -p "$dir"
  env -u JAVA_HOME JMESH_PROVIDER=rdma JMESH_HANDSHAKE_TIMEOUT_MS=60000 "${extra[@]}" timeout 600 "$P/bin/nccl-net-driver" \
      --plugin "$lib" --rank $rank --nranks 2 --dir "$dir" --timeout 300 "$@" > "$out/$name-rank$rank.log" 2>&1 \
      || echo "ab[$TESTBED_NAME]: FAILED: $name"; }
BW=(--oneway --window 8 --group 1 --warmup 4096 --min 65536 --max 1048576 --iters 128 --settle 60)
for ((r = 1; r <= rounds; r++)); do
  order="old new ref"; ((r % 2)) || order="ref new old"
  for w in $order; do
    testbed-barrier "$w$r" 900; dump $w$r-0
    case $w in
      old) driver "r$r-old" "$P/libnccl-net-jmesh.so" "${BW[@]}" ;;
      new) driver "r$r-new" "$P/libnccl-net-jmesh.so" "${BW[@]}" ;;
      ref) driver "r$r-ref" "$REF" --plain "${BW[@]}" ;;
    esac
    dump $w$r-1
  done
  echo "ab[$TESTBED_NAME]: round $r of $rounds done"
done
testbed-barrier done 900
