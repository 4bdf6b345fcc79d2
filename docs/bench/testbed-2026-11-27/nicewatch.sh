#!/bin/bash
# ad-hoc, 2026-11-27: during ab-fix.sh 4 (docs/bench/plugin-2026-11-27), run on the host beside it with its run folder:
# renice qemu main threads (the link's I/O) to -15 in rounds 1 and 4, to 0 in rounds 2 and 3
D=$1
for r in 1 2 3 4; do
  while ! ls $D/a/out/plugin/cnt-*$r-0-a.txt >/dev/null 2>&1; do sleep 1; done
  n=0; [[ $r == 1 || $r == 4 ]] && n=-15
  for p in $(pgrep -f qemu-system); do renice -n $n -p $p >/dev/null; done
  echo "$(date +%T) round $r: qemu main threads nice $n ($(pgrep -f qemu-system | xargs))"
done
