#!/usr/bin/env bash
# Latency and bandwidth by the number of relays on the path, in the testbed ('line:4')
#
# Latency and bandwidth by the number of relays on the path, in the Soft-RoCE testbed, by hand (not part of ./test):
# on 'line:4' (a - b - c - d), 'jmesh lat' (2 bytes, isend/irecv) and 'jmesh bw' (1 MiB) from a to b (direct), to c
# (one relay) and to d (two relays), interleaved in one run on the same guests.
#
#   scripts/bench hops [ROUNDS]      (default 1)
#
# Writes docs/bench/testbed-hops.tsv and docs/bench/testbed-hops-summary.txt (medians over the rounds).
#
# --guest ROUNDS: the guest half, run in the guests of 'line:4' by the host half (not by hand). a is the client of
# 'jmesh lat' and 'jmesh bw' to b (direct), c (through b's relay) and d (through b's and c's: records from b to c); b
# and c run 'jmesh relay'. A 'jmesh lat' server connects back to a, so c's and d's lat servers need route discovery:
# c's relay stops while c serves (one fabric per node answers discovery on its port; c's server relays meanwhile);
# the other servers need no route and run with discovery off. The out-of-band TCP exchange goes through the guests'
# kernels (IP forwarding and static routes set here); jmesh's data path picks links by subnet. Rounds interleave the
# three paths, so all see the same host load.
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"

# the guest half: the host half below has testbed/run start this file with --guest in every guest
guest() {
  rounds=${1:-1}
  J=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "${JMESH_CP:-$ROOT/benchmarks/target/jmesh-benchmarks.jar:$ROOT/benchmarks/target/lib/*}" io.jmesh.cli.Jmesh)
  out=$TESTBED_OUT/hops; mkdir -p "$out"
  export JMESH_HANDSHAKE_TIMEOUT_MS=${JMESH_HANDSHAKE_TIMEOUT_MS:-60000}
  case $TESTBED_NAME in
    a) ip route replace 192.168.101.0/24 via 192.168.100.2; ip route replace 192.168.102.0/24 via 192.168.100.2 ;;
    b) sysctl -qw net.ipv4.ip_forward=1; ip route replace 192.168.102.0/24 via 192.168.101.3
       "${J[@]}" relay > "$out/relay.log" 2>&1 & relay=$!
       jmesh_await_relay "$out/relay.log" ;;
    c) sysctl -qw net.ipv4.ip_forward=1; ip route replace 192.168.100.0/24 via 192.168.101.2
       "${J[@]}" relay > "$out/relay.log" 2>&1 & relay=$!
       jmesh_await_relay "$out/relay.log" ;;
    d) ip route replace 192.168.100.0/24 via 192.168.102.3; ip route replace 192.168.101.0/24 via 192.168.102.3 ;;
  esac
  # started_relay LOG: waits until the relay there has opened its fabric (it answers route discovery from then on)
  started_relay() {
    for ((i = 0; i < 480; i++)); do grep -q "jmesh relay: relaying" "$1" 2>/dev/null && return 0; sleep 0.5; done
    echo "hops-bench[$TESTBED_NAME]: the relay did not start: $(tail -n 3 "$1")"
  }
  [[ $TESTBED_NAME == b || $TESTBED_NAME == c ]] && started_relay "$out/relay.log"
  testbed-barrier hops-ready 300
  sleep 15                                   # a few discovery rounds: b learns c's subnets, c learns b's
  step=0
  # duo NAME SERVER ARGS...: SERVER (b, c or d) serves, a connects to it; a port of its own per step
  duo() {
    local name=$1 server=$2; shift 2; local port=$((22000 + step)); step=$((step + 1))
    local ip; case $server in b) ip=192.168.100.2 ;; c) ip=192.168.101.3 ;; d) ip=192.168.102.4 ;; esac
    if [[ $TESTBED_NAME == "$server" && ($server == b || $1 == bw) ]]; then
      JMESH_ROUTE_PORT=0 timeout 400 "${J[@]}" "$@" -p $port --timeout 180 > "$out/$name-server.log" 2>&1
    elif [[ $TESTBED_NAME == "$server" ]]; then
      [[ $server == c ]] && { kill "$relay"; wait "$relay" 2>/dev/null; }
      timeout 400 "${J[@]}" "$@" -p $port --timeout 180 > "$out/$name-server.log" 2>&1
      # discovery takes a while to learn the new relay's routes again (b passes them on in its rounds)
      if [[ $server == c ]]; then
        "${J[@]}" relay > "$out/relay-again.log" 2>&1 & relay=$!
        started_relay "$out/relay-again.log"; sleep 15
      fi
    elif [[ $TESTBED_NAME == a ]]; then
      timeout 420 "${J[@]}" "$@" -p $port --timeout 180 "$ip" > "$out/$name.log" 2>&1 \
        || { echo "hops-bench[a]: FAILED: $name"; tail -n 15 "$out/$name.log" | sed 's/^/    /'; }
    fi
    testbed-barrier "$name" 600
  }
  for ((r = 1; r <= rounds; r++)); do
    # c's lat server stops c's relay for a while: the path through it goes first
    for t in 2:d 0:b 1:c; do
      duo "r$r-relays${t%%:*}-latsend-2" "${t##*:}" lat -s 2 -n 1000 --warmup 100
    done
    for t in 0:b 1:c 2:d; do
      duo "r$r-relays${t%%:*}-bw-1048576" "${t##*:}" bw -s 1048576 -n 60 --warmup 12
    done
    echo "hops-bench[$TESTBED_NAME]: round $r of $rounds done"
  done
  testbed-barrier hops-bench-done 600
  [[ $TESTBED_NAME == b || $TESTBED_NAME == c ]] && { kill "$relay" 2>/dev/null; wait "$relay" 2>/dev/null; }
  exit 0
}

