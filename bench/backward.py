#!/usr/bin/python3
#===- bench/backward.py - Training: attnc's backward kernels ---------------===#
#
# NAME_backward (docs/language.md, training) at B=1, H=8, N=2048, D=64, dense
# and causal, against PyTorch's autograd through matmul-softmax-matmul (f32,
# the run's threads); FLOPs of a backward are counted as 2.5x the forward's
# (FlashAttention-2's convention: the forward's 4 N^2 D H per head over the
# visible pairs). Then the peak memory of one backward call at N=8192 in a
# fresh process that ran no forward (the runtime keeps a forward's freed
# buffers for reuse) beyond the tensors themselves (peak RSS after the call
# minus peak RSS with every argument loaded and touched). Writes
# RESULTS/backward.json; report.py adds it to the table.
# Usage: backward.py RESULTS_DIR BUILD_DIR
#
#===------------------------------------------------------------------------===#
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

H, D, N = 8, 64, 2048
MEMORY_N = 8192


def source(n, causal):
    return ("kernel bw { batch = 1; heads = %d; head_dim = %d; seq_q = %d; seq_k = seq_q; %s"
            "outputs = out, lse; backward = true }\n" % (H, D, n, "mask = causal; " if causal else ""))


def median_time(fn, runs=9):
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def attnc_row(attnc, causal):
    lib = attnc.compile(source(N, causal))
    rng = np.random.default_rng(1)
    q, k, v, d_out = (rng.standard_normal((1, H, N, D)).astype(np.float32) for _ in range(4))
    out, lse = lib.bw(q, k, v)
    d_q, d_k, d_v = lib.bw_backward(q, k, v, out, lse, d_out)
    forward = median_time(lambda: lib.bw(q, k, v, out=out, lse=lse))
    backward = median_time(lambda: lib.bw_backward(q, k, v, out, lse, d_out, d_q=d_q, d_k=d_k,
                                                   d_v=d_v))
    return forward, backward, (q, k, v, d_out, d_q, d_k, d_v)


def torch_row(torch, tensors, causal):
    q, k, v, d_out, d_q, d_k, d_v = tensors
    tq, tk, tv = (torch.tensor(x, requires_grad=True) for x in (q, k, v))
    td = torch.tensor(d_out)
    hidden = torch.ones(N, N, dtype=torch.bool).triu(1)

    def step():
        s = (tq @ tk.transpose(-1, -2)) / np.sqrt(D)
        if causal:
            s = s.masked_fill(hidden, float("-inf"))
        o = torch.softmax(s, dim=-1) @ tv
        t = time.perf_counter()
        o.backward(td)
        elapsed = time.perf_counter() - t
        tq.grad = tk.grad = tv.grad = None
        return elapsed

    step()
    times = [step() for _ in range(3)]
    # The same gradients as attnc's (a check, not the timed run).
    s = (tq @ tk.transpose(-1, -2)) / np.sqrt(D)
    if causal:
        s = s.masked_fill(hidden, float("-inf"))
    (torch.softmax(s, dim=-1) @ tv).backward(td)
    err = max(float(np.max(np.abs(g.numpy() - ref))) for g, ref in
              ((tq.grad, d_q), (tk.grad, d_k), (tv.grad, d_v)))
    return statistics.median(times), err


MEMORY_CHILD = r"""
import os, sys, numpy as np, attnc
folder = sys.argv[1]
lib = attnc.compile(sys.stdin.read())
q, k, v, d_out, out, lse = (np.load(os.path.join(folder, n + ".npy"))
                            for n in ("q", "k", "v", "d_out", "out", "lse"))
d_q, d_k, d_v = (np.ones_like(x) for x in (q, k, v))  # touched: resident before the call
def peak_kib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM"))
before = peak_kib()
lib.bw_backward(q, k, v, out, lse, d_out, d_q=d_q, d_k=d_k, d_v=d_v)
print(before, peak_kib())
"""


def memory_row(attnc, results_dir, build):
    """Peak RSS of one backward call beyond its arguments, in a process that
    ran no forward (whose freed buffers the runtime keeps for reuse)."""
    folder = os.path.join(results_dir, "work", "backward_memory")
    os.makedirs(folder, exist_ok=True)
    src = source(MEMORY_N, True)
    lib = attnc.compile(src)
    rng = np.random.default_rng(2)
    q, k, v, d_out = (rng.standard_normal((1, H, MEMORY_N, D)).astype(np.float32)
                      for _ in range(4))
    out, lse = lib.bw(q, k, v)
    for name, x in (("q", q), ("k", k), ("v", v), ("d_out", d_out), ("out", out), ("lse", lse)):
        np.save(os.path.join(folder, name + ".npy"), x)
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    result = subprocess.run([sys.executable, "-c", MEMORY_CHILD, folder], input=src,
                            capture_output=True, text=True, env=env, check=True)
    before, after = (int(x) for x in result.stdout.split())
    return (after - before) / 1024.0


def main():
    if len(sys.argv) != 3:
        print("usage: backward.py RESULTS_DIR BUILD_DIR", file=sys.stderr)
        return 2
    results_dir, build = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(build, "python"))
    os.environ.setdefault("ATTNC_CACHE_DIR", os.path.join(results_dir, "work", "cache"))
    import attnc
    try:
        import torch
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    except ImportError:
        torch = None
    rows = []
    for causal in (False, True):
        forward, backward, tensors = attnc_row(attnc, causal)
        pairs = N * (N + 1) / 2 if causal else N * N
        row = {"id": "backward_n%d%s" % (N, "_causal" if causal else ""), "N": N, "H": H, "D": D,
               "causal": causal, "forward_s": forward, "backward_s": backward,
               "backward_flops": 2.5 * 4.0 * pairs * D * H}
        if torch is not None:
            row["torch_backward_s"], row["torch_max_err"] = torch_row(torch, tensors, causal)
        rows.append(row)
    memory = {"N": MEMORY_N, "H": H, "D": D, "causal": True,
              "extra_mib": memory_row(attnc, results_dir, build)}
    with open(os.path.join(results_dir, "backward.json"), "w") as f:
        json.dump({"rows": rows, "memory": memory}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
