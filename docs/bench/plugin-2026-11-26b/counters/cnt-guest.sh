#!/usr/bin/env bash
# ad-hoc: rxe hw_counters around 64 KiB bandwidth runs: jmesh bw (API), the plugin through the driver, the C plugin
set -uo pipefail
PLUGIN=${JMESH_PLUGIN_DIR:?}
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$JMESH_CP" io.jmesh.cli.Jmesh)
dev=rxe0; v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}; v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
out=$TESTBED_OUT/plugin; mkdir -p "$out"; step=0
rank=1; [[ $TESTBED_NAME == a ]] && rank=0
C=/sys/class/infiniband/$dev/ports/1/hw_counters
dump() { for f in $C/*; do echo "$(basename $f) $(cat $f)"; done > "$out/cnt-$1-$TESTBED_NAME.txt"; }
cli() { local name=$1; shift; local port=$((25000 + step)); step=$((step + 1))
  if [[ $TESTBED_NAME == b ]]; then timeout 400 "${J[@]}" "$@" -p $port --timeout 120 > "$out/$name-server.log" 2>&1
  else timeout 420 "${J[@]}" "$@" -p $port --timeout 120 "$peer" > "$out/$name.log" 2>&1; fi; }
driver() { local name=$1 lib=$2; shift 2; local dir=$TESTBED_SHARED/driver-$step; step=$((step + 1)); mkdir -p "$dir"
  env -u JAVA_HOME JMESH_PROVIDER=rdma JMESH_HANDSHAKE_TIMEOUT_MS=60000 timeout 420 "$PLUGIN/bin/nccl-net-driver" \
      --plugin "$lib" --rank $rank --nranks 2 --dir "$dir" --timeout 300 "$@" > "$out/$name-rank$rank.log" 2>&1; }
BW=(--oneway --window 8 --group 1 --warmup 2048 --min 65536 --max 65536 --iters 512 --settle 120)
for r in 1 2; do
  testbed-barrier "api$r" 600; dump api$r-0
  cli "r$r-jmesh-bw" bw -d $dev -x "$gidx" -s 65536 -n 512 -t 8 --poll yield --settle 120
  dump api$r-1; testbed-barrier "plugin$r" 600; dump plugin$r-0
  driver "r$r-driver-bw" "$PLUGIN/libnccl-net-jmesh.so" "${BW[@]}"
  dump plugin$r-1; testbed-barrier "ref$r" 600; dump ref$r-0
  driver "r$r-ref-bw" "$JMESH_REF_PLUGIN" --plain "${BW[@]}"
  dump ref$r-1
done
testbed-barrier done 600
