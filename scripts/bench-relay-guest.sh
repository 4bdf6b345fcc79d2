#!/usr/bin/env bash
# Runs inside the testbed guests of 'line:3' for scripts/bench relay (not by hand). a is the client; c serves the
# relayed pair (a -> c through b), b serves the direct pair (a -> b) with route discovery off, so only b's
# 'jmesh relay' answers discovery and relays. The out-of-band TCP exchange of 'jmesh bw' between a and c goes through
# b's kernel (IP forwarding and two static routes set here); jmesh's data path does not use them: it picks links by
# subnet, and a and c share none. Rounds interleave relayed and direct, so both see the same host load. A third
# figure per size, 'ceiling', runs a -> b and b -> c direct at once (see both() below).
set -uo pipefail
rounds=${1:-2}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
SIZES=(65536:400 262144:150 1048576:60 4194304:20)
out=$TESTBED_OUT/relay; mkdir -p "$out"
# a relayed handshake waits for three cold JVMs under TCG (the relay's, the listener's accept): give it a minute
export JMESH_HANDSHAKE_TIMEOUT_MS=${JMESH_HANDSHAKE_TIMEOUT_MS:-60000}
case $TESTBED_NAME in
  a) ip route replace 192.168.101.0/24 via 192.168.100.2 ;;
  b) sysctl -qw net.ipv4.ip_forward=1
     "${J[@]}" relay > "$out/relay.log" 2>&1 & relay=$! ;;
  c) ip route replace 192.168.100.0/24 via 192.168.101.2 ;;
esac
testbed-barrier relay-ready 120
step=0
# duo NAME SERVER ARGS...: SERVER (b or c) serves, a connects to it; a port of its own per step
duo() {
  local name=$1 server=$2; shift 2; local port=$((22000 + step)); step=$((step + 1))
  local ip; [[ $server == b ]] && ip=192.168.100.2 || ip=192.168.101.3
  if [[ $TESTBED_NAME == "$server" ]]; then
    if [[ $server == b ]]; then
      JMESH_ROUTE_PORT=0 timeout 400 "${J[@]}" "$@" -d rxe0 -p $port --timeout 180 > "$out/$name-server.log" 2>&1
    else
      timeout 400 "${J[@]}" "$@" -p $port --timeout 180 > "$out/$name-server.log" 2>&1
    fi
  elif [[ $TESTBED_NAME == a ]]; then
    timeout 420 "${J[@]}" "$@" -p $port --timeout 180 "$ip" > "$out/$name.log" 2>&1 \
      || { echo "relay-bench[a]: FAILED: $name"; tail -n 15 "$out/$name.log" | sed 's/^/    /'; }
  fi
}
# both NAME ARGS...: a -> b and b -> c at once, each for the same time: b receives and sends at once, as a relay
# does, so the two flows together show what b's one vCPU can forward (the testbed's ceiling for any relay through b)
both() {
  local name=$1; shift; local p1=$((22000 + step)) p2=$((22001 + step)); step=$((step + 2))
  testbed-barrier "$name" 600
  case $TESTBED_NAME in
    a) timeout 420 "${J[@]}" "$@" -p $p1 --timeout 180 192.168.100.2 > "$out/$name-in.log" 2>&1 \
         || { echo "relay-bench[a]: FAILED: $name"; tail -n 15 "$out/$name-in.log" | sed 's/^/    /'; } ;;
    b) JMESH_ROUTE_PORT=0 timeout 400 "${J[@]}" "$@" -d rxe0 -p $p1 --timeout 180 > "$out/$name-in-server.log" 2>&1 &
       local srv=$!
       JMESH_ROUTE_PORT=0 timeout 420 "${J[@]}" "$@" -p $p2 --timeout 180 192.168.101.3 > "$out/$name-out.log" 2>&1 \
         || { echo "relay-bench[b]: FAILED: $name"; tail -n 15 "$out/$name-out.log" | sed 's/^/    /'; }
       wait $srv ;;
    c) JMESH_ROUTE_PORT=0 timeout 400 "${J[@]}" "$@" -p $p2 --timeout 180 > "$out/$name-out-server.log" 2>&1 ;;
  esac
}
for ((r = 1; r <= rounds; r++)); do
  for sn in "${SIZES[@]}"; do
    s=${sn%%:*} n=${sn##*:}
    duo "r$r-relayed-bw-$s" c bw -s "$s" -n "$n" --warmup $((n / 5))
    duo "r$r-direct-bw-$s" b bw -s "$s" -n "$n" --warmup $((n / 5))
    both "r$r-ceiling-bw-$s" bw -s "$s" -D 20 --warmup $((n / 5))
  done
  duo "r$r-relayed-latsend-2" c lat -s 2 -n 1000 --warmup 100
  duo "r$r-direct-latsend-2" b lat -s 2 -n 1000 --warmup 100
  echo "relay-bench[$TESTBED_NAME]: round $r of $rounds done"
done
testbed-barrier relay-bench-done 600
[[ $TESTBED_NAME == b ]] && { kill "$relay" 2>/dev/null; wait "$relay" 2>/dev/null; }
exit 0
