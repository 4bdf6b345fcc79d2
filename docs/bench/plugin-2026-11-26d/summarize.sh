#!/usr/bin/env bash
# ad-hoc: per run folder of ab-guest.sh (run1 ... run5 here; a/ and b/ hold each guest's out/plugin/), each round's
# MB/s by size for old/new/ref (rank 0's driver log) and the packets the receiving guest (b) sent per message
# received (rxe hw_counters sent_pkts / rdma_recvs, over the whole driver run: warm-up, settle rounds and sizes)
#   bash summarize.sh run1 run2 ...
for d in "$@"; do
  echo "== $(basename "$d")"
  printf '%-6s %-4s %8s %8s %8s %12s\n' round way 64KiB 256KiB 1MiB "b pkts/msg"
  for f in "$d"/a/r*-rank0.log; do
    n=$(basename "$f" -rank0.log); r=${n%%-*}; w=${n#*-}; k=$w${r#r}
    read -r s1 s2 s3 < <(awk '$4 ~ /^(65536|262144|1048576)$/ && NF == 7 { v[$4] = $7 } END { print v[65536], v[262144], v[1048576] }' "$f")
    c0=$d/b/cnt-$k-0-b.txt c1=$d/b/cnt-$k-1-b.txt
    p=$(paste "$c0" "$c1" | awk '$1 == "sent_pkts" { s = $4 - $2 } $1 == "rdma_recvs" { m = $4 - $2 } END { if (m > 0) printf "%.2f", s / m }')
    printf '%-6s %-4s %8s %8s %8s %12s\n' "$r" "$w" "$s1" "$s2" "$s3" "$p"
  done
done
