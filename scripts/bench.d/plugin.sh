#!/usr/bin/env bash
# The NCCL plugin's path against jmesh's Java API (and the reference C plugin), in the testbed ('pair')
#
# The NCCL plugin's path against jmesh's Java API on one Soft-RoCE link, by hand (not part of ./test): runs the
# guest half (--guest, below) on 'pair', then prints per round the bandwidth of `jmesh bw --poll yield` beside
# nccl-net-driver --oneway (same window, MB/s; the plugin with and without its AOT cache), the latency of `jmesh lat
# --poll yield` beside the driver's --calls ping-pong (t_typical and average, us), test() that finds nothing through
# the plugin and CallBenchmark's through the API (ns).
# With --ref CHECKOUT, the reference C plugin (SEND/RECV) is built from that checkout (scripts/ref-plugin/build.sh)
# and measured the same way; --ref FILE.so takes one built before (a machine without gcc or the verbs headers).
# Logs: target/bench-runs/STAMP-plugin/{a,b}/out/plugin/.
# JMESH_BENCH_WAYS (default "api plugin plugin-noaot"; api-each adds `jmesh lat --repost each`, every receive
# announced on its own as NCCL posts them; plugin-b runs the plugin once more, the same layout, so that plugin-b/plugin
# shows what the testbed can resolve: an A/A pair; plugin-eager, latency only, runs the plugin with verbs' eager path,
# JMESH_EAGER_THRESHOLD=4096 at both ends) and JMESH_BENCH_PARTS (default "bw lat jmh") narrow a run;
# JMESH_BENCH_BW_SIZES (default 65536,262144,1048576; the driver's sizes grow x4 from the first to the last),
# JMESH_BENCH_BW_N (messages per size, default 128), JMESH_BENCH_BW_WARMUP (unmeasured messages at the first size,
# default 4096), JMESH_BENCH_LAT_WARM (the driver's --warm-seconds, default 60)
# and JMESH_BENCH_SETTLE (default 120) size it; JMESH_BENCH_TESTBED_OPTS adds testbed/run options (--cpus 2, say);
# JMESH_EAGER_THRESHOLD, where set, is passed to every jmesh run. With JMESH_BENCH_PREBUILT=1 (testbed/device-run)
# nothing is built: the layout in nccl-shim/target/nccl-plugin is run as it is.
#   scripts/bench plugin [--ref CHECKOUT|FILE.so] [ROUNDS]      (default 2 rounds)
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
  IFS=, read -r -a BW_SIZES <<< "${JMESH_BENCH_BW_SIZES:-65536,262144,1048576}"
  BW_N=${JMESH_BENCH_BW_N:-128}      # messages per size: ~10 MB/s here, so 1 MiB takes ~15 s
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
  # posts them), plugin, plugin-b, plugin-eager (lat only), plugin-noaot; JMESH_BENCH_PARTS: bw, lat, jmh
  ways=${JMESH_BENCH_WAYS:-api plugin plugin-noaot}; [[ -n ${JMESH_REF_PLUGIN:-} ]] && ways="$ways ref"
  parts=" ${JMESH_BENCH_PARTS:-bw lat jmh} "
  # the driver's warm-up: ~35 s at 64 KiB, as long as `jmesh bw` waits for its JIT to be quiet
  # then, as the CLI (--settle), on until neither JVM's JIT compiled for a round, at most SETTLE s
  SETTLE=${JMESH_BENCH_SETTLE:-120}
  BW=(--oneway --window $WINDOW --group 1 --warmup "${JMESH_BENCH_BW_WARMUP:-4096}" --min "${BW_SIZES[0]}" --max "${BW_SIZES[-1]}" --iters $BW_N
      --settle $SETTLE)
  LAT=(--calls $LAT_N --min 8 --max 8 --window 32 --warm-seconds "${JMESH_BENCH_LAT_WARM:-60}" --settle $SETTLE)
  for ((r = 1; r <= rounds; r++)); do
    order=$ways; ((r % 2)) || order=$(echo $ways | tr ' ' '\n' | tac | tr '\n' ' ')
    [[ $parts == *" bw "* ]] && for how in $order; do
      case $how in
        api) cli "r$r-jmesh-bw" bw -d $dev -x "$gidx" -s "$list" -n $BW_N -t $WINDOW --poll yield --settle $SETTLE ;;
        plugin) driver "r$r-driver-bw" "$PLUGIN/libnccl-net-jmesh.so" "" "${BW[@]}" ;;
        plugin-b) driver "r$r-driverb-bw" "$PLUGIN/libnccl-net-jmesh.so" "" "${BW[@]}" ;;
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
        plugin-b) driver "r$r-driverb-lat" "$PLUGIN/libnccl-net-jmesh.so" "" "${LAT[@]}" ;;
        plugin-eager) JMESH_EAGER_THRESHOLD=4096 driver "r$r-eager-lat" "$PLUGIN/libnccl-net-jmesh.so" "" "${LAT[@]}" ;;
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
jmesh_bench_java
if [ "${JMESH_BENCH_PREBUILT:-}" = 1 ]; then
    [ -x "$ROOT/nccl-shim/target/nccl-plugin/bin/nccl-net-driver" ] \
        || jmesh_die "JMESH_BENCH_PREBUILT=1 but there is no layout in nccl-shim/target/nccl-plugin: build it first"
