"""StreamingLLM's `causal & (window(W) | sink(S))` (docs/language.md, mask)
against a NumPy float64 reference: prefill, where the sinks that the window
does not see are computed once per query tile as the softmax state's start and
the key blocks follow the window (tiles inside the output's tasks); decode with
its keys split into chunks; decode and a chunk of new tokens over a KV cache
(these two visit the sinks' key block)."""
import numpy as np
import pytest

import attnc
from conftest import assert_close

W, S = 40, 3


def streaming(q, keys, values, start, W=W, S=S):
    """float64 attention of q [H, Lq, D] at positions start + i over keys and
    values [G, T, D], a key j visible when j <= p and (j > p - W or j < S)."""
    H, Lq, D = q.shape
    G, T = keys.shape[:2]
    out = np.zeros((H, Lq, values.shape[-1]))
    j = np.arange(T)
    for h in range(H):
        g = h // (H // G)
        for i in range(Lq):
            p = start + i
            seen = (j <= p) & ((j > p - W) | (j < S))
            s = keys[g, seen] @ q[h, i] / np.sqrt(D)
            e = np.exp(s - s.max())
            out[h, i] = e @ values[g, seen] / e.sum()
    return out


@pytest.fixture(scope="module")
def lib():
    mask = "mask = causal & (window(%d) | sink(%d))" % (W, S)
    return attnc.compile("""
kernel prefill { heads = 2; head_dim = 8; %s }
kernel decode { heads = 4; kv_heads = 2; head_dim = 8; seq_q = 1; seq_k = 700; %s }
kernel cached { heads = 4; kv_heads = 2; head_dim = 8; cache = contiguous; %s }
kernel mistral_decode {
  heads = 32; kv_heads = 8; head_dim = 128; seq_q = 1; seq_k = 4096
  mask = causal & window(1024)
}
""" % (mask, mask, mask))


def rand(rng, *shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def test_prefill_tiles_far_from_the_start_see_the_sinks(lib):
    rng = np.random.default_rng(11)
    q, k, v = rand(rng, 1, 2, 300, 8), rand(rng, 1, 2, 300, 8), rand(rng, 1, 2, 300, 8)
    out = lib.prefill(q=q, k=k, v=v)
    assert_close(out[0], streaming(q[0].astype(np.float64), k[0].astype(np.float64),
                                   v[0].astype(np.float64), 0), v)


def test_decode_split_into_key_chunks(lib):
    rng = np.random.default_rng(12)
    q, k, v = rand(rng, 2, 4, 1, 8), rand(rng, 2, 2, 700, 8), rand(rng, 2, 2, 700, 8)
    out = lib.decode(q=q, k=k, v=v)
    for b in range(2):
        assert_close(out[b], streaming(q[b].astype(np.float64), k[b].astype(np.float64),
                                       v[b].astype(np.float64), 699), v)


@pytest.mark.parametrize("Lq", [1, 5])
def test_cache_rows_and_new_rows_with_sinks(lib, Lq):
    rng = np.random.default_rng(13 + Lq)
    lens, Lmax = np.array([200, 2], dtype=np.int32), 256
    keys, values = rand(rng, 2, 2, Lmax, 8), rand(rng, 2, 2, Lmax, 8)
    k_cache, v_cache = keys.copy(), values.copy()
    new = [np.ascontiguousarray(np.stack([x[b, :, lens[b]:lens[b] + Lq] for b in range(2)]))
           for x in (keys, values)]
    q = rand(rng, 2, 4, Lq, 8)
    out = lib.cached(q=q, k=new[0], v=new[1], k_cache=k_cache, v_cache=v_cache, cache_len=lens)
    for b in range(2):
        T = lens[b] + Lq
        assert_close(out[b], streaming(q[b].astype(np.float64), keys[b, :, :T].astype(np.float64),
                                       values[b, :, :T].astype(np.float64), int(lens[b])), values)


def test_mistral_window_decode_compiles_and_matches(lib):
    # Mistral's attention at decode (GQA 32 / 8, D = 128, a sliding window):
    # Halide 14's simplifier crashed compiling it while the key chunks' test
    # still named the query tile.
    rng = np.random.default_rng(14)
    q, k, v = rand(rng, 1, 32, 1, 128), rand(rng, 1, 8, 4096, 128), rand(rng, 1, 8, 4096, 128)
    out = lib.mistral_decode(q=q, k=k, v=v)
    assert_close(out[0], streaming(q[0].astype(np.float64), k[0].astype(np.float64),
                                   v[0].astype(np.float64), 4095, W=1024, S=0), v)
