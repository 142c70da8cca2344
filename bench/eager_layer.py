#!/usr/bin/env python3
"""Where an eager layer waits for its host: a Megatron-DeepSpeed GPT layer (one TP rank's share,
no communication) timed on one GPU, pass by pass, beside the host's time to issue it and the
GPU's kernel time (the per-kernel launch term and the host-bound floor).

The layer is the vTrain stack's (../shared/reference/README.md): pre-LayerNorm, QKV with bias,
unfused attention (baddbmm scores, softmax, dropout, bmm; --mask), projection, fused
bias-dropout-add, LayerNorm, MLP up with Megatron's fused bias-GeLU, MLP down, bias-dropout-add;
fp16; full activation recomputation through torch.utils.checkpoint, one layer per chunk (what
DeepSpeed's checkpointing does with checkpoint_num_layers 1). One TP rank's share: the QKV and MLP-up
outputs, the projection and MLP-down inputs and the heads split by TP; the TP all-reduces (two
per layer and pass) are left out, as one GPU has no peers.

For each (hidden, TP, micro-batch) it measures, per layer and micro-batch, for the forward pass
(under checkpointing: no graph kept) and the backward pass (recompute + backward):
  wall_s   from the pass's start on an idle GPU to its last kernel's end (synchronized);
  host_s   the host's time to issue the pass (the call's return, no synchronization: the host
           never waits for the GPU inside a pass, so this is its issue time whether or not the
           GPU keeps up);
  gpu_s    the profiler's kernel durations, summed;
  kernels  the number of kernels the pass launched.
The planner prices a pass as max(host, GPU) (planner/program/layer_ops.cc HostBoundStretch): the table
holds that, and host + GPU, against wall. It fits nothing and asserts nothing.

Usage: bench/eager_layer.py OUT.json [--device cuda] [--hidden 1024,2048] [--tp 1,2,4,8]
                           [--mb 1,2,4,8] [--layers 4] [--seq 1024] [--reps 10] [--mask none|fill]
                           [--repeat N] [--shuffle SEED]
  (--device cpu --hidden 64 --seq 32 --tp 1 --mb 1 checks the script itself on Debian's torch)
"""
import argparse
import json
import math
import os
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def log(msg):
    print(f"[eager_layer] {msg}", file=sys.stderr, flush=True)


