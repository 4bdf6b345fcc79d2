#!/usr/bin/env bash
# jmesh lat/bw against perftest on 'pair', interleaved, with an A/A pair (the same jar twice) to show the resolution
#
# The verbs goals of issue #36 on a machine with cores to spare, by hand (not part of ./test): per round, on 'pair'
# (b serves, a is the client), ib_send_lat at each latency size and jmesh lat (isend/irecv, eager path, spinning) at
# all of them, twice (A1 and A2: the same build against itself), then ib_write_bw and jmesh bw (A1, A2) at each
# bandwidth size. The order of the three turns over from one round to the next, so that all see the same host.
#
#   scripts/bench goals [--rounds N] [--out DIR] [testbed/run options]
#
# Uses benchmarks/target/jmesh-benchmarks.jar as it is (build it first; testbed/device-run brings the pack's). On a
# machine without the testbed: testbed/device-run --exec scripts/bench goals ... Environment: JMESH_GOALS_LAT_SIZES
# (default 2,64,1024,4096), JMESH_GOALS_BW_SIZES (65536,1048576,4194304), JMESH_GOALS_LAT_N (2000),
# JMESH_GOALS_BW_SECONDS (unset: one `jmesh bw` per size, -n as perftest's; S: one per round and copy over every
# size, S seconds each, so that a round starts two JVMs fewer per size: JVM starts are most of a round under TCG).
# Writes DIR/goals.tsv (round test tool size value) and DIR/goals-summary.txt (medians, ratios, the A/A spread);
# DIR defaults to target/bench-runs/STAMP-goals, which also holds the testbed's run folder.
#
# --guest ROUNDS: the guest half, run in the guests by the host half (not by hand).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"
LAT_SIZES=${JMESH_GOALS_LAT_SIZES:-2,64,1024,4096}
BW_SIZES=${JMESH_GOALS_BW_SIZES:-65536,1048576,4194304}
LAT_N=${JMESH_GOALS_LAT_N:-2000}
BW_SECONDS=${JMESH_GOALS_BW_SECONDS:-}
bw_n() { if (( $1 <= 65536 )); then echo 2000; elif (( $1 <= 1048576 )); then echo 200; else echo 50; fi; }

