#!/usr/bin/env python3
"""Greedy generation with a small Llama-style model, on one GPU or tensor-parallel over the ranks of a torchrun job.

No weights can be downloaded on the GPU machines, so the model is made here: a Llama configuration of about 330 M
parameters, initialised from a fixed seed and saved as safetensors (--make); every later run loads it from there.
One GPU (--reference) writes the token ids and the logits of every step; a tensor-parallel run (under torchrun,
transformers' tp_plan="auto": attention heads and MLP columns split over the ranks, NCCL all-reduces between them)
compares its tokens (identical) and logits (max |difference| within --tolerance) with that reference.

    python scripts/tp_inference.py --make --model DIR
    python scripts/tp_inference.py --reference --model DIR --out OUT --label single
    torchrun --nproc_per_node=2 scripts/tp_inference.py --model DIR --out OUT --label jmesh

Under a placement (JMESH_BENCH_ADDRESSES, JMESH_BENCH_HOSTID: scripts/jmesh_rank_env.py) each rank takes its own
JMESH_ADDRESSES and NCCL_HOSTID before the process group starts.

Times each decoding step (CUDA-synchronised) after a warm-up generation; rank 0 prints one result line and writes
<out>/<label>.json: tokens per second, per-token latency (median, p90), time to the first token.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

PROMPT = [1, 306, 4966, 278, 17424, 310, 263, 4094, 1048, 29892, 322, 372, 338, 1048, 263, 3303, 1784, 29889]


def make(model_dir):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(20261125)
    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=16,
                         num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=2048,
                         initializer_range=0.05, tie_word_embeddings=False, torch_dtype="float32")
    model = LlamaForCausalLM(config)
    model.save_pretrained(model_dir, safe_serialization=True)
    params = sum(p.numel() for p in model.parameters())
    print(f"made {model_dir}: {params / 1e6:.0f} M parameters, float32, seed 20261125")


def generate(model, device, new_tokens):
    """Greedy decoding with the KV cache; returns token ids, logits per step (float32, CPU), step times (s)."""
    from transformers import DynamicCache
    ids = torch.tensor([PROMPT], device=device)
    cache = DynamicCache()
    tokens, logits, times = [], [], []
    with torch.inference_mode():
        step_input = ids
        for _ in range(new_tokens):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(input_ids=step_input, past_key_values=cache, use_cache=True)
            last = out.logits[0, -1].float()
            nxt = int(torch.argmax(last))
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            tokens.append(nxt)
            logits.append(last.cpu())
            step_input = torch.tensor([[nxt]], device=device)
    return tokens, torch.stack(logits), times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out")
    ap.add_argument("--label", default="run")
    ap.add_argument("--make", action="store_true", help="make and save the model, then exit")
    ap.add_argument("--reference", action="store_true", help="one GPU: write the reference tokens and logits")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--tolerance", type=float, default=1e-3)
    args = ap.parse_args()
    if args.make:
        make(args.model)
        return 0

    from transformers import AutoModelForCausalLM
    tp = not args.reference
    placed = {}
    if tp:
        local_rank = int(os.environ["LOCAL_RANK"])
        import jmesh_rank_env
        placed = jmesh_rank_env.apply(local_rank)  # before from_pretrained starts the process group and NCCL
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, tp_plan="auto")
        import torch.distributed as dist
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        device = torch.device("cuda", 0)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).to(device)
        rank, world = 0, 1
    model.eval()

    generate(model, device, 8)  # warm-up: kernels, NCCL's connections, allocator
    tokens, logits, times = generate(model, device, args.new_tokens)
    decode = times[1:]  # times[0] is the prompt (prefill)
    result = {"label": args.label, "ranks": world, "new_tokens": len(tokens), "first_token_ms": times[0] * 1e3,
              "tokens_per_s": len(decode) / sum(decode), "token_ms_median": statistics.median(decode) * 1e3,
              "token_ms_p90": sorted(decode)[int(0.9 * (len(decode) - 1))] * 1e3, "tokens": tokens}
    if placed:
        result["placement"] = os.environ.get("JMESH_BENCH_ADDRESSES")
    status = 0
    if rank == 0 and args.out:
        os.makedirs(args.out, exist_ok=True)
        ref_path = os.path.join(args.out, "reference.pt")
        if args.reference:
            torch.save({"tokens": tokens, "logits": logits}, ref_path)
        elif os.path.exists(ref_path):
            ref = torch.load(ref_path)
            same = ref["tokens"] == tokens
            diff = float((ref["logits"] - logits).abs().max())
            result.update({"tokens_identical": same, "logits_max_abs_diff": diff, "tolerance": args.tolerance})
            if not same or diff > args.tolerance:
                status = 1
        with open(os.path.join(args.out, args.label + ".json"), "w") as f:
            json.dump(result, f, indent=1)
        check = ("" if "tokens_identical" not in result else
                 f"  tokens {'identical' if result['tokens_identical'] else 'DIFFER'} to one GPU, logits max |diff| "
                 f"{result['logits_max_abs_diff']:.2e} (tolerance {args.tolerance:g})")
        print(f"{args.label}: {world} rank(s): {result['tokens_per_s']:.1f} tokens/s, per token "
              f"{result['token_ms_median']:.2f} ms median, {result['token_ms_p90']:.2f} ms p90, first token "
              f"{result['first_token_ms']:.1f} ms{check}")
        print(f"{args.label}: tokens {tokens[:16]} ...")
    if tp:
        import torch.distributed as dist
        dist.barrier()
        dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
