#!/usr/bin/env python3
"""PyTorch as an independent oracle for `megascale run` (issue 16).

Reads a step dump (`megascale run SCENARIO --dump-first-step FILE`, format in exec/step_dump.h):
the model's sizes, the first step's whole batch, the parameters before it, megascale's loss and
its gradients after every reduction. Rebuilds the same GPT in PyTorch, CPU, float32, with the
conventions of megascale's reference math (exec/): GPT-2 pre-LayerNorm blocks (eps 1e-5), learned
positions, tanh-approximated GeLU, causal attention scaled by 1/sqrt(head_dim) over the keys
[t - w + 1, t] with a sliding window w (all of [0, t] without), grouped-query heads (query head h
reads KV head h / (heads / kv_heads); the QKV projection's output is [q | k | v]), MegaScale's
parallel block (x + attn(ln1 x) + mlp(ln1 x)) or the serial one, a final LayerNorm and an LM head
tied to the token embedding (unless the dump has lm_head_w). Then checks the loss and every
gradient tensor: max |g_torch - g_megascale| <= rtol x max |g_torch| + atol, atol = atol_scale x
the largest gradient of all. With --time-steps K it also times K AdamW training steps of the
PyTorch model at --threads threads (after one warm-up step) and reports the median.

  /usr/bin/python3 bench/torch_oracle.py --dump FILE [--rtol 1e-4] [--atol-scale 1e-6]
      [--threads N] [--time-steps K] [--json]
Exit: 0 agreement, 1 disagreement, 2 bad input, 3 PyTorch is not installed.
bench/torch_oracle.sh runs megascale and this script together.
"""
import argparse
import json
import math
import statistics
import sys
import time


def fail(msg, code=2):
    print(f"torch_oracle: error: {msg}", file=sys.stderr)
    sys.exit(code)


def read_dump(path):
    """The dump's header and its arrays, by name, as numpy arrays."""
    import numpy as np
    try:
        blob = open(path, "rb").read()
    except OSError as e:
        fail(f"cannot read dump '{path}': {e.strerror}")
    if not blob.startswith(b"MSDUMP1\n"):
        fail(f"'{path}' is not a megascale step dump (no MSDUMP1 line)")
    end = blob.find(b"\n", 8)
    try:
        header = json.loads(blob[8:end])
    except ValueError as e:
        fail(f"'{path}': the header line is not JSON: {e}")
    data = memoryview(blob)[end + 1:]
    arrays = {}
    for a in header.get("arrays", []):
        count = math.prod(a["shape"])
        dtype = {"int32": np.int32, "float32": np.float32}[a["dtype"]]
        if a["offset"] + count * 4 > len(data):
            fail(f"'{path}': array {a['name']} runs past the end of the file")
        arrays[a["name"]] = np.frombuffer(data, dtype=dtype, count=count, offset=a["offset"]).reshape(a["shape"])
    for name in ("tokens", "targets", "param/wte", "grad/wte"):
        if name not in arrays:
            fail(f"'{path}': array '{name}' is missing")
    return header, arrays


