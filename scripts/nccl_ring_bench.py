#!/usr/bin/env python3
"""Every NCCL collective between the ranks of a torchrun job, each result checked element by element on every rank,
bus bandwidth per size; then, optionally, a soak of mixed collectives. Run by scripts/nccl-ring-bench.sh:

    torchrun --nproc_per_node=4 scripts/nccl_ring_bench.py --label ring --out OUT --sizes-mib 1,4 --iters 10
    torchrun --nproc_per_node=2 scripts/nccl_ring_bench.py --label soak-relay --out OUT --sizes-mib '' --soak-s 300
    python3 scripts/nccl_ring_bench.py --summary --out OUT --labels "relay direct" --soak soak-relay   (no torch)

Each rank takes its JMESH_ADDRESSES and NCCL_HOSTID from the placement first (scripts/jmesh_rank_env.py).

Operations: all_reduce with NCCL's own choice, ring and tree; all_gather and reduce_scatter with ring and PAT;
broadcast (root 0); all_to_all; send/recv between every ordered pair, the other ranks idle. NCCL reads NCCL_ALGO when
a communicator starts, so each choice of algorithms is a process group of its own, started with NCCL_ALGO set.
Sizes and bus bandwidth as nccl-tests counts them (S the operation's largest buffer, t the slowest rank's median of
--iters timed runs after two untimed ones): all_reduce 2(n-1)/n S/t; all_gather (S the output), reduce_scatter (S the
input) and all_to_all (n-1)/n S/t; broadcast and send/recv S/t. Every size of every operation is checked twice, on
its first run (which also makes NCCL's connections) and after the timed runs. Init: the time init_process_group takes
(NCCL's communicator with the device bound: the plugin's JVM, bootstrap) and up to the end of the first all_reduce
(NCCL connects on first use), the slowest rank's. Rank 0 prints a table and writes OUT/<label>.json; the exit status
is 1 when any element was wrong or any operation failed.

The soak (--soak-s S): operations of every kind above plus an exchange where every rank sends to rank+k and receives
from rank-k (k from 1 to n-1: both directions of every pair over time), sizes of 4 KiB to 16 MiB, roots and data
drawn from one seed on every rank, each result checked, until rank 0's clock passes S; it reports the operations run
and those with wrong elements.
"""
import argparse
import ipaddress
import json
import os
import random
import statistics
import sys
import time
from datetime import timedelta

MIB = 1 << 20
KIB = 1 << 10
# (name, process group, kind)
COLLECTIVES = [
    ("all_reduce", "default", "all_reduce"),
    ("all_reduce/ring", "ring", "all_reduce"),
    ("all_reduce/tree", "tree", "all_reduce"),
    ("all_gather/ring", "ring", "all_gather"),
    ("all_gather/pat", "tree", "all_gather"),
    ("reduce_scatter/ring", "ring", "reduce_scatter"),
    ("reduce_scatter/pat", "tree", "reduce_scatter"),
    ("broadcast", "default", "broadcast"),
    ("all_to_all", "default", "all_to_all"),
]
ALGOS = {"ring": "allreduce:ring;allgather:ring;reducescatter:ring",
         "tree": "allreduce:tree;allgather:pat;reducescatter:pat"}
SOAK_SIZES = [4 * KIB, 64 * KIB, MIB, 4 * MIB, 16 * MIB]


def busbw_factor(kind, n):
    return {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
            "all_to_all": (n - 1) / n, "broadcast": 1.0, "send_recv": 1.0}[kind]


def pair_paths(n):
    """'cable' or 'relayed' per ordered pair of ranks, from the placement's subnets; {} without a placement."""
    placement = os.environ.get("JMESH_BENCH_ADDRESSES")
    if not placement:
        return {}
    nets = [{ipaddress.ip_interface(a.strip()).network for a in part.split(",")} for part in placement.split(";")]
    return {(s, d): "cable" if nets[s] & nets[d] else "relayed"
            for s in range(min(n, len(nets))) for d in range(min(n, len(nets))) if s != d}


