#!/usr/bin/env bash
# The NCCL plugin's path against jmesh's Java API (and the reference C plugin), in the testbed ('pair')
#
# The NCCL plugin's path against jmesh's Java API on one Soft-RoCE link, by hand (not part of ./test): runs
# scripts/bench-plugin-guest.sh on 'pair', then prints per round the bandwidth of `jmesh bw --poll yield` beside
# nccl-net-driver --oneway (same window, MB/s; the plugin with and without its AOT cache), the latency of `jmesh lat
# --poll yield` beside the driver's --calls ping-pong (t_typical and average, us), test() that finds nothing through
# the plugin and CallBenchmark's through the API (ns).
# With --ref CHECKOUT, the reference C plugin (SEND/RECV) is built from that checkout (scripts/ref-plugin/build.sh)
# and measured the same way. Logs: target/bench-runs/STAMP-plugin/{a,b}/out/plugin/.
# JMESH_BENCH_WAYS (default "api plugin plugin-noaot"; api-each adds `jmesh lat --repost each`, every receive
# announced on its own as NCCL posts them) and JMESH_BENCH_PARTS (default "bw lat jmh") narrow a run;
# JMESH_EAGER_THRESHOLD, where set, is passed to every jmesh run.
#   scripts/bench plugin [--ref CHECKOUT] [ROUNDS]      (default 2 rounds)
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"
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
    bash "$ROOT/scripts/bench-plugin-guest.sh" "$rounds"
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
