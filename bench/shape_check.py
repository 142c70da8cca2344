#!/usr/bin/env python3
"""Times, on a real GPU, every kernel bench/shape_probe.cc lists, and holds the cost model's
prediction against it (shape-aware compute costs, checked off the reference files).

The kernels are what one GPU runs for a transformer layer at hidden 1,024-12,288, TP 1-8 and
micro-batch 1-4 (seq 2,048): each GEMM of the QKV, projection and MLP ops, forward and backward,
as torch.nn.functional.linear does it (bf16, weight stored [out, in]); FlashAttention through
torch's SDPA flash backend (causal, bf16), forward and backward; LayerNorm forward and backward;
and unfused attention (batched GEMMs, softmax, dropout) at vTrain's shapes (seq 1,024).
Timing: CUDA events around each repetition after a warm-up, the median; inputs rotate over enough
copies that they do not sit in L2 (what a layer's GEMMs see in training). Random inputs, never
zeros. The two ceilings are measured first (a large bf16 GEMM, a device-to-device copy).

It fits nothing and asserts nothing: it prints each group's mean signed error (predicted /
measured - 1) and MAPE, and writes every kernel with both times as JSON lines.

Usage: bench/shape_check.py KERNELS.jsonl OUT.jsonl [--limit N] [--device cuda]
       bench/shape_check.py KERNELS.jsonl --against MEASURED.jsonl [--against ...]   (no GPU)
  (KERNELS from `shape_probe GPU`; --device cpu with --limit checks the script itself;
  bench/shape_check.sh builds the probe and replays the stored runs)
"""
import argparse
import json
import os
import statistics
import contextlib
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --against needs no PyTorch
    torch = F = None
try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except (ImportError, AttributeError):  # torch before 2.3 (Debian 12's): the CPU self-check only
    SDPBackend = sdpa_kernel = None

L2_BYTES = 64 << 20  # H100 50 MB, H200 60 MB: rotate over at least twice that


def timer(device):
    if device == "cuda":
        def run(fn, reps):
            start = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            end = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            for i in range(reps):
                start[i].record()
                fn(i)
                end[i].record()
            torch.cuda.synchronize()
            return statistics.median(s.elapsed_time(e) for s, e in zip(start, end)) * 1e-3
        return run

    def run_cpu(fn, reps):
        times = []
        for i in range(reps):
            t = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t)
        return statistics.median(times)
    return run_cpu


