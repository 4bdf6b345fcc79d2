#!/usr/bin/env bash
# Relayed (through b's verbs relay) against direct, in the testbed ('line:3')
#
# Relayed against direct in the Soft-RoCE testbed, by hand (not part of ./test): on 'line:3' (a - b - c), 'jmesh bw'
# and 'jmesh lat' from a to c through b's verbs relay ('jmesh relay' on b) and from a to b directly, interleaved in
# one run on the same guests, at 64 KiB to 4 MiB; and, as the testbed's ceiling for any relay through b, a -> b and
# b -> c at once.
#
#   scripts/bench relay [--aa SECS] [ROUNDS]      (default 2)
#
# Writes docs/bench/testbed-relay.tsv and docs/bench/testbed-relay-summary.txt (medians over the rounds).
# --aa SECS: the resolution instead of the ceiling: per round one 'jmesh bw' per path over all sizes, SECS seconds
# each (one JVM start per path, not per size), relayed, direct and direct again (direct2: an A/A pair, the same
# path twice), the order reversed every other round; no ceiling and no latency. JMESH_RELAY_SIZES picks the sizes
# (default 65536,262144,1048576,4194304). Writes relay.tsv and relay-summary.txt into the run folder
# (target/bench-runs/STAMP-relay) instead. JMESH_BENCH_TESTBED_OPTS adds testbed/run options (--cpus 2, say).
#
# --guest ROUNDS: the guest half, run in the guests of 'line:3' by the host half (not by hand). a is the client; c
# serves the relayed pair (a -> c through b), b serves the direct pair (a -> b) with route discovery off, so only b's
# 'jmesh relay' answers discovery and relays. The out-of-band TCP exchange of 'jmesh bw' between a and c goes through
# b's kernel (IP forwarding and two static routes set here); jmesh's data path does not use them: it picks links by
# subnet, and a and c share none. Rounds interleave relayed and direct, so both see the same host load. A third
# figure per size, 'ceiling', runs a -> b and b -> c direct at once (see both() below).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

