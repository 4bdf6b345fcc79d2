#!/usr/bin/env bash
# The NCCL plugin's path against jmesh's Java API (and the reference C plugin), in the testbed ('pair')
#
# The NCCL plugin's path against jmesh's Java API on one Soft-RoCE link, by hand (not part of ./test): runs the
# guest half (--guest, below) on 'pair', then prints per round the bandwidth of `jmesh bw --poll yield` beside
# nccl-net-driver --oneway (same window, MB/s; the plugin with and without its AOT cache), the latency of `jmesh lat
# --poll yield` beside the driver's --calls ping-pong (t_typical and average, us), test() that finds nothing through
# the plugin and CallBenchmark's through the API (ns).
# With --ref CHECKOUT, the reference C plugin (SEND/RECV) is built from that checkout (scripts/ref-plugin/build.sh)
# and measured the same way. Logs: target/bench-runs/STAMP-plugin/{a,b}/out/plugin/.
# JMESH_BENCH_WAYS (default "api plugin plugin-noaot"; api-each adds `jmesh lat --repost each`, every receive
# announced on its own as NCCL posts them) and JMESH_BENCH_PARTS (default "bw lat jmh") narrow a run;
# JMESH_EAGER_THRESHOLD, where set, is passed to every jmesh run.
#   scripts/bench plugin [--ref CHECKOUT] [ROUNDS]      (default 2 rounds)
#
# --guest ROUNDS: the guest half, run in the guests by the host half (not by hand): b serves/receives, a is the
# client/sender. Per round, on the same link, jmesh through its Java API beside the same traffic through the NCCL
# plugin's upcalls (nccl-net-driver over libnccl-net-jmesh.so, both on verbs): `jmesh bw` against the driver's
# --oneway bandwidth round with the same window, then `jmesh lat` against the driver's --calls ping-pong (and its idle
# test()). Both wait alike: the driver calls sched_yield() after a pass that found nothing, as NCCL's proxy thread
# does, and the CLI runs with --poll yield. The plugin runs twice, with its AOT cache and without (-XX:AOTMode=off:
# the cache's profiles come from a TCP training run). With JMESH_REF_PLUGIN (a C plugin, scripts/ref-plugin/build.sh)
# the driver runs it too, with --plain. The order switches per round. After the rounds, a runs CallBenchmark (test()
# that finds nothing, through the Java API) on rdma. Every measurement waits until the JIT is quiet (--settle, both
# sides).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

# the guest half: the host half below has testbed/run start this file with --guest in every guest
guest() {
  rounds=${1:-2}
  PLUGIN=${JMESH_PLUGIN_DIR:?the plugin layout to run}
  BW_SIZES=(65536 262144 1048576)
  BW_N=128      # messages per size: ~10 MB/s here, so 1 MiB takes ~15 s
  WINDOW=8      # requests in flight, as NCCL's proxy keeps them
  LAT_N=2000
  J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$JMESH_CP" io.jmesh.cli.Jmesh)
  jmesh_testbed_link rxe0
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
}

[[ ${1:-} == --guest ]] && { shift; guest "$@"; exit; }
cd "$ROOT"
ref=
if [ "${1:-}" = --ref ]; then ref=${2:?--ref needs a checkout of nccl-mesh-plugin}; shift 2; fi
rounds=${1:-2}
jmesh_find_jdk
jmesh_mvn -o package -pl nccl-shim -am -DskipTests || jmesh_die "the plugin's build failed"
jmesh_bench_snapshot plugin
snap=$ROOT/target/bench-runs/$stamp-plugin-classpath
# -a: the AOT cache checks the jars' times and refuses a copy without them
cp -a "$ROOT/nccl-shim/target/nccl-plugin" "$snap/" || jmesh_die "cannot copy the plugin layout to $snap"
export JMESH_REF_PLUGIN= JMESH_BENCH_WAYS=${JMESH_BENCH_WAYS:-} JMESH_BENCH_PARTS=${JMESH_BENCH_PARTS:-}
if [ -n "$ref" ]; then
    "$ROOT/scripts/ref-plugin/build.sh" "$ref" "$snap/ref" || jmesh_die "the reference plugin's build failed"
    JMESH_REF_PLUGIN=$snap/ref/libnccl-net-mesh.so
fi
rd=$ROOT/target/bench-runs/$stamp-plugin
eager=()     # JMESH_EAGER_THRESHOLD, where set, reaches both ends of every jmesh run (the API and the plugin)
[ -n "${JMESH_EAGER_THRESHOLD:-}" ] && eager=(-e JMESH_EAGER_THRESHOLD)
testbed/run --out "$rd" -t $((rounds * 1500 + 1200)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP "${eager[@]}" \
    -e JMESH_PLUGIN_DIR="$snap/nccl-plugin" -e JMESH_REF_PLUGIN -e JMESH_BENCH_WAYS -e JMESH_BENCH_PARTS pair -- \
    bash "$ROOT/scripts/bench.d/plugin.sh" --guest "$rounds"
rc=$?
a=$rd/a/out/plugin b=$rd/b/out/plugin
col() { [ -f "$2" ] && awk -v s="$1" '$4 == s && NF >= 7 { v = $7 } END { print v }' "$2"; }
printf '%-6s %9s %16s %16s %16s %16s\n' round bytes "jmesh bw MB/s" "driver MB/s" "driver, no AOT" "C plugin MB/s"
for f in "$a"/r*-jmesh-bw.log; do
  [[ -f $f ]] || continue
  r=$(basename "$f" | cut -d- -f1)
  for s in 65536 262144 1048576; do
    bw() { [ -f "$1" ] && awk -v s=$s '$1 == s && NF >= 4 { v = $4 } END { print v }' "$1"; }
    printf '%-6s %9s %16s %16s %16s %16s\n' "$r" "$s" "$(bw "$f")" "$(col $s "$a/$r-driver-bw-rank0.log")" \
      "$(col $s "$a/$r-noaot-bw-rank0.log")" "$(col $s "$a/$r-ref-bw-rank0.log")"
  done
done
drv() { [ -f "$2" ] && sed -n "s/.*$1 \([0-9.]*\) [un]s.*/\1/p" "$2"; }
lat() { [ -f "$2" ] && awk -v c="$1" '$1 == 8 && NF >= 6 { v = $c } END { print v }' "$2"; }
printf '\n%-6s %-10s %12s %12s %16s\n' round "8 bytes" "typical us" "average us" "idle test() ns"
for f in "$a"/r*-jmesh-lat.log "$a"/r*-jmesh-lat-each.log; do
  [[ -f $f ]] || continue
  r=$(basename "$f" | cut -d- -f1)
  printf '%-6s %-10s %12s %12s %16s\n' "$r" "$([[ $f == *each* ]] && echo "lat each" || echo "jmesh lat")" \
    "$(lat 5 "$f")" "$(lat 6 "$f")" ""
  [[ $f == *each* ]] && continue
  for w in driver noaot ref; do
    d=$a/$r-$w-lat-rank0.log
    [ -f "$d" ] && printf '%-6s %-10s %12s %12s %16s\n' "$r" "$w" "$(drv typical "$d")" "$(drv average "$d")" \
      "$(drv 'nothing:' "$d")"
  done
done
echo; grep -E '^CallBenchmark' "$a/jmh-call.log" 2>/dev/null
exit $rc
