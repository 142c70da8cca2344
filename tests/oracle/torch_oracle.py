#!/usr/bin/env python3
"""PyTorch as an independent oracle for `megascale run`.

Reads a step dump (`megascale run SCENARIO --dump-first-step FILE`, format in exec/train/step_dump.h):
the model's sizes, the first step's whole batch, the parameters before it, megascale's loss and
its gradients after every reduction. Rebuilds the same GPT in PyTorch, CPU, float32, with the
conventions of megascale's reference math (exec/): GPT-2 pre-LayerNorm blocks (eps 1e-5), learned
positions, tanh-approximated GeLU, causal attention scaled by 1/sqrt(head_dim) over the keys
[t - w + 1, t] with a sliding window w (all of [0, t] without), grouped-query heads (query head h
reads KV head h / (heads / kv_heads); the QKV projection's output is [q | k | v]), MegaScale's
parallel block (x + attn(ln1 x) + mlp(ln1 x)) or the serial one, a final LayerNorm and an LM head
tied to the token embedding (or its own lm_head_w when the header says tied_lm_head false). Then
checks the loss and every gradient tensor: max |g_torch - g_megascale| <= rtol x max |g_torch| +
atol, atol = atol_scale x PyTorch's largest gradient of all (a non-finite difference always fails).
With --time-steps K it also times K AdamW training steps of the PyTorch model at --threads
threads (after one warm-up step) and reports the median.

  megascale run SCENARIO --dump-first-step FILE      (layout.zero_stage 0)
  /usr/bin/python3 tests/oracle/torch_oracle.py --dump FILE [--rtol 1e-4] [--atol-scale 1e-6]
      [--threads N] [--time-steps K] [--json]
Exit: 0 agreement, 1 disagreement, 2 bad input, 3 PyTorch is not installed.
tests/oracle/torch_oracle.sh runs megascale and this script together.
"""
import argparse
import json
import math
import statistics
import sys
import time

MAGIC = b"MSDUMP1\n"
MODEL_INTS = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab", "sliding_window")
MODEL_BOOLS = ("parallel_block", "tied_lm_head")


def fail(msg, code=2):
    print(f"torch_oracle: error: {msg}", file=sys.stderr)
    sys.exit(code)


