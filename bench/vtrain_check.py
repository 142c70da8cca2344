#!/usr/bin/env python3
"""The planner against vTrain's 1,440 measured single-node A100 runs (narrow shapes).

../shared/reference/vtrain-single-node-a100.csv (its README gives the stack): each row becomes a
scenario by fixed rules (planner/fit/vtrain_scenario.tmpl, which planner/fit/vtrain_runs.cc compiles in),
no per-row knob: stack "megatron-deepspeed" (fused element-wise kernels,
no FlashAttention, nothing overlapped: the DP all-reduce after the backward, i.e. no gradient
buckets), full activation recomputation, 1F1B, no ZeRO, GPT-2's vocabulary, one A100 node of up to
8 GPUs at the A100's NVLink (the template says why not vTrain's 150 GB/s). `megascale plan --json` predicts the
iteration time; this prints the error overall (MAPE, worst rows) and per TP degree and per hidden
size (each group's mean signed error and MAPE), the groups a good model brings within 5 %, and
the share of each group's predicted step that its compute waits for the host's launches
(breakdown.host_wait_s; a TP collective's share of the wait counts as communication).
Then where the time goes, measured beside predicted (cost_split_table): the file holds each
configuration at 12, 16, 20 and 24 layers, so a line a + b x layers through each says what a layer
costs (b) and what the step costs beyond its layers (a); per TP and PP degree a is then split by
least squares into a fixed part per step, a part per micro-batch and a part per sequence x
hidden / 1,024 (the embedding, head and loss). And how repeatable the file is: runs that differ
only in DP (the same work per GPU but the DP all-reduce) are compared with their group's mean.
And how the file is built, from its rows alone (structure_table): which times are exactly linear
in the layer count and the micro-batches per step, as composed times are and measured ones are not.
And per layer shape (TP, hidden, micro-batch) the median predicted / measured, with the error that
is left once each shape's median is divided out (shape_table), and over the PP 1 rows the step split
into its terms (a layer's pass per micro-batch, the update, the rest of a micro-batch, the step),
measured beside predicted, with the MAPE when one measured term is swapped in (term_table).
It measures and asserts nothing: a benchmark, not a test.

Usage: bench/vtrain_check.py [--binary build/megascale] [--every N] [--jobs 2] [--launch-us X]
                             [--micro-batch-host-us X] [--rows FILE]
  --every N: every Nth row only (1,440 plans take ~40 s on 2 cores)
  --launch-us X: layout.kernels.launch_us for every row instead of the stack's (bench/fit_reference.py)
  --micro-batch-host-us X: layout.kernels.micro_batch_host_us likewise
  --rows FILE: also write every row with its prediction as JSON
"""
import argparse
import concurrent.futures
import csv
import functools
import json
import os
import statistics
import string
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV = os.path.join(ROOT, "..", "shared", "reference", "vtrain-single-node-a100.csv")


TEMPLATE = os.path.join(ROOT, "planner", "fit", "vtrain_scenario.tmpl")


def scenario_fields(row, i):
    """The template's fields for row `i` (planner/fit/vtrain_runs.cc fills the same ones)."""
    gpus = int(row["# GPUs"])
    return {"index": i, "gpus": gpus, "gpus_per_node": min(gpus, 8), "layers": row["# layers"],
            "hidden": row["hidden size"], "heads": row["attention heads"], "seq": row["sequence length"],
            "global_batch": row["global batch"], "micro_batch": row["micro batch"],
            "tp": row["tensor parallelism"], "pp": row["pipeline parallelism"], "dp": row["data parallelism"]}


@functools.lru_cache(maxsize=1)
def template():
    """planner/fit/vtrain_scenario.tmpl, read once."""
    with open(TEMPLATE) as f:
        return string.Template(f.read())


def scenario(row, i, knobs=None):
    """The row's scenario, by planner/fit/vtrain_scenario.tmpl's rules; `knobs` (layout.kernels fields:
    launch_us, micro_batch_host_us) override the stack's."""
    set_ = " ".join(f"{k}: {v}" for k, v in (knobs or {}).items() if v is not None)
    return template().substitute(scenario_fields(row, i), kernels=f"kernels {{ {set_} }} " if set_ else "")