# the guest half: the host half below has testbed/run start this file with --guest in every guest
guest() {
  rounds=${1:-2} aa=${2:-0}
  J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
  SIZES=(65536:400 262144:150 1048576:60 4194304:20)
  out=$TESTBED_OUT/relay; mkdir -p "$out"
  # a relayed handshake waits for three cold JVMs under TCG (the relay's, the listener's accept): give it a minute
  export JMESH_HANDSHAKE_TIMEOUT_MS=${JMESH_HANDSHAKE_TIMEOUT_MS:-60000}
  case $TESTBED_NAME in
    a) ip route replace 192.168.101.0/24 via 192.168.100.2 ;;
    b) sysctl -qw net.ipv4.ip_forward=1
       "${J[@]}" relay > "$out/relay.log" 2>&1 & relay=$!
       jmesh_await_relay "$out/relay.log" ;;
    c) ip route replace 192.168.100.0/24 via 192.168.101.2 ;;
  esac
  testbed-barrier relay-ready 120
  step=0
  # duo NAME SERVER ARGS...: SERVER (b or c) serves, a connects to it; a port of its own per step. Every guest meets
  # first: a server that started while a was still busy with an earlier step could run out its --timeout unused
  duo() {
    local name=$1 server=$2; shift 2; local port=$((22000 + step)); step=$((step + 1))
    testbed-barrier "$name" 600
    local ip; [[ $server == b ]] && ip=192.168.100.2 || ip=192.168.101.3
    if [[ $TESTBED_NAME == "$server" ]]; then
      if [[ $server == b ]]; then
        JMESH_ROUTE_PORT=0 timeout 400 "${J[@]}" "$@" -d rxe0 -p $port --timeout 180 > "$out/$name-server.log" 2>&1
      else
        timeout 400 "${J[@]}" "$@" -p $port --timeout 180 > "$out/$name-server.log" 2>&1
      fi
    elif [[ $TESTBED_NAME == a ]]; then
      timeout 420 "${J[@]}" "$@" -p $port --timeout 180 "$ip" > "$out/$name.log" 2>&1 \
        || { echo "relay-bench[a]: FAILED: $name"; tail -n 15 "$out/$name.log" | sed 's/^/    /'; }
    fi
  }
  # both NAME ARGS...: a -> b and b -> c at once, each for the same time: b receives and sends at once, as a relay
  # does, so the two flows together show what b's one vCPU can forward (the testbed's ceiling for any relay through b)
  both() {
    local name=$1; shift; local p1=$((22000 + step)) p2=$((22001 + step)); step=$((step + 2))
    testbed-barrier "$name" 600
    case $TESTBED_NAME in
      a) timeout 420 "${J[@]}" "$@" -p $p1 --timeout 180 192.168.100.2 > "$out/$name-in.log" 2>&1 \
           || { echo "relay-bench[a]: FAILED: $name"; tail -n 15 "$out/$name-in.log" | sed 's/^/    /'; } ;;
      b) JMESH_ROUTE_PORT=0 timeout 400 "${J[@]}" "$@" -d rxe0 -p $p1 --timeout 180 > "$out/$name-in-server.log" 2>&1 &
         local srv=$!
         JMESH_ROUTE_PORT=0 timeout 420 "${J[@]}" "$@" -p $p2 --timeout 180 192.168.101.3 > "$out/$name-out.log" 2>&1 \
           || { echo "relay-bench[b]: FAILED: $name"; tail -n 15 "$out/$name-out.log" | sed 's/^/    /'; }
         wait $srv ;;
      c) JMESH_ROUTE_PORT=0 timeout 400 "${J[@]}" "$@" -p $p2 --timeout 180 > "$out/$name-out-server.log" 2>&1 ;;
    esac
  }
  if [[ $aa != 0 ]]; then   # --aa SECS: one JVM per path and round, every size for SECS
    local list=${JMESH_RELAY_SIZES:-65536,262144,1048576,4194304} order
    for ((r = 1; r <= rounds; r++)); do
      order="relayed direct direct2"; ((r % 2)) || order="direct2 direct relayed"
      for p in $order; do
        duo "r$r-$p-bw-all" "$([[ $p == relayed ]] && echo c || echo b)" bw -s "$list" -D "$aa" --warmup 20 --settle 10
      done
      echo "relay-bench[$TESTBED_NAME]: round $r of $rounds done"
    done
    rounds=0
  fi
  for ((r = 1; r <= rounds; r++)); do
    for sn in "${SIZES[@]}"; do
      s=${sn%%:*} n=${sn##*:}
      duo "r$r-relayed-bw-$s" c bw -s "$s" -n "$n" --warmup $((n / 5))
      duo "r$r-direct-bw-$s" b bw -s "$s" -n "$n" --warmup $((n / 5))
      both "r$r-ceiling-bw-$s" bw -s "$s" -D 20 --warmup $((n / 5))
    done
    duo "r$r-relayed-latsend-2" c lat -s 2 -n 1000 --warmup 100
    duo "r$r-direct-latsend-2" b lat -s 2 -n 1000 --warmup 100
    echo "relay-bench[$TESTBED_NAME]: round $r of $rounds done"
  done
  testbed-barrier relay-bench-done 600
  [[ $TESTBED_NAME == b ]] && { kill "$relay" 2>/dev/null; wait "$relay" 2>/dev/null; }
  exit 0
}

