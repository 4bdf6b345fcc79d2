#!/usr/bin/env bash
# Runs inside the two guests of 'pair' for scripts/cli-testbed.sh: guest b serves 'jmesh doctor', 'jmesh bw' and
# 'jmesh lat' (twice: isend/irecv, then --op write); guest a runs their client sides against b and checks the output for facts. Prints one line per check
# ("cli-check PASS|FAIL name: detail"); exit 1 when a check failed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1
   -XX:ErrorFile="$TESTBED_RUN/hs_err_${TESTBED_NAME}_%p.log"
   -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
out=$TESTBED_OUT/cli; mkdir -p "$out"
peer=$TESTBED_DEV_rxe0_PEER_IP
fail=0
check() { # check NAME FILE GREP-PATTERN: the file must contain the pattern
  if grep -Eq "$3" "$2"; then echo "cli-check PASS $1"; else echo "cli-check FAIL $1: no /$3/ in $2:"; sed 's/^/    /' "$2"; fail=1; fi
}
if [[ $TESTBED_NAME == b ]]; then
  timeout 200 "${J[@]}" doctor --serve --count 1 --timeout 120 > "$out/doctor-serve.log" 2>&1 || fail=1
  timeout 200 "${J[@]}" bw --timeout 120 > "$out/bw-server.log" 2>&1 || fail=1
  timeout 200 "${J[@]}" lat --timeout 120 > "$out/lat-server.log" 2>&1 || fail=1
  timeout 200 "${J[@]}" lat --timeout 120 > "$out/lat-write-server.log" 2>&1 || fail=1
  [[ $fail == 0 ]] || { echo "cli-check FAIL servers on b:"; tail -n 20 "$out"/*.log | sed 's/^/    /'; }
else
  timeout 200 "${J[@]}" doctor --timeout 120 "$peer" > "$out/doctor.log" 2>&1
  rc=$?
  [[ $rc == 0 ]] && echo "cli-check PASS doctor exit status 0" || { echo "cli-check FAIL doctor exit status $rc"; fail=1; }
  check "doctor: ports ACTIVE" "$out/doctor.log" '^\s+\[ OK \] ports ACTIVE: rxe0:1$'
  check "doctor: RoCE v2 GID" "$out/doctor.log" "\[ OK \] RoCE v2 GID for every address: rxe0 $TESTBED_DEV_rxe0_IP/$TESTBED_DEV_rxe0_PREFIX -> GID $TESTBED_DEV_rxe0_GIDX$"
  check "doctor: real handshake with b" "$out/doctor.log" "\[ OK \] peer $peer \(tb-b\): queue-pair handshake over rxe0 $TESTBED_DEV_rxe0_IP/24 -> $peer/24 .* 65536 bytes sent and verified"
  check "doctor: MTU agrees" "$out/doctor.log" '\[ OK \] MTU on 192\.168\.100\.0/24 agrees'
  check "doctor: mesh drawn" "$out/doctor.log" "tb-a +rxe0 +$TESTBED_DEV_rxe0_IP +==\[ 192\.168\.100\.0/24 .* $peer +rxe0 +tb-b +RDMA ok"
  sleep 2
  timeout 200 "${J[@]}" bw --timeout 120 -s 65536 -n 200 --settle 5 "$peer" > "$out/bw.log" 2>&1 \
    && echo "cli-check PASS bw exit status 0" || { echo "cli-check FAIL bw exit status $?"; fail=1; }
  check "bw: result line" "$out/bw.log" '^ 65536 +200 +[0-9.]+ +[0-9.]+ +[0-9.]+$'
  check "bw: route over rxe0" "$out/bw.log" "Route +: rxe0 $TESTBED_DEV_rxe0_IP/24 -> $peer/24"
  sleep 2
  timeout 200 "${J[@]}" lat --timeout 120 -s 2 -n 100 --settle 5 "$peer" > "$out/lat.log" 2>&1 \
    && echo "cli-check PASS lat exit status 0" || { echo "cli-check FAIL lat exit status $?"; fail=1; }
  check "lat: result line" "$out/lat.log" '^ 2 +100( +[0-9.]+){7}$'
  sleep 2
  # one-sided RDMA writes polled in memory; two sizes, so the server must follow the size the client announces
  timeout 200 "${J[@]}" lat --op write --timeout 120 -s 4096,2 -n 100 --settle 5 "$peer" > "$out/lat-write.log" 2>&1 \
    && echo "cli-check PASS lat --op write exit status 0" || { echo "cli-check FAIL lat --op write exit status $?"; fail=1; }
  check "lat --op write: header" "$out/lat-write.log" 'one-sided RDMA write ping-pong'
  check "lat --op write: result lines" "$out/lat-write.log" '^ 2 +100( +[0-9.]+){7}$'
fi
testbed-barrier cli-done 300 || fail=1
exit $fail
