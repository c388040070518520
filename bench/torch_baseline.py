#!/usr/bin/python3
# ===- torch_baseline.py - The PyTorch baseline of attnc's benchmark ------=== #
#
# Reads the inputs attnc-bench left in RESULTS/work/<config>/ (.npy, the very
# inputs attnc ran on), computes each configuration the way a PyTorch user
# writes it (softmax(q @ kT * scale + mask) @ v; d2l's additive attention;
# nn.MultiheadAttention in inference mode for the projection configuration),
# checks the output against the reference before timing, times it like the
# C++ harness (warm-up, >= 5 runs, median) and writes RESULTS/torch.json.
#
# ===----------------------------------------------------------------------=== #
"""Usage: /usr/bin/python3 bench/torch_baseline.py RESULTS_DIR"""

import json
import math
import os
import sys
import time

import numpy as np

# Score tensors larger than this are computed a few heads at a time, so the
# baseline fits in memory at N=8192 (8 heads x 8192^2 floats = 2 GiB per copy).
SCORE_BYTES_PER_CHUNK = 512 << 20

# A configuration whose checked run takes longer than this is not run 5 more
# times: its one run is reported as such (PyTorch at N=8192 takes ~20 s a run).
SINGLE_RUN_SECONDS = float(os.environ.get("ATTNC_BENCH_TORCH_MAX_SECONDS", "5"))


def time_it(fn, min_runs=5, target_seconds=1.0):
    """Warm-up for >= 0.2 s (at least once), then >= min_runs timed runs; median."""
    warm_start, warmups = time.perf_counter(), 0
    while True:
        s = time.perf_counter()
        fn()
        last = time.perf_counter() - s
        warmups += 1
        if time.perf_counter() - warm_start >= 0.2 or warmups >= 50:
            break
    runs = max(min_runs, min(101, math.ceil(target_seconds / last))) if last > 0 else min_runs
    times = []
    for _ in range(runs):
        s = time.perf_counter()
        fn()
        times.append(time.perf_counter() - s)
    times.sort()
    mid = runs // 2
    median = times[mid] if runs % 2 else 0.5 * (times[mid - 1] + times[mid])
    return {"median_s": median, "min_s": times[0], "max_s": times[-1],
            "runs": runs, "warmups": warmups}


def additive_mask(torch, meta):
    """0 where key j is visible from query i, -inf elsewhere; None without a mask."""
    lq, lk = meta["Lq"], meta["Lk"]
    if meta["mask"] == "none":
        return None
    ip = torch.arange(lq).unsqueeze(1) + (lk - lq)
    j = torch.arange(lk).unsqueeze(0)
    visible = j <= ip
    if meta["mask"] == "window":
        visible &= j > ip - meta["window"]
    if meta["mask"] == "causal&(window|sink)":
        visible &= (j > ip - meta["window"]) | (j < meta["sink"])
    mask = torch.zeros(lq, lk)
    mask.masked_fill_(~visible, float("-inf"))
    return mask


