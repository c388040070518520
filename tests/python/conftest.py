"""Fixtures of the Python package's tests: a private run-time compilation
cache, and a float64 reference of docs/language.md section 1."""
import atexit
import os
import shutil
import tempfile

import numpy as np
import pytest

# Set before attnc compiles anything: every test process gets its own cache
# unless the caller (ctest) gives one; a cache made here goes at exit.
if "ATTNC_CACHE_DIR" not in os.environ:
    os.environ["ATTNC_CACHE_DIR"] = tempfile.mkdtemp(prefix="attnc-pytest-")
    atexit.register(shutil.rmtree, os.environ["ATTNC_CACHE_DIR"], ignore_errors=True)

import attnc  # noqa: E402


def reference(q, k, v, causal=False, scale=None, key_padding=None, window=None):
    """float64 softmax(scale q k^T + mask) v for bhsd q [B,H,Lq,D], k/v [B,G,Lk,*],
    query i at p = i + Lk - Lq (window: keys p - window < j <= p); fully masked
    rows give 0 (and lse -inf)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    B, H, Lq, D = q.shape
    G, Lk = k.shape[1], k.shape[2]
    scale = 1.0 / np.sqrt(D) if scale is None else scale
    k = np.repeat(k, H // G, axis=1)
    v = np.repeat(v, H // G, axis=1)
    s = scale * np.einsum("bhid,bhjd->bhij", q, k)
    visible = np.ones((B, 1, Lq, Lk), dtype=bool)
    ip = np.arange(Lq)[:, None] + (Lk - Lq)
    j = np.arange(Lk)[None, :]
    if causal:
        visible &= (j <= ip)[None, None]
    if window is not None:
        visible &= ((j <= ip) & (j > ip - window))[None, None]
    if key_padding is not None:
        visible &= (np.asarray(key_padding) == 0)[:, None, None, :]
    s = np.where(visible, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(visible, np.exp(s - m), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    with np.errstate(divide="ignore"):
        lse = np.where(total[..., 0] > 0, np.log(total[..., 0]) + m[..., 0], -np.inf)
    return np.einsum("bhij,bhjd->bhid", p, v), p, lse


def turn_half(x, positions, base):
    """Rotary (rotate_half) of x [..., L, D] at positions [L], float64."""
    half = x.shape[-1] // 2
    angle = positions[:, None] * base ** (-np.arange(half) / half)[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)


def assert_close(got, ref, v, bound=1e-4):
    err = np.max(np.abs(np.asarray(got, dtype=np.float64) - ref)) if ref.size else 0.0
    assert err <= bound * max(1.0, float(np.max(np.abs(v)))), "max error %g" % err


@pytest.fixture(scope="session")
def gqa():
    """A GQA causal kernel with weights and lse, dynamic sizes."""
    return attnc.compile("""
kernel gqa {
  heads = 4; kv_heads = 2; head_dim = 16
  mask = causal
  outputs = out, weights, lse
}
kernel plain { heads = 2; head_dim = 8 }
""")


def rand(rng, *shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)
