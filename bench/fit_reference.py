#!/usr/bin/env python3
"""Fits one of the eager stacks' host costs on vTrain's single-node A100 runs and cross-validates
it, so that a fit that only memorises shows: layout.kernels.launch_us (default)
or layout.kernels.micro_batch_host_us (--knob), the other held at the stack's value.

launch_us is the host's time to issue one kernel in eager PyTorch (planner/spec/stack_presets.cc,
kEagerLaunchUs): it sets the floor of narrow per-GPU shapes, where a pass's kernels take the GPU
less time than the host takes to launch them (planner/program/layer_ops.h). micro_batch_host_us is the
host's work per micro-batch at each end of the pipeline (the batch, the loss) that the GPU waits
for (kEagerMicroBatchHostUs). Only the single-node file
(../shared/reference/vtrain-single-node-a100.csv) constrains it: the multi-node rows of
calibration.csv run per-GPU ops far longer than any launch. `megascale fit` fits both host costs
with the A100's constants over both files at once, in-process and faster than this; what this
adds is the held-out TP degrees and hidden sizes within vTrain's file.

It minimises the MAPE of the iteration time over the knob by golden-section search, then refits
with each TP degree held out and with each hidden size held out and prints the held-out group's
error at the held-in fit: the cross-validated error beside the in-sample one. The rows are planned
with `megascale plan` through bench/vtrain_check.py's rules. A benchmark: it asserts nothing.

Usage: bench/fit_reference.py [--binary build/megascale] [--every 4] [--jobs 2]
                              [--knob launch_us|micro_batch_host_us]
  --every N: every Nth row only (each evaluation plans 1440 / N rows; N = 4: ~10 s)
"""
import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vtrain_check  # noqa: E402

# Search range and tolerance per knob, microseconds.
KNOBS = {
    "launch_us": (0.0, 150.0, 2.0),  # from a C++ launch to a slow Python module call
    "micro_batch_host_us": (0.0, 5000.0, 50.0),  # nothing to a few ms of Python per micro-batch
}


def fit(binary, rows, jobs, label, knob="launch_us"):
    """The knob's value of least MAPE over `rows` (golden-section search on its range)."""
    lo, hi, tolerance = KNOBS[knob]
    cache = {}

    def loss(x):
        x = round(x, 2)
        if x not in cache:
            results, _ = vtrain_check.evaluate(binary, rows, jobs, {knob: x})
            cache[x] = vtrain_check.mape(results)
            print(f"fit_reference: {label}: {knob} {x:7.2f} -> MAPE {100 * cache[x]:5.2f}%", file=sys.stderr)
        return cache[x]

    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    while b - a > tolerance:
        if loss(c) < loss(d):
            b, d = d, c
            c = b - g * (b - a)
        else:
            a, c = c, d
            d = a + g * (b - a)
    best = round((a + b) / 2, 1)
    return best, loss(best)


def summary(results):
    errs = [r["err"] for r in results]
    return f"MAPE {100 * vtrain_check.mape(results):5.1f}%, mean {100 * statistics.mean(errs):+5.1f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(vtrain_check.ROOT, "build", "megascale"))
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--knob", default="launch_us", choices=sorted(KNOBS))
    args = ap.parse_args()
    if args.every < 1 or args.jobs < 1:
        sys.exit("fit_reference: --every and --jobs must be >= 1")
    if not os.path.exists(args.binary):
        sys.exit(f"fit_reference: no binary at {args.binary} (build first, or --binary)")
    rows = vtrain_check.load_rows(args.every)
    knob = args.knob
    best, loss = fit(args.binary, rows, args.jobs, "all rows", knob)
    print(f"{knob} fitted on {len(rows)} rows: {best:.1f} us (in-sample MAPE {100 * loss:.1f}%)")
    at_best, _ = vtrain_check.evaluate(args.binary, rows, args.jobs, {knob: best})
    print(f"\n{'held out':>14} {'rows':>5} {knob:>10}   held-out error at that fit   in-sample at {best:.1f}")
    for title, key in (("TP", "tensor parallelism"), ("hidden", "hidden size")):
        for value in sorted({r[key] for r in rows}, key=int):
            train = [r for r in rows if r[key] != value]
            test = [r for r in rows if r[key] == value]
            fold, _ = fit(args.binary, train, args.jobs, f"{title} {value} held out", knob)
            held, _ = vtrain_check.evaluate(args.binary, test, args.jobs, {knob: fold})
            inside = [r for r in at_best if r["row"][key] == value]
            print(f"{title + ' ' + value:>14} {len(test):>5} {fold:>10.1f}   {summary(held):>27}   {summary(inside)}")


if __name__ == "__main__":
    main()
