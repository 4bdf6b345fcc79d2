#!/usr/bin/env bash
# Where a round trip's CPU goes: perf in the client guest during ib_send_lat and jmesh lat ('pair')
#
# Where a round trip's CPU goes, in the Soft-RoCE testbed, by hand (not part of ./test): a CPU profile of the client
# guest of 'pair' (perf record -a, cpu-clock, 25 s) while ib_send_lat runs, then while jmesh lat (isend/irecv, eager
# path on) runs, at one message size. Needs perf on this machine (Debian: apt-get install linux-perf); the guests run
# this machine's programs. JIT-compiled Java shows by method (-XX:+DumpPerfMapAtExit, -XX:+PreserveFramePointer).
#   scripts/bench profile [BYTES]      (default 64)
# Reports: target/bench-runs/STAMP-profile/a/out/profile/{send,jmesh}-{dso,sym}.txt and the two latency logs.
#
# --guest BYTES: the guest half, run in the guests by the host half (not by hand): b serves, a is the client and
# records the profiles. ib_send_lat runs for 40 s (profiled from 8 s on); jmesh lat runs for 70 s after its warm-up
# (profiled from 75 s after its start, so the JIT has settled), both with the eager path on in jmesh.
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

# the guest half: the host half below has testbed/run start this file with --guest in every guest
guest() {
  size=${1:-64}
  J=("$JAVA_HOME/bin/java" -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -XX:+PreserveFramePointer
     --enable-native-access=ALL-UNNAMED -cp "$JMESH_CP" io.jmesh.cli.Jmesh)
  jmesh_testbed_link rxe0
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
}

[[ ${1:-} == --guest ]] && { shift; guest "$@"; exit; }
cd "$ROOT"
size=${1:-64}
command -v perf > /dev/null || jmesh_die "perf not found: install it (Debian: apt-get install linux-perf), the guests run it"
jmesh_find_jdk
jmesh_bench_snapshot profile
rd=$ROOT/target/bench-runs/$stamp-profile
testbed/run --out "$rd" -t 900 -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP pair -- \
    bash "$ROOT/scripts/bench.d/profile.sh" --guest "$size"
rc=$?
for t in send jmesh; do
  echo "== $t: share of the client guest's CPU samples by program and object"
  head -12 "$rd/a/out/profile/$t-dso.txt" 2>/dev/null
done
exit $rc
