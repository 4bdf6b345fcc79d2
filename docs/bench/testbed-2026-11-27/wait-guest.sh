#!/usr/bin/env bash
# ad-hoc, 2026-11-27: how the wait decides the testbed's figures. Per round on one link of 'pair' (b serves, a is the
# client): ib_send_lat with and without -e (sleeping on completion events) at 2, 64 and 4096 bytes; jmesh lat with the
# eager path, receives reposted each, with --poll spin, yield and park; ib_write_bw (and -e, which perftest refuses for
# WRITE) and jmesh bw --poll spin and park at 4 KiB. From the repository root:
#   testbed/run --out DIR -t 2400 -e JAVA_HOME pair -- bash docs/bench/testbed-2026-11-27/wait-guest.sh 2
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
rounds=${1:-2}
SIZES=(2 64 512 4096)
N=2000
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
dev=rxe0; v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}; v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
out=$TESTBED_OUT/wait; mkdir -p "$out"; step=0; fail=0
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
list=2,64,4096
for ((r = 1; r <= rounds; r++)); do
  for s in 2 64 4096; do
    pair "r$r-ib_send_lat-$s" perftest ib_send_lat -d $dev -x "$gidx" -F -s "$s" -n $N
    pair "r$r-ib_send_lat_e-$s" perftest ib_send_lat -d $dev -x "$gidx" -F -s "$s" -n $N -e
  done
  for m in spin yield park; do
    pair "r$r-jmesh-lat-$m" 4096 lat -d $dev -x "$gidx" -s "$list" -n $N --warmup 200 --repost each --poll $m
  done
  pair "r$r-ib_write_bw-4096" perftest ib_write_bw -d $dev -x "$gidx" -F -s 4096 -n 4000
  pair "r$r-ib_write_bw_e-4096" perftest ib_write_bw -d $dev -x "$gidx" -F -s 4096 -n 4000 -e
  for m in spin park; do pair "r$r-jmesh-bw-$m" 4096 bw -d $dev -x "$gidx" -s 4096 -n 4000 --warmup 800 --poll $m; done
  echo "wait[$TESTBED_NAME]: round $r of $rounds done"
done
testbed-barrier wait-done 400 || fail=1
exit $fail
