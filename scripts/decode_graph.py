#!/usr/bin/env python3
"""A Llama-style decode step as inference engines run it: one token per step, the whole step captured in one CUDA
graph and replayed, tensor parallel over the ranks of a torchrun job (or on one GPU: the reference).

Why not transformers: its tp_plan decode spends 4-6 ms of Python per token whatever the transport (docs/benchmarks-
gpu.md), so it cannot rank transports. Engines (vLLM, SGLang, TensorRT-LLM) capture the decode step in a CUDA graph;
then the network is most of every token. This is that step, written out: RMSNorm, attention over a static KV cache
with rotary positions, a SwiGLU MLP; Megatron's split (q/k/v and gate/up by columns, o and down by rows), so each
layer does two all_reduces of one token's hidden state (hidden 1024 fp32: 4 KiB; hidden 4096: 16 KiB). The weights
come from a fixed seed, generated on the GPU matrix by matrix, so every rank and the one-GPU reference hold the same
numbers without files; the configurations are the seeded 334 M model of scripts/tp_inference.py (--config small:
vocab 32000, hidden 1024, MLP 4096, 16 layers, 16 heads) and a wider one (--config wide: hidden 4096, MLP 11008, 32
layers, 32 heads).

The graph feeds its own argmax back as the next step's token, so a replay is one token with no CPU work in between.
Each step is timed with CUDA events around its replay; after a warm-up pass the measured pass gives per-token median
and p90 and tokens/s. --no-allreduce leaves the all_reduces out (the compute-only bound; its tokens are not the
model's). The reference (--reference, one GPU) writes its tokens; a tensor-parallel run compares its own with them:
identical tokens is the correctness check ("tokens_match" in the JSON).

    python scripts/decode_graph.py --reference --out OUT --label single
    torchrun --nproc_per_node=2 scripts/decode_graph.py --out OUT --label jmesh --expect OUT/single.json

Under a placement (JMESH_BENCH_ADDRESSES, JMESH_BENCH_HOSTID: scripts/jmesh_rank_env.py) each rank takes its own
JMESH_ADDRESSES and NCCL_HOSTID before the process group starts. Rank 0 prints one result line and writes
<out>/<label>.json.
"""
import argparse
import json
import math
import os
import statistics
import sys

import torch

CONFIGS = {
    # the seeded 334 M model of scripts/tp_inference.py
    "small": dict(vocab=32000, hidden=1024, mlp=4096, layers=16, heads=16),
    "wide": dict(vocab=32000, hidden=4096, mlp=11008, layers=32, heads=32),
}
PROMPT = [1, 306, 4966, 278, 17424, 310, 263, 4094, 1048, 29892, 322, 372, 338, 1048, 263, 3303, 1784, 29889]
SEED = 20261125


def weight(gen, rows, cols, device, std):
    """One seeded matrix, the same on every rank and on the reference (generated whole, then sliced)."""
    return torch.randn(rows, cols, generator=gen, device=device, dtype=torch.float32) * std


