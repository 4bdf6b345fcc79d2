#!/usr/bin/env bash
# The eager path against perftest and against the receiver-driven path, in the testbed ('pair')
#
# The eager path against perftest and against the receiver-driven path, in the Soft-RoCE testbed, by hand (not part
# of ./test): scripts/bench-eager-guest.sh on 'pair', then a table of t_typical (us) per size (jmesh lat with its
# receives reposted in batches, and with --repost each) and of BW average at 4 KiB.
# Logs: target/bench-runs/STAMP-eager/a/out/eager/.
#   scripts/bench eager [ROUNDS]      (default 2)
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"
cd "$ROOT"
rounds=${1:-2}
jmesh_find_jdk
jmesh_bench_snapshot eager
rd=$ROOT/target/bench-runs/$stamp-eager
testbed/run --out "$rd" -t $((rounds * 900 + 300)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP pair -- \
    bash "$ROOT/scripts/bench-eager-guest.sh" "$rounds"
rc=$?
d=$rd/a/out/eager
# perftest and jmesh print t_typical in column 5 of the latency table, BW average in column 4 of the bw table
printf '%-6s %-7s %12s %12s %12s %12s %12s %12s\n' round bytes ib_send_lat ib_write_lat "eager" "no-eager" \
    "eager each" "no-eager each"
for f in "$d"/r*-ib_send_lat-*.log; do
  [[ -f $f ]] || continue
  b=$(basename "$f" .log); r=${b%%-*}; s=${b##*-}
  col() { awk -v s="$s" '$1 == s && NF >= 5 { v = $5 } END { print v }' "$1" 2>/dev/null; }
  printf '%-6s %-7s %12s %12s %12s %12s %12s %12s\n' "$r" "$s" "$(col "$f")" "$(col "$d/$r-ib_write_lat-$s.log")" \
      "$(col "$d/$r-jmesh-lat-eager4096.log")" "$(col "$d/$r-jmesh-lat-eager0.log")" \
      "$(col "$d/$r-jmesh-lat-each-eager4096.log")" "$(col "$d/$r-jmesh-lat-each-eager0.log")"
done
printf '\n%-6s %14s %14s %14s   (4096 bytes, BW average MB/s)\n' round ib_write_bw "jmesh eager" "jmesh no-eager"
for f in "$d"/r*-ib_write_bw-4096.log; do
  [[ -f $f ]] || continue
  r=$(basename "$f" | cut -d- -f1)
  bw() { awk '$1 == 4096 && NF >= 4 { v = $4 } END { print v }' "$1" 2>/dev/null; }
  printf '%-6s %14s %14s %14s\n' "$r" "$(bw "$f")" "$(bw "$d/$r-jmesh-bw-eager4096.log")" "$(bw "$d/$r-jmesh-bw-eager0.log")"
done
exit $rc
