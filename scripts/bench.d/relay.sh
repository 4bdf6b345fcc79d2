#!/usr/bin/env bash
# Relayed (through b's verbs relay) against direct, in the testbed ('line:3')
#
# Relayed against direct in the Soft-RoCE testbed, by hand (not part of ./test): on 'line:3' (a - b - c), 'jmesh bw'
# and 'jmesh lat' from a to c through b's verbs relay ('jmesh relay' on b) and from a to b directly, interleaved in
# one run on the same guests, at 64 KiB to 4 MiB; and, as the testbed's ceiling for any relay through b, a -> b and
# b -> c at once.
#
#   scripts/bench relay [ROUNDS]      (default 2)
#
# Writes docs/bench/testbed-relay.tsv and docs/bench/testbed-relay-summary.txt (medians over the rounds).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"
cd "$ROOT"
rounds=${1:-2}
[[ $rounds =~ ^[0-9]+$ ]] && (( rounds >= 1 )) || jmesh_die "usage: scripts/bench relay [ROUNDS]"
jmesh_find_jdk
jmesh_bench_snapshot relay
rd=$ROOT/target/bench-runs/$stamp-relay
testbed/run --out "$rd" -t $((rounds * 1700 + 300)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP line:3 -- \
    bash "$ROOT/scripts/bench-relay-guest.sh" "$rounds"
rc=$?
[[ $rc == 0 ]] || jmesh_say "the run failed (exit $rc); what finished is summarised below (logs: $rd)"
mkdir -p docs/bench
tsv=docs/bench/testbed-relay.tsv
printf 'round\tpath\ttest\tbytes\tvalue\tunit\n' > "$tsv"
for f in "$rd"/a/out/relay/r*-*.log "$rd"/b/out/relay/r*-ceiling-*-out.log; do
  [[ -f $f && $f != *server.log ]] || continue
  b=$(basename "$f" .log); end=; [[ $b == *-in || $b == *-out ]] && { end=-${b##*-}; b=${b%-*}; }
  r=${b%%-*}; r=${r#r}; rest=${b#*-}; path=${rest%%-*}$end; rest=${rest#*-}
  test=${rest%%-*}; size=${rest#*-}
  if [[ $test == bw ]]; then
    awk -v s="$size" -v r="$r" -v p="$path" '$1 == s && NF >= 5 { printf "%s\t%s\tbw\t%s\t%s\tMB/s\n", r, p, $1, $4 }' "$f" | tail -1
  else
    awk -v s="$size" -v r="$r" -v p="$path" '$1 == s && NF >= 9 { printf "%s\t%s\tlatsend\t%s\t%s\tusec\n", r, p, $1, $5 }' "$f" | tail -1
  fi
done | sort -k3,3 -k4,4n -k1,1n -k2,2 >> "$tsv"
{
  echo "# relayed (a -> c through b's verbs relay) against direct (a -> b) on the testbed's line:3, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# $rounds rounds, interleaved; medians over the rounds (Soft-RoCE under QEMU TCG: compare ratios, not absolutes)"
  printf '%-8s %10s %12s %12s %8s %12s %10s\n' test bytes direct relayed ratio ceiling of-ceiling
  awk -F'\t' 'NR > 1 { k = $3 "\t" $4; v[k, $2] = v[k, $2] " " $5; keys[k] = 1 }
    function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n == 0 ? "" : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) }
    END { for (k in keys) { split(k, kk, "\t"); d = median(v[k, "direct"]); x = median(v[k, "relayed"])
            ci = median(v[k, "ceiling-in"]); co = median(v[k, "ceiling-out"]); c = (ci != "" && co != "") ? sprintf("%.2f", (ci + co) / 2) : ""
            printf "%-8s %10s %12s %12s %8s %12s %10s\n", kk[1], kk[2], d, x, (d > 0 && x != "") ? sprintf("%.2f", x / d) : "-",
              c == "" ? "-" : c, (c > 0 && x != "") ? sprintf("%.2f", x / c) : "-" } }' "$tsv" \
    | sort -k1,1 -k2,2n
  echo "# bw: MB/s (BW average), ratio = relayed / direct (goal >= 0.80); ceiling = the mean of a -> b and b -> c run at"
  echo "# once (b receiving and sending at once on its one vCPU, as a relay through b must: what b can forward if a byte"
  echo "# in costs it what a byte out does; the two flows are in the .tsv), of-ceiling = relayed / ceiling"
  echo "# latsend: t_typical usec of isend/irecv (half a round trip), ratio = relayed / direct; relayed - direct = the"
  echo "# latency one relay adds"
} > docs/bench/testbed-relay-summary.txt
cat docs/bench/testbed-relay-summary.txt
exit $rc