class Model:
    """The weights of this rank's shard, and the static buffers one graph replay reads and writes."""

    def __init__(self, cfg, rank, world, device, max_len):
        hidden, mlp, heads = cfg["hidden"], cfg["mlp"], cfg["heads"]
        if heads % world or mlp % world:
            raise SystemExit(f"{heads} heads and an MLP of {mlp} do not split over {world} ranks")
        self.cfg, self.world, self.device = cfg, world, device
        self.hd = hidden // heads
        self.local_heads = heads // world
        lh, hd = self.local_heads, self.hd
        gen = torch.Generator(device=device)
        gen.manual_seed(SEED)
        std = 0.05
        self.embed = weight(gen, cfg["vocab"], hidden, device, 1.0)
        self.layers = []
        cols = slice(rank * lh * hd, (rank + 1) * lh * hd)
        mcols = slice(rank * (mlp // world), (rank + 1) * (mlp // world))
        for _ in range(cfg["layers"]):
            wq, wk, wv = (weight(gen, hidden, hidden, device, std) for _ in range(3))
            wo = weight(gen, hidden, hidden, device, std)
            wg, wu = (weight(gen, hidden, mlp, device, std) for _ in range(2))
            wd = weight(gen, mlp, hidden, device, std)
            self.layers.append(dict(
                qkv=torch.cat([wq[:, cols], wk[:, cols], wv[:, cols]], dim=1).contiguous(),
                o=wo[cols, :].contiguous(),           # rows: the partial sums of all ranks add up to the full product
                gu=torch.cat([wg[:, mcols], wu[:, mcols]], dim=1).contiguous(),
                down=wd[mcols, :].contiguous(),
                k=torch.zeros(lh, max_len, hd, device=device),
                v=torch.zeros(lh, max_len, hd, device=device)))
            del wq, wk, wv, wo, wg, wu, wd
        self.head = weight(gen, hidden, cfg["vocab"], device, std)
        self.inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
        self.positions = torch.arange(max_len, device=device)
        # what a replay reads and writes: the token in, its position, the argmax out, the tokens so far
        self.token = torch.zeros(1, dtype=torch.long, device=device)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self.out = torch.zeros(1, dtype=torch.long, device=device)
        self.tokens = torch.zeros(max_len, dtype=torch.long, device=device)
        self.logits = torch.zeros(cfg["vocab"], device=device)

    @staticmethod
    def rope(x, cos, sin):
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

    def step(self, all_reduce):
        """One token: reads token and pos, writes out, tokens[pos] and the logits, then advances pos and token."""
        lh, hd = self.local_heads, self.hd
        x = self.embed.index_select(0, self.token)          # (1, hidden)
        visible = (self.positions <= self.pos).view(1, 1, -1)
        angles = self.pos.float() * self.inv_freq              # once per step, for every layer
        cos, sin = torch.cos(angles), torch.sin(angles)
        for layer in self.layers:
            h = rms_norm(x)
            q, k, v = (h @ layer["qkv"]).view(3, lh, hd)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            layer["k"].index_copy_(1, self.pos, k.unsqueeze(1))
            layer["v"].index_copy_(1, self.pos, v.unsqueeze(1))
            attn = attention(q.unsqueeze(1), layer["k"], layer["v"], visible).reshape(1, lh * hd)
            partial = attn @ layer["o"]
            all_reduce(partial)
            x = x + partial
            h = rms_norm(x)
            g, u = (h @ layer["gu"]).chunk(2, dim=-1)
            partial = (torch.nn.functional.silu(g) * u) @ layer["down"]
            all_reduce(partial)
            x = x + partial
        logits = (rms_norm(x) @ self.head)[0]
        self.logits.copy_(logits)
        self.out.copy_(torch.argmax(logits).view(1))
        self.tokens.index_copy_(0, self.pos, self.out)
        self.token.copy_(self.out)
        self.pos.add_(1)


def attention(q, k, v, visible):
    """softmax(q k^T / sqrt(d)) v over the visible positions: one fused kernel where torch has it (2.0 and later)."""
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q, k, v, attn_mask=visible)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1) @ v


