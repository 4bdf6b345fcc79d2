#!/usr/bin/env bash
# On the device machine (16 cores, no KVM that boots a stock kernel: TCG), in the copy of the tree that a call gets
# with target/testbed-pack.tar.xz and target/device-extras.tar.xz in it: unpacks both, then runs several benchmarks
# at once, each pinned to cores of its own (taskset) with a testbed lock of its own (TESTBED_LOCK), so that no run's
# guests take another's cores; everything ends before SECS (default 570) from the start, and the logs go to $OUT
# (call.log, load.txt, track-K-ITEM.log, logs-K.tar.xz: each track's run folders, packed as soon as it ends, so that
# a call cut short still returns what finished). Give SECS below the call's real limit, which is the device time
# left when that is less than the call's timeout: on 2026-11-28 the call was cut at 422 s, before the logs of the
# version that packed them all at the end.
#   bash docs/bench/testbed-2026-11-28-device/call.sh [--secs SECS] ITEM@CORES...     (e.g. plugin@0-4)
# Items (each one command through testbed/device-run --exec; 'none' leaves its cores idle):
#   allpairs  scripts/bench allpairs on ring:8, then mesh:5 (1 vCPU per guest); ALLPAIRS=TOPOLOGY runs that one alone
#   plugin    scripts/bench plugin, 1 round: the plugin, the C plugin and the plugin again (A/A) through
#             nccl-net-driver, 64 KiB-4 MiB bandwidth (32 messages a size) and 8 B latency, 2 vCPUs per guest;
#             PLUGIN_WAYS replaces its ways (default "plugin ref plugin-b"; plugin-eager adds verbs' eager path,
#             latency only)
#   GUEST_CPUS (default 2) gives the plugin's and goals' guests their vCPUs: 1 runs each guest on one TCG thread;
#   on 2026-11-28 four JVMs crashed (SIGILL, SIGSEGV in freshly compiled code) with 2, none with 1; GOALS_ROUNDS (default 2);
#   PLUGIN_PARTS (default "bw lat"); RELAY_CPUS (default 1) gives the relay's three guests their vCPUs
#   relay     scripts/bench relay --aa 3, 2 rounds: relayed, direct, direct again (A/A) at 64 KiB and 4 MiB,
#             1 vCPU per guest
#   goals     scripts/bench goals, 2 rounds: jmesh lat (2 B-4 KiB) and bw (64 KiB, 1 and 4 MiB) against ib_send_lat
#             and ib_write_bw with A1/A2, 2 vCPUs per guest
set -uo pipefail
R=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../.." && pwd)
cd "$R"
SECS=570
[[ ${1:-} == --secs ]] && { SECS=$2; shift 2; }
OUT=${OUT:-$R/target/call-out}; mkdir -p "$OUT"
end=$((SECONDS + SECS))
log() { echo "call: $(date -u +%T) $*"; }
exec > >(tee "$OUT/call.log") 2>&1

log "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)"
xz -dc target/device-extras.tar.xz | tar -xf - || { log "cannot unpack the extras"; exit 1; }
testbed/device-run --probe || { log "the probe failed"; exit 1; }
(while sleep 10; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; done) > "$OUT/load.txt" &
sampler=$!