def copies_for(nbytes):
    return max(1, min(8, -(-2 * L2_BYTES // max(nbytes, 1))))


def measure(fn, timed, budget_s=0.05):
    """Warm up, estimate one call, then time enough repetitions for ~budget_s (10..200)."""
    for i in range(3):
        fn(i)
    one = timed(fn, 3)
    reps = int(min(200, max(10, budget_s / max(one, 1e-6))))
    return timed(fn, reps)


def kernel_timer(device):
    """Seconds of device kernels per call (the profiler's kernel durations, summed): what the GPU
    spends, without the host's gaps between launches that events around a call also count."""
    from torch.profiler import ProfilerActivity, profile
    activity = ProfilerActivity.CUDA if device == "cuda" else ProfilerActivity.CPU

    def run(fn, reps):
        with profile(activities=[activity]) as prof:
            for i in range(reps):
                fn(i)
            if device == "cuda":
                torch.cuda.synchronize()
        total_us = 0.0
        for a in prof.key_averages():
            if device == "cuda":
                total_us += (getattr(a, "self_device_time_total", 0) or
                             getattr(a, "self_cuda_time_total", 0))
            else:  # the script's CPU self-check: the ops' own CPU time
                total_us += a.self_cpu_time_total
        return total_us * 1e-6 / reps
    return run


def run_case(fn, timed, kernel):
    """(events' median per call, kernel seconds per call or None)."""
    wall = measure(fn, timed)
    return wall, (kernel(fn, 10) if kernel else None)


def pass_case(k, forward, inputs, grad_of, timed, kernel):
    """Times `forward` over the rotated input sets (phase FORWARD, no autograd graph) or its
    backward through autograd on a kept graph (phase BACKWARD): the gradients of grad_of(i)."""
    sets = len(inputs)
    if k["phase"] == "FORWARD":
        with torch.no_grad():
            return run_case(lambda i: forward(*inputs[i % sets]), timed, kernel)
    outs = [forward(*x) for x in inputs]
    dout = torch.randn_like(outs[0])
    return run_case(lambda i: torch.autograd.grad(outs[i % sets], grad_of(i % sets), dout,
                                                  retain_graph=True), timed, kernel)


def gemm_case(k, dev, timed, kernel=None):
    """The GEMM with its operands laid out as a Linear layer's: forward x @ W^T (W stored
    [out, in]), input gradient dy @ W, weight gradient dy^T @ x (both stored [tokens, features])."""
    m, n, kk, batch = int(k["m"]), int(k["n"]), int(k["k"]), int(k["batch"])
    nbytes = 2 * batch * (m * kk + n * kk)
    sets = copies_for(nbytes)
    role = k.get("role", "forward")
    shapes = {"forward": ((m, kk), (n, kk)), "input_grad": ((m, kk), (kk, n)),
              "weight_grad": ((kk, m), (kk, n))}[role]
    a = [torch.randn(batch, *shapes[0], device=dev, dtype=torch.bfloat16) for _ in range(sets)]
    b = [torch.randn(batch, *shapes[1], device=dev, dtype=torch.bfloat16) for _ in range(sets)]
    if batch == 1:
        a = [x[0] for x in a]
        b = [x[0] for x in b]
    t = (lambda x: x.transpose(-1, -2))
    op = {"forward": lambda x, y: torch.matmul(x, t(y)), "input_grad": torch.matmul,
          "weight_grad": lambda x, y: torch.matmul(t(x), y)}[role]
    return run_case(lambda i: op(a[i % sets], b[i % sets]), timed, kernel)


def attention_case(k, dev, timed, kernel=None, backend="flash"):
    heads = int(k["heads"]) // int(k["tp"])
    b, s, d = int(k["micro"]), int(k["seq"]), int(k["head_dim"])
    sets = copies_for(3 * 2 * b * heads * s * d)
    qkv = [[torch.randn(b, heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            for _ in range(3)] for _ in range(sets)]
    # One backend on the GPU: a silent fallback to another would time something else.
    ctx = (sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION,
                        "cudnn": SDPBackend.CUDNN_ATTENTION}[backend])
           if dev == "cuda" else contextlib.nullcontext())
    with ctx:
        return pass_case(k, lambda q, kk, v: F.scaled_dot_product_attention(q, kk, v, is_causal=True),
                         qkv, lambda i: qkv[i], timed, kernel)


def unfused_attention_case(k, dev, timed, kernel=None):
    """Megatron's unfused attention: scores = Q K^T (the scale folded into Q), softmax, dropout
    (p = 0.1), P V, batched over micro-batch x heads; the backward through autograd. No causal
    mask: Megatron's fused scale-mask-softmax masks within its one pass over the scores, where an
    eager masked_fill would add a pass."""
    heads = int(k["heads"]) // int(k["tp"])
    b, s, d = int(k["micro"]), int(k["seq"]), int(k["head_dim"])
    sets = copies_for(2 * b * heads * s * s)
    qkv = [[torch.randn(b * heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            for _ in range(3)] for _ in range(sets)]

    def forward(q, kk, v):
        p = F.dropout(torch.softmax(torch.bmm(q, kk.transpose(1, 2)), dim=-1), 0.1, training=True)
        return torch.bmm(p, v)
    return pass_case(k, forward, qkv, lambda i: qkv[i], timed, kernel)


def layernorm_case(k, dev, timed, kernel=None):
    rows, h = int(k["rows"]), int(k["hidden"])
    sets = copies_for(2 * rows * h)
    xs = [torch.randn(rows, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
          for _ in range(sets)]
    wt = torch.randn(h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    bias = torch.randn(h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    return pass_case(k, lambda x: F.layer_norm(x, (h,), wt, bias), [(x,) for x in xs],
                     lambda i: (xs[i], wt, bias), timed, kernel)


CASES = {"gemm": gemm_case, "attention": attention_case, "layernorm": layernorm_case,
         "attention_unfused": unfused_attention_case}


def ceilings(dev, timed):
    n = 8192 if dev == "cuda" else 512
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    t = measure(lambda i: a @ b, timed, 0.3)
    src = torch.randn(1 << (28 if dev == "cuda" else 22), device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    c = measure(lambda i: dst.copy_(src), timed, 0.3)
    return 2 * n ** 3 / t, 2 * src.numel() * 2 / c


def eager_launch(dev, calls=2000):
    """Host seconds per eager call of a tiny op (the GPU finishes each before the next arrives)."""
    x = torch.randn(64, 64, device=dev)
    w = torch.randn(64, 64, device=dev)
    out = []
    for fn in (lambda: x.add_(1.0), lambda: F.linear(x, w)):
        for _ in range(50):
            fn()
        if dev == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t) / calls)
        if dev == "cuda":
            torch.cuda.synchronize()
    return out


def table(title, key, rows):
    groups = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r["err"])
    print(f"\n{title:>22} {'kernels':>8} {'mean err':>9} {'MAPE':>7} {'min':>7} {'max':>7}")
    for g in sorted(groups):
        e = groups[g]
        print(f"{str(g):>22} {len(e):>8} {100 * statistics.mean(e):>8.1f}% "
              f"{100 * statistics.mean(abs(x) for x in e):>6.1f}% {100 * min(e):>6.1f}% {100 * max(e):>6.1f}%")


def measure_all(kernels, out, dev):
    """Times every kernel on `dev`; writes the ceilings and each kernel with its times to `out`."""
    timed = timer(dev)
    torch.manual_seed(0)
    if dev == "cuda":
        print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
    flops, bw = ceilings(dev, timed)
    print(f"ceilings: bf16 GEMM n^3 {flops / 1e12:.1f} TFLOP/s, copy {bw / 1e9:.0f} GB/s (read + write)")
    host = eager_launch(dev)
    print(f"eager launch (host time per call, GPU idle-waiting): add_ {host[0] * 1e6:.1f} us, "
          f"F.linear 64x64 {host[1] * 1e6:.1f} us")
    kernel = kernel_timer(dev)
    t0 = time.time()
    rows = []
    with open(out + ".tmp", "w") as f:
        f.write(json.dumps({"kind": "ceilings", "gemm_flops": flops, "copy_bytes_per_s": bw,
                            "device": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu",
                            "torch": torch.__version__, "eager_add_s": host[0],
                            "eager_linear_s": host[1]}) + "\n")
        for n, k in enumerate(kernels):
            try:
                k["measured_s"], k["kernel_s"] = CASES[k["kind"]](k, dev, timed, kernel)
            except Exception as e:  # one failing shape must not lose the others
                print(f"skipped {k['kind']} {k['op']} {k['phase']} h{k['hidden']} tp{k['tp']}: {e}",
                      file=sys.stderr)
                continue
            if k["kind"] == "attention" and dev == "cuda":
                try:  # cuDNN's fused attention (what Transformer Engine runs on Hopper)
                    k["cudnn_measured_s"], k["cudnn_kernel_s"] = attention_case(
                        k, dev, timed, kernel, backend="cudnn")
                except Exception as e:
                    print(f"no cuDNN attention at h{k['hidden']} tp{k['tp']}: {e}", file=sys.stderr)
            rows.append(k)
            f.write(json.dumps(k) + "\n")
            if dev == "cuda":
                torch.cuda.empty_cache()
            if n % 50 == 0:
                print(f"[{time.time() - t0:.0f} s] {n}/{len(kernels)}", file=sys.stderr, flush=True)
    os.replace(out + ".tmp", out)
    print(f"timed {len(rows)} kernels in {time.time() - t0:.0f} s")
    return rows


def shape_key(k):
    return tuple(k.get(f) for f in ("kind", "op", "phase", "role", "hidden", "heads", "tp", "micro",
                                    "seq", "m", "n", "k", "batch"))


def report(rows):
    """The tables: the model's kernel times (predicted_s) against the GPU's (kernel_s)."""
    for k in rows:
        # The model prices the GPU's time: held against the kernels' time; the events' time
        # (with the host's gaps between launches) is kept beside it.
        k["err"] = k["predicted_s"] / k["kernel_s"] - 1
        k["err_events"] = k["predicted_s"] / k["measured_s"] - 1
    print("\nerrors: predicted / kernel time - 1 (the profiler's kernel durations)")
    table("kind, phase", lambda r: (r["kind"], r["phase"][:3]), rows)
    table("GEMM role", lambda r: r.get("role"), [r for r in rows if r["kind"] == "gemm"])
    table("events: kind, phase", lambda r: (r["kind"], r["phase"][:3]),
          [dict(r, err=r["err_events"]) for r in rows])
    cudnn = [dict(r, err=r["predicted_s"] / r["cudnn_kernel_s"] - 1) for r in rows
             if r.get("cudnn_kernel_s")]
    table("cuDNN attention", lambda r: (r["phase"][:3], r["tp"]), cudnn)
    gemms = [r for r in rows if r["kind"] == "gemm"]
    table("GEMM op", lambda r: r["op"], gemms)
    table("GEMM tp", lambda r: r["tp"], gemms)
    table("GEMM hidden", lambda r: r["hidden"], gemms)
    table("attention tp", lambda r: r["tp"], [r for r in rows if r["kind"] == "attention"])
    table("attention hidden", lambda r: r["hidden"], [r for r in rows if r["kind"] == "attention"])
    unfused = [r for r in rows if r["kind"] == "attention_unfused"]
    table("unfused attn: phase, tp", lambda r: (r["phase"][:3], r["tp"]), unfused)
    table("unfused attn: micro", lambda r: r["micro"], unfused)
    worst = sorted(rows, key=lambda r: -abs(r["err"]))[:12]
    print("\nworst kernels (predicted / kernel time - 1; events' time beside):")
    for r in worst:
        shape = (f"{r['m']}x{r['n']}x{r['k']}" + (f" b{r['batch']}" if r["batch"] > 1 else "")
                 if r["kind"] == "gemm" else f"h{r['hidden']} tp{r['tp']} mb{r['micro']}")
        print(f"  {r['op']:>15} {r['phase'][:3]} {shape:>22} kernels {1e6 * r['kernel_s']:9.1f} us "
              f"events {1e6 * r['measured_s']:9.1f} us predicted {1e6 * r['predicted_s']:9.1f} us "
              f"{100 * r['err']:+6.1f}%")
    allerr = [abs(r["err"]) for r in rows]
    print(f"\n{len(rows)} kernels, MAPE {100 * statistics.mean(allerr):.1f}%, "
          f"{sum(e <= 0.1 for e in allerr)} within 10%")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", help="shape_probe's output: the kernels and the model's times")
    ap.add_argument("out", nargs="?", help="where to write the measured kernels (measure mode)")
    ap.add_argument("--against", action="append", help="no GPU: a stored measurement (an OUT of an "
                    "earlier run; repeat for several); the model's times come from KERNELS, the "
                    "GPU's from these files")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    kernels = [json.loads(line) for line in open(args.kernels)]
    if args.against:
        measured = {shape_key(k): k for path in args.against for k in map(json.loads, open(path))
                    if k["kind"] != "ceilings"}
        rows = []
        for k in kernels:
            m = measured.get(shape_key(k))
            if m is None:
                continue
            rows.append(dict(m, predicted_s=k["predicted_s"]))
        print(f"{len(rows)} of {len(kernels)} kernels measured in {', '.join(args.against)}")
        report(rows)
        return
    if not args.out:
        ap.error("OUT is required unless --against is given")
    if torch is None:
        sys.exit("shape_check: measuring needs PyTorch (python3-torch or a CUDA build)")
    if args.limit:
        kernels = kernels[:: max(1, len(kernels) // args.limit)]
    report(measure_all(kernels, args.out, args.device))


if __name__ == "__main__":
    main()
