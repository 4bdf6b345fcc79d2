#!/usr/bin/env bash
# Runs inside the testbed guests for scripts/bench eager (not by hand): b serves, a is the client. Per round, on
# the same link: ib_send_lat and ib_write_lat at each size, jmesh lat (isend/irecv) over all sizes with the eager path
# and with JMESH_EAGER_THRESHOLD=0 (every message receiver-driven, as before the eager path), both again with
# --repost each (every receive posted and announced on its own, as NCCL posts them), then at 4 KiB
# ib_write_bw against jmesh bw with and without the eager path. The order of the two jmesh runs switches per round.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-2}
SIZES=(2 64 512 4096)
N=2000
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
dev=rxe0; v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}; v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
out=$TESTBED_OUT/eager; mkdir -p "$out"; step=0; fail=0
pair() { # pair NAME perftest|EAGER_THRESHOLD ARGS...: the server on b, the client on a, on a port of its own
  local name=$1 how=$2; shift 2; local port=$((25000 + step)); step=$((step + 1))
  if [[ $how == perftest ]]; then
    if [[ $TESTBED_NAME == b ]]; then timeout 300 "$@" -p $port > "$out/$name-server.log" 2>&1
    else testbed-retry 60 timeout --foreground 240 "$@" -p $port "$peer" > "$out/$name.log" 2>&1; fi
  elif [[ $TESTBED_NAME == b ]]; then
    JMESH_EAGER_THRESHOLD=$how timeout 300 "${J[@]}" "$@" -p $port --timeout 120 > "$out/$name-server.log" 2>&1
  else
    JMESH_EAGER_THRESHOLD=$how timeout 320 "${J[@]}" "$@" -p $port --timeout 120 "$peer" > "$out/$name.log" 2>&1
  fi || { echo "eager[$TESTBED_NAME]: FAILED: $name"; fail=1; }
}
list=$(IFS=,; echo "${SIZES[*]}")
for ((r = 1; r <= rounds; r++)); do
  for s in "${SIZES[@]}"; do
    pair "r$r-ib_send_lat-$s" perftest ib_send_lat -d $dev -x "$gidx" -F -s "$s" -n $N
    pair "r$r-ib_write_lat-$s" perftest ib_write_lat -d $dev -x "$gidx" -F -s "$s" -n $N
  done
  if ((r % 2)); then order="4096 0"; else order="0 4096"; fi
  for t in $order; do pair "r$r-jmesh-lat-eager$t" "$t" lat -d $dev -x "$gidx" -s "$list" -n $N --warmup 200; done
  for t in $order; do
    pair "r$r-jmesh-lat-each-eager$t" "$t" lat -d $dev -x "$gidx" -s "$list" -n $N --warmup 200 --repost each
  done
  pair "r$r-ib_write_bw-4096" perftest ib_write_bw -d $dev -x "$gidx" -F -s 4096 -n 4000
  for t in $order; do pair "r$r-jmesh-bw-eager$t" "$t" bw -d $dev -x "$gidx" -s 4096 -n 4000 --warmup 800; done
  echo "eager[$TESTBED_NAME]: round $r of $rounds done"
done
testbed-barrier eager-done 400 || fail=1
exit $fail