else
    jmesh_mvn -o package -pl nccl-shim -am -DskipTests || jmesh_die "the plugin's build failed"
fi
jmesh_bench_snapshot plugin
snap=$ROOT/target/bench-runs/$stamp-plugin-classpath
# -a: the AOT cache checks the jars' times and refuses a copy without them
cp -a "$ROOT/nccl-shim/target/nccl-plugin" "$snap/" || jmesh_die "cannot copy the plugin layout to $snap"
export JMESH_REF_PLUGIN= JMESH_BENCH_WAYS=${JMESH_BENCH_WAYS:-} JMESH_BENCH_PARTS=${JMESH_BENCH_PARTS:-}
export JMESH_BENCH_BW_SIZES=${JMESH_BENCH_BW_SIZES:-65536,262144,1048576} JMESH_BENCH_BW_N=${JMESH_BENCH_BW_N:-}
export JMESH_BENCH_LAT_WARM=${JMESH_BENCH_LAT_WARM:-} JMESH_BENCH_SETTLE=${JMESH_BENCH_SETTLE:-}
export JMESH_BENCH_BW_WARMUP=${JMESH_BENCH_BW_WARMUP:-}
if [[ $ref == *.so ]]; then
    [ -f "$ref" ] || jmesh_die "--ref $ref: no such file"
    cp "$ref" "$snap/" && JMESH_REF_PLUGIN=$snap/$(basename "$ref")
elif [ -n "$ref" ]; then
    "$ROOT/scripts/ref-plugin/build.sh" "$ref" "$snap/ref" || jmesh_die "the reference plugin's build failed"
    JMESH_REF_PLUGIN=$snap/ref/libnccl-net-mesh.so
