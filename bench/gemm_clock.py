#!/usr/bin/env python3
"""Does a GEMM's efficiency depend on its size once the GPU has been busy long enough to sit at its
power limit? (the level of the GEMM efficiency curve.)

bench/shape_check.py found mid-size bf16 GEMMs (25-100 us) at 720-770 TFLOP/s on an H200 where an
8192^3 GEMM reaches 678: either mid-size tiles really run faster, or those kernels ran isolated, at
a clock that a GPU busy for seconds does not hold. The cost model takes the first reading (one
efficiency, lowered only by the shape); the reference rows are hours of back-to-back kernels.

For each shape this times the GEMM two ways: isolated (one call after 50 ms idle, median of 9; a
short spin kernel ahead of the start event keeps the launch's latency out) and sustained (back to
back for --sustain seconds, CUDA events over the last third; the number of calls is sized from a
back-to-back pre-run, and the seconds the GPU was really kept busy are written beside), and
samples the SM clock and board power with nvidia-smi while it runs (power.draw.instant where the
driver has it, else power.draw, a one-second average). Shapes: squares and the per-GPU GEMMs of
the Megatron runs in ../shared/reference/calibration.csv (tokens 2,048, hidden 2,304-25,600, TP
1-8). Random bf16 inputs rotated over enough copies to leave L2; never zeros.

It fits nothing and asserts nothing: it prints a table and writes JSON lines.
Usage: bench/gemm_clock.py OUT.jsonl [--sustain 1.2] [--device cuda|cpu]
"""
import argparse
import json
import statistics
import subprocess
import sys
import threading
import time

import torch

L2_BYTES = 64 << 20
PEAK = {"H100": 989e12, "H200": 989e12, "H800": 989e12, "A100": 312e12}

# (hidden, TP) of the Megatron rows of calibration.csv, tokens 2,048 per micro-batch.
MEGATRON = [(2304, 1), (3072, 2), (4096, 4), (6144, 8), (8192, 8), (10240, 8), (12288, 8),
            (16384, 8), (20480, 8), (25600, 8)]


def shapes():
    out = [("square", n, n, n) for n in (1024, 2048, 4096, 8192, 16384)]
    for h, t in MEGATRON:
        out.append((f"qkv h{h} tp{t}", 2048, 3 * h // t, h))
        out.append((f"fc1 h{h} tp{t}", 2048, 4 * h // t, h))
        out.append((f"fc2 h{h} tp{t}", 2048, h, 4 * h // t))
    # The squares again last: whether the first pass saw a cooler GPU.
    return out + [("square again", n, n, n) for n in (1024, 4096, 16384)]


class Sampler:
    """nvidia-smi's SM clock and power every 50 ms, with this process's clock beside each line."""

    def __init__(self):
        self.rows, self.proc, self.power = [], None, None
        power = "power.draw.instant"
        try:
            probe = subprocess.run(["nvidia-smi", f"--query-gpu={power}", "--format=csv,noheader"],
                                   capture_output=True, text=True)
            if probe.returncode != 0 or "Not Supported" in probe.stdout or "not a valid" in probe.stdout:
                power = "power.draw"
            self.power = power
            self.proc = subprocess.Popen(
                ["nvidia-smi", f"--query-gpu=clocks.sm,{power}", "--format=csv,noheader,nounits",
                 "-lms", "50"], stdout=subprocess.PIPE, text=True)
        except OSError:
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                mhz, watts = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.rows.append((time.monotonic(), mhz, watts))

    def between(self, t0, t1):
        got = [r for r in self.rows if t0 <= r[0] <= t1]
        if not got:
            return None, None
        return statistics.median(r[1] for r in got), statistics.median(r[2] for r in got)

    def stop(self):
        if self.proc:
            self.proc.terminate()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--sustain", type=float, default=1.2)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    dev = args.device
    cuda = dev == "cuda"
    name = torch.cuda.get_device_name(0) if cuda else "cpu"
    peak = next((v for k, v in PEAK.items() if k in name), 1e12)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sampler = Sampler() if cuda else None
    todo = shapes() if cuda else [("square", 64, 64, 64), ("qkv", 128, 96, 64)]
    rows = []
    with open(args.out, "w") as f:
        for label, m, n, k in todo:
            copies = max(2, -(-2 * L2_BYTES // (2 * (m * k + k * n)))) if cuda else 2
            a = [torch.randn(m, k, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
            b = [torch.randn(k, n, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
            c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            flops = 2.0 * m * n * k

            def call(i):
                torch.matmul(a[i % copies], b[i % copies], out=c)

            for i in range(3):
                call(i)
            sync()
            # Isolated: one call after the GPU has idled.
            iso = []
            for i in range(9):
                time.sleep(0.05)
                if cuda:
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    torch.cuda._sleep(20000)  # ~15 us: the events and the call queue behind it
                    s.record(); call(i); e.record(); e.synchronize()
                    iso.append(s.elapsed_time(e) / 1e3)
                else:
                    t = time.perf_counter(); call(i); iso.append(time.perf_counter() - t)
            # Sustained: a back-to-back pre-run sizes the calls; then two thirds of --sustain back
            # to back, then the last third timed.
            iso_s = statistics.median(iso)
            t = time.perf_counter()
            for i in range(64):
                call(i)
            sync()
            per_call = (time.perf_counter() - t) / 64
            t = time.perf_counter()
            for i in range(max(8, int(args.sustain * 2 / 3 / per_call))):
                call(i)
            sync()
            warm_s = time.perf_counter() - t
            reps = max(8, int(args.sustain / 3 / per_call))
            w0 = time.monotonic()
            if cuda:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
            t = time.perf_counter()
            for i in range(reps):
                call(i)
            if cuda:
                e.record(); e.synchronize()
                sustained = s.elapsed_time(e) / 1e3 / reps
            else:
                sustained = (time.perf_counter() - t) / reps
            w1 = time.monotonic()
            mhz, watts = sampler.between(w0, w1) if sampler else (None, None)
            row_power = sampler.power if sampler else None
            row = {"label": label, "m": m, "n": n, "k": k, "gpu": name,
                   "isolated_s": iso_s, "sustained_s": sustained,
                   "busy_s": warm_s + (w1 - w0), "timed_s": w1 - w0,
                   "isolated_tflops": flops / iso_s / 1e12, "sustained_tflops": flops / sustained / 1e12,
                   "sustained_eff": flops / sustained / peak, "sm_mhz": mhz, "power_w": watts, "power_field": row_power}
            rows.append(row)
            f.write(json.dumps(row) + "\n")
            f.flush()
            del a, b, c
    if sampler:
        sampler.stop()
    print(f"{'shape':18} {'m':>6} {'n':>6} {'k':>6} {'iso TF/s':>9} {'sust TF/s':>9} {'eff':>6} {'busy s':>6} {'MHz':>6} {'W':>6}")
    for r in rows:
        print(f"{r['label']:18} {r['m']:6} {r['n']:6} {r['k']:6} {r['isolated_tflops']:9.1f} "
              f"{r['sustained_tflops']:9.1f} {r['sustained_eff']:6.3f} {r['busy_s']:6.2f} {r['sm_mhz'] or 0:6.0f} {r['power_w'] or 0:6.0f}")


if __name__ == "__main__":
    sys.exit(main())
