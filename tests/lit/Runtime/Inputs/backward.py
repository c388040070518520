"""backward.test's helper: `init DIR` writes q, k, v and d_out; `check DIR`
compares attnc-run's d_q, d_k and d_v with float64 gradients of causal GQA
attention (written out by hand: softmax's backward, heads of a group summed)."""
import sys

import numpy as np


def forward(q, k, v):
    H, G, Lq, Lk = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    k, v = np.repeat(k, H // G, 1), np.repeat(v, H // G, 1)
    s = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(q.shape[-1])
    hidden = np.arange(Lk)[None, :] > np.arange(Lq)[:, None] + (Lk - Lq)
    s = np.where(hidden, -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True), k, v


def main():
    mode, folder = sys.argv[1], sys.argv[2]
    path = lambda n: "%s/%s.npy" % (folder, n)
    if mode == "init":
        rng = np.random.default_rng(3)
        # 154 rows per KV head (5 tiles of 32) and 4 key blocks: at B = 2
        # the single pass runs 4 row chunks of 2 tiles, the last one empty.
        for name, shape in (("q", (2, 4, 77, 16)), ("k", (2, 2, 101, 16)),
                            ("v", (2, 2, 101, 16)), ("d_out", (2, 4, 77, 16))):
            np.save(path(name), rng.standard_normal(shape).astype(np.float32))
        return 0
    q, k, v, do = (np.load(path(n)).astype(np.float64) for n in ("q", "k", "v", "d_out"))
    p, kr, vr = forward(q, k, v)
    dv = np.einsum("bhij,bhid->bhjd", p, do)
    dp = np.einsum("bhid,bhjd->bhij", do, vr)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True)) / np.sqrt(q.shape[-1])
    dq = np.einsum("bhij,bhjd->bhid", ds, kr)
    dk = np.einsum("bhij,bhid->bhjd", ds, q)
    G = k.shape[1]
    group = lambda x: x.reshape(x.shape[0], G, -1, *x.shape[2:]).sum(2)
    worst = 0.0
    for name, ref in (("d_q", dq), ("d_k", group(dk)), ("d_v", group(dv))):
        got = np.load(path(name))
        err = np.abs(got - ref).max() / max(1.0, np.abs(ref).max())
        worst = max(worst, err)
        if not err <= 1e-3:
            print("%s: relative error %g" % (name, err))
            return 1
    print("gradients match float64 (worst relative error below 1e-3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
