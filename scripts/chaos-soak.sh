#!/usr/bin/env bash
# The chaos soak, full form (the unit tests run a 90 s form: ChaosSoakTest): a ring of jmesh nodes (TCP provider),
# each its own JVM, on loopback subnets as scripts/relay-lib.sh places them (4 nodes: A-B on 127.0.111, B-C .112,
# C-D .113, D-A .114), every ordered pair streaming sequence-numbered, CRC-checked messages through the relays, while
# one node at a time is frozen (SIGSTOP, then SIGCONT) or killed and restarted, at times drawn from the seed. At the
# end: the summary table (faults, detected, time to detect, bytes checked, losses), OUT/summary.txt, events.log,
# samples.csv and resources.svg (threads, descriptors and RSS of every node over time). docs/chaos-soak.md says what
# each line means and holds the last hour-long run's summary.
#   usage: scripts/chaos-soak.sh [--seconds 3600] [--seed 47] [--nodes 4] [--liveness-ms 3000] [--rate 50]
#                                [--net 127.0] [--first-link 111] [--route-port 47470] [--out target/chaos-soak]
#                                [--quiet-min-ms 10000] [--quiet-max-ms 40000]
#   CHAOS_SOAK_OPTS: more options, before those on the command line (the last of a name counts).
# Exit status: 0 every goal held, 1 one did not (the summary lists which), 2 bad use or no build.
set -euo pipefail
JMESH_ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
. "$JMESH_ROOT/scripts/lib.sh"
case "${1:-}" in -h|--help) sed -n '2,13p' "$0"; exit 0 ;; esac
jmesh_find_jdk
jmesh_build_if_stale
target=$JMESH_ROOT/benchmarks/target
cd "$JMESH_ROOT"
# the driver kills its nodes however it ends; the trap covers a driver killed by a signal it cannot catch
driver=
trap '[ -n "$driver" ] && kill "$driver" 2>/dev/null; wait 2>/dev/null' EXIT INT TERM
# shellcheck disable=SC2086
"$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$target/jmesh-benchmarks.jar:$target/lib/*" \
    io.jmesh.soak.ChaosSoak ${CHAOS_SOAK_OPTS:-} "$@" &
driver=$!
status=0
wait "$driver" || status=$?
driver=
exit "$status"