guest() {
  local rounds=$1 r step=0 order t s
  J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:ErrorFile="$TESTBED_RUN/hs_err_${TESTBED_NAME}_%p.log"
     -XX:CompileCommand=quiet "-XX:CompileCommand=CompileThresholdScaling,io.jmesh.*::*,0.1"
     -cp "$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*" io.jmesh.cli.Jmesh)
  jmesh_testbed_link rxe0
  out=$TESTBED_OUT/goals; mkdir -p "$out"
  pair() { # pair LOG perftest|jmesh ARGS...: the server on b, the client on a, on a port of its own
    local name=$1 tool=$2; shift 2; local port=$((22000 + step)) rc; step=$((step + 1))
    if [[ $TESTBED_NAME == b ]]; then
      # a step takes well under a minute: a client that died (a JVM crash under TCG) costs its server 150 s, not more
      if [[ $tool == perftest ]]; then timeout 150 "$@" -p $port > "$out/$name-server.log" 2>&1
      else timeout 150 "${J[@]}" "$@" -p $port --timeout 120 > "$out/$name-server.log" 2>&1; fi
    else
      if [[ $tool == perftest ]]; then testbed-retry 60 timeout --foreground 240 "$@" -p $port "$peer" > "$out/$name.log" 2>&1
      else timeout 320 "${J[@]}" "$@" -p $port --timeout 120 "$peer" > "$out/$name.log" 2>&1; fi
    fi
    rc=$?; [[ $rc == 0 ]] || echo "goals[$TESTBED_NAME]: $name failed (exit $rc)"
  }
  for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then order="perftest A1 A2"; else order="A2 A1 perftest"; fi
    for t in $order; do
      if [[ $t == perftest ]]; then
        for s in ${LAT_SIZES//,/ }; do pair "r$r-lat-perftest-$s" perftest ib_send_lat -d $dev -x "$gidx" -F -s "$s" -n "$LAT_N"; done
      else
        pair "r$r-lat-$t" jmesh lat -d $dev -x "$gidx" -s "$LAT_SIZES" -n "$LAT_N" --poll spin --settle 5
      fi
    done
    if [[ -n $BW_SECONDS ]]; then
      for t in $order; do
        if [[ $t == perftest ]]; then
          for s in ${BW_SIZES//,/ }; do pair "r$r-bw-perftest-$s" perftest ib_write_bw -d $dev -x "$gidx" -F -s "$s" -n "$(bw_n "$s")"; done
        else pair "r$r-bw-$t-all" jmesh bw -d $dev -x "$gidx" -s "$BW_SIZES" -D "$BW_SECONDS" --warmup 20 --poll spin --settle 5; fi
      done
    else
      for s in ${BW_SIZES//,/ }; do
        for t in $order; do
          if [[ $t == perftest ]]; then pair "r$r-bw-perftest-$s" perftest ib_write_bw -d $dev -x "$gidx" -F -s "$s" -n "$(bw_n "$s")"
          else pair "r$r-bw-$t-$s" jmesh bw -d $dev -x "$gidx" -s "$s" -n "$(bw_n "$s")" --poll spin --settle 5; fi
        done
      done
    fi
    echo "goals[$TESTBED_NAME]: round $r of $rounds done"
  done
  testbed-barrier goals-done 400
}
[[ ${1:-} == --guest ]] && { guest "${2:-3}"; exit; }

rounds=3 out=
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    *) break ;;
  esac
done
cd "$ROOT"
[[ -f benchmarks/target/jmesh-benchmarks.jar ]] || jmesh_die "no benchmarks/target/jmesh-benchmarks.jar: build first (mvn -o package -pl benchmarks -am -DskipTests)"
[[ -x ${JAVA_HOME:-}/bin/java ]] || jmesh_find_jdk   # a runtime is enough (device-run's has no javac)
out=${out:-$ROOT/target/bench-runs/$(date +%Y%m%d-%H%M%S)-goals}
mkdir -p "$out"
testbed/run --out "$out/run" -t $((rounds * 400 + 300)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_GOALS_LAT_SIZES="$LAT_SIZES" \
    -e JMESH_GOALS_BW_SIZES="$BW_SIZES" -e JMESH_GOALS_LAT_N="$LAT_N" -e JMESH_GOALS_BW_SECONDS="$BW_SECONDS" "$@" pair -- bash "$ROOT/scripts/bench.d/goals.sh" --guest "$rounds"
rc=$?
# the client's logs: a latency row has 9 columns (t_typical is the 5th), a bandwidth row 5 (BW average the 4th)
for f in "$out"/run/a/out/goals/r*.log; do
  [[ -f $f ]] || continue
  b=$(basename "$f" .log); IFS=- read -r rr test tool _ <<< "$b"
  if [[ $test == lat ]]; then col=5 cells=9; else col=4 cells=5; fi
  awk -v r="${rr#r}" -v t="$test" -v tool="$tool" -v c=$cells -v k=$col \
    '$1 ~ /^[0-9]+$/ && NF == c { print r "\t" t "\t" tool "\t" $1 "\t" $k }' "$f"
done | sort -k2,2 -k4,4n -k1,1n > "$out/goals.tsv"
{
  echo "# $(sed -n 1p "$out/run/summary.txt" 2>/dev/null); $rounds rounds; medians over rounds"
  echo "# lat: t_typical usec (lower is better); bw: BW average MB/s (higher is better)"
  printf '%-4s %8s %10s %10s %10s %12s %14s\n' test bytes perftest A1 A2 A1/perftest "A2/A1 min-max"
  awk "$JMESH_AWK_MEDIAN"'
    { key = $2 " " $4; v[key, $3] = v[key, $3] " " $5; val[$1, key, $3] = $5; keys[key] = 1; R[$1] = 1 }
    END {
      for (key in keys) {
        p = median(v[key, "perftest"]); a1 = median(v[key, "A1"]); a2 = median(v[key, "A2"]); lo = ""; hi = ""
        for (r in R) if (val[r, key, "A1"] > 0 && val[r, key, "A2"] > 0) {
          q = val[r, key, "A2"] / val[r, key, "A1"]; if (lo == "" || q < lo) lo = q; if (hi == "" || q > hi) hi = q }
        split(key, k, " ")
        printf "%-4s %8s %10s %10s %10s %12s %14s\n", k[1], k[2], p, a1, a2,
          (p > 0 && a1 > 0) ? sprintf("%.2f", a1 / p) : "-", lo == "" ? "-" : sprintf("%.2f-%.2f", lo, hi)
      }
    }' "$out/goals.tsv" | sort -k1,1r -k2,2n
} > "$out/goals-summary.txt"
cat "$out/goals-summary.txt"
echo "goals: $out (exit $rc)"
exit $rc