fi
rd=$ROOT/target/bench-runs/$stamp-plugin
eager=()     # JMESH_EAGER_THRESHOLD, where set, reaches both ends of every jmesh run (the API and the plugin)
[ -n "${JMESH_EAGER_THRESHOLD:-}" ] && eager=(-e JMESH_EAGER_THRESHOLD)
read -r -a topts <<< "${JMESH_BENCH_TESTBED_OPTS:-}"
testbed/run --out "$rd" -t $((rounds * 1500 + 1200)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP "${eager[@]}" \
    -e JMESH_PLUGIN_DIR="$snap/nccl-plugin" -e JMESH_REF_PLUGIN -e JMESH_BENCH_WAYS -e JMESH_BENCH_PARTS \
    -e JMESH_BENCH_BW_SIZES -e JMESH_BENCH_BW_N -e JMESH_BENCH_BW_WARMUP -e JMESH_BENCH_LAT_WARM -e JMESH_BENCH_SETTLE \
    "${topts[@]}" pair -- \
    bash "$ROOT/scripts/bench.d/plugin.sh" --guest "$rounds"
rc=$?
a=$rd/a/out/plugin b=$rd/b/out/plugin
col() { [ -f "$2" ] && awk -v s="$1" '$4 == s && NF >= 7 { v = $7 } END { print v }' "$2"; }
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { if (x > 0 && y > 0) printf "%.2f", x / y; else print "-" }'; }
# the driver's sizes: x4 from the first to the last (nccl_net_driver.c)
sizes=(); IFS=, read -r -a bws <<< "$JMESH_BENCH_BW_SIZES"
for ((s = bws[0]; s < bws[-1]; s *= 4)); do sizes+=($s); done; sizes+=("${bws[-1]}")
printf '%-6s %9s %14s %14s %14s %14s %14s %10s %10s\n' round bytes "jmesh bw MB/s" "driver MB/s" "driver again" \
  "no AOT" "C plugin MB/s" plugin/C again/plugin
for ((r = 1; r <= rounds; r++)); do
  ls "$a"/r$r-*-bw*.log > /dev/null 2>&1 || continue
  for s in "${sizes[@]}"; do
    bw() { [ -f "$1" ] && awk -v s=$s '$1 == s && NF >= 4 { v = $4 } END { print v }' "$1"; }
    p=$(col $s "$a/r$r-driver-bw-rank0.log") p2=$(col $s "$a/r$r-driverb-bw-rank0.log") c=$(col $s "$a/r$r-ref-bw-rank0.log")
    printf '%-6s %9s %14s %14s %14s %14s %14s %10s %10s\n' "r$r" "$s" "$(bw "$a/r$r-jmesh-bw.log")" "$p" "$p2" \
      "$(col $s "$a/r$r-noaot-bw-rank0.log")" "$c" "$(ratio "$p" "$c")" "$(ratio "$p2" "$p")"
  done
done
echo "# bw: plugin/C = driver / C plugin, again/plugin = driver again / driver (the A/A pair): at least 1.0 is the goal"
drv() { [ -f "$2" ] && sed -n "s/.*$1 \([0-9.]*\) [un]s.*/\1/p" "$2"; }
lat() { [ -f "$2" ] && awk -v c="$1" '$1 == 8 && NF >= 6 { v = $c } END { print v }' "$2"; }
printf '\n%-6s %-10s %12s %12s %16s %10s\n' round "8 bytes" "typical us" "average us" "idle test() ns" "C/this"
for ((r = 1; r <= rounds; r++)); do
  c=$(drv typical "$a/r$r-ref-lat-rank0.log" 2>/dev/null); p=$(drv typical "$a/r$r-driver-lat-rank0.log" 2>/dev/null)
  for f in "$a/r$r-jmesh-lat.log" "$a/r$r-jmesh-lat-each.log"; do
    [[ -f $f ]] && printf '%-6s %-10s %12s %12s %16s\n' "r$r" "$([[ $f == *each* ]] && echo "lat each" || echo "jmesh lat")" \
      "$(lat 5 "$f")" "$(lat 6 "$f")" ""
  done
  for w in driver driverb eager noaot ref; do
    d=$a/r$r-$w-lat-rank0.log
    [ -f "$d" ] && printf '%-6s %-10s %12s %12s %16s %10s\n' "r$r" "$w" "$(drv typical "$d")" "$(drv average "$d")" \
      "$(drv 'nothing:' "$d")" "$(ratio "$c" "$(drv typical "$d")")"
  done
  [[ -n $p ]] && echo "# r$r lat: driver again / driver (the A/A pair, typical): $(ratio "$(drv typical "$a/r$r-driverb-lat-rank0.log")" "$p")"
done
echo "# lat: C/this = the C plugin's typical round trip / this one's (a speed ratio: at least 1.0 is the goal)"
echo; grep -E '^CallBenchmark' "$a/jmh-call.log" 2>/dev/null
exit $rc
