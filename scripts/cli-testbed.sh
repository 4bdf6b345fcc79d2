#!/usr/bin/env bash
# The jmesh command line on real verbs, for ./test (about a minute): on the testbed's 'pair', 'jmesh doctor' with a
# real handshake to the peer, a short 'jmesh bw', 'jmesh lat' and 'jmesh lat --op write'; each output is checked for facts (routes, GID
# index, the perftest columns). Last line: "cli: N passed, N failed, 0 skipped".
#   scripts/cli-testbed.sh [testbed/run options]
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT"
[[ -f benchmarks/target/jmesh-benchmarks.jar ]] || { echo "cli: benchmarks/target/jmesh-benchmarks.jar is missing (build first)"; echo "cli: 0 passed, 1 failed, 0 skipped"; exit 1; }
# a run folder of our own: target/testbed may be a link into another tree, which the guests cannot follow
mkdir -p target/cli-runs
rd=target/cli-runs/$(date +%Y%m%d-%H%M%S)
log=$(mktemp)
testbed/run --out "$rd" -t 600 -e JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}" "$@" pair -- \
    bash "$ROOT/scripts/cli-guest.sh" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
passed=$(grep -c 'cli-check PASS' "$log")
failed=$(grep -c 'cli-check FAIL' "$log")
rm -f "$log"
if [[ $rc != 0 && $failed == 0 ]]; then
  echo "cli: the testbed run failed (exit $rc) before the checks reported (run folder $rd)"
  failed=1
fi
echo "cli: $passed passed, $failed failed, 0 skipped"
[[ $rc == 0 && $failed == 0 ]]