class Ops:
    """Makes each operation as three closures: reset (fresh data), run (the NCCL call), check (wrong elements)."""

    def __init__(self, torch, dist, device, rank, n):
        self.t, self.dist, self.dev, self.rank, self.n = torch, dist, device, rank, n

    def pattern(self, count, rank, salt, start=0):
        # small integers, exact in float32 and in sums of a few ranks, different per rank, element and operation
        t = self.t
        return ((t.arange(start, start + count, device=self.dev, dtype=t.int64) % 251)
                + (1000 * (rank + 1) + salt)).to(t.float32)

    def summed(self, count, salt, start=0):
        t, n = self.t, self.n
        return ((t.arange(start, start + count, device=self.dev, dtype=t.int64) % 251) * n
                + (1000 * n * (n + 1) // 2 + salt * n)).to(t.float32)

    @staticmethod
    def wrong(x, expected):
        return int((x != expected).sum().item())

    def make(self, kind, group, count, salt, root=0, src=0, dst=1, shift=1):
        t, dist, r, n = self.t, self.dist, self.rank, self.n
        c = count // n
        empty = lambda k: t.empty(k, device=self.dev, dtype=t.float32)
        if kind == "all_reduce":
            x = empty(count)
            return (lambda: x.copy_(self.pattern(count, r, salt)), lambda: dist.all_reduce(x, group=group),
                    lambda: self.wrong(x, self.summed(count, salt)))
        if kind == "all_gather":
            inp, out = self.pattern(c, r, salt), empty(c * n)
            return (lambda: out.fill_(-1), lambda: dist.all_gather_into_tensor(out, inp, group=group),
                    lambda: self.wrong(out, t.cat([self.pattern(c, q, salt) for q in range(n)])))
        if kind == "reduce_scatter":
            inp, out = self.pattern(c * n, r, salt), empty(c)
            return (lambda: out.fill_(-1), lambda: dist.reduce_scatter_tensor(out, inp, group=group),
                    lambda: self.wrong(out, self.summed(c, salt, start=r * c)))
        if kind == "broadcast":
            x = empty(count)
            return (lambda: x.copy_(self.pattern(count, root, salt)) if r == root else x.fill_(-1),
                    lambda: dist.broadcast(x, src=root, group=group),
                    lambda: self.wrong(x, self.pattern(count, root, salt)))
        if kind == "all_to_all":
            inp, out = self.pattern(c * n, r, salt), empty(c * n)
            return (lambda: out.fill_(-1), lambda: dist.all_to_all_single(out, inp, group=group),
                    lambda: self.wrong(out, t.cat([self.pattern(c, q, salt, start=r * c) for q in range(n)])))
        if kind == "send_recv":  # src to dst only; the other ranks do nothing
            x = empty(count)

            def run():
                if r == src:
                    dist.send(x, dst, group=group)
                elif r == dst:
                    dist.recv(x, src, group=group)
            return (lambda: x.copy_(self.pattern(count, src, salt)) if r == src else x.fill_(-1), run,
                    lambda: self.wrong(x, self.pattern(count, src, salt)) if r == dst else 0)
        if kind == "shift":  # every rank sends to rank+shift and receives from rank-shift at once
            to, frm = (r + shift) % n, (r - shift) % n
            inp, out = self.pattern(count, r, salt), empty(count)

            def run():
                for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, inp, to, group),
                                                   dist.P2POp(dist.irecv, out, frm, group)]):
                    req.wait()
            return lambda: out.fill_(-1), run, lambda: self.wrong(out, self.pattern(count, frm, salt))
        raise ValueError(kind)


def timed(torch, run, iters):
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        run()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def slowest(torch, dist, device, value):
    x = torch.tensor([value], device=device, dtype=torch.float64)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    return float(x.item())


def measure(torch, dist, ops, kind, group, count, iters, salt, problems, what, **kw):
    """Checks and times one operation of one size; returns the slowest rank's median seconds, or None if it failed."""
    try:
        reset, run, check = ops.make(kind, group, count, salt, **kw)
        bad = 0
        for phase in ("first run", "after timing"):
            if phase == "after timing":
                t = timed(torch, run, iters)
            reset()
            run()
            torch.cuda.synchronize()
            wrong = check()
            if wrong:
                bad += 1
                problems.append(f"rank {ops.rank}: {what}: {wrong} wrong elements ({phase})")
                print(problems[-1], flush=True)
            if phase == "first run":  # untimed: the first timed run should not pay for a cold start
                run()
                run()
        # every rank takes part, failed or not, so that the next operation starts together
        t = slowest(torch, dist, ops.dev, t)
        return None if bad else t
    except Exception as e:  # NCCL's error for this operation; the next ones may still run
        problems.append(f"rank {ops.rank}: {what}: {type(e).__name__}: {e}")
        print(problems[-1], flush=True)
        return None


