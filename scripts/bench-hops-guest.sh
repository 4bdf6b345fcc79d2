#!/usr/bin/env bash
# Runs inside the testbed guests of 'line:4' for scripts/bench hops (not by hand). a is the client of 'jmesh lat'
# and 'jmesh bw' to b (direct), c (through b's relay) and d (through b's and c's: records from b to c); b and c run
# 'jmesh relay'. A 'jmesh lat' server connects back to a, so c's and d's lat servers need route discovery: c's relay
# stops while c serves (one fabric per node answers discovery on its port; c's server relays meanwhile); the other
# servers need no route and run with discovery off. The out-of-band TCP exchange goes through the guests' kernels
# (IP forwarding and static routes set here); jmesh's data path picks links by subnet. Rounds interleave the three
# paths, so all see the same host load.
set -uo pipefail
rounds=${1:-1}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
out=$TESTBED_OUT/hops; mkdir -p "$out"
export JMESH_HANDSHAKE_TIMEOUT_MS=${JMESH_HANDSHAKE_TIMEOUT_MS:-60000}
case $TESTBED_NAME in
  a) ip route replace 192.168.101.0/24 via 192.168.100.2; ip route replace 192.168.102.0/24 via 192.168.100.2 ;;
  b) sysctl -qw net.ipv4.ip_forward=1; ip route replace 192.168.102.0/24 via 192.168.101.3
     "${J[@]}" relay > "$out/relay.log" 2>&1 & relay=$! ;;
  c) sysctl -qw net.ipv4.ip_forward=1; ip route replace 192.168.100.0/24 via 192.168.101.2
     "${J[@]}" relay > "$out/relay.log" 2>&1 & relay=$! ;;
  d) ip route replace 192.168.100.0/24 via 192.168.102.3; ip route replace 192.168.101.0/24 via 192.168.102.3 ;;
esac
# started_relay LOG: waits until the relay there has opened its fabric (it answers route discovery from then on)
started_relay() {
  for ((i = 0; i < 480; i++)); do grep -q "jmesh relay: relaying" "$1" 2>/dev/null && return 0; sleep 0.5; done
  echo "hops-bench[$TESTBED_NAME]: the relay did not start: $(tail -n 3 "$1")"
}
[[ $TESTBED_NAME == b || $TESTBED_NAME == c ]] && started_relay "$out/relay.log"
testbed-barrier hops-ready 300
sleep 15                                   # a few discovery rounds: b learns c's subnets, c learns b's
step=0
# duo NAME SERVER ARGS...: SERVER (b, c or d) serves, a connects to it; a port of its own per step
duo() {
  local name=$1 server=$2; shift 2; local port=$((22000 + step)); step=$((step + 1))
  local ip; case $server in b) ip=192.168.100.2 ;; c) ip=192.168.101.3 ;; d) ip=192.168.102.4 ;; esac
  if [[ $TESTBED_NAME == "$server" && ($server == b || $1 == bw) ]]; then
    JMESH_ROUTE_PORT=0 timeout 400 "${J[@]}" "$@" -p $port --timeout 180 > "$out/$name-server.log" 2>&1
  elif [[ $TESTBED_NAME == "$server" ]]; then
    [[ $server == c ]] && { kill "$relay"; wait "$relay" 2>/dev/null; }
    timeout 400 "${J[@]}" "$@" -p $port --timeout 180 > "$out/$name-server.log" 2>&1
    # discovery takes a while to learn the new relay's routes again (b passes them on in its rounds)
    if [[ $server == c ]]; then
      "${J[@]}" relay > "$out/relay-again.log" 2>&1 & relay=$!
      started_relay "$out/relay-again.log"; sleep 15
    fi
  elif [[ $TESTBED_NAME == a ]]; then
    timeout 420 "${J[@]}" "$@" -p $port --timeout 180 "$ip" > "$out/$name.log" 2>&1 \
      || { echo "hops-bench[a]: FAILED: $name"; tail -n 15 "$out/$name.log" | sed 's/^/    /'; }
  fi
  testbed-barrier "$name" 600
}
for ((r = 1; r <= rounds; r++)); do
  # c's lat server stops c's relay for a while: the path through it goes first
  for t in 2:d 0:b 1:c; do
    duo "r$r-relays${t%%:*}-latsend-2" "${t##*:}" lat -s 2 -n 1000 --warmup 100
  done
  for t in 0:b 1:c 2:d; do
    duo "r$r-relays${t%%:*}-bw-1048576" "${t##*:}" bw -s 1048576 -n 60 --warmup 12
  done
  echo "hops-bench[$TESTBED_NAME]: round $r of $rounds done"
done
testbed-barrier hops-bench-done 600
[[ $TESTBED_NAME == b || $TESTBED_NAME == c ]] && { kill "$relay" 2>/dev/null; wait "$relay" 2>/dev/null; }
exit 0