def expected_params(m):
    """(name, shape) of every parameter tensor, in exec/model/param_layout.cc's order (BuildGptParamLayout)."""
    C, F, V = m["hidden"], m["ffn_hidden"], m["vocab"]
    A = C  # heads x head_dim
    qkv = (m["heads"] + 2 * m["kv_heads"]) * (C // m["heads"])
    out = [("wte", [V, C]), ("wpe", [m["seq_len"], C])]
    for l in range(m["layers"]):
        p = f"h{l}."
        out += [(p + "ln1_w", [C]), (p + "ln1_b", [C]), (p + "qkv_w", [qkv, C]), (p + "qkv_b", [qkv]),
                (p + "attproj_w", [C, A]), (p + "attproj_b", [C])]
        if not m["parallel_block"]:  # the parallel block's MLP reads ln1: no ln2
            out += [(p + "ln2_w", [C]), (p + "ln2_b", [C])]
        out += [(p + "fc_w", [F, C]), (p + "fc_b", [F]), (p + "fcproj_w", [C, F]), (p + "fcproj_b", [C])]
    out += [("lnf_w", [C]), ("lnf_b", [C])]
    if not m["tied_lm_head"]:
        out.append(("lm_head_w", [V, C]))
    return out


def check_model(path, m):
    """The header's model, checked with exec/model/gpt_config.cc's rules, so a bad dump fails as input."""
    if not isinstance(m, dict):
        fail(f"'{path}': the header has no \"model\" object")
    for k in MODEL_INTS:
        if not isinstance(m.get(k), int) or isinstance(m.get(k), bool):
            fail(f"'{path}': model.{k} is missing or not an integer")
    for k in MODEL_BOOLS:
        if not isinstance(m.get(k), bool):
            fail(f"'{path}': model.{k} is missing or not a boolean")
    for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab"):
        if m[k] <= 0:
            fail(f"'{path}': model.{k} = {m[k]} must be > 0 (the dump holds resolved values)")
    if m["hidden"] % m["heads"] or m["heads"] % m["kv_heads"]:
        fail(f"'{path}': model hidden {m['hidden']}, heads {m['heads']}, kv_heads {m['kv_heads']}: "
             "heads must divide hidden and kv_heads must divide heads")
    if not 0 <= m["sliding_window"] <= m["seq_len"]:
        fail(f"'{path}': model.sliding_window = {m['sliding_window']} must be in [0, seq_len]")


def read_arrays(path, np, entries, data):
    """name -> numpy array (a view into data) for every entry of the header's "arrays"."""
    dtypes = {"int32": np.int32, "float32": np.float32}
    arrays = {}
    for a in entries:
        if not isinstance(a, dict) or not all(k in a for k in ("name", "dtype", "shape", "offset")):
            fail(f"'{path}': an \"arrays\" entry lacks name, dtype, shape or offset: {a}")
        name, shape, offset = a["name"], a["shape"], a["offset"]
        if a["dtype"] not in dtypes:
            fail(f"'{path}': array {name} has dtype '{a['dtype']}' (expected int32 or float32)")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            fail(f"'{path}': array {name} has a bad shape {shape}")
        if not isinstance(offset, int) or offset < 0:
            fail(f"'{path}': array {name} has a bad offset {offset}")
        if name in arrays:
            fail(f"'{path}': array {name} appears twice")
        count = math.prod(shape)
        if offset + count * 4 > len(data):
            fail(f"'{path}': array {name} runs past the end of the file")
        arrays[name] = np.frombuffer(data, dtype=dtypes[a["dtype"]], count=count, offset=offset).reshape(shape)
    return arrays


def read_dump(path, np):
    """The dump's header, its arrays by name, and the parameter names in layout order; exits 2 on
    anything that is not a well-formed dump of a model megascale could have run."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        fail(f"cannot read dump '{path}': {e.strerror}")
    if not blob.startswith(MAGIC):
        fail(f"'{path}' is not a megascale step dump (no MSDUMP1 line)")
    end = blob.find(b"\n", len(MAGIC))
    if end < 0:
        fail(f"'{path}': the JSON header line has no end (truncated file?)")
    try:
        header = json.loads(blob[len(MAGIC):end])
    except ValueError as e:
        fail(f"'{path}': the header line is not JSON: {e}")
    if not isinstance(header, dict):
        fail(f"'{path}': the header is not a JSON object")
    m = header.get("model")
    check_model(path, m)
    if not isinstance(header.get("loss"), (int, float)) or isinstance(header.get("loss"), bool):
        fail(f"'{path}': the header has no numeric \"loss\"")
    if not isinstance(header.get("arrays"), list):
        fail(f"'{path}': the header has no \"arrays\" list")
    arrays = read_arrays(path, np, header["arrays"], memoryview(blob)[end + 1:])

    def need(name, dtype, shape=None):
        if name not in arrays:
            fail(f"'{path}': array '{name}' is missing")
        a = arrays[name]
        if a.dtype != dtype or (shape is not None and list(a.shape) != list(shape)):
            fail(f"'{path}': array '{name}' is {a.dtype} {list(a.shape)}, expected {np.dtype(dtype)} "
                 f"{list(shape) if shape is not None else '(rows, T)'}")
        return a

    tokens = need("tokens", np.int32)
    if tokens.ndim != 2 or tokens.shape[0] == 0 or not 0 < tokens.shape[1] <= m["seq_len"]:
        fail(f"'{path}': tokens has shape {list(tokens.shape)}, expected (rows > 0, T <= seq_len {m['seq_len']})")
    targets = need("targets", np.int32, tokens.shape)
    for name, a in (("tokens", tokens), ("targets", targets)):
        if a.min() < 0 or a.max() >= m["vocab"]:
            fail(f"'{path}': {name} holds ids outside [0, vocab {m['vocab']})")
    layout = expected_params(m)
    for n, shape in layout:
        need("param/" + n, np.float32, shape)
        need("grad/" + n, np.float32, shape)
    names = [n for n, _ in layout]
    extra = [k for k in arrays if k.startswith(("param/", "grad/")) and k.split("/", 1)[1] not in names]
    if extra:  # a tensor this model does not have: the header and the arrays disagree
        fail(f"'{path}': arrays not in the model's parameter layout: {', '.join(extra[:5])}")
    return header, arrays, names


def attention(torch, qkv, B, T, NH, KVH, HD, keep):
    """exec/model/attention.cc: qkv's channels are [Q heads | K heads | V heads]; query head h reads KV
    head h / (NH / KVH); scores scaled by 1/sqrt(HD); softmax over the keys keep allows. Written
    out (no SDPA) so every step is plain fp32 math."""
    q, k, v = qkv.split([NH * HD, KVH * HD, KVH * HD], dim=-1)
    q = q.view(B, T, NH, HD).transpose(1, 2)
    # repeat_interleave: KV head j serves query heads j*g .. j*g + g-1, i.e. h -> h // g.
    k = k.view(B, T, KVH, HD).transpose(1, 2).repeat_interleave(NH // KVH, dim=1)
    v = v.view(B, T, KVH, HD).transpose(1, 2).repeat_interleave(NH // KVH, dim=1)
    att = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
    att = att.masked_fill(~keep, float("-inf")).softmax(dim=-1)  # every row keeps key t: no empty rows
    return (att @ v).transpose(1, 2).reshape(B, T, NH * HD)  # head h at channels [h*HD, (h+1)*HD)


def attention_mask(torch, T, window):
    """keep[t, t2]: query t reads key t2 when t - window < t2 <= t (exec/model/attention.cc FirstKey)."""
    pos = torch.arange(T)
    keep = pos[None, :] <= pos[:, None]  # causal
    if window > 0:
        keep &= pos[None, :] > pos[:, None] - window  # the window's w keys end at (and include) t
    return keep


def forward(torch, m, P, tokens, targets):
    """megascale's GPT (exec/model/gpt.cc, block.cc) on parameters P (name -> tensor): the mean loss."""
    F = torch.nn.functional
    B, T = tokens.shape
    C, NH, KVH = m["hidden"], m["heads"], m["kv_heads"]
    HD = C // NH
    keep = attention_mask(torch, T, m["sliding_window"])
    ln = lambda x, p: F.layer_norm(x, (C,), P[p + "_w"], P[p + "_b"], eps=1e-5)  # exec/model/layernorm.cc
    x = P["wte"][tokens] + P["wpe"][:T][None]  # learned positions 0..T-1 (exec/model/embedding.cc)
    for l in range(m["layers"]):
        h = f"h{l}."
        a_in = ln(x, h + "ln1")
        y = attention(torch, F.linear(a_in, P[h + "qkv_w"], P[h + "qkv_b"]), B, T, NH, KVH, HD, keep)
        attn = F.linear(y, P[h + "attproj_w"], P[h + "attproj_b"])
        mlp = lambda z: F.linear(F.gelu(F.linear(z, P[h + "fc_w"], P[h + "fc_b"]), approximate="tanh"),
                                 P[h + "fcproj_w"], P[h + "fcproj_b"])
        if m["parallel_block"]:  # MegaScale: both branches read the same ln1 output
            x = x + attn + mlp(a_in)
        else:  # GPT-2
            x = x + attn
            x = x + mlp(ln(x, h + "ln2"))
    x = ln(x, "lnf")
    logits = F.linear(x, P["wte"] if m["tied_lm_head"] else P["lm_head_w"])  # no bias
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))  # mean over B*T