def predict(binary, folder, i, row, knobs=None):
    path = os.path.join(folder, f"row{i}.textproto")
    with open(path, "w") as f:
        f.write(scenario(row, i, knobs))
    r = subprocess.run([binary, "plan", "--json", path], capture_output=True, text=True)
    if r.returncode != 0:
        return i, None, 0, r.stderr.strip().splitlines()[-1] if r.stderr else "exit %d" % r.returncode
    plan = json.loads(r.stdout)
    step = plan["iteration_time_s"]
    return i, step, plan["breakdown"].get("host_wait_s", 0) / step, ""


def group_table(title, key, rows):
    groups = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    print(f"\n{title:>12} {'rows':>5} {'mean error':>11} {'MAPE':>7} {'host wait':>10}")
    for k in sorted(groups):
        e = [r["err"] for r in groups[k]]
        host = statistics.mean(r["host_share"] for r in groups[k])
        print(f"{k:>12} {len(e):>5} {100 * statistics.mean(e):>10.1f}% {100 * statistics.mean(map(abs, e)):>6.1f}%"
              f" {100 * host:>9.0f}%")


def solve(a, b):
    """x with a x = b for a small dense system (Gaussian elimination, partial pivoting)."""
    n = len(b)
    m = [list(map(float, row)) + [float(v)] for row, v in zip(a, b)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-12:
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def least_squares(xs, ys):
    """Coefficients c minimising |X c - y| (normal equations)."""
    k = len(xs[0])
    ata = [[sum(x[i] * x[j] for x in xs) for j in range(k)] for i in range(k)]
    aty = [sum(x[i] * y for x, y in zip(xs, ys)) for i in range(k)]
    return solve(ata, aty)


def line(points):
    """(intercept, slope) of the least-squares line through (x, y) points."""
    c = least_squares([(1.0, x) for x, _ in points], [y for _, y in points])
    return (c[0], c[1]) if c else (float("nan"), float("nan"))


def cost_split_table(results):
    def cfg(r):
        w = r["row"]
        tp, pp, dp = (int(w[k]) for k in ("tensor parallelism", "pipeline parallelism", "data parallelism"))
        mb = int(w["micro batch"])
        return tp, pp, dp, int(w["hidden size"]), mb, int(w["global batch"]) // (mb * dp)
    groups = {}
    for r in results:
        groups.setdefault(cfg(r), []).append(r)
    per = {}
    for (tp, pp, dp, h, mb, m), rs in groups.items():
        if len({r["row"]["# layers"] for r in rs}) < 3:
            continue
        fits = [line([(int(r["row"]["# layers"]), 1000 * r[key]) for r in rs]) for key in ("measured", "predicted")]
        per.setdefault((tp, pp), []).append(((1.0, m, mb * m * h / 1024), fits))
    print("\nwhere the time goes (ms; measured / predicted): a + b x layers through each configuration, a split")
    print("into a fixed part per step, per micro-batch and per sequence x hidden / 1,024")
    print(f"{'TP':>3} {'PP':>3} {'groups':>6} {'per layer':>15} {'per step':>15} {'per micro-batch':>17} {'per seq x h/1k':>16}")
    for (tp, pp) in sorted(per):
        v = per[(tp, pp)]
        cols = []
        for which in (0, 1):
            slope = statistics.mean(f[which][1] for _, f in v)
            c = least_squares([x for x, _ in v], [f[which][0] for _, f in v]) if len(v) >= 4 else None
            cols.append((slope, c))
        def pair(i):
            a, b = cols[0][1], cols[1][1]
            return f"{a[i]:6.2f} / {b[i]:6.2f}" if a and b else "-"
        print(f"{tp:>3} {pp:>3} {len(v):>6} {cols[0][0]:6.2f} / {cols[1][0]:6.2f} {pair(0):>15} {pair(1):>17} {pair(2):>16}")
    same = {}
    for r in results:
        tp, pp, dp, h, mb, m = cfg(r)
        same.setdefault((tp, pp, h, int(r["row"]["# layers"]), mb, m), []).append(r["measured"])
    devs = [abs(t / statistics.mean(ts) - 1) for ts in same.values() if len(ts) > 1 for t in ts]
    if devs:
        print(f"repeatability: {len(devs)} runs that differ only in DP lie a mean {100 * statistics.mean(devs):.1f}% "
              f"from their group's mean")


def shape_table(results):
    """Per layer shape (TP, hidden, micro-batch: what one GPU's layer pass runs), the median of
    predicted / measured over the shape's rows (all its PP, DP, layer counts and batches), and the
    error once each shape's median is divided out: what is left when every layer shape's cost is
    right, i.e. how much of the error is the per-shape layer cost and how much the rest of the
    model (layers, pipeline, DP, micro-batch counts, the step's ends)."""
    shapes = {}
    for r in results:
        w = r["row"]
        key = (int(w["tensor parallelism"]), int(w["hidden size"]), int(w["micro batch"]))
        shapes.setdefault(key, []).append(r)
    print("\nper layer shape (predicted / measured, median over the shape's rows)")
    print(f"{'TP':>3} {'hidden':>7} {'mb':>3} {'rows':>5} {'ratio':>7}")
    left = []
    for key in sorted(shapes):
        rs = shapes[key]
        med = statistics.median(1 + r["err"] for r in rs)
        left += [abs((1 + r["err"]) / med - 1) for r in rs]
        print(f"{key[0]:>3} {key[1]:>7} {key[2]:>3} {len(rs):>5} {med:>7.3f}")
    print(f"with each shape's median divided out: MAPE {100 * statistics.mean(left):.1f}%, "
          f"rows beyond 10 %: {sum(e > 0.1 for e in left)}")


def term_table(results):
    """Per layer shape (TP, hidden, micro-batch), over its rows without pipeline stages (PP 1: each
    shape holds 12-48 such rows, at 2-16 micro-batches m a step and 12-24 layers L), the least-
    squares split of the step time into a x L x m (a layer's passes of one micro-batch), b x L (per
    layer and step: the update), c x m (per micro-batch outside the layers: the batch, embedding,
    head and loss, the host's work at the pipeline's ends) and d (per step), for the measured and
    the predicted times alike. Then the MAPE over these rows with the measured term swapped in for
    the predicted, one term at a time: which term the error lives in."""
    shapes = {}
    for r in results:
        w = r["row"]
        if int(w["pipeline parallelism"]) != 1:
            continue
        key = (int(w["tensor parallelism"]), int(w["hidden size"]), int(w["micro batch"]))
        m = int(w["global batch"]) / (int(w["micro batch"]) * int(w["data parallelism"]))
        shapes.setdefault(key, []).append(((int(w["# layers"]) * m, int(w["# layers"]), m, 1.0), r))
    print("\nthe step's terms per layer shape (PP 1; ms, measured / predicted): a x layers x micro-batches,")
    print("c x micro-batches, d per step (b x layers, the update, is within a few percent)")
    print(f"{'TP':>3} {'hidden':>7} {'mb':>3} {'rows':>5} {'a: layer pass':>17} {'c: micro-batch':>17} {'d: step':>15}")
    swapped = [[] for _ in range(5)]  # none, then a, b, c, d measured
    for key in sorted(shapes):
        xs = [x for x, _ in shapes[key]]
        fits = [least_squares(xs, [1000 * r[which] for _, r in shapes[key]]) for which in ("measured", "predicted")]
        if None in fits:
            continue  # one micro-batch count: the terms cannot be told apart
        meas, pred = fits
        print(f"{key[0]:>3} {key[1]:>7} {key[2]:>3} {len(xs):>5} {meas[0]:7.2f} / {pred[0]:6.2f} "
              f"{meas[2]:7.2f} / {pred[2]:6.2f} {meas[3]:6.2f} / {pred[3]:6.2f}")
        for x, r in shapes[key]:
            swapped[0].append(abs(r["err"]))
            for t in range(4):
                coef = [meas[i] if i == t else pred[i] for i in range(4)]
                swapped[t + 1].append(abs(sum(ci * xi for ci, xi in zip(coef, x)) / (1000 * r["measured"]) - 1))
    if swapped[0]:
        names = ("a (layer pass)", "b (update)", "c (micro-batch)", "d (step)")
        print(f"MAPE over these {len(swapped[0])} rows {100 * statistics.mean(swapped[0]):.1f}%; with the measured term: " +
              ", ".join(f"{n} {100 * statistics.mean(s):.1f}%" for n, s in zip(names, swapped[1:])))


def structure_table(rows):
    """How the file's times are built, from the rows alone: real runs carry noise, so a time that
    is exactly linear (to a microsecond) in the layer count and in the micro-batches per step, a
    layer's cost per micro-batch that is the same number at every PP degree, and a DP term (a run
    less its DP 1 twin) that falls as the gradients grow, say the rows are composed from per-shape
    terms, not measured one by one (docs/calibration.md, "How the file is built")."""
    times = {}
    for w in rows:
        tp, pp, dp = (int(w[c]) for c in ("tensor parallelism", "pipeline parallelism", "data parallelism"))
        mb, h, layers = int(w["micro batch"]), int(w["hidden size"]), int(w["# layers"])
        times[(tp, pp, dp, h, mb, layers, int(w["global batch"]) // (dp * mb))] = float(w["iteration time (ms)"])
    by_layers, by_m = {}, {}
    for (tp, pp, dp, h, mb, layers, m), t in times.items():
        by_layers.setdefault((tp, pp, dp, h, mb, m), {})[layers] = t
        by_m.setdefault((tp, pp, dp, h, mb, layers), {})[m] = t

    def exact(points):  # every point on its least-squares line, to 1 us
        a, b = line(points.items())
        return all(abs(a + b * x - y) < 1e-3 for x, y in points.items())

    lin_layers = {dp1: [exact(v) for k, v in by_layers.items() if len(v) >= 3 and (k[2] == 1) == dp1] for dp1 in (True, False)}
    lin_m = [exact(v) for v in by_m.values() if len(v) >= 3]
    if not (lin_layers[True] or lin_layers[False] or lin_m):
        print("\nhow the file is built: too few rows of one configuration to tell (every row needed, not --every)")
        return
    # a layer's cost per micro-batch (the slope over micro-batches, then over layers) x PP, per PP
    per_layer = {}
    for (tp, pp, dp, h, mb, layers), v in by_m.items():
        if dp == 1 and len(v) >= 2 and layers in (12, 24):
            xs = sorted(v)
            per_layer.setdefault((tp, h, mb, pp), {})[layers] = (v[xs[1]] - v[xs[0]]) / (xs[1] - xs[0])
    spread = {}
    for (tp, h, mb, pp), v in per_layer.items():
        if len(v) == 2:
            spread.setdefault((tp, h, mb), []).append(pp * (v[24] - v[12]) / 12)
    multi_pp = [max(a) - min(a) for a in spread.values() if len(a) > 1]
    # the DP term against the layer count: more layers (more gradients) in less time
    falls = 0
    dp_terms = {}
    for (tp, pp, dp, h, mb, layers, m), t in times.items():
        twin = times.get((tp, pp, 1, h, mb, layers, m))
        if dp > 1 and twin is not None:
            dp_terms.setdefault((tp, pp, dp, h), {})[layers] = t - twin
    for v in dp_terms.values():
        xs = sorted(v)
        falls += sum(v[b] < v[a] - 1e-3 for a, b in zip(xs, xs[1:]))
    print("\nhow the file is built (the rows alone): exactly linear (to 1 us) in the layer count: "
          f"{sum(lin_layers[True])} of {len(lin_layers[True])} configurations at DP 1, "
          f"{sum(lin_layers[False])} of {len(lin_layers[False])} at DP > 1; in the micro-batches per step: "
          f"{sum(lin_m)} of {len(lin_m)}; a layer's cost per micro-batch x PP differs across PP degrees by at most "
          f"{1000 * max(multi_pp, default=0):.3f} us ({len(multi_pp)} layer shapes at two or more PP degrees); "
          f"the DP term falls where the layers (and gradients) grow {falls} times")


def load_rows(every=1):
    if not os.path.exists(CSV):
        sys.exit(f"vtrain_check: {CSV} is missing (the shared reference folder beside the project)")
    with open(CSV) as f:
        return list(csv.DictReader(f))[::every]


def evaluate(binary, rows, jobs=2, knobs=None, progress=False):
    """Plans every row; returns (results, failed): results with the row, predicted and measured
    seconds and err = predicted / measured - 1; failed as (index, why)."""
    results = []
    failed = []
    with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(predict, binary, folder, i, row, knobs) for i, row in enumerate(rows)]
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            i, predicted, host_share, why = fut.result()
            if progress and n % 100 == 0:
                print(f"vtrain_check: {n}/{len(rows)} planned", file=sys.stderr)
            if predicted is None:
                failed.append((i, why))
                continue
            row = rows[i]
            measured = float(row["iteration time (ms)"]) / 1000
            results.append({"i": i, "row": row, "predicted": predicted, "measured": measured,
                            "err": predicted / measured - 1, "host_share": host_share})
    return results, failed


def mape(results):
    return statistics.mean(abs(r["err"]) for r in results)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "megascale"))
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--launch-us", type=float, default=None)
    ap.add_argument("--micro-batch-host-us", type=float, default=None)
    ap.add_argument("--rows", default=None)
    args = ap.parse_args()
    if args.every < 1 or args.jobs < 1:
        sys.exit("vtrain_check: --every and --jobs must be >= 1")
    if args.launch_us is not None and not 0 <= args.launch_us <= 10000:
        sys.exit(f"vtrain_check: --launch-us {args.launch_us} must be between 0 and 10000")
    if args.micro_batch_host_us is not None and not 0 <= args.micro_batch_host_us <= 100000:
        sys.exit(f"vtrain_check: --micro-batch-host-us {args.micro_batch_host_us} must be between 0 and 100000")
    rows = load_rows(args.every)
    knobs = {"launch_us": args.launch_us, "micro_batch_host_us": args.micro_batch_host_us}
    results, failed = evaluate(args.binary, rows, args.jobs, knobs, progress=True)
    if args.rows:
        tmp = args.rows + ".tmp"
        with open(tmp, "w") as f:
            json.dump([{**r["row"], "predicted_s": r["predicted"], "measured_s": r["measured"]} for r in results], f)
        os.replace(tmp, args.rows)
    print(f"{len(results)} rows planned, {len(failed)} refused by the planner")
    for i, why in failed[:5]:
        print(f"  refused row {i}: {why}")
    if not results:
        return
    errs = [r["err"] for r in results]
    print(f"MAPE {100 * mape(results):.1f}%, mean signed error {100 * statistics.mean(errs):+.1f}% "
          f"(predicted / measured - 1), rows beyond 10 %: {sum(abs(e) > 0.1 for e in errs)}")
    group_table("TP", lambda r: int(r["row"]["tensor parallelism"]), results)
    group_table("hidden", lambda r: int(r["row"]["hidden size"]), results)
    group_table("micro-batch", lambda r: int(r["row"]["micro batch"]), results)
    cost_split_table(results)
    shape_table(results)
    term_table(results)
    structure_table([r["row"] for r in results])
    print("\nworst rows (GPUs, TP x PP x DP, hidden x layers, micro/global batch: predicted vs measured ms)")
    for r in sorted(results, key=lambda r: -abs(r["err"]))[:8]:
        w = r["row"]
        print(f"  {w['# GPUs']} GPUs, {w['tensor parallelism']}x{w['pipeline parallelism']}x{w['data parallelism']}, "
              f"{w['hidden size']}x{w['# layers']}, mb {w['micro batch']}/{w['global batch']}: "
              f"{1000 * r['predicted']:.1f} vs {1000 * r['measured']:.1f} ({100 * r['err']:+.1f}%)")


if __name__ == "__main__":
    main()