def rank0_clock(torch, dist, device, rank, end):
    """Whether to go on: every rank stops after the same round, rank 0's clock decides."""
    go = torch.ones(1, device=device)
    go.fill_(1 if rank != 0 or time.monotonic() < end else 0)
    dist.broadcast(go, 0)
    return go.item() > 0


def warm(torch, dist, ops, groups, sizes, seconds):
    """Untimed all_reduce and all_gather of every size in turn for `seconds`; returns the operations run."""
    count, end = 0, time.monotonic() + seconds
    made = [(ops.make("all_reduce", None, mib * MIB // 4, 0), ops.make("all_gather", groups["ring"], mib * MIB // 4, 0))
            for mib in sizes]
    while seconds > 0 and rank0_clock(torch, dist, ops.dev, ops.rank, end):
        for pair in made:
            for _reset, run, _check in pair:
                run()
                count += 1
    torch.cuda.synchronize()
    return count


def soak(torch, dist, ops, groups, seconds, seed, problems):
    n, rank = ops.n, ops.rank
    kinds = [(name, groups[g], kind) for name, g, kind in COLLECTIVES] + [("exchange", None, "shift")] * 3
    rng = random.Random(seed)
    count, bad_ops, per_op = 0, 0, {}
    start = time.monotonic()
    end, next_note = start + seconds, start + 30
    while True:
        for _ in range(8):
            name, group, kind = rng.choice(kinds)
            size, salt = rng.choice(SOAK_SIZES), rng.randrange(1000)
            root, shift = rng.randrange(n), rng.randrange(1, n)
            what = f"soak op {count}: {name} {size} B" + (f" shift {shift}" if kind == "shift" else "")
            try:
                reset, run, check = ops.make(kind, group, size // 4, salt, root=root, shift=shift)
                reset()
                run()
                wrong = check()
            except Exception as e:
                problems.append(f"rank {rank}: {what}: {type(e).__name__}: {e}")
                print(problems[-1], flush=True)
                return {"seconds": time.monotonic() - start, "ops": count, "bad_ops": bad_ops + 1, "per_op": per_op,
                        "aborted": True}
            count += 1
            per_op[name] = per_op.get(name, 0) + 1
            if wrong:
                bad_ops += 1
                problems.append(f"rank {rank}: {what}: {wrong} wrong elements")
                print(problems[-1], flush=True)
        now = time.monotonic()
        if not rank0_clock(torch, dist, ops.dev, rank, end):
            break
        if rank == 0 and now >= next_note:
            print(f"soak: {count} operations in {now - start:.0f} s, {bad_ops} with wrong elements", flush=True)
            next_note += 30
    return {"seconds": time.monotonic() - start, "ops": count, "bad_ops": bad_ops, "per_op": per_op, "aborted": False}


def run(args):
    import jmesh_rank_env
    local_rank = int(os.environ["LOCAL_RANK"])
    placed = jmesh_rank_env.apply(local_rank)  # before torch starts NCCL, whose init (and the plugin's JVM) reads them
    import torch
    import torch.distributed as dist

    # more ranks than GPUs share them (a logic check: NCCL_HOSTID makes them separate nodes; timings mean little)
    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    t0 = time.perf_counter()
    dist.init_process_group("nccl", device_id=device, timeout=timedelta(seconds=args.op_timeout_s))
    pg_init = time.perf_counter() - t0
    one = torch.ones(1, device=device)
    dist.all_reduce(one)
    torch.cuda.synchronize()
    first_op = time.perf_counter() - t0
    rank, n = dist.get_rank(), dist.get_world_size()
    problems = []
    if int(one.item()) != n:
        problems.append(f"rank {rank}: the first all_reduce gave {one.item()}, not {n}")
    init = {"pg_init_s": slowest(torch, dist, device, pg_init), "first_op_s": slowest(torch, dist, device, first_op)}
    print(f"rank {rank}: {placed or 'no placement'}, init {pg_init:.2f} s, first all_reduce at {first_op:.2f} s",
          flush=True)

    groups = {"default": None}
    saved = os.environ.get("NCCL_ALGO")
    for name, algo in ALGOS.items():
        os.environ["NCCL_ALGO"] = algo
        groups[name] = dist.new_group(list(range(n)))
        x = torch.ones(1, device=device)
        dist.all_reduce(x, group=groups[name])  # the communicator starts now, while NCCL_ALGO says so
        torch.cuda.synchronize()
    if saved is None:
        del os.environ["NCCL_ALGO"]
    else:
        os.environ["NCCL_ALGO"] = saved

    ops = Ops(torch, dist, device, rank, n)
    paths = pair_paths(n)
    rows = []
    sizes = [int(s) for s in args.sizes_mib.split(",") if s.strip()]
    warm_ops = warm(torch, dist, ops, groups, sizes, args.warmup_s) if sizes else 0
    for si, mib in enumerate(sizes):
        count = mib * MIB // 4
        for oi, (name, g, kind) in enumerate(COLLECTIVES):
            t = measure(torch, dist, ops, kind, groups[g], count, args.iters, (17 * oi + 5 * si) % 1000, problems,
                        f"{name} {mib} MiB")
            rows.append({"op": name, "kind": kind, "bytes": mib * MIB, "time_s": t,
                         "busbw_GBps": None if t is None else mib * MIB / t / 1e9 * busbw_factor(kind, n)})
        for src in range(n):
            for dst in range(n):
                if src != dst:
                    t = measure(torch, dist, ops, "send_recv", None, count, args.iters, (7 * src + 3 * dst) % 1000,
                                problems, f"send_recv {src}->{dst} {mib} MiB", src=src, dst=dst)
                    rows.append({"op": "send_recv", "kind": "send_recv", "pair": f"{src}->{dst}",
                                 "path": paths.get((src, dst)), "bytes": mib * MIB, "time_s": t,
                                 "busbw_GBps": None if t is None else mib * MIB / t / 1e9})

    soaked = soak(torch, dist, ops, groups, args.soak_s, args.seed, problems) if args.soak_s > 0 else None
    fails = torch.tensor([len(problems)], device=device)
    dist.all_reduce(fails)
    failures = int(fails.item())
    if rank == 0:
        v = torch.cuda.nccl.version()
        result = {"label": args.label, "world_size": n, "gpus": torch.cuda.device_count(),
                  "nccl_version": ".".join(map(str, v)) if isinstance(v, tuple) else str(v),
                  "torch": torch.__version__, "gpu": torch.cuda.get_device_name(device), "iters": args.iters,
                  "correct": failures == 0, "failures": failures, "problems_rank0": problems, "init": init,
                  "rows": rows, "soak": soaked, "warmup_s": args.warmup_s, "warmup_ops": warm_ops,
                  "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "JMESH_"))}}
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, args.label + ".json"), "w") as f:
            json.dump(result, f, indent=1)
        print(f"== {args.label}: NCCL {result['nccl_version']}, {n} ranks, correct={result['correct']}, init "
              f"{init['pg_init_s']:.2f} s, first all_reduce at {init['first_op_s']:.2f} s"
              + (f", timed after {warm_ops} untimed operations in {args.warmup_s:g} s" if warm_ops else ""))
        if rows:
            print(f"{'op':<20} {'pair':>6} {'size':>8} {'time ms':>9} {'busbw GB/s':>11}")
        for r in rows:
            ms = "-" if r["time_s"] is None else f"{r['time_s'] * 1e3:.2f}"
            bw = "FAILED" if r["busbw_GBps"] is None else f"{r['busbw_GBps']:.2f}"
            pair = r.get("pair", "") + ("*" if r.get("path") == "relayed" else "")
            print(f"{r['op']:<20} {pair:>6} {r['bytes'] // MIB:>4} MiB {ms:>9} {bw:>11}")
        if any(r.get("path") == "relayed" for r in rows):
            print("(* a pair without a cable of its own: relayed)")
        if soaked:
            print(f"soak: {soaked['ops']} operations in {soaked['seconds']:.0f} s, {soaked['bad_ops']} with wrong "
                  f"elements or failed{', ABORTED' if soaked['aborted'] else ''}; {failures} problem(s) on all ranks")
    dist.destroy_process_group()
    return 0 if failures == 0 else 1


def summary(out, labels, soak_labels, failed):
    """The table over the runs' JSON files: collective x size, one column per run; init and soak below."""
    results = {}
    for label in labels:
        try:
            with open(os.path.join(out, label + ".json")) as f:
                results[label] = json.load(f)
        except (OSError, ValueError):
            results[label] = None
    lines = []
    width = max([10] + [len(label) + 2 for label in labels])
    head = f"{'busbw GB/s':<26}{'size':>9}" + "".join(f"{label:>{width}}" for label in labels)
    some = next((r for r in results.values() if r), None)
    if some:
        lines.append(f"NCCL {some['nccl_version']}, torch {some['torch']}, {some['world_size']} ranks on "
                     f"{some['gpus']} x {some['gpu']}, median of {some['iters']} timed runs, slowest rank")
    if labels:
        lines.append(head)
    keys, cells = [], {}
    for label, res in results.items():
        by_key = {}
        rows = (res or {}).get("rows", [])
        # a placement with pairs of both kinds (the ring) also gets a row for each kind
        mixed = len({r.get("path") for r in rows if r["kind"] == "send_recv"}) > 1
        for r in rows:
            by_key.setdefault((r["op"], r["bytes"]), []).append(r["busbw_GBps"])
            if mixed and r.get("path"):
                by_key.setdefault((f"{r['op']} ({r['path']})", r["bytes"]), []).append(r["busbw_GBps"])
        for key, values in by_key.items():
            if key not in keys:
                keys.append(key)
            # send/recv: the median over the pairs of that kind; any failed pair shows
            cells[label, key] = "FAILED" if None in values else f"{statistics.median(values):.2f}"
    order = {name: i for i, (name, _, _) in enumerate(COLLECTIVES)}
    keys.sort(key=lambda k: (k[1], order.get(k[0], len(order)), k[0]))
    for key in keys:
        lines.append(f"{key[0]:<26}{key[1] // MIB:>5} MiB" + "".join(f"{cells.get((l, key), '-'):>{width}}"
                                                                     for l in labels))
    if labels:  # a run of the soak alone has no table
        for what, field in (("init: process group, s", "pg_init_s"), ("init: first all_reduce, s", "first_op_s")):
            lines.append(f"{what:<35}" + "".join(
                f"{(format(results[l]['init'][field], '.2f') if results[l] else '-'):>{width}}" for l in labels))
        lines.append(f"{'element checks':<35}" + "".join(
            f"{('no result' if not results[l] else 'ok' if results[l]['correct'] else 'FAILED'):>{width}}"
            for l in labels))
        # a job can fail after its checks passed: a rank or the relay died, a time limit, a placement that did not
        # relay
        lines.append(f"{'job':<35}" + "".join(f"{('FAILED' if l in failed else 'ok'):>{width}}" for l in labels))
        lines.append("send_recv: the median over every ordered pair; (cable) and (relayed): over the pairs that share "
                     "a subnet and those that do not, where a placement has both")
    for label in soak_labels:
        try:
            with open(os.path.join(out, label + ".json")) as f:
                res = json.load(f)
            s = res["soak"]
            lines.append(f"{label}: {'FAILED' if label in failed else 'ok'}: {s['ops']} operations in "
                         f"{s['seconds']:.0f} s, {s['bad_ops']} with wrong elements or failed"
                         f"{', ABORTED' if s['aborted'] else ''}; {res['failures']} problem(s); init "
                         f"{res['init']['pg_init_s']:.2f} s; by operation: {s['per_op']}")
        except (OSError, ValueError, KeyError, TypeError):
            lines.append(f"{label}: no result (the job died or did not run: see {label}.log)")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text + "\n")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label")
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes-mib", default="1,4,16,64,256")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--soak-s", type=float, default=0)
    ap.add_argument("--warmup-s", type=float, default=0)
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--op-timeout-s", type=float, default=60,
                    help="an operation that takes longer fails the job (PyTorch's watchdog ends the process)")
    ap.add_argument("--summary", action="store_true", help="print the table of the runs in --out and exit")
    ap.add_argument("--labels", default="")
    ap.add_argument("--soak", default="", help="--summary: the labels of soak runs")
    ap.add_argument("--failed", default="", help="--summary: the labels of jobs that failed")
    args = ap.parse_args()
    if args.summary:
        return summary(args.out, args.labels.split(), args.soak.split(), args.failed.split())
    if not args.label:
        ap.error("--label is required")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
