#!/usr/bin/env python3
"""Scores the diagnosis on randomized faults injected into simulated runs (>= 1,024 ranks).

Each case: a scenario made on the fly (gpt-1.3b, TP 4 x PP 2 x DP 128 on 1,024 A100s, 3 steps,
rail CLOS with 8 nodes per ToR: 4 pods), one injected fault, `megascale simulate --json` (whose
report is the streaming diagnosis of the run: the same engine `diagnose` runs on a trace), and
the findings compared with the truth:
  slow GPU   faults.stragglers, one random rank, speed 1/(1+s) (s = --slowdown, default 5%)
  hang       faults.failures, one random rank, GPU failure at a random time in step 2
  slow NIC   faults.degraded_links on one random rank's NIC cable, fraction --nic-fraction
  congested  faults.degraded_links on TIER_TOR_UP of one random pod, fraction --link-fraction
  healthy    no fault (false positives)
Scoring: straggler precision/recall over ranks; hang top-1; the class (slow GPU if a straggler is
found, else the slow-link finding's kind, else none) against the injected class.
Usage: bench/diag_eval.py --megascale build-diag/megascale [--cases 10] [--jobs 2] [--seed 1]
"""
import argparse, json, os, random, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor

BASE = """name: "diag-eval"
cluster { gpu: "A100" num_gpus: 1024 fabric: RAIL_CLOS nodes_per_tor: 8 }
model { preset: "gpt-1.3b" }
training { global_batch: 1024 micro_batch: 1 steps: 3 }
layout { tp: 4 pp: 2 dp: 128 schedule: ONE_F_ONE_B zero_stage: 1 }
sim { seed: %d heartbeat_interval_s: 1 heartbeat_timeout_s: 5 }
"""
WORLD, PODS = 1024, 4


def make_case(kind, rng, args):
    seed = rng.randrange(1, 1 << 30)
    text, truth = BASE % seed, {"kind": kind}
    if kind == "slow GPU":
        r = rng.randrange(WORLD)
        text += "faults { stragglers { rank: %d speed: %.9f } }\n" % (r, 1 / (1 + args.slowdown))
        truth["rank"] = r
    elif kind == "hang":
        r = rng.randrange(WORLD)
        # Steps take ~0.26 s: fail inside the third step.
        text += "faults { failures { kind: GPU_FAILURE rank: %d time_s: %.4f } }\n" % (r, rng.uniform(0.55, 0.75))
        truth["rank"] = r
    elif kind == "slow NIC":
        r = rng.randrange(WORLD)
        text += "faults { degraded_links { links { rank: %d } fraction: %g } }\n" % (r, args.nic_fraction)
        truth["rank"] = r
    elif kind == "congested link":
        p = rng.randrange(PODS)
        text += "faults { degraded_links { links { tier: TIER_TOR_UP pod: %d } fraction: %g } }\n" % (p, args.link_fraction)
        truth["pod"] = p
    return text, truth


def run_case(megascale, text, workdir, idx):
    path = os.path.join(workdir, "case%d.textproto" % idx)
    with open(path, "w") as f:
        f.write(text)
    t0 = time.time()
    out = subprocess.run([megascale, "simulate", "-q", "--json", path], capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()[-300:], time.time() - t0
    return json.loads(out.stdout), None, time.time() - t0


def classify(report):
    if report["stragglers"]:
        return "slow GPU"
    if report.get("slow_link"):
        return report["slow_link"]["kind"]
    return "none"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--megascale", required=True)
    ap.add_argument("--cases", type=int, default=10, help="cases per fault kind")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slowdown", type=float, default=0.05)
    ap.add_argument("--nic-fraction", type=float, default=0.25)
    ap.add_argument("--link-fraction", type=float, default=0.5)
    ap.add_argument("--kinds", default="slow GPU,hang,slow NIC,congested link,healthy")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    kinds = args.kinds.split(",")
    cases = [make_case(k, rng, args) for k in kinds for _ in range(args.cases)]
    workdir = tempfile.mkdtemp(prefix="diag_eval_")
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda ic: run_case(args.megascale, ic[1][0], workdir, ic[0]), enumerate(cases)))

    tp = fp = fn = 0
    hang_top1 = hang_n = 0
    confusion = {}
    errors, walls = [], []
    for (text, truth), (report, err, wall) in zip(cases, results):
        walls.append(wall)
        if report is None:
            errors.append("%s: %s" % (truth, err))
            continue
        kind = truth["kind"]
        flagged = {s["rank"] for s in report["stragglers"]}
        if kind in ("slow GPU", "healthy", "slow NIC", "congested link"):
            want = {truth["rank"]} if kind == "slow GPU" else set()
            tp += len(flagged & want)
            fp += len(flagged - want)
            fn += len(want - flagged)
        if kind == "hang":
            hang_n += 1
            got = (report.get("hang") or {}).get("rank", (report.get("failure") or {}).get("rank"))
            hang_top1 += got == truth["rank"]
            if got != truth["rank"]:
                errors.append("hang %s: got %s (%s)" % (truth, got, (report.get("hang") or {}).get("evidence")))
        else:
            got = classify(report)
            if kind == "slow NIC" and got == "slow NIC" and report["slow_link"]["rank"] != truth["rank"]:
                got = "slow NIC (wrong rank)"
            confusion.setdefault(kind, {}).setdefault(got, 0)
            confusion[kind][got] += 1
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print("cases: %d (%d per kind), 1,024 ranks, 3 steps; %.1f s simulated+diagnosed per case (mean wall)"
          % (len(cases), args.cases, sum(walls) / len(walls)))
    print("\n| straggler (%.0f%% slower, over all cases) | value |\n| --- | --- |" % (100 * args.slowdown))
    print("| true positives | %d |\n| false positives | %d |\n| false negatives | %d |" % (tp, fp, fn))
    print("| precision | %.3f |\n| recall | %.3f |" % (precision, recall))
    if hang_n:
        print("\n| hang | value |\n| --- | --- |\n| cases | %d |\n| culprit top-1 | %d (%.1f%%) |"
              % (hang_n, hang_top1, 100.0 * hang_top1 / hang_n))
    labels = ["slow GPU", "slow NIC", "congested link", "none", "slow NIC (wrong rank)"]
    print("\n| injected \\ diagnosed | " + " | ".join(labels) + " | correct |")
    print("| --- " * (len(labels) + 2) + "|")
    correct = total = 0
    for kind in [k for k in kinds if k != "hang"]:
        row = confusion.get(kind, {})
        n = sum(row.values())
        ok = row.get("none" if kind == "healthy" else kind, 0)
        if kind != "healthy":
            correct += ok
            total += n
        print("| %s | " % kind + " | ".join(str(row.get(l, 0)) for l in labels) + " | %d/%d |" % (ok, n))
    if total:
        print("\nslow GPU vs slow NIC vs congested link classified correctly: %d/%d (%.1f%%)"
              % (correct, total, 100.0 * correct / total))
    for e in errors:
        print("note:", e)


if __name__ == "__main__":
    main()
