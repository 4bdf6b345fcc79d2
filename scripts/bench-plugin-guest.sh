#!/usr/bin/env bash
# Runs inside the testbed guests for scripts/bench plugin (not by hand): b serves/receives, a is the client/sender.
# Per round, on the same link, jmesh through its Java API beside the same traffic through the NCCL plugin's upcalls
# (nccl-net-driver over libnccl-net-jmesh.so, both on verbs): `jmesh bw` against the driver's --oneway bandwidth
# round with the same window, then `jmesh lat` against the driver's --calls ping-pong (and its idle test()). Both
# wait alike: the driver calls sched_yield() after a pass that found nothing, as NCCL's proxy thread does, and the
# CLI runs with --poll yield. The plugin runs twice, with its AOT cache and without (-XX:AOTMode=off: the cache's
# profiles come from a TCP training run). With JMESH_REF_PLUGIN (a C plugin, scripts/ref-plugin/build.sh) the driver
# runs it too, with --plain. The order switches per round. After the rounds, a runs CallBenchmark (test() that finds
# nothing, through the Java API) on rdma. Every measurement waits until the JIT is quiet (--settle, both sides).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-2}
PLUGIN=${JMESH_PLUGIN_DIR:?the plugin layout to run}
BW_SIZES=(65536 262144 1048576)
BW_N=128      # messages per size: ~10 MB/s here, so 1 MiB takes ~15 s
WINDOW=8      # requests in flight, as NCCL's proxy keeps them
LAT_N=2000
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$JMESH_CP" io.jmesh.cli.Jmesh)
dev=rxe0; v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}; v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
out=$TESTBED_OUT/plugin; mkdir -p "$out"; step=0; fail=0
rank=1; [[ $TESTBED_NAME == a ]] && rank=0
cli() { # cli NAME ARGS...: jmesh's server on b, its client on a, on a port of its own
  local name=$1; shift; local port=$((25000 + step)); step=$((step + 1))
  if [[ $TESTBED_NAME == b ]]; then timeout 400 "${J[@]}" "$@" -p $port --timeout 120 > "$out/$name-server.log" 2>&1
  else timeout 420 "${J[@]}" "$@" -p $port --timeout 120 "$peer" > "$out/$name.log" 2>&1; fi \
    || { echo "plugin[$TESTBED_NAME]: FAILED: $name"; fail=1; }
}
driver() { # driver NAME LIBRARY JVM_OPTS ARGS...: rank 0 on a, rank 1 on b, handles in a folder of their own
  local name=$1 lib=$2 jvm=$3; shift 3; local dir=$TESTBED_SHARED/driver-$step; step=$((step + 1)); mkdir -p "$dir"
  env -u JAVA_HOME JMESH_JVM_OPTS="$jvm" JMESH_PROVIDER=rdma JMESH_HANDSHAKE_TIMEOUT_MS=60000 \
      timeout 420 "$PLUGIN/bin/nccl-net-driver" \
      --plugin "$lib" --rank $rank --nranks 2 --dir "$dir" --timeout 300 "$@" \
      > "$out/$name-rank$rank.log" 2>&1 || { echo "plugin[$TESTBED_NAME]: FAILED: $name"; fail=1; }
}
list=$(IFS=,; echo "${BW_SIZES[*]}")
# JMESH_BENCH_WAYS: api, api-each (lat only: `jmesh lat --repost each`, every receive announced on its own as NCCL
# posts them), plugin, plugin-noaot; JMESH_BENCH_PARTS: bw, lat, jmh
ways=${JMESH_BENCH_WAYS:-api plugin plugin-noaot}; [[ -n ${JMESH_REF_PLUGIN:-} ]] && ways="$ways ref"
parts=" ${JMESH_BENCH_PARTS:-bw lat jmh} "
# the driver's warm-up: ~35 s at 64 KiB, as long as `jmesh bw` waits for its JIT to be quiet
# then, as the CLI (--settle), on until neither JVM's JIT compiled for a round, at most SETTLE s
SETTLE=${JMESH_BENCH_SETTLE:-120}
BW=(--oneway --window $WINDOW --group 1 --warmup 4096 --min "${BW_SIZES[0]}" --max "${BW_SIZES[-1]}" --iters $BW_N
    --settle $SETTLE)
LAT=(--calls $LAT_N --min 8 --max 8 --window 32 --warm-seconds 60 --settle $SETTLE)
for ((r = 1; r <= rounds; r++)); do
  order=$ways; ((r % 2)) || order=$(echo $ways | tr ' ' '\n' | tac | tr '\n' ' ')
  [[ $parts == *" bw "* ]] && for how in $order; do
    case $how in
      api) cli "r$r-jmesh-bw" bw -d $dev -x "$gidx" -s "$list" -n $BW_N -t $WINDOW --poll yield --settle $SETTLE ;;
      plugin) driver "r$r-driver-bw" "$PLUGIN/libnccl-net-jmesh.so" "" "${BW[@]}" ;;
      plugin-noaot) driver "r$r-noaot-bw" "$PLUGIN/libnccl-net-jmesh.so" -XX:AOTMode=off "${BW[@]}" ;;
      ref) driver "r$r-ref-bw" "$JMESH_REF_PLUGIN" "" --plain "${BW[@]}" ;;
    esac
  done
  [[ $parts == *" lat "* ]] && for how in $order; do
    case $how in
      api) cli "r$r-jmesh-lat" lat -d $dev -x "$gidx" -s 8 -n $LAT_N --poll yield --settle $SETTLE ;;
      api-each) cli "r$r-jmesh-lat-each" lat -d $dev -x "$gidx" -s 8 -n $LAT_N --poll yield --settle $SETTLE \
        --repost each ;;
      plugin) driver "r$r-driver-lat" "$PLUGIN/libnccl-net-jmesh.so" "" "${LAT[@]}" ;;
      plugin-noaot) driver "r$r-noaot-lat" "$PLUGIN/libnccl-net-jmesh.so" -XX:AOTMode=off "${LAT[@]}" ;;
      ref) driver "r$r-ref-lat" "$JMESH_REF_PLUGIN" "" --plain "${LAT[@]}" ;;
    esac
  done
  echo "plugin[$TESTBED_NAME]: round $r of $rounds done"
done
testbed-barrier plugin-rounds 600 || fail=1
if [[ $TESTBED_NAME == a && $parts == *" jmh "* ]]; then
  timeout 900 "${J[@]}" jmh CallBenchmark -p provider=rdma -f 1 -wi 5 -i 5 -w 5s -r 2s > "$out/jmh-call.log" 2>&1 \
    || { echo "plugin[a]: FAILED: CallBenchmark"; fail=1; }
fi
testbed-barrier plugin-done 1000 || fail=1
exit $fail
