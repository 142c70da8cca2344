#!/usr/bin/env python3
"""The PyTorch peer for megascale's GPU executor: trains the same GPT on one GPU and times a step.

It builds the model that `megascale plan SCENARIO --json` describes (its "model" object: layers,
hidden, heads, kv_heads, ffn_hidden, seq_len, vocab, parallel_block, sliding_window), the way
exec/model/gpt.h does (pre-LayerNorm blocks, learned positions, GeLU MLP, LM head tied to the token
embedding), and trains it with AdamW on fp32 master weights under bf16 autocast, in two modes:
eager with scaled_dot_product_attention, and torch.compile of the same module. MFU uses the
plan's model_flops_per_step and peak_tflops, so both sides of the comparison count FLOPs with one
function (planner/cost/metrics.h), not two.

Usage (bench/gpu_vs_pytorch.sh runs it beside `megascale run`):
  megascale plan SCENARIO --json > plan.json
  python3 bench/pytorch_gpt.py --plan plan.json --micro-batch 4 --steps 20 --modes eager,compile
Prints one JSON object per mode on stdout: mode, step_s (median of the timed steps), tokens_per_s,
mfu, peak_memory_gb. Progress goes to stderr. PyTorch is the peer we measure against, not a
dependency of megascale: this file is not part of the build or the tests.
"""
import argparse
import json
import math
import statistics
import sys
import time


def log(msg):
    print(f"[pytorch_gpt] {msg}", file=sys.stderr, flush=True)


