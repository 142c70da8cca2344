#!/usr/bin/env python3
"""The planner against vTrain's 1,440 measured single-node A100 runs (issue 18's narrow shapes).

../shared/reference/vtrain-single-node-a100.csv (its README gives the stack): each row becomes a
scenario by fixed rules, no per-row knob: stack "megatron-deepspeed" (fused element-wise kernels,
no FlashAttention, nothing overlapped: the DP all-reduce after the backward, i.e. no gradient
buckets), full activation recomputation, 1F1B, no ZeRO, GPT-2's vocabulary, one A100 node of up to
8 GPUs with 150 GB/s inside it (what vTrain's configs state). `megascale plan --json` predicts the
iteration time; this prints the error overall (MAPE, worst rows) and per TP degree and per hidden
size (each group's mean signed error and MAPE), the groups issue 18 asks to bring within 5 %, and
the share of each group's predicted step that its compute waits for the host's launches
(breakdown.host_wait_s; a TP collective's share of the wait counts as communication).
It measures and asserts nothing: a benchmark, not a test.

Usage: bench/vtrain_check.py [--binary build/megascale] [--every N] [--jobs 2] [--launch-us X] [--rows FILE]
  --every N: every Nth row only (1,440 plans take ~40 s on 2 cores)
  --launch-us X: layout.kernels.launch_us for every row instead of the stack's (bench/fit_reference.py)
  --rows FILE: also write every row with its prediction as JSON
"""
import argparse
import concurrent.futures
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV = os.path.join(ROOT, "..", "shared", "reference", "vtrain-single-node-a100.csv")


def scenario(row, i, launch_us=None):
    gpus = int(row["# GPUs"])
    kernels = "" if launch_us is None else f"kernels {{ launch_us: {launch_us} }} "
    return f'''name: "vtrain-{i}"
stack: "megatron-deepspeed"
cluster {{ gpu: "A100" num_gpus: {gpus} gpus_per_node: {min(gpus, 8)} fabric: NONBLOCKING nvlink_gbytes_per_s: 150 }}
model {{ layers: {row["# layers"]} hidden: {row["hidden size"]} heads: {row["attention heads"]}
        seq_len: {row["sequence length"]} vocab: 50257 }}
training {{ global_batch: {row["global batch"]} micro_batch: {row["micro batch"]} }}
layout {{ tp: {row["tensor parallelism"]} pp: {row["pipeline parallelism"]} dp: {row["data parallelism"]}
         {kernels}zero_stage: 0 recompute: RECOMPUTE_FULL schedule: ONE_F_ONE_B }}
'''


def predict(binary, folder, i, row, launch_us=None):
    path = os.path.join(folder, f"row{i}.textproto")
    with open(path, "w") as f:
        f.write(scenario(row, i, launch_us))
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


def load_rows(every=1):
    if not os.path.exists(CSV):
        sys.exit(f"vtrain_check: {CSV} is missing (the shared reference folder beside the project)")
    with open(CSV) as f:
        return list(csv.DictReader(f))[::every]


def evaluate(binary, rows, jobs=2, launch_us=None, progress=False):
    """Plans every row; returns (results, failed): results with the row, predicted and measured
    seconds and err = predicted / measured - 1; failed as (index, why)."""
    results = []
    failed = []
    with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(predict, binary, folder, i, row, launch_us) for i, row in enumerate(rows)]
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
    ap.add_argument("--rows", default=None)
    args = ap.parse_args()
    if args.every < 1 or args.jobs < 1:
        sys.exit("vtrain_check: --every and --jobs must be >= 1")
    if args.launch_us is not None and not 0 <= args.launch_us <= 10000:
        sys.exit(f"vtrain_check: --launch-us {args.launch_us} must be between 0 and 10000")
    rows = load_rows(args.every)
    results, failed = evaluate(args.binary, rows, args.jobs, args.launch_us, progress=True)
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
    print("\nworst rows (GPUs, TP x PP x DP, hidden x layers, micro/global batch: predicted vs measured ms)")
    for r in sorted(results, key=lambda r: -abs(r["err"]))[:8]:
        w = r["row"]
        print(f"  {w['# GPUs']} GPUs, {w['tensor parallelism']}x{w['pipeline parallelism']}x{w['data parallelism']}, "
              f"{w['hidden size']}x{w['# layers']}, mb {w['micro batch']}/{w['global batch']}: "
              f"{1000 * r['predicted']:.1f} vs {1000 * r['measured']:.1f} ({100 * r['err']:+.1f}%)")


if __name__ == "__main__":
    main()
