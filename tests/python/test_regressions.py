"""Regressions found by the randomized differential tester (test_random_kernels.py),
each pinned with its minimal kernel."""
import numpy as np

import attnc


def test_fixed_size_projection_keeps_its_17th_column():
    # Halide 14 miscompiled the projection's column blocks (blocks of vectors
    # split first, then vectors, both guarded): with fixed sizes the 17th column
    # was never computed and the first 16 were summed twice.
    lib = attnc.compile("kernel k { head_dim = 17; batch = 1; seq_k = 5; project = qkv; "
                        "model_dim = 2 }")
    rng = np.random.default_rng(0)
    x_q = rng.uniform(-1, 1, (1, 1, 2)).astype(np.float32)
    x_kv = rng.uniform(-1, 1, (1, 5, 2)).astype(np.float32)
    w = {n: rng.uniform(-1, 1, (17, 2)).astype(np.float32) for n in ("w_q", "w_k", "w_v")}
    out = lib.k(x_q=x_q, x_kv=x_kv, **w)
    q = x_q[0].astype(np.float64) @ w["w_q"].T
    k = x_kv[0].astype(np.float64) @ w["w_k"].T
    v = x_kv[0].astype(np.float64) @ w["w_v"].T
    s = q @ k.T / np.sqrt(17)
    p = np.exp(s - s.max())
    ref = (p / p.sum()) @ v
    assert np.abs(out[0, 0] - ref).max() <= 1e-4 * max(1.0, np.abs(v).max())


def test_backward_with_a_scalar_input_compiles_and_runs():
    # The scalar gradient d_t0 crashed the compiler (its schedule vectorized a
    # dimension it does not have).
    lib = attnc.compile("kernel k { head_dim = 1; outputs = out, lse; backward = true\n"
                        "  input t0 : f32 }")
    assert "d_t0" in [a.name for a in lib.k_backward.arguments if a.is_output]
    rng = np.random.default_rng(1)
    q, k, v = (rng.uniform(-1, 1, (1, 1, 3, 1)).astype(np.float32) for _ in range(3))
    t0 = np.array(0.5, dtype=np.float32)
    out, lse = lib.k(q=q, k=k, v=v, t0=t0)
    grads = lib.k_backward(q=q, k=k, v=v, t0=t0, out=out, lse=lse, d_out=np.ones_like(out))
    # t0 is read by nothing: its gradient is exactly 0.
    assert all(np.isfinite(g).all() for g in grads) and float(grads[-1]) == 0.0
