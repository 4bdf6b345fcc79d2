#!/usr/bin/env bash
# Runs inside the testbed guests for scripts/bench profile (not by hand): b serves, a is the client and records
# the profiles. ib_send_lat runs for 40 s (profiled from 8 s on); jmesh lat runs for 70 s after its warm-up
# (profiled from 75 s after its start, so the JIT has settled), both with the eager path on in jmesh.
set -uo pipefail
size=${1:-64}
J=("$JAVA_HOME/bin/java" -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -XX:+PreserveFramePointer
   --enable-native-access=ALL-UNNAMED -cp "$JMESH_CP" io.jmesh.cli.Jmesh)
dev=rxe0; v=TESTBED_DEV_${dev}_GIDX; gidx=${!v}; v=TESTBED_DEV_${dev}_PEER_IP; peer=${!v}
out=$TESTBED_OUT/profile; mkdir -p "$out"; fail=0
record() { # NAME DELAY: 25 s of samples of the whole guest, DELAY seconds from now
  sleep "$2"; perf record -e cpu-clock -F 1999 -a -g -o "/tmp/$1.data" -- sleep 25 > "$out/$1-record.log" 2>&1
}
if [[ $TESTBED_NAME == b ]]; then
  timeout 200 ib_send_lat -d $dev -x "$gidx" -F -s "$size" -D 40 -p 25100 > "$out/b-send.log" 2>&1 || fail=1
else
  record send 8 & rec=$!
  testbed-retry 60 timeout --foreground 200 ib_send_lat -d $dev -x "$gidx" -F -s "$size" -D 40 -p 25100 "$peer" \
      > "$out/send.log" 2>&1 || fail=1
  wait $rec
fi
testbed-barrier profile-send 300 || fail=1
export JMESH_EAGER_THRESHOLD=4096
if [[ $TESTBED_NAME == b ]]; then
  timeout 400 "${J[@]}" lat -d $dev -x "$gidx" -s "$size" -D 70 --warmup 2000 --settle 20 -p 25101 --timeout 120 \
      > "$out/b-jmesh.log" 2>&1 || fail=1
else
  record jmesh 75 & rec=$!
  timeout 400 "${J[@]}" lat -d $dev -x "$gidx" -s "$size" -D 70 --warmup 2000 --settle 20 -p 25101 --timeout 120 \
      "$peer" > "$out/jmesh.log" 2>&1 || fail=1
  wait $rec
  for t in send jmesh; do   # the JVM wrote its perf map at exit, so the reports come after both runs
    perf report -i "/tmp/$t.data" --no-children --sort comm,dso --stdio -g none 2>/dev/null | grep -v '^#' \
        | grep -v '^$' > "$out/$t-dso.txt"
    perf report -i "/tmp/$t.data" --no-children --sort comm,dso,sym --stdio -g none 2>/dev/null | grep -v '^#' \
        | grep -v '^$' | head -150 > "$out/$t-sym.txt"
  done
fi
testbed-barrier profile-done 300 || fail=1
exit $fail
