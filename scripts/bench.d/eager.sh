#!/usr/bin/env bash
# The eager path against perftest and against the receiver-driven path, in the testbed ('pair')
#
# The eager path against perftest and against the receiver-driven path, in the Soft-RoCE testbed, by hand (not part
# of ./test): the guest half (--guest, below) on 'pair', then a table of t_typical (us) per size (jmesh lat with its
# receives reposted in batches, and with --repost each) and of BW average at 4 KiB.
# Logs: target/bench-runs/STAMP-eager/a/out/eager/.
#   scripts/bench eager [ROUNDS]      (default 2)
#
# --guest ROUNDS: the guest half, run in the guests by the host half (not by hand): b serves, a is the client. Per
# round, on the same link: ib_send_lat and ib_write_lat at each size, jmesh lat (isend/irecv) over all sizes with the
# eager path and with JMESH_EAGER_THRESHOLD=0 (every message receiver-driven, as before the eager path), both again
# with --repost each (every receive posted and announced on its own, as NCCL posts them), then at 4 KiB
# ib_write_bw against jmesh bw with and without the eager path. The order of the two jmesh runs switches per round.
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

# the guest half: the host half below has testbed/run start this file with --guest in every guest
guest() {
  rounds=${1:-2}
  SIZES=(2 64 512 4096)
  N=2000
  J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
  jmesh_testbed_link rxe0
  out=$TESTBED_OUT/eager; mkdir -p "$out"; step=0; fail=0
  pair() { # pair NAME perftest|EAGER_THRESHOLD ARGS...: the server on b, the client on a, on a port of its own
    local name=$1 how=$2; shift 2; local port=$((25000 + step)); step=$((step + 1))
    if [[ $how == perftest ]]; then
      if [[ $TESTBED_NAME == b ]]; then timeout 300 "$@" -p $port > "$out/$name-server.log" 2>&1
      else testbed-retry 60 timeout --foreground 240 "$@" -p $port "$peer" > "$out/$name.log" 2>&1; fi
    elif [[ $TESTBED_NAME == b ]]; then
      JMESH_EAGER_THRESHOLD=$how timeout 300 "${J[@]}" "$@" -p $port --timeout 120 > "$out/$name-server.log" 2>&1
    else
      JMESH_EAGER_THRESHOLD=$how timeout 320 "${J[@]}" "$@" -p $port --timeout 120 "$peer" > "$out/$name.log" 2>&1
    fi || { echo "eager[$TESTBED_NAME]: FAILED: $name"; fail=1; }
  }
  list=$(IFS=,; echo "${SIZES[*]}")
  for ((r = 1; r <= rounds; r++)); do
    for s in "${SIZES[@]}"; do
      pair "r$r-ib_send_lat-$s" perftest ib_send_lat -d $dev -x "$gidx" -F -s "$s" -n $N
      pair "r$r-ib_write_lat-$s" perftest ib_write_lat -d $dev -x "$gidx" -F -s "$s" -n $N
    done
    if ((r % 2)); then order="4096 0"; else order="0 4096"; fi
    for t in $order; do pair "r$r-jmesh-lat-eager$t" "$t" lat -d $dev -x "$gidx" -s "$list" -n $N --warmup 200; done
    for t in $order; do
      pair "r$r-jmesh-lat-each-eager$t" "$t" lat -d $dev -x "$gidx" -s "$list" -n $N --warmup 200 --repost each
    done
    pair "r$r-ib_write_bw-4096" perftest ib_write_bw -d $dev -x "$gidx" -F -s 4096 -n 4000
    for t in $order; do pair "r$r-jmesh-bw-eager$t" "$t" bw -d $dev -x "$gidx" -s 4096 -n 4000 --warmup 800; done
    echo "eager[$TESTBED_NAME]: round $r of $rounds done"
  done
  testbed-barrier eager-done 400 || fail=1
  exit $fail
}

[[ ${1:-} == --guest ]] && { shift; guest "$@"; exit; }
cd "$ROOT"
rounds=${1:-2}
jmesh_find_jdk
jmesh_bench_snapshot eager
rd=$ROOT/target/bench-runs/$stamp-eager
testbed/run --out "$rd" -t $((rounds * 900 + 300)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP pair -- \
    bash "$ROOT/scripts/bench.d/eager.sh" --guest "$rounds"
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
