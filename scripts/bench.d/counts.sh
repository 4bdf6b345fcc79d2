#!/usr/bin/env bash
# Packets per message on the wire, counted by rxe, for jmesh and perftest's verbs designs ('pair')
#
# What one message costs the link, counted rather than timed (Soft-RoCE timings cannot decide small differences;
# counts can), in the Soft-RoCE testbed, by hand (not part of ./test). Each case runs alone between a (client) and
# b (server) on one link while both read rxe's counters (/sys/class/infiniband/DEV/ports/1/hw_counters) before and
# after; the table gives, per message, the packets both ends sent (data, ACKs and control writes of both directions)
# and rxe's other counters that moved.
# Cases per size: ib_send_lat (SEND/RECV, the reference C plugin's design), ib_write_lat (RDMA WRITE), jmesh lat
# (isend/irecv: receiver-driven, and with the eager path where the size allows it). A ping-pong of N exchanges moves
# 2N messages (N each way), plus the warm-up's (jmesh runs with --settle 0: its JIT-settle rounds would add
# exchanges nobody counts).
# Logs and counters: target/bench-runs/STAMP-counts/{a,b}/out/counts/.
#   scripts/bench counts [N]      (default 1000 exchanges per case)
#   scripts/bench counts --summary RUNDIR N   the table again, from a run's folder
#
# --guest N: the guest half, run in the guests by the host half (not by hand).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

SIZES=(8 4096 65536 1048576)
WARM=100

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
  # one NAME TOOL ARGS...: the case alone on the link, each end's counters before and after it
  one() {
    local name=$1 tool=$2; shift 2; local port=$((26000 + step)); step=$((step + 1))
    testbed-barrier "start-$name" 300 || { fail=1; return; }
    counters "$dev" > "$out/$name.before"
    if [[ $tool == perftest ]]; then
      if [[ $TESTBED_NAME == b ]]; then timeout 300 "$@" -p $port > "$out/$name-server.log" 2>&1
      else testbed-retry 60 timeout --foreground 240 "$@" -p $port "$peer" > "$out/$name.log" 2>&1; fi
    elif [[ $TESTBED_NAME == b ]]; then
      env $tool timeout 300 "${J[@]}" "$@" -p $port --timeout 120 > "$out/$name-server.log" 2>&1
    else
      env $tool timeout 320 "${J[@]}" "$@" -p $port --timeout 120 "$peer" > "$out/$name.log" 2>&1
    fi || { echo "counts[$TESTBED_NAME]: FAILED: $name"; fail=1; }
    testbed-barrier "end-$name" 300 || fail=1
    counters "$dev" > "$out/$name.after"
  }
  for s in "${SIZES[@]}"; do
    one "ib_send_lat-$s" perftest ib_send_lat -d $dev -x "$gidx" -F -s "$s" -n "$n"
    one "ib_write_lat-$s" perftest ib_write_lat -d $dev -x "$gidx" -F -s "$s" -n "$n"
    one "jmesh-$s" JMESH_EAGER_THRESHOLD=0 lat -d $dev -x "$gidx" -s "$s" -n "$n" --warmup $WARM --settle 0
    ((s <= 4096)) && one "jmesh-eager-$s" JMESH_EAGER_THRESHOLD=4096 lat -d $dev -x "$gidx" -s "$s" -n "$n" \
        --warmup $WARM --settle 0
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
    msgs=$((2 * n)); [[ $name == jmesh* ]] && msgs=$((2 * (n + WARM)))
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
n=${1:-1000}
[[ $n =~ ^[0-9]+$ && $n -ge 10 ]] || jmesh_die "N must be a number of exchanges, 10 or more (got '$n')"
jmesh_find_jdk
jmesh_bench_snapshot counts
rd=$ROOT/target/bench-runs/$stamp-counts
testbed/run --out "$rd" -t 1800 -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP pair -- \
    bash "$ROOT/scripts/bench.d/counts.sh" --guest "$n"
rc=$?
summary "$rd" "$n"
exit $rc
