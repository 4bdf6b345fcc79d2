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
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
. "$ROOT/scripts/lib.sh"
cd "$ROOT"
rounds=${1:-1}
[[ $rounds =~ ^[0-9]+$ ]] && (( rounds >= 1 )) || jmesh_die "usage: scripts/bench hops [ROUNDS]"
jmesh_find_jdk
jmesh_bench_snapshot hops
rd=$ROOT/target/bench-runs/$stamp-hops
testbed/run --out "$rd" -t $((rounds * 1500 + 300)) -e JAVA_HOME="$JAVA_HOME" -e JMESH_CP line:4 -- \
    bash "$ROOT/scripts/bench-hops-guest.sh" "$rounds"
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
  awk -F'\t' 'NR > 1 { k = $3 "\t" $4 "\t" $2; v[k] = v[k] " " $5; keys[k] = 1 }
    function median(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n == 0 ? "" : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) }
    END { for (k in keys) m[k] = median(v[k])
          for (k in keys) { split(k, kk, "\t"); d = m[kk[1] "\t" kk[2] "\t0"]
            printf "%-8s %8s %8s %12s %10s\n", kk[1], kk[2], kk[3], m[k], (d > 0 ? sprintf("%.2f", m[k] / d) : "-") } }' "$tsv" \
    | sort -k1,1 -k2,2n -k3,3n
  echo "# bw: MB/s (BW average) of 1 MiB messages; latsend: t_typical usec of isend/irecv (half a round trip); vs direct ="
  echo "# value / the direct path's (relays 0); the latency one relay adds is the step from one row to the next"
} > docs/bench/testbed-hops-summary.txt
cat docs/bench/testbed-hops-summary.txt
exit $rc
