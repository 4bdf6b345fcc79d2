#!/usr/bin/env python3
# Where a benchmark's CPU goes, per thread: samples every second the threads of every process that has NCCL_NET in
# its environment (the ranks and launchers of scripts/nccl-gpu-bench.sh and its kin) until it gets SIGTERM, then
# prints per process, labelled by its jmesh and NCCL settings, the CPU seconds of each thread group (the thread's
# name with its digits folded: jmesh's helpers, NCCL's progress and socket threads, the JIT's compilers) and how long
# it was seen. NCCL names its threads when NCCL_SET_THREAD_NAME=1.
#   python3 scripts/thread-cpu.py > cpu.txt & pid=$!; ...benchmark...; kill $pid; wait
import os, re, signal, time, collections
HZ = os.sysconf('SC_CLK_TCK')
procs = {}   # pid -> dict(label, start, last, threads{tid:(name,cpu)})
stop = False
def term(*a):
    global stop; stop = True
signal.signal(signal.SIGTERM, term)
KEYS = ('NCCL_NET', 'JMESH_TCP_EAGER_THRESHOLD', 'JMESH_TCP_THREADS', 'JMESH_TCP_SPIN_US', 'NCCL_NSOCKS_PERTHREAD',
        'NCCL_SOCKET_NTHREADS', 'RANK', 'NCCL_MIN_NCHANNELS', 'JMESH_TCP_SOCKETS', 'JMESH_TCP_SOCKET0_MAX')
def label(pid):
    try:
        env = open(f'/proc/{pid}/environ', 'rb').read().split(b'\0')
    except OSError:
        return None
    d = {}
    for e in env:
        k, _, v = e.partition(b'=')
        k = k.decode(errors='replace')
        if k in KEYS:
            d[k] = v.decode(errors='replace')
    if 'NCCL_NET' not in d:
        return None
    return ' '.join(f'{k}={d[k]}' for k in KEYS if k in d)
while not stop:
    now = time.time()
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        p = procs.get(pid)
        if p is None:
            lab = label(pid)
            if lab is None:
                procs[pid] = False
                continue
            p = procs[pid] = dict(label=lab, start=now, last=now, threads={})
        elif p is False:
            continue
        try:
            for tid in os.listdir(f'/proc/{pid}/task'):
                try:
                    s = open(f'/proc/{pid}/task/{tid}/stat').read()
                except OSError:
                    continue
                name = s[s.index('(') + 1:s.rindex(')')]
                f = s[s.rindex(')') + 2:].split()
                p['threads'][tid] = (name, (int(f[11]) + int(f[12])) / HZ)
            p['last'] = now
        except OSError:
            pass
    time.sleep(1.0)
for pid, p in procs.items():
    if not p:
        continue
    groups = collections.Counter()
    for name, cpu in p['threads'].values():
        groups[re.sub(r'\d+', '#', name)] += cpu
    total = sum(groups.values())
    life = p['last'] - p['start']
    top = ', '.join(f'{g} {c:.1f}' for g, c in groups.most_common(8) if c >= 0.05)
    print(f'pid {pid} [{p["label"]}] alive {life:.0f} s, cpu {total:.1f} s: {top}')
