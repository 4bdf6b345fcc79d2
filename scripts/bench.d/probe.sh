#!/usr/bin/env bash
# Where the gap between jmesh bw and ib_write_bw at 64 KiB comes from, in the testbed ('pair')
#
# One round of 64 KiB bandwidth runs in the guests of 'pair', by hand (not part of ./test), that tell where the gap
# between jmesh bw and ib_write_bw comes from (pipeline depth, connections, queue pairs, two-sided receive).
# Results: docs/bench/testbed-probe.txt.
#
#   scripts/bench probe      (builds, snapshots the jars; logs: target/bench-runs/STAMP-probe/a/out/probe/)
#
# --guest: the guest half, run in the guests by the host half; a prints one line per run. It also runs by hand on a
# build (JMESH_CP, passed with -e, may point at a snapshot of the jars as scripts/bench testbed makes one):
#   testbed/run --out target/bench-runs/probe -t 900 -e JAVA_HOME pair -- bash "$PWD/scripts/bench.d/probe.sh" --guest
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

# the guest half: the host half below has testbed/run start this file with --guest in every guest
guest() {
  J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:ErrorFile="$TESTBED_RUN/hs_err_${TESTBED_NAME}_%p.log"
     -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
  jmesh_testbed_link rxe0
  out=$TESTBED_OUT/probe; mkdir -p "$out"
  step=0 fail=0
  pair() { # pair NAME ENV TOOL ARGS...
    local name=$1 env=$2 tool=$3; shift 3
    local port=$((22000 + step)); step=$((step + 1))
    if [[ $TESTBED_NAME == b ]]; then
      if [[ $tool == perftest ]]; then timeout 300 "$@" -p "$port" > "$out/$name-server.log" 2>&1
      else timeout 300 env $env "${J[@]}" "$@" -p "$port" --timeout 120 > "$out/$name-server.log" 2>&1; fi
    else
      if [[ $tool == perftest ]]; then timeout 320 testbed-retry 60 timeout --foreground 240 "$@" -p "$port" "$peer" > "$out/$name.log" 2>&1
      else timeout 320 env $env "${J[@]}" "$@" -p "$port" --timeout 120 "$peer" > "$out/$name.log" 2>&1; fi
      echo "probe: $name: $(awk '$1 == 65536 && NF >= 5 { print $4 " MB/s" }' "$out/$name.log" | tail -1)"
    fi
  }
  B=(-d $dev -x "$gidx" -s 65536 -n 500)
  pair ib_write_bw-t128 "" perftest ib_write_bw "${B[@]}" -F || fail=1
  pair ib_write_bw-t32 "" perftest ib_write_bw "${B[@]}" -F -t 32 || fail=1
  pair ib_send_bw "" perftest ib_send_bw "${B[@]}" -F || fail=1
  pair jmesh-q1 "" jmesh bw "${B[@]}" --warmup 100 || fail=1
  pair jmesh-q4 "" jmesh bw "${B[@]}" --warmup 100 -q 4 || fail=1
  pair jmesh-qps4 "JMESH_QPS_PER_CONNECTION=4" jmesh bw "${B[@]}" --warmup 100 || fail=1
  pair jmesh-t8 "" jmesh bw "${B[@]}" --warmup 100 -t 8 || fail=1
  testbed-barrier probe-done 300 || fail=1
  exit $fail
}

[[ ${1:-} == --guest ]] && { shift; guest "$@"; exit; }
cd "$ROOT"
jmesh_find_jdk
jmesh_bench_snapshot probe
rd=$ROOT/target/bench-runs/$stamp-probe
testbed/run --out "$rd" -t 900 -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP pair -- bash "$ROOT/scripts/bench.d/probe.sh" --guest
rc=$?
[[ $rc == 0 ]] || jmesh_say "the run failed (exit $rc; logs: $rd)"
exit $rc
