#!/usr/bin/env bash
# Runs inside the testbed guests for scripts/bench testbed (not by hand).
#   bench-guest.sh perf ROUNDS   on 'pair': guest b serves, guest a is the client; ib_write_bw and jmesh bw for every
#                                size (and jmesh bw --poll spin at 64 KiB and 1 MiB), then three times ib_write_lat,
#                                jmesh lat --op write, ib_send_lat and jmesh lat; ROUNDS times (interleaved, so all see the same host load); logs in $TESTBED_OUT/perf/
#   bench-guest.sh jmh           on 'single': the JMH benchmarks with the verbs provider, short settings, -prof gc;
#                                JSON in $TESTBED_OUT/jmh-bw.json and jmh-lat.json
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:ErrorFile="$TESTBED_RUN/hs_err_${TESTBED_NAME}_%p.log"
   -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
mode=$1; shift

if [[ $mode == jmh ]]; then
  common=(-p provider=rdma -f 1 -wi 2 -i 3 -w 1s -r 1s -prof gc -rf json)
  "${J[@]}" jmh BandwidthBenchmark "${common[@]}" -p size=1024,65536,1048576,16777216 -rff "$TESTBED_OUT/jmh-bw.json" \
    && "${J[@]}" jmh LatencyBenchmark "${common[@]}" -p size=8,4096,65536 -rff "$TESTBED_OUT/jmh-lat.json"
  exit $?
fi

rounds=${1:-3}
# size:iterations, the same for perftest and jmesh (≈8-100 MB per step at the testbed's 5-20 MB/s)
SIZES=(4096:2000 65536:1000 262144:300 1048576:100)
LAT_N=2000
LAT_PAIRS=3
dev=rxe0
v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}
v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
out=$TESTBED_OUT/perf; mkdir -p "$out"
fail=0
step=0

# run NAME SECS CMD...: one bounded step; the client side retries perftest until its server listens
run() {
  local name=$1 secs=$2; shift 2
  timeout -k 5 "$secs" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [[ $rc == 0 ]] || { echo "bench[$TESTBED_NAME]: FAILED ($rc): $name: $*"; tail -n 20 "$out/$name.log" | sed 's/^/    /'; }
  return $rc
}

pair() { # pair NAME TOOL ARGS...: the server on b, the client on a, on a port of its own
  local name=$1 tool=$2; shift 2
  local port=$((21000 + step)); step=$((step + 1))
  if [[ $TESTBED_NAME == b ]]; then
    if [[ $tool == perftest ]]; then run "$name-server" 300 "$@" -p "$port"
    else run "$name-server" 300 "${J[@]}" "$@" -p "$port" --timeout 120; fi
  else
    if [[ $tool == perftest ]]; then run "$name" 320 testbed-retry 60 timeout --foreground 240 "$@" -p "$port" "$peer"
    else run "$name" 320 "${J[@]}" "$@" -p "$port" --timeout 120 "$peer"; fi
  fi
}

for ((r = 1; r <= rounds; r++)); do
  for sn in "${SIZES[@]}"; do
    s=${sn%%:*} n=${sn##*:}
    pair "r$r-perftest-bw-$s" perftest ib_write_bw -d $dev -x "$gidx" -F -s "$s" -n "$n" || { fail=1; break 2; }
    pair "r$r-jmesh-bw-$s" jmesh bw -d $dev -x "$gidx" -s "$s" -n "$n" --warmup $((n / 5)) || { fail=1; break 2; }
    if [[ $s == 65536 || $s == 1048576 ]]; then
      pair "r$r-jmeshspin-bw-$s" jmesh bw -d $dev -x "$gidx" -s "$s" -n "$n" --warmup $((n / 5)) --poll spin \
        || { fail=1; break 2; }
    fi
  done
  # latency scatters more than bandwidth from run to run: LAT_PAIRS interleaved pairs per round, of each kind:
  # lat = RDMA write ping-pong polled in memory (ib_write_lat, jmesh lat --op write),
  # latsend = two-sided ping-pong with receive completions (ib_send_lat, jmesh lat: isend/irecv)
  for ((k = 1; k <= LAT_PAIRS; k++)); do
    pair "r$r.$k-perftest-lat-2" perftest ib_write_lat -d $dev -x "$gidx" -F -s 2 -n $LAT_N || { fail=1; break 2; }
    pair "r$r.$k-jmesh-lat-2" jmesh lat --op write -d $dev -x "$gidx" -s 2 -n $LAT_N --warmup 200 \
      || { fail=1; break 2; }
    pair "r$r.$k-perftest-latsend-2" perftest ib_send_lat -d $dev -x "$gidx" -F -s 2 -n $LAT_N || { fail=1; break 2; }
    pair "r$r.$k-jmesh-latsend-2" jmesh lat -d $dev -x "$gidx" -s 2 -n $LAT_N --warmup 200 || { fail=1; break 2; }
  done
  echo "bench[$TESTBED_NAME]: round $r of $rounds done"
done
[[ $fail == 0 ]] && { testbed-barrier bench-done 400 || fail=1; }
exit $fail
