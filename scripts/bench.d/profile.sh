#!/usr/bin/env bash
# Where a round trip's CPU goes: perf in the client guest during ib_send_lat and jmesh lat ('pair')
#
# Where a round trip's CPU goes, in the Soft-RoCE testbed, by hand (not part of ./test): a CPU profile of the client
# guest of 'pair' (perf record -a, cpu-clock, 25 s) while ib_send_lat runs, then while jmesh lat (isend/irecv, eager
# path on) runs, at one message size. Needs perf on this machine (Debian: apt-get install linux-perf); the guests run
# this machine's programs. JIT-compiled Java shows by method (-XX:+DumpPerfMapAtExit, -XX:+PreserveFramePointer).
#   scripts/bench profile [BYTES]      (default 64)
# Reports: target/bench-runs/STAMP-profile/a/out/profile/{send,jmesh}-{dso,sym}.txt and the two latency logs.
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"
cd "$ROOT"
size=${1:-64}
command -v perf > /dev/null || jmesh_die "perf not found: install it (Debian: apt-get install linux-perf), the guests run it"
jmesh_find_jdk
jmesh_bench_snapshot profile
rd=$ROOT/target/bench-runs/$stamp-profile
testbed/run --out "$rd" -t 900 -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP pair -- \
    bash "$ROOT/scripts/bench-profile-guest.sh" "$size"
rc=$?
for t in send jmesh; do
  echo "== $t: share of the client guest's CPU samples by program and object"
  head -12 "$rd/a/out/profile/$t-dso.txt" 2>/dev/null
done
exit $rc