def rotary_tables(torch, L, D):
    """Hugging Face Llama's cos/sin cache (base 10000, every channel) for
    positions 0 .. L - 1, made once like its cos_cached / sin_cached."""
    inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    angles = torch.outer(torch.arange(L, dtype=torch.float64), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos().float(), emb.sin().float()


def rotate_half(torch, x, tables, offset):
    """Hugging Face Llama's apply_rotary_pos_emb on rows x[..., L, D] at
    positions offset .. offset + L - 1."""
    L, D = x.shape[-2], x.shape[-1]
    cos, sin = (t[offset:offset + L] for t in tables)
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def sdpa_fn(torch, meta, t):
    """softmax(q @ kT * scale + mask) @ v. The H/G query heads of a key/value
    group are stacked as rows of one matrix (mask rows repeated to match), so
    GQA reads K and V once and never copies them."""
    B, H, G, Lq, Lk = meta["B"], meta["H"], meta["G"], meta["Lq"], meta["Lk"]
    r = H // G
    q = t["q"].view(B, G, r * Lq, meta["D"])
    k, v = t["k"], t["v"]
    mask, scale = additive_mask(torch, meta), meta["scale"]
    if mask is not None and r > 1:
        mask = mask.repeat(r, 1)
    heads_per_chunk = max(1, SCORE_BYTES_PER_CHUNK // (B * r * Lq * Lk * 4))
    note = ""
    if heads_per_chunk < G:
        note = "scores computed %d head(s) at a time to bound memory" % heads_per_chunk

    def attend(qc, kc, vc):
        s = qc @ kc.transpose(-1, -2) * scale
        if mask is not None:
            s = s + mask
        return torch.softmax(s, dim=-1) @ vc

    tables = rotary_tables(torch, Lk, meta["D"]) if meta.get("rotary") else None

    def run():
        q_, k_ = q, k
        if tables is not None:
            q_ = rotate_half(torch, t["q"], tables, Lk - Lq).view(B, G, r * Lq, meta["D"])
            k_ = rotate_half(torch, k, tables, 0)
        if heads_per_chunk >= G:
            out = attend(q_, k_, v)
        else:
            out = torch.cat([attend(q_[:, g:g + heads_per_chunk], k_[:, g:g + heads_per_chunk],
                                    v[:, g:g + heads_per_chunk])
                             for g in range(0, G, heads_per_chunk)], dim=1)
        return out.reshape(B, H, Lq, meta["Dv"])

    return run, note


def additive_fn(torch, meta, t):
    """d2l's AdditiveAttention: w_v . tanh(W_q q + W_k k), softmax, @ v."""
    q, k, v = t["q"], t["k"], t["v"]
    wq, wk, wv = t["score_wq"], t["score_wk"], t["score_wv"]
    mask, scale = additive_mask(torch, meta), meta["scale"]
    B, H, G = meta["B"], meta["H"], meta["G"]
    r = H // G

    def run():
        qp = (q @ wq.T).view(B, G, r, meta["Lq"], 1, -1)
        kp = (k @ wk.T).view(B, G, 1, 1, meta["Lk"], -1)
        s = torch.tanh(qp + kp) @ wv * scale
        if mask is not None:
            s = s + mask
        out = torch.softmax(s, dim=-1) @ v.view(B, G, 1, meta["Lk"], meta["Dv"])
        return out.reshape(B, H, meta["Lq"], meta["Dv"])

    return run, ""


def projection_fn(torch, meta, t):
    """nn.MultiheadAttention(model_dim, H) in inference mode. The biases exist
    but are zero: PyTorch 1.13's fast path fails with bias=False."""
    E, H = meta["model_dim"], meta["H"]
    if H * meta["D"] != E or meta["G"] != H or meta["mask"] != "none":
        raise ValueError("nn.MultiheadAttention needs H*D == model_dim, G == H, no mask")
    mha = torch.nn.MultiheadAttention(E, H, bias=True, batch_first=True)
    with torch.no_grad():
        mha.in_proj_bias.zero_()
        mha.out_proj.bias.zero_()
        # attnc multiplies x @ w (w: [model_dim, H*D]); PyTorch computes x @ W^T.
        mha.in_proj_weight.copy_(torch.cat([t["w_q"], t["w_k"], t["w_v"]], 0))
        mha.out_proj.weight.copy_(t["w_o"])
    mha.eval()
    x = t["x"]

    def run():
        out, _ = mha(x, x, x, need_weights=False)
        return out

    return run, "nn.MultiheadAttention (zero biases), need_weights=False"


def packed_fn(torch, meta, t):
    """A packed batch (tokens [T, heads, D], cu_seqlens): each sequence on its
    own, softmax(q @ kT * scale + causal) @ v per head, into the packed output."""
    cu = t["cu_seqlens_q"].tolist()
    H, G, D, scale = meta["H"], meta["G"], meta["D"], meta["scale"]
    r = H // G

    def run():
        out = torch.empty(t["q"].shape[0], H, meta["Dv"])
        for b in range(len(cu) - 1):
            t0, t1 = cu[b], cu[b + 1]
            L = t1 - t0
            q = t["q"][t0:t1].transpose(0, 1)                         # [H, L, D]
            k = t["k"][t0:t1].transpose(0, 1).repeat_interleave(r, 0)  # [H, L, D]
            v = t["v"][t0:t1].transpose(0, 1).repeat_interleave(r, 0)
            s = q @ k.transpose(-1, -2) * scale
            if meta["mask"] == "causal":
                s = s.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
            out[t0:t1] = (torch.softmax(s, dim=-1) @ v).transpose(0, 1)
        return out

    return run, "per sequence: q @ kT, softmax, @ v (PyTorch has no varlen kernel on CPU)"


BUILDERS = {"sdpa": sdpa_fn, "additive": additive_fn, "projection": projection_fn,
            "packed": packed_fn}


def bench_one(torch, folder):
    meta = json.load(open(os.path.join(folder, "meta.json")))
    result = {"status": "failed", "note": ""}
    try:
        t = {name: torch.from_numpy(np.load(os.path.join(folder, name + ".npy")))
             for name in meta["inputs"]}
        with torch.inference_mode():
            run, note = BUILDERS[meta["kind"]](torch, meta, t)
            result["note"] = note
            start = time.perf_counter()
            out = run().numpy()
            first_run = time.perf_counter() - start
            if meta["has_ref"]:
                ref = np.load(os.path.join(folder, "ref.npy"))
                err = float("inf")
                if out.shape == ref.shape:
                    err = float(np.max(np.abs(out.astype(np.float64) - ref)))
                    err = err if math.isfinite(err) else float("inf")
                result["max_err"] = err if math.isfinite(err) else 1e30  # JSON has no inf
                result["checked_against"] = meta["ref_source"]
                if not err <= meta["tolerance"]:
                    result["status"] = "wrong"
                    result["note"] = "PyTorch disagrees with %s: max |diff| %.3g" % (
                        meta["ref_source"], err)
                    print("\n!!! %s: %s\n" % (meta["id"], result["note"]), file=sys.stderr)
            if result["status"] != "wrong":
                result["status"] = "ok"
            if first_run > SINGLE_RUN_SECONDS:
                result.update({"median_s": first_run, "min_s": first_run, "max_s": first_run,
                               "runs": 1, "warmups": 0})
                result["note"] = ((result["note"] + "; ") if result["note"] else "") + \
                    "one run only (%.1f s, over the %.0f s budget for warm-up + 5 runs)" % (
                        first_run, SINGLE_RUN_SECONDS)
            else:
                result.update(time_it(run))
    except Exception as e:  # one failing configuration must not end the run
        result["status"] = "failed"
        result["note"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    return meta["id"], result


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results_dir = sys.argv[1]
    work = os.path.join(results_dir, "work")
    summary = {"available": False, "configs": {}}
    try:
        import torch
    except ImportError as e:
        summary["note"] = "PyTorch not installed (%s); apt-get install python3-torch" % e
        json.dump(summary, open(os.path.join(results_dir, "torch.json"), "w"), indent=1)
        print("torch_baseline: " + summary["note"] + "; skipped", file=sys.stderr)
        return 0
    results = json.load(open(os.path.join(results_dir, "results.json")))
    threads = results["threads"]
    torch.set_num_threads(threads)
    blas = [line.strip() for line in torch.__config__.show().splitlines() if "CPU capability" in line]
    summary.update({"available": True, "version": torch.__version__, "threads": threads,
                    "build": blas[0] if blas else ""})
    ids = [c["id"] for c in results["configs"]]
    for n, cid in enumerate(ids, 1):
        folder = os.path.join(work, cid)
        if not os.path.exists(os.path.join(folder, "meta.json")):
            continue
        print("[%d/%d] PyTorch %s ..." % (n, len(ids), cid), end="", file=sys.stderr, flush=True)
        _, r = bench_one(torch, folder)
        summary["configs"][cid] = r
        shown = "%.3f ms" % (r["median_s"] * 1e3) if "median_s" in r else r["status"]
        print(" " + shown, file=sys.stderr)
    json.dump(summary, open(os.path.join(results_dir, "torch.json"), "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