[[ ${1:-} == --guest ]] && { shift; guest "$@"; exit; }
cd "$ROOT"
aa=0
if [[ ${1:-} == --aa ]]; then aa=${2:-}; shift 2 || true; fi
rounds=${1:-2}
[[ $rounds =~ ^[0-9]+$ && $aa =~ ^[0-9]+$ ]] && (( rounds >= 1 )) || jmesh_die "usage: scripts/bench relay [--aa SECS] [ROUNDS]"
jmesh_bench_java
jmesh_bench_snapshot relay
rd=$ROOT/target/bench-runs/$stamp-relay
read -r -a topts <<< "${JMESH_BENCH_TESTBED_OPTS:-}"
testbed/run --out "$rd" -t $((rounds * 1700 + 300)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP -e JMESH_RELAY_SIZES="${JMESH_RELAY_SIZES:-}" \
    "${topts[@]}" line:3 -- \
    bash "$ROOT/scripts/bench.d/relay.sh" --guest "$rounds" "$aa"
rc=$?
[[ $rc == 0 ]] || jmesh_say "the run failed (exit $rc); what finished is summarised below (logs: $rd)"
mkdir -p docs/bench
tsv=docs/bench/testbed-relay.tsv summary=docs/bench/testbed-relay-summary.txt
[[ $aa == 0 ]] || tsv=$rd/relay.tsv summary=$rd/relay-summary.txt
printf 'round\tpath\ttest\tbytes\tvalue\tunit\n' > "$tsv"
for f in "$rd"/a/out/relay/r*-*.log "$rd"/b/out/relay/r*-ceiling-*-out.log; do
  [[ -f $f && $f != *server.log ]] || continue
  b=$(basename "$f" .log); end=; [[ $b == *-in || $b == *-out ]] && { end=-${b##*-}; b=${b%-*}; }
  r=${b%%-*}; r=${r#r}; rest=${b#*-}; path=${rest%%-*}$end; rest=${rest#*-}
  test=${rest%%-*}; size=${rest#*-}
  if [[ $test == bw ]]; then   # one size per log, or every size (--aa: size "all"), each size's last row
    awk -v s="$size" -v r="$r" -v p="$path" '$1 ~ /^[0-9]+$/ && NF >= 5 && (s == "all" || $1 == s) { v[$1] = $4 }
      END { for (k in v) printf "%s\t%s\tbw\t%s\t%s\tMB/s\n", r, p, k, v[k] }' "$f"
  else
    awk -v s="$size" -v r="$r" -v p="$path" '$1 == s && NF >= 9 { printf "%s\t%s\tlatsend\t%s\t%s\tusec\n", r, p, $1, $5 }' "$f" | tail -1
  fi
done | sort -k3,3 -k4,4n -k1,1n -k2,2 >> "$tsv"
{
  echo "# relayed (a -> c through b's verbs relay) against direct (a -> b) on the testbed's line:3, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# $rounds rounds, interleaved; $([[ $aa == 0 ]] && echo "medians over the rounds" || echo "each round, $aa s per size") (Soft-RoCE under QEMU TCG: compare ratios, not absolutes)"
  if [[ $aa != 0 ]]; then
    # per round: relayed / direct and the A/A pair direct2 / direct; then their range over the rounds
    printf '%-8s %10s %6s %10s %10s %10s %8s %8s\n' test bytes round direct direct2 relayed ratio A/A
    awk -F'\t' 'NR > 1 { k = $4 "\t" $1; v[k, $2] = $5; keys[k] = 1 }
      END { for (k in keys) { split(k, kk, "\t"); d = v[k, "direct"]; d2 = v[k, "direct2"]; x = v[k, "relayed"]
              printf "%-8s %10s %6s %10s %10s %10s %8s %8s\n", "bw", kk[1], kk[2], d, d2, x,
                (d > 0 && x > 0) ? sprintf("%.2f", x / d) : "-", (d > 0 && d2 > 0) ? sprintf("%.2f", d2 / d) : "-" } }' "$tsv" \
      | sort -k2,2n -k3,3n
    echo "# A/A = direct2 / direct: the same path twice in one round, what this testbed can resolve"
  else
  printf '%-8s %10s %12s %12s %8s %12s %10s\n' test bytes direct relayed ratio ceiling of-ceiling
  awk -F'\t' "$JMESH_AWK_MEDIAN"'
    NR > 1 { k = $3 "\t" $4; v[k, $2] = v[k, $2] " " $5; keys[k] = 1 }
    END { for (k in keys) { split(k, kk, "\t"); d = median(v[k, "direct"]); x = median(v[k, "relayed"])
            ci = median(v[k, "ceiling-in"]); co = median(v[k, "ceiling-out"]); c = (ci != "" && co != "") ? sprintf("%.2f", (ci + co) / 2) : ""
            printf "%-8s %10s %12s %12s %8s %12s %10s\n", kk[1], kk[2], d, x, (d > 0 && x != "") ? sprintf("%.2f", x / d) : "-",
              c == "" ? "-" : c, (c > 0 && x != "") ? sprintf("%.2f", x / c) : "-" } }' "$tsv" \
    | sort -k1,1 -k2,2n
  fi
  echo "# bw: MB/s (BW average), ratio = relayed / direct (goal >= 0.80); ceiling = the mean of a -> b and b -> c run at"
  echo "# once (b receiving and sending at once on its one vCPU, as a relay through b must: what b can forward if a byte"
  echo "# in costs it what a byte out does; the two flows are in the .tsv), of-ceiling = relayed / ceiling"
  echo "# latsend: t_typical usec of isend/irecv (half a round trip), ratio = relayed / direct; relayed - direct = the"
  echo "# latency one relay adds"
} > "$summary"
cat "$summary"
exit $rc