# Megatron's fused element-wise kernels (megatron/model/fused_bias_gelu.py and transformer.py's
# bias_dropout_add_fused_train), scripted as it scripts them.
@torch.jit.script
def bias_gelu(bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


@torch.jit.script
def bias_dropout_add(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, prob: float) -> torch.Tensor:
    return residual + F.dropout(x + bias, p=prob, training=True)


class Layer(torch.nn.Module):
    def __init__(self, hidden, heads, tp, dev, dtype, mask):
        super().__init__()
        self.mask = mask
        h, hp, fp = hidden, hidden // tp, 4 * hidden // tp
        self.heads = heads // tp
        self.head_dim = hidden // heads

        def param(*shape):
            return torch.nn.Parameter(torch.randn(*shape, device=dev, dtype=dtype) * 0.02)
        self.ln1_w, self.ln1_b = param(h), param(h)
        self.qkv_w, self.qkv_b = param(3 * hp, h), param(3 * hp)
        self.proj_w, self.proj_b = param(h, hp), param(h)
        self.ln2_w, self.ln2_b = param(h), param(h)
        self.up_w, self.up_b = param(fp, h), param(fp)
        self.down_w, self.down_b = param(h, fp), param(h)

    def attention(self, x):
        s, b, _ = x.shape
        np_, hn = self.heads, self.head_dim
        qkv = F.linear(x, self.qkv_w, self.qkv_b).view(s, b, np_, 3 * hn)
        q, k, v = qkv.split(hn, dim=-1)
        q = q.reshape(s, b * np_, hn).transpose(0, 1)
        k = k.reshape(s, b * np_, hn).transpose(0, 1)
        v = v.reshape(s, b * np_, hn).transpose(0, 1)
        scores = torch.baddbmm(torch.empty(b * np_, s, s, device=x.device, dtype=x.dtype), q,
                               k.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(hn))
        if self.mask == "fill":  # a causal mask as plain PyTorch writes it: two more passes
            scores = scores.masked_fill(torch.ones(s, s, device=x.device, dtype=torch.bool).triu_(1), -10000.0)
        probs = F.dropout(torch.softmax(scores, dim=-1), p=0.1, training=True)
        ctx = torch.bmm(probs, v).transpose(0, 1).reshape(s, b, np_ * hn)
        return F.linear(ctx, self.proj_w)

    def forward(self, x):
        h = x.shape[-1]
        a = self.attention(F.layer_norm(x, (h,), self.ln1_w, self.ln1_b))
        x = bias_dropout_add(a, self.proj_b, x, 0.1)
        y = F.linear(F.layer_norm(x, (h,), self.ln2_w, self.ln2_b), self.up_w)
        y = F.linear(bias_gelu(self.up_b, y), self.down_w)
        return bias_dropout_add(y, self.down_b, x, 0.1)


def passes(layers, x, dout):
    """The forward (checkpointed) and the backward of one micro-batch, as two callables."""
    state = {}

    def forward():
        y = x
        for layer in layers:
            y = checkpoint(layer, y, use_reentrant=True)
        state["y"] = y

    def backward():
        state.pop("y").backward(dout)
    return forward, backward


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def timed_pass(fn, dev):
    """(wall, host): the pass from an idle GPU to its end, and the host's time to issue it."""
    sync(dev)
    t0 = time.perf_counter()
    fn()
    t1 = time.perf_counter()
    sync(dev)
    return time.perf_counter() - t0, t1 - t0


def kernel_time(fn, dev):
    """(seconds of kernels, kernel count, {kernel name: [count, seconds]}) of one call of fn, from
    the profiler: the time as bench/shape_check.py sums it (every row's own device time), the count
    and the names from its device events."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA if dev == "cuda" else ProfilerActivity.CPU]) as prof:
        fn()
        sync(dev)
    total_us = 0.0
    for a in prof.key_averages():
        if dev == "cuda":
            total_us += getattr(a, "self_device_time_total", 0) or getattr(a, "self_cuda_time_total", 0)
        else:  # the script's CPU self-check: the ops' own CPU time
            total_us += a.self_cpu_time_total
    names = {}
    try:
        gpu = [e for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")]
        count = len(gpu) if dev == "cuda" else len([e for e in prof.events() if e.cpu_parent is None])
        for e in gpu:
            n = names.setdefault(e.name[:120], [0, 0.0])
            n[0] += 1
            n[1] += e.time_range.elapsed_us() * 1e-6
    except (AttributeError, RuntimeError) as err:  # an API this script was not written against
        log(f"kernel count unavailable: {err}")
        count = -1
    return total_us * 1e-6, count, names


def measure(hidden, heads, tp, mb, seq, n_layers, reps, dev, mask):
    dtype = torch.float16 if dev == "cuda" else torch.float32
    layers = [Layer(hidden, heads, tp, dev, dtype, mask) for _ in range(n_layers)]
    x = torch.randn(seq, mb, hidden, device=dev, dtype=dtype, requires_grad=True)
    dout = torch.randn(seq, mb, hidden, device=dev, dtype=dtype)
    forward, backward = passes(layers, x, dout)
    for _ in range(3):  # warm-up: the scripted kernels compile on their first calls
        forward()
        backward()
    rows = {"forward": [], "backward": []}
    for _ in range(reps):
        rows["forward"].append(timed_pass(forward, dev))
        rows["backward"].append(timed_pass(backward, dev))
    per = n_layers  # per layer and micro-batch
    out = {"hidden": hidden, "heads": heads, "tp": tp, "micro_batch": mb, "seq": seq, "layers": n_layers,
           "mask": mask}
    forward()
    fwd_k = kernel_time(forward, dev)
    bwd_k = kernel_time(backward, dev)
    for name, (k_s, k_n, k_names) in (("forward", fwd_k), ("backward", bwd_k)):
        out[name] = {"wall_s": statistics.median(w for w, _ in rows[name]) / per,
                     "host_s": statistics.median(h for _, h in rows[name]) / per,
                     "gpu_s": k_s / per, "kernels": k_n / per,
                     "wall_reps_s": [w / per for w, _ in rows[name]], "host_reps_s": [h / per for _, h in rows[name]],
                     "kernel_names": {k: [c / per, t / per] for k, (c, t) in sorted(k_names.items())}}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--hidden", default="1024,2048")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--tp", default="1,2,4,8")
    ap.add_argument("--mb", default="1,2,4,8")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--mask", choices=("none", "fill"), default="none",
                    help="none: the softmax's own pass masks, as Megatron's fused scale-mask-softmax "
                         "does (the scores are not masked here: the same bytes and kernels); fill: "
                         "masked_fill over the scores before a plain softmax")
    ap.add_argument("--repeat", type=int, default=1, help="measure every configuration this many times")
    ap.add_argument("--shuffle", type=int, default=None, help="random order of the configurations (seed)")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("eager_layer: --device cuda: no CUDA device here (use --device cpu for the self-check)")
    def ints(flag, text):
        try:
            values = [int(v) for v in text.split(",")]
        except ValueError:
            sys.exit(f"eager_layer: {flag} {text!r}: want comma-separated integers")
        if min(values) < 1:
            sys.exit(f"eager_layer: {flag} {text!r}: every value must be >= 1")
        return values
    hiddens, tps, mbs = ints("--hidden", a.hidden), ints("--tp", a.tp), ints("--mb", a.mb)
    for flag, v in (("--layers", a.layers), ("--seq", a.seq), ("--reps", a.reps), ("--repeat", a.repeat)):
        if v < 1:
            sys.exit(f"eager_layer: {flag} {v}: must be >= 1")
    for hidden in hiddens:
        for tp in tps:
            if hidden % a.heads or a.heads % tp:
                sys.exit(f"eager_layer: hidden {hidden}, --heads {a.heads}, TP {tp}: the heads must divide "
                         "the hidden size and TP the heads")
    results = []
    import platform
    head = {"device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
            "torch": torch.__version__, "host": platform.processor() or platform.machine(),
            "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                               if l.startswith("model name")), "?")}
    log(f"{head['device']}, torch {head['torch']}")
    configs = [(h, tp, mb) for h in hiddens for tp in tps for mb in mbs] * a.repeat
    if a.shuffle is not None:  # whether a configuration's host time is its own or the run's moment
        random.Random(a.shuffle).shuffle(configs)
    for hidden, tp, mb in configs:
        r = measure(hidden, a.heads, tp, mb, a.seq, a.layers, a.reps, a.device, a.mask)
        results.append(r)
        f, b = r["forward"], r["backward"]
        log(f"hidden {hidden} tp {tp} mb {mb}: fwd wall {f['wall_s'] * 1e3:.3f} ms host "
            f"{f['host_s'] * 1e3:.3f} gpu {f['gpu_s'] * 1e3:.3f} ({f['kernels']:.0f} kernels); bwd wall "
            f"{b['wall_s'] * 1e3:.3f} host {b['host_s'] * 1e3:.3f} gpu {b['gpu_s'] * 1e3:.3f} "
            f"({b['kernels']:.0f} kernels)")
    tmp = a.out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump({**head, "runs": results}, fh, indent=1)
    os.replace(tmp, a.out)
    print(f"{'pass':>8} {'hidden':>6} {'tp':>3} {'mb':>3} {'wall ms':>8} {'host':>7} {'gpu':>7} "
          f"{'max/wall':>8} {'sum/wall':>8} {'kernels':>7} {'us/kernel':>9}")
    for r in results:
        for name in ("forward", "backward"):
            p = r[name]
            print(f"{name:>8} {r['hidden']:>6} {r['tp']:>3} {r['micro_batch']:>3} {p['wall_s'] * 1e3:>8.3f} "
                  f"{p['host_s'] * 1e3:>7.3f} {p['gpu_s'] * 1e3:>7.3f} "
                  f"{max(p['host_s'], p['gpu_s']) / p['wall_s']:>8.2f} "
                  f"{(p['host_s'] + p['gpu_s']) / p['wall_s']:>8.2f} {p['kernels']:>7.0f} "
                  f"{p['host_s'] / max(p['kernels'], 1) * 1e6:>9.1f}")


if __name__ == "__main__":
    main()