def forward(torch, m, P, tokens, targets):
    """megascale's GPT (exec/gpt.cc, block.cc, attention.cc) on parameters P (name -> tensor)."""
    F = torch.nn.functional
    B, T = tokens.shape
    C, NH, KVH, L = m["hidden"], m["heads"], m["kv_heads"], m["layers"]
    HD = C // NH
    w = m["sliding_window"]
    pos = torch.arange(T)
    keep = pos[None, :] <= pos[:, None]  # causal: key t2 <= query t
    if w > 0:
        keep &= pos[None, :] > pos[:, None] - w  # the window: t2 >= t - w + 1
    ln = lambda x, p: F.layer_norm(x, (C,), P[p + "_w"], P[p + "_b"], eps=1e-5)
    x = P["wte"][tokens] + P["wpe"][:T][None]
    for l in range(L):
        h = f"h{l}."
        a_in = ln(x, h + "ln1")
        qkv = F.linear(a_in, P[h + "qkv_w"], P[h + "qkv_b"])
        q, k, v = qkv.split([NH * HD, KVH * HD, KVH * HD], dim=-1)
        q = q.view(B, T, NH, HD).transpose(1, 2)
        k = k.view(B, T, KVH, HD).transpose(1, 2).repeat_interleave(NH // KVH, dim=1)
        v = v.view(B, T, KVH, HD).transpose(1, 2).repeat_interleave(NH // KVH, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        att = att.masked_fill(~keep, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, NH * HD)
        attn = F.linear(y, P[h + "attproj_w"], P[h + "attproj_b"])
        mlp = lambda z: F.linear(F.gelu(F.linear(z, P[h + "fc_w"], P[h + "fc_b"]), approximate="tanh"),
                                 P[h + "fcproj_w"], P[h + "fcproj_b"])
        if m["parallel_block"]:
            x = x + attn + mlp(a_in)
        else:
            x = x + attn
            x = x + mlp(ln(x, h + "ln2"))
    x = ln(x, "lnf")
    head = P["lm_head_w"] if "lm_head_w" in P else P["wte"]
    logits = F.linear(x, head)
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser(description="Check megascale's first step against PyTorch.")
    ap.add_argument("--dump", required=True)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol-scale", type=float, default=1e-6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--time-steps", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        fail("PyTorch is not installed (apt-get install python3-torch)", 3)
    header, arrays = read_dump(args.dump)
    m = header["model"]
    names = [a["name"][len("param/"):] for a in header["arrays"] if a["name"].startswith("param/")]
    P = {n: torch.tensor(arrays["param/" + n].copy(), requires_grad=True) for n in names}
    tokens = torch.tensor(arrays["tokens"].astype("int64"))
    targets = torch.tensor(arrays["targets"].astype("int64"))

    loss = forward(torch, m, P, tokens, targets)
    loss.backward()
    largest = max(float(arrays["grad/" + n].__abs__().max()) for n in names)
    atol = args.atol_scale * largest
    tensors = []
    for n in names:
        mine = P[n].grad if P[n].grad is not None else torch.zeros_like(P[n])
        theirs = torch.tensor(arrays["grad/" + n].copy())
        diff = float((mine - theirs).abs().max())
        scale = float(mine.abs().max())
        tensors.append({"name": n, "max_abs_diff": diff, "rel_err": diff / scale if scale > 0 else diff,
                        "ok": diff <= args.rtol * scale + atol})
    loss_rel = abs(float(loss) - header["loss"]) / abs(float(loss))
    worst = max(tensors, key=lambda t: t["rel_err"])
    ok = loss_rel <= args.rtol and all(t["ok"] for t in tensors)

    step_s = None
    if args.time_steps > 0:
        torch.set_num_threads(args.threads)
        opt = torch.optim.AdamW(list(P.values()), lr=1e-4, weight_decay=0.0)
        times = []
        for i in range(args.time_steps + 1):  # the first is a warm-up
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            forward(torch, m, P, tokens, targets).backward()
            opt.step()
            if i > 0:
                times.append(time.perf_counter() - t0)
        step_s = statistics.median(times)

    out = {"ok": ok, "loss_dump": header["loss"], "loss_torch": float(loss), "loss_rel_err": loss_rel,
           "tensors": tensors, "worst_tensor": worst["name"], "worst_rel_err": worst["rel_err"],
           "threads": args.threads, "torch_step_s": step_s, "torch_version": torch.__version__}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"loss: megascale {header['loss']:.7g}, PyTorch {float(loss):.7g} (rel {loss_rel:.2e})")
        for t in tensors:
            print(f"  {t['name']:<16} max |diff| {t['max_abs_diff']:.3g}  rel {t['rel_err']:.2e}  "
                  f"{'ok' if t['ok'] else 'FAIL'}")
        if step_s is not None:
            print(f"PyTorch step at {args.threads} thread(s): {step_s * 1e3:.2f} ms")
        print("agrees" if ok else "DISAGREES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
