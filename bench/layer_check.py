#!/usr/bin/env python3
"""The planner's GPU time for one layer pass against a real GPU's, with no GPU: bench/layer_probe's
predictions (the plan's own ops of vTrain's layer, launches left out) held against a stored
bench/eager_layer.py run (the profiler's kernel time per pass). Where the gap comes from is in the
stored run's per-kernel names; this prints each (pass, TP) and (pass, micro-batch) group's mean
signed error (predicted / measured - 1), the kernels per pass on both sides, and the measured
time by kernel class for the largest shape. It fits nothing and asserts nothing.

Usage: bench/layer_check.py PASSES.jsonl MEASURED.json   (bench/layer_check.sh runs both)
"""
import json
import re
import statistics
import sys

# Kernel classes by the profiler's kernel name (PyTorch 2.x on CUDA; cuBLAS GEMMs are nvjet_* on
# Hopper, ampere_* / sm80_* on A100).
CLASSES = [("GEMM", r"nvjet|gemm|sm\d+_xmma|ampere_|cutlass|splitKreduce"),
           ("softmax", r"softmax"),
           ("dropout", r"dropout|masked_scale"),
           ("LayerNorm", r"layer_norm|GammaBeta"),
           ("fused (scripted) element-wise", r"^fused_"),
           ("reduction", r"reduce_kernel"),
           ("copy / cat / memset", r"copy|Cat|Memset")]


def kernel_class(name):
    for label, pattern in CLASSES:
        if re.search(pattern, name):
            return label
    return "other element-wise"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    predicted = {}
    with open(sys.argv[1]) as f:
        for line in f:
            d = json.loads(line)
            predicted[(d["hidden"], d["tp"], d["micro_batch"], d["pass"])] = d
    measured = json.load(open(sys.argv[2]))
    groups, rows = {}, []
    for r in measured["runs"]:
        for p in ("forward", "backward"):
            key = (r["hidden"], r["tp"], r["micro_batch"], p)
            if key not in predicted:
                sys.exit(f"layer_check: {sys.argv[1]}: no prediction for hidden {key[0]} TP {key[1]} "
                         f"micro-batch {key[2]} {p}")
            err = predicted[key]["predicted_gpu_s"] / r[p]["gpu_s"] - 1
            rows.append((key, err))
            groups.setdefault((p, "TP", r["tp"]), []).append(err)
            groups.setdefault((p, "micro-batch", r["micro_batch"]), []).append(err)
            groups.setdefault((p, "kernels"), []).append((r[p]["kernels"], predicted[key]["kernels"]))
    print(f"{measured.get('device', '?')}, torch {measured.get('torch', '?')}: {len(rows)} passes; "
          f"mean error {100 * statistics.mean(e for _, e in rows):+.1f} %, "
          f"MAPE {100 * statistics.mean(abs(e) for _, e in rows):.1f} %")
    print(f"\n{'pass':>8} {'group':>14} {'passes':>6} {'mean error':>10}")
    for k in sorted(g for g in groups if len(g) == 3):
        v = groups[k]
        print(f"{k[0]:>8} {k[1] + ' ' + str(k[2]):>14} {len(v):>6} {100 * statistics.mean(v):>+9.1f}%")
    for p in ("forward", "backward"):
        counts = groups[(p, "kernels")]
        print(f"{p:>8} kernels per layer: measured {min(c for c, _ in counts):.0f}-{max(c for c, _ in counts):.0f}, "
              f"modelled {min(m for _, m in counts):.0f}-{max(m for _, m in counts):.0f}")
    big = max(measured["runs"], key=lambda r: r["forward"]["gpu_s"])
    print(f"\nmeasured kernel time by class, hidden {big['hidden']} TP {big['tp']} micro-batch "
          f"{big['micro_batch']} (model: {1e3 * predicted[(big['hidden'], big['tp'], big['micro_batch'], 'forward')]['predicted_gpu_s']:.3f}"
          f" / {1e3 * predicted[(big['hidden'], big['tp'], big['micro_batch'], 'backward')]['predicted_gpu_s']:.3f} ms):")
    for p in ("forward", "backward"):
        by = {}
        for name, (count, seconds) in big[p].get("kernel_names", {}).items():
            c = by.setdefault(kernel_class(name), [0, 0.0])
            c[0] += count
            c[1] += seconds
        total = sum(s for _, s in by.values()) or 1
        print(f"  {p} ({1e3 * big[p]['gpu_s']:.3f} ms): " +
              "; ".join(f"{label} {1e3 * s:.3f} ms ({100 * s / total:.0f} %, {n:.0f})"
                        for label, (n, s) in sorted(by.items(), key=lambda kv: -kv[1][1])))


if __name__ == "__main__":
    main()
