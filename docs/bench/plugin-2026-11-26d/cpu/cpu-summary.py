#!/usr/bin/env python3
"""ad-hoc: per run of cpu-guest.sh and guest, over the samples where the link carried at least 60 % of the run's
peak packet rate: the guest CPU's split (user, system, softirq, idle; /proc/stat jiffies), the driver process's share
of it, the link's packet rates, and the driver's threads by CPU between the first and last thread snapshot inside.
   python3 cpu-summary.py DIR   (a testbed run folder, or this folder: a/ and b/ hold each guest's out/cpu/)"""
import glob, os, re, sys
def load(path):
    rows = []
    for line in open(path):
        f = line.split()
        # t cpu user nice system idle iowait irq softirq steal guest gnice driver ut st pkts sent rcvd
        rows.append(dict(t=float(f[0]), user=int(f[2]) + int(f[3]), sys=int(f[4]), idle=int(f[5]) + int(f[6]),
                         irq=int(f[7]) + int(f[8]), total=sum(int(x) for x in f[2:10]),
                         drv=int(f[13]) + int(f[14]), sent=int(f[16]), rcvd=int(f[17])))
    return rows
def threads(path, t0, t1):
    snaps, cur = [], None
    for line in open(path):
        if line.startswith('t '):
            cur = (float(line.split()[1]), {}); snaps.append(cur)
        else:
            name, ut, st = line.rstrip('\n').split('|')
            key = re.sub(r'\d+$', '#', name)
            cur[1][key] = cur[1].get(key, 0) + int(ut or 0) + int(st or 0)
    inside = [s for s in snaps if t0 - 15 <= s[0] <= t1 + 15]
    if len(inside) < 2:
        return None
    a, b = inside[0][1], inside[-1][1]
    d = {k: b.get(k, 0) - a.get(k, 0) for k in b}
    tot = sum(v for v in d.values() if v > 0) or 1
    return sorted(((v, k) for k, v in d.items() if v > 0), reverse=True)[:6], tot
d = sys.argv[1]
for path in sorted(glob.glob(os.path.join(d, '*', '*-samples-*.txt')) + glob.glob(os.path.join(d, '*', 'out', 'cpu', '*-samples-*.txt'))):
    rows = load(path)
    if len(rows) < 3:
        continue
    rates = [(max(b['sent'] - a['sent'], b['rcvd'] - a['rcvd']) / (b['t'] - a['t']), a, b) for a, b in zip(rows, rows[1:])]
    peak = max(r[0] for r in rates)
    steady = [r for r in rates if r[0] >= 0.6 * peak]
    a, b = steady[0][1], steady[-1][2]
    tot = b['total'] - a['total']
    name = os.path.basename(path).replace('-samples-', ' ').replace('.txt', '')
    print('%-14s %5.0f s  user %4.1f%%  sys %4.1f%%  softirq %4.1f%%  idle %4.1f%%  driver %4.1f%%  sent %6.0f/s  rcvd %6.0f/s'
          % (name, b['t'] - a['t'], 100 * (b['user'] - a['user']) / tot, 100 * (b['sys'] - a['sys']) / tot,
             100 * (b['irq'] - a['irq']) / tot, 100 * (b['idle'] - a['idle']) / tot, 100 * (b['drv'] - a['drv']) / tot,
             (b['sent'] - a['sent']) / (b['t'] - a['t']), (b['rcvd'] - a['rcvd']) / (b['t'] - a['t'])))
    th = threads(path.replace('-samples-', '-threads-'), a['t'], b['t'])
    if th:
        print('               threads: ' + ', '.join('%s %.0f%%' % (k, 100 * v / th[1]) for v, k in th[0]))
