#!/usr/bin/env bash
# Packets per message on the wire, counted by rxe, for jmesh and perftest's verbs designs ('pair')
#
# What one message costs the link, counted rather than timed (Soft-RoCE timings cannot decide small differences;
# counts can), in the Soft-RoCE testbed, by hand (not part of ./test). Each case runs alone between a (client) and
# b (server) on one link while both read rxe's counters (/sys/class/infiniband/DEV/ports/1/hw_counters) before and
# after; the table gives, per message, the packets both ends sent (data, ACKs and control writes of both directions)
# and rxe's other counters that moved.
# Cases per size: ib_send_lat (SEND/RECV, the reference C plugin's design), ib_write_lat (RDMA WRITE), jmesh lat
# (isend/irecv: receiver-driven, and with the eager path where the size allows it), and the same isend/irecv through
# the NCCL plugin as NCCL's proxy calls it (nccl-net-driver --calls: a ping-pong with 8 receives posted ahead;
# receiver-driven and eager) and, with --ref, through the reference C plugin (scripts/ref-plugin/build.sh) in the
# same driver. A ping-pong of N exchanges moves 2N messages (N each way), plus the warm-up's (jmesh runs with
# --settle 0: its JIT-settle rounds would add exchanges nobody counts); a driver case counts what its log says it
# moved (the echoes, the receives it drained at the end and the one message that ends its idle test).
# Logs and counters: target/bench-runs/STAMP-counts/{a,b}/out/counts/.
#   scripts/bench counts [--ref CHECKOUT_OF_nccl-mesh-plugin] [N]      (default 1000 exchanges per case)
#   JMESH_COUNTS_SIZES="1048576" scripts/bench counts --ref ... 100       (some sizes only)
#   scripts/bench counts --summary RUNDIR N   the table again, from a run's folder
#
# --guest N: the guest half, run in the guests by the host half (not by hand).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

# JMESH_COUNTS_SIZES narrows a run (1 MiB at N=1000 takes longer than a case's time limit under TCG: give it less N)
read -r -a SIZES <<< "${JMESH_COUNTS_SIZES:-8 4096 65536 1048576}"
WARM=100
WINDOW=8     # the driver's receives posted ahead, as NCCL's proxy keeps them

# counters DEV: every rxe hw counter of DEV's port 1 as "name value" lines, and the NIC's packet counts
counters() {
  local d=/sys/class/infiniband/$1/ports/1/hw_counters f
  for f in "$d"/*; do [[ -f $f ]] && echo "${f##*/} $(cat "$f")"; done
}

guest() {
  n=${1:-1000}
  J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
  jmesh_testbed_link rxe0
  out=$TESTBED_OUT/counts; mkdir -p "$out"; step=0; fail=0
  rank=1; [[ $TESTBED_NAME == a ]] && rank=0
  PLUGIN=${JMESH_PLUGIN_DIR:?the plugin layout to count}
  # one NAME TOOL ARGS...: the case alone on the link, each end's counters before and after it
  one() {
    local name=$1 tool=$2; shift 2; local port=$((26000 + step)); step=$((step + 1))
    testbed-barrier "start-$name" 300 || { fail=1; return; }
    counters "$dev" > "$out/$name.before"
    if [[ $tool == driver ]]; then
      # LIBRARY SETTING ("" for none): rank 0 on a, rank 1 on b, the handles in a folder of the case's own
      local lib=$1 env=$2 dir=$TESTBED_SHARED/counts-driver-$step; mkdir -p "$dir"
      env -u JAVA_HOME $env JMESH_PROVIDER=rdma JMESH_HANDSHAKE_TIMEOUT_MS=60000 timeout 320 \
          "$PLUGIN/bin/nccl-net-driver" --plugin "$lib" --rank $rank --nranks 2 --dir "$dir" --timeout 120 \
          --calls "$n" --min "$size" --max "$size" --window $WINDOW --warm-seconds 0 --settle 0 \
          > "$out/$name-rank$rank.log" 2>&1
    elif [[ $tool == perftest ]]; then
      if [[ $TESTBED_NAME == b ]]; then timeout 300 "$@" -p $port > "$out/$name-server.log" 2>&1
      else testbed-retry 60 timeout --foreground 240 "$@" -p $port "$peer" > "$out/$name.log" 2>&1; fi
    elif [[ $TESTBED_NAME == b ]]; then
      env $tool timeout 300 "${J[@]}" "$@" -p $port --timeout 120 > "$out/$name-server.log" 2>&1
    else
      env $tool timeout 320 "${J[@]}" "$@" -p $port --timeout 120 "$peer" > "$out/$name.log" 2>&1
    fi || { echo "counts[$TESTBED_NAME]: FAILED: $name"; : > "$out/$name.failed"; fail=1; }
    testbed-barrier "end-$name" 300 || fail=1
    counters "$dev" > "$out/$name.after"
  }
  for s in "${SIZES[@]}"; do
    size=$s
    one "ib_send_lat-$s" perftest ib_send_lat -d $dev -x "$gidx" -F -s "$s" -n "$n"
    one "ib_write_lat-$s" perftest ib_write_lat -d $dev -x "$gidx" -F -s "$s" -n "$n"
    one "jmesh-$s" JMESH_EAGER_THRESHOLD=0 lat -d $dev -x "$gidx" -s "$s" -n "$n" --warmup $WARM --settle 0
    ((s <= 4096)) && one "jmesh-eager-$s" JMESH_EAGER_THRESHOLD=4096 lat -d $dev -x "$gidx" -s "$s" -n "$n" \
        --warmup $WARM --settle 0
    one "plugin-$s" driver "$PLUGIN/libnccl-net-jmesh.so" JMESH_EAGER_THRESHOLD=0
    ((s <= 4096)) && one "plugin-eager-$s" driver "$PLUGIN/libnccl-net-jmesh.so" JMESH_EAGER_THRESHOLD=4096
    [[ -n ${JMESH_REF_PLUGIN:-} ]] && one "ref-$s" driver "$JMESH_REF_PLUGIN" ""
  done
  echo "counts[$TESTBED_NAME]: done"
  exit $fail
}