def build_model(torch, m):
    nn = torch.nn
    F = torch.nn.functional
    C, T, V = m["hidden"], m["seq_len"], m["vocab"]
    NH = m["heads"]
    KVH = m["kv_heads"] or NH
    HD = C // NH
    FF = m["ffn_hidden"] or 4 * C
    window = m["sliding_window"]
    parallel = m["parallel_block"]
    # This script builds GPT-2's block (GeLU MLP, tied head): a model it cannot build is refused
    # rather than replaced, since its FLOPs come from the plan's model.
    for key, builds in (("gated_mlp", False), ("tied_embeddings", True)):
        if m.get(key, builds) != builds:
            sys.exit(f"pytorch_gpt: model.{key} = {str(m[key]).lower()}: this script builds a GeLU MLP with a tied "
                     "LM head only")

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(C)
            self.qkv = nn.Linear(C, (NH + 2 * KVH) * HD)
            self.proj = nn.Linear(C, C)
            self.ln2 = None if parallel else nn.LayerNorm(C)
            self.up = nn.Linear(C, FF)
            self.down = nn.Linear(FF, C)
            if window > 0:
                # Keys in (t - window, t]: as exec/model/attention.h masks them.
                i = torch.arange(T)
                mask = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)
                self.register_buffer("mask", mask, persistent=False)
            else:
                self.mask = None

        def attn(self, x):
            B = x.shape[0]
            q, k, v = self.qkv(x).split([NH * HD, KVH * HD, KVH * HD], dim=-1)
            q = q.view(B, T, NH, HD).transpose(1, 2)
            k = k.view(B, T, KVH, HD).transpose(1, 2)
            v = v.view(B, T, KVH, HD).transpose(1, 2)
            if KVH != NH:  # grouped-query attention: each KV head serves NH / KVH query heads
                k = k.repeat_interleave(NH // KVH, dim=1)
                v = v.repeat_interleave(NH // KVH, dim=1)
            if self.mask is None:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)
            return self.proj(y.transpose(1, 2).reshape(B, T, C))

        def mlp(self, x):
            return self.down(F.gelu(self.up(x), approximate="tanh"))

        def forward(self, x):
            h = self.ln1(x)
            if parallel:  # MegaScale's parallel block: x + attn(ln(x)) + mlp(ln(x))
                return x + self.attn(h) + self.mlp(h)
            x = x + self.attn(h)
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(m["layers"]))
            self.ln_f = nn.LayerNorm(C)

        def forward(self, idx, targets):
            pos = torch.arange(T, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for b in self.blocks:
                x = b(x)
            logits = self.ln_f(x) @ self.wte.weight.t()  # tied LM head
            return F.cross_entropy(logits.float().view(-1, V), targets.reshape(-1))

    return GPT()


def time_mode(torch, plan, args, mode):
    m = plan["model"]
    T, V = m["seq_len"], m["vocab"]
    dev = torch.device("cuda")
    torch.manual_seed(1)
    model = build_model(torch, m).to(dev)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=True)
    step_fn = model
    if mode == "compile":
        step_fn = torch.compile(model)
    accumulation = args.global_batch // args.micro_batch
    g = torch.Generator(device=dev)
    g.manual_seed(7)

    def batch():
        idx = torch.randint(0, V, (args.micro_batch, T + 1), device=dev, generator=g)
        return idx[:, :-1], idx[:, 1:]

    def train_step():
        for _ in range(accumulation):
            x, y = batch()
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = step_fn(x, y) / accumulation
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    log(f"{mode}: {params / 1e9:.3f} B parameters, micro-batch {args.micro_batch} x {accumulation}, "
        f"{args.warmup} warm-up + {args.steps} timed steps")
    t0 = time.time()
    for _ in range(args.warmup):
        train_step()
    torch.cuda.synchronize()
    log(f"{mode}: warm-up done in {time.time() - t0:.1f} s")
    torch.cuda.reset_peak_memory_stats()
    times = []
    for i in range(args.steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = train_step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
        if not math.isfinite(loss.item()):
            raise SystemExit(f"pytorch_gpt: {mode}: loss is {loss.item()} at step {i}")
    step_s = statistics.median(times)
    tokens = args.global_batch * T
    # The plan's figures: model FLOPs for one step of global_batch sequences on one GPU.
    flops = plan["model_flops_per_step"] * args.global_batch / plan["layout"]["global_batch"]
    return {
        "mode": mode,
        "step_s": step_s,
        "tokens_per_s": tokens / step_s,
        "mfu": flops / (plan["peak_tflops"] * 1e12 * step_s),
        "peak_memory_gb": torch.cuda.max_memory_allocated() / 1e9,
        "parameters": params,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", required=True, help="output of `megascale plan SCENARIO --json`")
    ap.add_argument("--micro-batch", type=int, default=0, help="default: the plan's micro_batch")
    ap.add_argument("--global-batch", type=int, default=0, help="default: the plan's global_batch")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--modes", default="eager,compile")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        raise SystemExit("pytorch_gpt: PyTorch is not installed here (it is the peer measured "
                         "against on GPU machines, not a megascale dependency)")
    if not torch.cuda.is_available():
        raise SystemExit("pytorch_gpt: no CUDA device: this benchmark needs a GPU")
    with open(args.plan) as f:
        plan = json.load(f)
    for key in ("model", "model_flops_per_step", "peak_tflops", "layout"):
        if key not in plan:
            raise SystemExit(f"pytorch_gpt: {args.plan}: no '{key}' (not `megascale plan --json` output?)")
    if plan["gpus"] != 1:
        raise SystemExit(f"pytorch_gpt: {args.plan}: gpus = {plan['gpus']}: the peer runs on one GPU; "
                         "plan a one-GPU layout (tp = pp = dp = 1)")
    args.micro_batch = args.micro_batch or plan["layout"]["micro_batch"]
    args.global_batch = args.global_batch or plan["layout"]["global_batch"]
    if args.global_batch % args.micro_batch:
        raise SystemExit(f"pytorch_gpt: --global-batch {args.global_batch} must be a multiple of "
                         f"--micro-batch {args.micro_batch}")
    torch.backends.cuda.matmul.allow_tf32 = True
    for mode in args.modes.split(","):
        if mode not in ("eager", "compile"):
            raise SystemExit(f"pytorch_gpt: --modes: '{mode}' is not eager or compile")
        print(json.dumps(time_mode(torch, plan, args, mode)), flush=True)


if __name__ == "__main__":
    main()