def compare(torch, names, P, arrays, rtol, atol_scale):
    """Per tensor: max |diff|, relative error (to the tensor's own largest |g|) and pass/fail."""
    mine = {n: P[n].grad if P[n].grad is not None else torch.zeros_like(P[n]) for n in names}
    # atol from PyTorch's gradients, not the dump's: an inf in the dump must not widen the tolerance.
    atol = atol_scale * max(float(g.abs().max()) for g in mine.values())
    tensors = []
    for n in names:
        theirs = torch.from_numpy(arrays["grad/" + n].copy())
        diff = float((mine[n] - theirs).abs().max())
        scale = float(mine[n].abs().max())
        ok = math.isfinite(diff) and diff <= rtol * scale + atol  # NaN/inf anywhere fails
        tensors.append({"name": n, "max_abs_diff": diff, "rel_err": diff / scale if scale > 0 else diff,
                        "ok": ok})
    return tensors


def time_steps(torch, m, P, tokens, targets, threads, steps):
    """Median seconds of a training step (zero_grad, forward, backward, AdamW) after one warm-up."""
    torch.set_num_threads(threads)
    opt = torch.optim.AdamW(list(P.values()), lr=1e-4, weight_decay=0.0)
    times = []
    for i in range(steps + 1):  # the first is a warm-up (allocator, thread pool)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        forward(torch, m, P, tokens, targets).backward()
        opt.step()
        if i > 0:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description="Check megascale's first step against PyTorch.")
    ap.add_argument("--dump", required=True, help="a file from `megascale run --dump-first-step`")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol-scale", type=float, default=1e-6)
    ap.add_argument("--threads", type=int, default=1, help="torch threads for the timed steps")
    ap.add_argument("--time-steps", type=int, default=0, help="time this many AdamW steps (0: none)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.threads < 1 or args.time_steps < 0:
        fail("--threads must be >= 1 and --time-steps >= 0")
    try:
        import numpy as np
        import torch
    except ImportError:
        fail("PyTorch is not installed (apt-get install python3-torch)", 3)
    header, arrays, names = read_dump(args.dump, np)
    m = header["model"]
    P = {n: torch.tensor(arrays["param/" + n].copy(), requires_grad=True) for n in names}
    tokens = torch.from_numpy(arrays["tokens"].astype(np.int64))
    targets = torch.from_numpy(arrays["targets"].astype(np.int64))

    loss = forward(torch, m, P, tokens, targets)
    loss.backward()
    tensors = compare(torch, names, P, arrays, args.rtol, args.atol_scale)
    loss_torch, loss_dump = float(loss), float(header["loss"])
    loss_rel = abs(loss_torch - loss_dump) / max(abs(loss_torch), 1e-30)
    loss_ok = math.isfinite(loss_rel) and loss_rel <= args.rtol
    worst = max(tensors, key=lambda t: t["rel_err"] if math.isfinite(t["rel_err"]) else math.inf)
    failed = ([] if loss_ok else ["loss"]) + [t["name"] for t in tensors if not t["ok"]]
    ok = not failed

    step_s = None
    if args.time_steps > 0:
        step_s = time_steps(torch, m, P, tokens, targets, args.threads, args.time_steps)

    out = {"ok": ok, "loss_dump": loss_dump, "loss_torch": loss_torch, "loss_rel_err": loss_rel,
           "loss_ok": loss_ok, "tensors": tensors, "worst_tensor": worst["name"],
           "worst_rel_err": worst["rel_err"], "threads": args.threads, "torch_step_s": step_s,
           "torch_version": torch.__version__}
    if args.json:
        print(json.dumps(out, indent=1))
        if failed:  # stdout stays one JSON object; say which failed where a person reads it
            print(f"torch_oracle: disagrees: {', '.join(failed)}", file=sys.stderr)
    else:
        print(f"loss: megascale {loss_dump:.7g}, PyTorch {loss_torch:.7g} (rel {loss_rel:.2e})  "
              f"{'ok' if loss_ok else 'FAIL'}")
        for t in tensors:
            print(f"  {t['name']:<16} max |diff| {t['max_abs_diff']:.3g}  rel {t['rel_err']:.2e}  "
                  f"{'ok' if t['ok'] else 'FAIL'}")
        print(f"worst gradient: {worst['name']} rel {worst['rel_err']:.2e} over {len(tensors)} tensors")
        if step_s is not None:
            print(f"PyTorch step at {args.threads} thread(s): {step_s * 1e3:.2f} ms")
        print("agrees" if ok else f"DISAGREES: {', '.join(failed)}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