# summary RUNDIR N: per case, the packets per message (both ends' sent packets over the case's messages: data, ACKs
# and control writes in both directions) and rxe's other counters that moved (both ends, per message); retransmitted
# packets (rxe's duplicate_request/completer_retry_err, frequent under TCG) are in the count and shown beside it
summary() {
  local rd=$1 n=$2 f name msgs
  printf '%-22s %10s  %s\n' case pkts/msg "other counters that moved, per message (both ends)"
  for f in "$rd"/a/out/counts/*.after; do
    name=$(basename "$f" .after)
    # a case that failed at either end counted only part of its messages
    if [[ -f $rd/a/out/counts/$name.failed || -f $rd/b/out/counts/$name.failed ]]; then
      printf '%-22s %10s\n' "$name" "failed"; continue
    fi
    msgs=$((2 * n)); [[ $name == jmesh* ]] && msgs=$((2 * (n + WARM)))
    if [[ $name == plugin* || $name == ref* ]]; then
      # both directions: the echoes (the end included), the receives drained at the end, the idle test's message
      msgs=$(sed -n 's/.*echoed \([0-9]*\) messages.*/\1/p' "$rd/b/out/counts/$name-rank1.log")
      [[ -n $msgs ]] || { printf '%-22s %10s\n' "$name" "failed"; continue; }
      msgs=$((2 * (msgs + WINDOW + 1)))
    fi
    cat "$rd/a/out/counts/$name.before" "$rd/b/out/counts/$name.before" | awk -v msgs=$msgs -v name="$name" '
      FILENAME == "-" { before[$1] += $2; next }
      { after[$1] += $2 }
      END {
        other = ""
        for (k in after) { d = after[k] - before[k]; if (k != "sent_pkts" && k != "rcvd_pkts" && k != "lifespan" && d != 0) other = other sprintf(" %s=%.3f", k, d / msgs) }
        printf "%-22s %10.3f %s\n", name, (after["sent_pkts"] - before["sent_pkts"]) / msgs, other
      }' - "$rd/a/out/counts/$name.after" "$rd/b/out/counts/$name.after"
  done
}

[[ ${1:-} == --summary ]] && { summary "$2" "${3:-1000}"; exit; }
[[ ${1:-} == --guest ]] && { shift; guest "$@"; exit; }
cd "$ROOT"
ref=
if [ "${1:-}" = --ref ]; then ref=${2:?--ref needs a checkout of nccl-mesh-plugin}; shift 2; fi
n=${1:-1000}
[[ $n =~ ^[0-9]+$ && $n -ge 10 ]] || jmesh_die "N must be a number of exchanges, 10 or more (got '$n')"
jmesh_find_jdk
jmesh_mvn -o package -pl nccl-shim -am -DskipTests || jmesh_die "the plugin's build failed"
jmesh_bench_snapshot counts
snap=$ROOT/target/bench-runs/$stamp-counts-classpath
# -a: the AOT cache checks the jars' times and refuses a copy without them
cp -a "$ROOT/nccl-shim/target/nccl-plugin" "$snap/" || jmesh_die "cannot copy the plugin layout to $snap"
export JMESH_REF_PLUGIN=
if [ -n "$ref" ]; then
    "$ROOT/scripts/ref-plugin/build.sh" "$ref" "$snap/ref" || jmesh_die "the reference plugin's build failed"
    JMESH_REF_PLUGIN=$snap/ref/libnccl-net-mesh.so
fi
rd=$ROOT/target/bench-runs/$stamp-counts
export JMESH_COUNTS_SIZES=${JMESH_COUNTS_SIZES:-}
testbed/run --out "$rd" -t 2700 -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP -e JMESH_PLUGIN_DIR="$snap/nccl-plugin" \
    -e JMESH_REF_PLUGIN -e JMESH_COUNTS_SIZES pair -- bash "$ROOT/scripts/bench.d/counts.sh" --guest "$n"
rc=$?
summary "$rd" "$n"
exit $rc