[[ ${1:-} == --guest ]] && { shift; guest "$@"; exit; }
cd "$ROOT"
rounds=${1:-1}
[[ $rounds =~ ^[0-9]+$ ]] && (( rounds >= 1 )) || jmesh_die "usage: scripts/bench hops [ROUNDS]"
jmesh_find_jdk
jmesh_bench_snapshot hops
rd=$ROOT/target/bench-runs/$stamp-hops
testbed/run --out "$rd" -t $((rounds * 1500 + 300)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP line:4 -- \
    bash "$ROOT/scripts/bench.d/hops.sh" --guest "$rounds"
rc=$?
[[ $rc == 0 ]] || jmesh_say "the run failed (exit $rc); what finished is summarised below (logs: $rd)"
mkdir -p docs/bench
tsv=docs/bench/testbed-hops.tsv
printf 'round\trelays\ttest\tbytes\tvalue\tunit\n' > "$tsv"
for f in "$rd"/a/out/hops/r*-*.log; do
  [[ -f $f && $f != *server.log ]] || continue
  b=$(basename "$f" .log); r=${b%%-*}; r=${r#r}; rest=${b#*-}; relays=${rest%%-*}; relays=${relays#relays}
  rest=${rest#*-}; test=${rest%%-*}; size=${rest#*-}
  if [[ $test == bw ]]; then
    awk -v s="$size" -v r="$r" -v p="$relays" '$1 == s && NF >= 5 { printf "%s\t%s\tbw\t%s\t%s\tMB/s\n", r, p, $1, $4 }' "$f" | tail -1
  else
    awk -v s="$size" -v r="$r" -v p="$relays" '$1 == s && NF >= 9 { printf "%s\t%s\tlatsend\t%s\t%s\tusec\n", r, p, $1, $5 }' "$f" | tail -1
  fi
done | sort -k3,3 -k2,2n -k1,1n >> "$tsv"
{
  echo "# by relays on the path (line:4: a -> b direct, a -> c through b, a -> d through b and c), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# $rounds round(s), interleaved; medians over the rounds (Soft-RoCE under QEMU TCG: compare ratios, not absolutes)"
  printf '%-8s %8s %8s %12s %10s\n' test bytes relays value 'vs direct'
  awk -F'\t' "$JMESH_AWK_MEDIAN"'
    NR > 1 { k = $3 "\t" $4 "\t" $2; v[k] = v[k] " " $5; keys[k] = 1 }
    END { for (k in keys) m[k] = median(v[k])
          for (k in keys) { split(k, kk, "\t"); d = m[kk[1] "\t" kk[2] "\t0"]
            printf "%-8s %8s %8s %12s %10s\n", kk[1], kk[2], kk[3], m[k], (d > 0 ? sprintf("%.2f", m[k] / d) : "-") } }' "$tsv" \
    | sort -k1,1 -k2,2n -k3,3n
  echo "# bw: MB/s (BW average) of 1 MiB messages; latsend: t_typical usec of isend/irecv (half a round trip); vs direct ="
  echo "# value / the direct path's (relays 0); the latency one relay adds is the step from one row to the next"
} > docs/bench/testbed-hops-summary.txt
cat docs/bench/testbed-hops-summary.txt
exit $rc
