#!/bin/bash
# ad-hoc, 2026-11-27, on the host during a testbed run: every 5 s the host's CPU split and each QEMU thread's CPU
# (% of one core; the thread whose id is the process id is QEMU's main loop, which reads the AF_UNIX datagram links).
#   hostsample.sh > host-cpu.txt &
# every 5 s: time, host user/sys/idle %, and per qemu thread user+sys %
prev=""; prevc=""
while true; do
  c=$(head -1 /proc/stat)
  s=$(for p in $(pgrep -f qemu-system); do for t in /proc/$p/task/*; do echo "$p/$(basename $t) $(awk '{print $14+$15}' $t/stat 2>/dev/null)"; done; done | sort)
  if [[ -n $prev ]]; then
    line=$(paste <(echo "$prevc") <(echo "$c") | awk '{t=0; for(i=2;i<=9;i++) t+=$(i+11)-$i; printf "host u%.0f s%.0f idle%.0f", ($13-$2)/t*100, ($15-$4)/t*100, ($16-$5)/t*100}')
    th=$(join <(echo "$prev") <(echo "$s") | awk '{d=($3-$2)/5; if (d>=2) printf " %s:%d", $1, d}')
    echo "$(date +%T) $line |$th"
  fi
  prev=$s; prevc=$c; sleep 5
done