def rms_norm(x, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="small")
    ap.add_argument("--tokens", type=int, default=128, help="decode steps timed (after the prompt)")
    ap.add_argument("--reference", action="store_true", help="one GPU, no process group")
    ap.add_argument("--no-allreduce", action="store_true", help="leave the all_reduces out: the compute-only bound")
    ap.add_argument("--eager", action="store_true", help="run the step without a CUDA graph (for comparison)")
    ap.add_argument("--expect", help="the reference's JSON: its tokens must be this run's")
    ap.add_argument("--out", required=True)
    ap.add_argument("--label", required=True)
    args = ap.parse_args()
    cfg = CONFIGS[args.config]
    max_len = len(PROMPT) + args.tokens + 1
    os.makedirs(args.out, exist_ok=True)

    if args.reference:
        rank, world = 0, 1
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
    else:
        local = int(os.environ["LOCAL_RANK"])
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import jmesh_rank_env
        jmesh_rank_env.apply(local)
        # more ranks than GPUs share them (NCCL allows it across NCCL_HOSTIDs): a logic check, never a timing
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
        import torch.distributed as dist
        dist.init_process_group("nccl", device_id=device)
        rank, world = dist.get_rank(), dist.get_world_size()

    model = Model(cfg, rank, world, device, max_len)
    if world > 1 and not args.no_allreduce:
        import torch.distributed as dist

        def all_reduce(t):
            dist.all_reduce(t)
        # the communicator and its connections exist before capture: NCCL sets up nothing inside a graph
        warm = torch.ones(cfg["hidden"], device=device)
        for _ in range(3):
            dist.all_reduce(warm)
        torch.cuda.synchronize()
    else:
        def all_reduce(t):
            pass

    def reset():
        model.pos.zero_()
        for layer in model.layers:
            layer["k"].zero_()
            layer["v"].zero_()

    if args.eager:
        replay = lambda: model.step(all_reduce)
    else:
        # capture on a side stream after a few eager steps (the allocator and cuBLAS settle), then reset
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model.step(all_reduce)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model.step(all_reduce)
        replay = graph.replay
    torch.cuda.synchronize()

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(args.tokens)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(args.tokens)]

    def generate(timed):
        reset()
        for t in PROMPT:                                    # the prompt, token by token through the same step
            model.token.fill_(t)
            replay()
        for i in range(args.tokens):
            if timed:
                starts[i].record()
            replay()
            if timed:
                ends[i].record()
        torch.cuda.synchronize()

    generate(False)                                         # warm-up: the JIT of the plugin, NCCL's proxies
    generate(True)
    times_ms = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    generated = model.tokens[len(PROMPT):len(PROMPT) + args.tokens].tolist()
    if world > 1:
        import torch.distributed as dist
        gathered = [None] * world
        dist.all_gather_object(gathered, generated)
        same_on_ranks = all(g == generated for g in gathered)
    else:
        same_on_ranks = True
    same_on_ranks = same_on_ranks or args.no_allreduce   # without the all_reduces each rank decodes its own shard
    median = statistics.median(times_ms)
    p90 = times_ms[int(0.9 * (len(times_ms) - 1))]
    result = dict(label=args.label, config=args.config, ranks=world, graph=not args.eager,
                  allreduce=world > 1 and not args.no_allreduce, tokens=generated,
                  token_ms_median=median, token_ms_p90=p90, tokens_per_s=1000.0 / median,
                  allreduces_per_token=0 if world == 1 or args.no_allreduce else 2 * cfg["layers"],
                  allreduce_bytes=cfg["hidden"] * 4, same_on_ranks=same_on_ranks)
    if args.expect:
        with open(args.expect) as f:
            expected = json.load(f)["tokens"]
        result["tokens_match"] = expected == generated
        result["tokens_matching"] = sum(a == b for a, b in zip(expected, generated))
    if rank == 0:
        with open(os.path.join(args.out, args.label + ".json"), "w") as f:
            json.dump(result, f)
        match = "" if "tokens_match" not in result else (
            f", tokens {'identical to' if result['tokens_match'] else 'DIFFERENT from'} the reference"
            f" ({result['tokens_matching']}/{len(generated)})")
        print(f"{args.label}: {args.config} x{world}{' graph' if not args.eager else ' eager'}"
              f"{'' if result['allreduce'] or world == 1 else ' no-allreduce'}: {result['tokens_per_s']:.1f} tokens/s,"
              f" per token median {median * 1000:.0f} us p90 {p90 * 1000:.0f} us{match}"
              f"{'' if same_on_ranks else ', ranks DISAGREE'}", flush=True)
    bad = not same_on_ranks or (args.expect and not result["tokens_match"] and not args.no_allreduce)
    sys.stdout.flush()
    sys.stderr.flush()
    # no destroy_process_group: with NCCL operations captured in a live CUDA graph it can wait forever (seen on
    # 4 x H200 over NVLink), and the result is written; the process's exit releases what NCCL and the plugin hold
    os._exit(1 if bad else 0)


if __name__ == "__main__":
    main()
