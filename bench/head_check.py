#!/usr/bin/env python3
"""What the work beyond the layers costs one GPU per TP degree: the tied embedding, the LM head
and Megatron's vocab-parallel cross-entropy, as eager PyTorch runs them.

vTrain's runs (../shared/reference/vtrain-single-node-a100.csv; bench/vtrain_check.py's cost
split) pay 4.2-4.5 ms per sequence x hidden / 1,024 beyond their layers at TP 1 and 0.8-1.1 ms at
TP 2: a 5x step for work that TP only halves, where the planner says 1.65 and 0.85. This times
that work on one GPU at each TP degree's per-GPU share (vocabulary 50,257 padded as Megatron pads
it, to a multiple of 128 x TP, then split by TP), to see whether TP 1's share is slower than twice
TP 2's, and which part is:
  embedding: F.embedding forward and its weight gradient (the word embedding, tied to the head);
  head: the logits GEMM (x W^T), its input and weight gradients;
  loss: the cross-entropy as Megatron's vocab_parallel_cross_entropy computes it (the logits
        cast to fp32; max, subtract, gather the target's logit, exp, sum, log; the softmax kept;
        its backward: the target's update, the scale, the cast back), collectives left out (one GPU);
  all: the three chained forward and backward, as a step runs them.
CUDA events, the median of --reps after a warm-up; random inputs, never zeros; fp16 (vTrain's).
Asserts and fits nothing. Usage: bench/head_check.py OUT.jsonl [--reps 20] [--device cuda|cpu]
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

VOCAB = 50257
SEQ = 1024


def padded(tp):
    m = 128 * tp
    return -(-VOCAB // m) * m


def vocab_parallel_ce(logits, target, vocab_start):
    """Megatron's vocab_parallel_cross_entropy (forward and its autograd backward), one rank."""
    logits = logits.float()
    logits_max = logits.max(dim=-1)[0]
    logits = logits - logits_max.unsqueeze(-1)
    vocab_end = vocab_start + logits.shape[-1]
    target_mask = (target < vocab_start) | (target >= vocab_end)
    masked_target = target.clone() - vocab_start
    masked_target[target_mask] = 0
    logits_2d = logits.view(-1, logits.shape[-1])
    arange_1d = torch.arange(logits_2d.shape[0], device=logits.device)
    predicted = logits_2d[arange_1d, masked_target.view(-1)].clone().view_as(target)
    predicted[target_mask] = 0.0
    exp_logits = torch.exp(logits)
    sum_exp = exp_logits.sum(dim=-1)
    return (torch.log(sum_exp) - predicted).mean()


def timed(fn, reps, device):
    for _ in range(3):
        fn()
    if device != "cuda":
        import time
        ts = []
        for _ in range(reps):
            t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
        return statistics.median(ts)
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    dev = args.device
    dtype = torch.float16 if dev == "cuda" else torch.float32
    shapes = [(h, tp, mb) for h in (1024, 2048) for tp in (1, 2, 4, 8) for mb in (1, 4)]
    if dev != "cuda":
        shapes = [(64, 1, 1), (64, 2, 1)]
    rows = []
    with open(args.out, "w") as f:
        for h, tp, mb in shapes:
            v = padded(tp) // tp
            seq = SEQ if dev == "cuda" else 16
            vocab = VOCAB if dev == "cuda" else 300
            if dev != "cuda":
                v = 160 // tp
            tokens = mb * seq
            w = (torch.randn(v, h, device=dev, dtype=dtype) * 0.02).requires_grad_()
            x = torch.randn(tokens, h, device=dev, dtype=dtype).requires_grad_()
            ids = torch.randint(0, vocab, (tokens,), device=dev)
            target = torch.randint(0, vocab, (tokens,), device=dev)
            start = 0  # rank 0's slice of the vocabulary

            def embedding():
                w.grad = None
                local = ids.clone()
                mask = (local < start) | (local >= start + v)
                local[mask] = 0
                e = F.embedding(local, w)
                e[mask, :] = 0.0
                e.float().sum().backward()

            def head():
                w.grad = x.grad = None
                F.linear(x, w).float().sum().backward()

            logits0 = torch.randn(tokens, v, device=dev, dtype=dtype)

            def loss():
                lg = logits0.clone().requires_grad_()
                vocab_parallel_ce(lg, target, start).backward()

            def chained():
                w.grad = x.grad = None
                local = ids.clone()
                mask = (local < start) | (local >= start + v)
                local[mask] = 0
                e = F.embedding(local, w)
                e[mask, :] = 0.0
                vocab_parallel_ce(F.linear(x + e, w), target, start).backward()

            row = {"hidden": h, "tp": tp, "micro": mb, "vocab_per_gpu": v, "tokens": tokens}
            for name, fn in (("embedding", embedding), ("head", head), ("loss", loss), ("all", chained)):
                row[name + "_s"] = timed(fn, args.reps, dev)
            row["all_per_seq_per_hk_ms"] = 1e3 * row["all_s"] / (mb * h / 1024)
            rows.append(row)
            f.write(json.dumps(row) + "\n")
            f.flush()
            del w, x, logits0
    print(f"{'h':>5} {'tp':>3} {'mb':>3} {'V/gpu':>6} {'embed ms':>9} {'head ms':>8} {'loss ms':>8} {'all ms':>8} "
          f"{'all per seq x h/1k':>19}")
    for r in rows:
        print(f"{r['hidden']:>5} {r['tp']:>3} {r['micro']:>3} {r['vocab_per_gpu']:>6} {1e3 * r['embedding_s']:9.3f} "
              f"{1e3 * r['head_s']:8.3f} {1e3 * r['loss_s']:8.3f} {1e3 * r['all_s']:8.3f} {r['all_per_seq_per_hk_ms']:19.3f}")


if __name__ == "__main__":
    sys.exit(main())
