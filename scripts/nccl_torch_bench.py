#!/usr/bin/env python3
"""all_reduce and all_gather between the ranks of a torchrun job, checked for correctness, timed per size.

Run by scripts/nccl-gpu-bench.sh under torchrun (one process per GPU):
    torchrun --nproc_per_node=2 scripts/nccl_torch_bench.py --label jmesh --out results/
Each rank checks every result element; rank 0 prints a table and writes <out>/<label>.json.
Bus bandwidth as nccl-tests defines it: all_reduce 2(n-1)/n * S / t, all_gather (n-1)/n * S_total / t,
with t the median of the timed iterations. --warmup-s S first runs every size's all_reduce and all_gather in turn
for S seconds, untimed: a plugin that runs on a JVM compiles its hot path meanwhile (without it, the first sizes
are timed while the JIT still works, which a long job pays once).
--sizes-kib adds sizes in KiB, timed before the --sizes-mib ones (--sizes-mib '' times the KiB sizes only). Sizes
below 1 MiB run --lat-iters timed iterations, the others --iters: a small message's time is mostly the transport's
latency, which scatters more, so its median needs more samples. Every row keeps its per-iteration times and their
median and p90 in microseconds beside the bandwidth.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

KIB = 1 << 10
MIB = 1 << 20


def size_list(mib, kib):
    """Sizes in bytes from the two comma lists, the KiB ones first, each size once, in the order given."""
    sizes = [int(k) * KIB for k in kib.split(",") if k.strip()] + [int(m) * MIB for m in mib.split(",") if m.strip()]
    return list(dict.fromkeys(sizes))


def size_text(size):
    return f"{size // MIB:>7} MiB" if size % MIB == 0 else f"{size // KIB:>7} KiB"


def p90(times):
    return sorted(times)[int(0.9 * (len(times) - 1))]


def pattern(n, rank, device):
    # small integers, exact in float32, different per rank and per element
    return (torch.arange(n, device=device, dtype=torch.int64) % 251 + 1000 * (rank + 1)).to(torch.float32)


def timed(fn, iters):
    """Seconds per iteration, each from a synchronised start to a synchronised end."""
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return times


def latency(times):
    """A row's latency keys: the timed iterations, their median and p90 and every time, in microseconds."""
    return {"iters": len(times), "time_us_median": statistics.median(times) * 1e6, "time_us_p90": p90(times) * 1e6,
            "times_us": [round(t * 1e6, 2) for t in times]}


def warm(sizes, rank, n, device, seconds):
    """Untimed all_reduce and all_gather of every size in turn until `seconds` passed on rank 0; returns the ops run."""
    ops = 0
    if seconds <= 0:
        return ops
    bufs = [(pattern(size // 4, rank, device), [torch.empty(size // 4, device=device) for _ in range(n)])
            for size in sizes]
    end = time.monotonic() + seconds
    go = torch.ones(1, device=device)
    while go.item() > 0:
        for x, out in bufs:
            for _ in range(4):
                dist.all_reduce(x)
                dist.all_gather(out, x)
                ops += 2
        # every rank stops after the same round: rank 0's clock decides
        go.fill_(1 if rank != 0 or time.monotonic() < end else 0)
        dist.broadcast(go, 0)
    del bufs
    torch.cuda.synchronize()
    return ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes-mib", default="1,4,16,64,256")
    ap.add_argument("--sizes-kib", default="")
    ap.add_argument("--iters", type=int, default=10, help="timed iterations of the sizes from 1 MiB")
    ap.add_argument("--lat-iters", type=int, default=200, help="timed iterations of the sizes below 1 MiB")
    ap.add_argument("--warmup-s", type=float, default=0)
    args = ap.parse_args()
    sizes = size_list(args.sizes_mib, args.sizes_kib)
    if not sizes:
        ap.error("no sizes: --sizes-mib and --sizes-kib are both empty")

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=device)
    rank, n = dist.get_rank(), dist.get_world_size()
    rows = []
    failures = 0
    warm_ops = warm(sizes, rank, n, device, args.warmup_s)
    for size in sizes:
        count = size // 4  # float32 elements
        iters = args.lat_iters if size < MIB else args.iters
        # all_reduce: correctness, then timing
        x = pattern(count, rank, device)
        dist.all_reduce(x)
        base = torch.arange(count, device=device, dtype=torch.int64) % 251
        expected = (base * n + 1000 * sum(r + 1 for r in range(n))).to(torch.float32)
        if not torch.equal(x, expected):
            bad = int((x != expected).sum())
            print(f"rank {rank}: all_reduce {size_text(size).strip()}: {bad} wrong elements", flush=True)
            failures += 1
        y = pattern(count, rank, device)
        for _ in range(2):
            dist.all_reduce(y)
        ts = timed(lambda: dist.all_reduce(y), iters)
        t = statistics.median(ts)
        rows.append({"op": "all_reduce", "bytes": size, "time_s": t, "algbw_GBps": size / t / 1e9,
                     "busbw_GBps": size / t / 1e9 * 2 * (n - 1) / n, **latency(ts)})
        # all_gather: every rank's pattern must arrive intact
        src = pattern(count, rank, device)
        out = [torch.empty(count, device=device, dtype=torch.float32) for _ in range(n)]
        dist.all_gather(out, src)
        for r in range(n):
            if not torch.equal(out[r], pattern(count, r, device)):
                print(f"rank {rank}: all_gather {size_text(size).strip()}: part from rank {r} wrong", flush=True)
                failures += 1
        for _ in range(2):
            dist.all_gather(out, src)
        ts = timed(lambda: dist.all_gather(out, src), iters)
        t = statistics.median(ts)
        total = size * n
        rows.append({"op": "all_gather", "bytes": size, "time_s": t, "algbw_GBps": total / t / 1e9,
                     "busbw_GBps": total / t / 1e9 * (n - 1) / n, **latency(ts)})
        del x, y, src, out, base, expected
    fails = torch.tensor([failures], device=device)
    dist.all_reduce(fails)
    if rank == 0:
        v = torch.cuda.nccl.version()
        result = {"label": args.label, "world_size": n,
                  "nccl_version": ".".join(map(str, v)) if isinstance(v, tuple) else str(v),
                  "torch": torch.__version__, "gpu": torch.cuda.get_device_name(device),
                  "correct": int(fails.item()) == 0, "rows": rows,
                  "warmup_s": args.warmup_s, "warmup_ops": warm_ops, "iters": args.iters, "lat_iters": args.lat_iters,
                  "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "JMESH_"))}}
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, args.label + ".json"), "w") as f:
            json.dump(result, f, indent=1)
        print(f"== {args.label}: NCCL {result['nccl_version']}, {n} ranks, correct={result['correct']}"
              + (f", after {warm_ops} untimed ops in {args.warmup_s:g} s" if warm_ops else ""))
        print(f"{'op':<11} {'size':>10} {'time ms':>9} {'busbw GB/s':>11} {'median us':>10} {'p90 us':>10}")
        for r in rows:
            print(f"{r['op']:<11} {size_text(r['bytes'])} {r['time_s'] * 1e3:>9.2f} {r['busbw_GBps']:>11.2f}"
                  f" {r['time_us_median']:>10.1f} {r['time_us_p90']:>10.1f}")
    dist.destroy_process_group()
    sys.exit(0 if int(fails.item()) == 0 else 1)


if __name__ == "__main__":
    main()