item() { # item NAME SECS: one benchmark, its own testbed timeouts inside SECS
  local t=$(( $2 - 75 ))   # the guests' command limit: boot, and a tear-down after a timeout (thread dumps: 45 s seen), fit in the rest
  case $1 in
    allpairs)   # ring:8 first with 3/5 of the time, mesh:5 with what is left (a new shell: SECONDS counts from 0)
      local cp a; cp=$(ls -d "$R"/target/tests/test-classes "$R"/target/tests/lib/*.jar | grep -v console-standalone | paste -sd:)
      a=(--classpath "$cp" --launcher "$R"/target/tests/lib/junit-platform-console-standalone-1.13.4.jar)
      if [[ ${ALLPAIRS:-both} == both ]]; then
        testbed/device-run --exec scripts/bench allpairs "${a[@]}" -t $(( t * 3 / 5 )) ring:8
        testbed/device-run --exec scripts/bench allpairs "${a[@]}" -t $(( $2 - SECONDS - 75 )) mesh:5
      else # one topology (ALLPAIRS=ring:8, say) with all the track's time
        testbed/device-run --exec scripts/bench allpairs "${a[@]}" -t "$t" "$ALLPAIRS"
      fi ;;
    plugin)
      JMESH_BENCH_WAYS="${PLUGIN_WAYS:-plugin ref plugin-b}" JMESH_BENCH_PARTS="${PLUGIN_PARTS:-bw lat}" JMESH_BENCH_BW_SIZES=65536,4194304 \
      JMESH_BENCH_BW_N=32 JMESH_BENCH_BW_WARMUP=1024 JMESH_BENCH_LAT_WARM=10 JMESH_BENCH_SETTLE=20 \
      JMESH_BENCH_TESTBED_OPTS="--cpus ${GUEST_CPUS:-2} -t $t" \
        testbed/device-run --exec scripts/bench plugin --ref "$R"/target/ref/libnccl-net-mesh.so 1 ;;
    relay)
      JMESH_RELAY_SIZES=65536,4194304 JMESH_BENCH_TESTBED_OPTS="--cpus ${RELAY_CPUS:-1} -t $t" \
        testbed/device-run --exec scripts/bench relay --aa 3 2 ;;
    goals)
      JMESH_GOALS_BW_SECONDS=4 JMESH_GOALS_BW_SIZES=65536,1048576,4194304 \
        testbed/device-run --exec scripts/bench goals --rounds ${GOALS_ROUNDS:-2} --cpus ${GUEST_CPUS:-2} -t $t ;;
    none) ;;
    *) echo "call: unknown item '$1'"; return 2 ;;
  esac
}

# the plugin's runtime is the pack's (the layout travels without one), and its AOT cache is built for it here
if [[ " $* " == *" plugin@"* ]]; then
  echo "$R/target/testbed/pack/java" > nccl-shim/target/nccl-plugin/java-home
  t0=$SECONDS; timeout 120 scripts/nccl-aot.sh nccl-shim/target/nccl-plugin || log "no AOT cache: the plugin runs without"
  log "AOT cache step: $((SECONDS - t0)) s"
fi

pids=() k=0
for spec in "$@"; do
  it=${spec%@*} cores=${spec#*@}
  rem=$((end - SECONDS - 15))
  log "track $k: $it on cores $cores, $rem s"
  ( export TESTBED_LOCK=/tmp/jmesh-testbed-$k.lock; t0=$SECONDS
    mkdir -p target/bench-runs; before=$(ls target/bench-runs)
    taskset -c "$cores" timeout -k 10 "$rem" bash -c "$(declare -f item); R=$R; item $it $rem"
    echo "call: track $k ($it) exit $? after $((SECONDS - t0)) s"
    # this track's run folders (new since it started), without the jar snapshots and the guests' copied scripts
    new=$(ls target/bench-runs | grep -vxF "$before" | grep -v -- '-classpath$')
    [[ -z $new ]] || tar -C target/bench-runs -cf - --exclude='*/lib/bin' --exclude='hs_err*' $new | xz -6 -T2 \
      > "$OUT/logs-$k.tar.xz" ) > "$OUT/track-$k-$it.log" 2>&1 &
  pids+=($!); k=$((k + 1))
done
for p in "${pids[@]}"; do wait "$p"; done
kill "$sampler" 2>/dev/null
for f in "$OUT"/track-*.log; do log "== $(basename "$f")"; tail -n 60 "$f"; done
log "logs: $(cd "$OUT" && du -ch logs-*.tar.xz 2>/dev/null | tail -1 | cut -f1); done"
