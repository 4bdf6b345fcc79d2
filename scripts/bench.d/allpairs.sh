#!/usr/bin/env bash
# Every ordered pair at once, checksummed, through the relays where two nodes share no link ('ring:8', 'mesh:5')
#
# Issue #36's last verbs goal, by hand (not part of ./test, whose topologies stop at four guests): boots each TOPOLOGY
# (default ring:8, then mesh:5) and runs in all its guests at once the real-verbs test that makes every node send to
# every other, through testbed/junit:
#   ring:N, line:N  RdmaRelayTest: through Fabric every node connects to every other, both ways at once; pairs without
#                   a shared subnet go through the verbs relays between them (up to N/2 - 1 on a ring). Per ordered
#                   pair 0 B, 1 B, 4097 B, 256 KiB + 5, 4 MiB + 1, 16 MiB and a grouped receive of 7 B + 1 MiB + 9
#                   + 0 B (22,286,360 bytes), every byte checked by CRC, every connection still up after two
#                   liveness timeouts, and the verbs resources back where they were.
#   mesh:N          RdmaMeshTest: every pair shares a link, so no relay: per ordered pair every size from 0 B to
#                   8 MiB + 1 (9,515,021 bytes) and then 32 messages in flight, grouped receives, receives announced
#                   together, one-sided writes and reads, every message checked by CRC.
# No test here of its own: these two tests are what ./test runs on line:3, line:4, ring:4 and pair to triangle.
#
#   scripts/bench allpairs [--classpath CP] [--launcher JAR] [testbed/run options] [TOPOLOGY...]
#
# CP defaults to the class path ./test gives the guests (each module's target/test-classpath.txt, which the Maven
# build writes); a machine without Maven (testbed/device-run) is given one built elsewhere. Guests get 2 GiB each
# (RdmaMeshTest registers 64 MiB + 4 KiB per peer) unless -m says otherwise. Prints per topology the ordered pairs,
# what each guest checked, the test's time and testbed/junit's count line; logs and reports in
# target/bench-runs/STAMP-allpairs/TOPOLOGY/. Exit: 0 when every topology passed, else the last failure's code
# (testbed/junit's: 1 a test failed, 96-99 and 137 the testbed's own failures).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"
cd "$ROOT"

cp= launcher= topts=(-m 2048) topos=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --classpath|-cp) cp=${2:?--classpath needs a value}; shift 2 ;;
    --launcher) launcher=${2:?--launcher needs a jar}; shift 2 ;;
    ring:*|mesh:*|line:*) topos+=("$1"); shift ;;
    -*) # a testbed/run option, with its value where it takes one
        if [[ $1 =~ ^(-m|--mem|-c|--cpus|-t|--timeout|--boot-timeout|-e|--accel|--tcg-thread|--link)$ ]]; then
          topts+=("$1" "${2:?$1 needs a value}"); shift 2
        else topts+=("$1"); shift; fi ;;
    *) jmesh_die "allpairs: unexpected '$1' (topologies: ring:N, line:N, mesh:N)" ;;
  esac
done
[[ ${#topos[@]} -gt 0 ]] || topos=(ring:8 mesh:5)
if [[ -z $cp ]]; then   # as scripts/testbed-suite.sh builds it for ./test
  for m in verbs-bindings transport benchmarks; do
    [[ -f $m/target/test-classpath.txt ]] \
      || jmesh_die "allpairs: no $m/target/test-classpath.txt: build first (mvn -o package -DskipTests), or pass --classpath"
    cp+=${cp:+:}$ROOT/$m/target/test-classes:$ROOT/$m/target/classes:$(cat "$m/target/test-classpath.txt")
  done
fi
largs=(); [[ -n $launcher ]] && largs=(--launcher "$launcher")
out=$ROOT/target/bench-runs/$(date +%Y%m%d-%H%M%S)-allpairs
mkdir -p "$out"
rc=0
for topo in "${topos[@]}"; do
  case $topo in
    mesh:*) test=io.jmesh.transport.rdma.RdmaMeshTest ;;
    *) test=io.jmesh.transport.rdma.RdmaRelayTest ;;
  esac
  d=$out/${topo/:/}; n=${topo#*:}
  t0=$SECONDS
  testbed/junit "${largs[@]}" "${topts[@]}" --out "$d/run" --reports "$d/reports" "$topo" --classpath "$cp" \
    -- --select-class "$test" > "$d.log" 2>&1
  r=$?; [[ $r == 0 ]] || rc=$r
  {
    echo "== $topo: ${test##*.}, $((n * (n - 1))) ordered pairs at once, exit $r, $((SECONDS - t0)) s boot to end"
    # what each guest says it checked (RdmaRelayTest: messages and relayed peers, the traffic's time)
    grep -h -E ': checked |traffic ran | connected: ' "$d"/run/*/output.log 2>/dev/null | sed 's/^/  /'
    # the tests' own times, from the guests' reports
    for x in "$d"/reports/*/TEST-*.xml; do
      [[ -f $x ]] || continue
      g=$(basename "$(dirname "$x")")
      grep -o '<testcase [^>]*>' "$x" | sed -E 's/<testcase name="([^"]*)".* time="([^"]*)".*/\1 \2/' \
        | awk -v g="$g" '{ printf "  %s: %s %s s\n", g, $1, $2 }'
    done
    grep -E '^testbed: [0-9]+ passed' "$d.log"
  } | tee "$d-summary.txt"
done
echo "allpairs: $out (exit $rc)"
exit $rc
