#!/usr/bin/env bash
# ad-hoc: per run folder of ab-env.sh / ab-fix.sh, each round's MB/s by size for old/new/ref (rank 0's driver log), and
# per guest the packets its netdev sent beyond rxe's own (net tx_packets - rxe sent_pkts) over the run
for d in "$@"; do
  echo "== $(basename "$d")"
  printf '%-6s %-4s %8s %8s %8s %14s %14s\n' round way 64KiB 256KiB 1MiB "a: non-RoCE tx" "b: non-RoCE tx"
  for f in "$d"/a/r*-rank0.log; do
    n=$(basename "$f" -rank0.log); r=${n%%-*}; w=${n#*-}; k=$w${r#r}
    read -r s1 s2 s3 < <(awk '$4 ~ /^(65536|262144|1048576)$/ && NF == 7 { v[$4] = $7 } END { print v[65536], v[262144], v[1048576] }' "$f")
    x=()
    for g in a b; do
      x+=("$(paste "$d/$g/cnt-$k-0-$g.txt" "$d/$g/cnt-$k-1-$g.txt" | awk '$1 == "sent_pkts" { s = $4 - $2 } $1 == "net_tx_packets" { t = $4 - $2 } END { print t - s }')")
    done
    printf '%-6s %-4s %8s %8s %8s %14s %14s\n' "$r" "$w" "$s1" "$s2" "$s3" "${x[0]}" "${x[1]}"
  done
done
