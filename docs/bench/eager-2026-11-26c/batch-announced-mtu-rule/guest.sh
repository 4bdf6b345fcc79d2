#!/usr/bin/env bash
# A/B: small receives posted with MORE held (A, HEAD) or announced with the batch (B)
set -u
rounds=${1:-2}
JA=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "/tmp/snapA/jmesh-benchmarks.jar:/tmp/snapA/lib/*" io.jmesh.cli.Jmesh)
JB=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "/tmp/snapB/jmesh-benchmarks.jar:/tmp/snapB/lib/*" io.jmesh.cli.Jmesh)
dev=rxe0; v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}; v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
out=$TESTBED_OUT/ab; mkdir -p "$out"; step=0
run() { # NAME VARIANT(A|B|perftest) THRESHOLD ARGS...
  local name=$1 var=$2 thr=$3; shift 3; local port=$((25200 + step)); step=$((step + 1))
  if [[ $var == perftest ]]; then
    if [[ $TESTBED_NAME == b ]]; then timeout 300 "$@" -p $port > "$out/$name-server.log" 2>&1
    else testbed-retry 60 timeout --foreground 240 "$@" -p $port "$peer" > "$out/$name.log" 2>&1; fi
    return
  fi
  local -n J=J$var
  if [[ $TESTBED_NAME == b ]]; then
    JMESH_EAGER_THRESHOLD=$thr timeout 400 "${J[@]}" "$@" -p $port --timeout 120 > "$out/$name-server.log" 2>&1
  else
    JMESH_EAGER_THRESHOLD=$thr timeout 420 "${J[@]}" "$@" -p $port --timeout 120 "$peer" > "$out/$name.log" 2>&1
  fi || echo "ab[$TESTBED_NAME]: FAILED $name"
}
for ((r = 1; r <= rounds; r++)); do
  for s in 64 4096; do run "r$r-ib_send_lat-$s" perftest 0 ib_send_lat -d $dev -x "$gidx" -F -s "$s" -n 2000; done
  if ((r % 2)); then order="A B"; else order="B A"; fi
  for x in $order; do run "r$r-lat-eager-$x" $x 4096 lat -d $dev -x "$gidx" -s 64,4056,4096 -n 2000 --warmup 200 --settle 30; done
  run "r$r-lat-noeager" A 0 lat -d $dev -x "$gidx" -s 64,4056,4096 -n 2000 --warmup 200 --settle 30
  run "r$r-ib_write_bw-4096" perftest 0 ib_write_bw -d $dev -x "$gidx" -F -s 4096 -n 4000
  for x in $order; do run "r$r-bw-eager-$x" $x 4096 bw -d $dev -x "$gidx" -s 4096 -n 4000 --warmup 800 --settle 30; done
  run "r$r-bw-noeager" A 0 bw -d $dev -x "$gidx" -s 4096 -n 4000 --warmup 800 --settle 30
  echo "ab[$TESTBED_NAME]: round $r done $(date +%T)"
done
testbed-barrier ab-done 400
