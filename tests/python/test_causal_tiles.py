"""Fixed-size causal kernels, whose query tiles and key blocks depend on the
row count (AttentionAlgorithm.cpp chooseTiles; lit
HalideBackend/causal-row-tiles.attn): row counts around the tiles and key
blocks of short, middle and long rows (a last tile of one row, more keys
than queries, value columns whose last vector holds one value, rotary, weights
and lse) against float64."""
import numpy as np
import pytest

import attnc
from conftest import reference, turn_half


@pytest.mark.parametrize("lq,lk", [(32, 32), (33, 33), (47, 47), (100, 100), (129, 129),
                                   (40, 100), (200, 517), (33, 1030), (1041, 1041), (70, 2100)])
@pytest.mark.parametrize("value_dim", [64, 33])
def test_fixed_causal_matches_float64(lq, lk, value_dim):
    lib = attnc.compile("kernel k { batch = 2; heads = 3; head_dim = 64; value_dim = %d; "
                        "seq_q = %d; seq_k = %d; mask = causal; outputs = out, lse }"
                        % (value_dim, lq, lk))
    rng = np.random.default_rng(lq * 1000 + lk + value_dim)
    q = (rng.standard_normal((2, 3, lq, 64)) * 2).astype(np.float32)
    k = rng.standard_normal((2, 3, lk, 64)).astype(np.float32)
    v = rng.standard_normal((2, 3, lk, value_dim)).astype(np.float32)
    out, lse = lib.k(q=q, k=k, v=v)
    ref, _, ref_lse = reference(q, k, v, causal=True)
    assert np.abs(out - ref).max() <= 1e-5
    assert np.abs(lse - ref_lse).max() <= 1e-5


def test_fixed_causal_weights_match_float64():
    lib = attnc.compile("kernel k { heads = 2; head_dim = 32; seq_q = 70; seq_k = 70; "
                        "mask = causal; outputs = out, weights }")
    rng = np.random.default_rng(70)
    q, k, v = (rng.standard_normal((1, 2, 70, 32)).astype(np.float32) for _ in range(3))
    out, weights = lib.k(q=q, k=k, v=v)
    ref, ref_p, _ = reference(q, k, v, causal=True)
    assert np.abs(out - ref).max() <= 1e-5
    assert np.abs(weights - ref_p).max() <= 1e-6


@pytest.mark.parametrize("lq", [77, 1029])
def test_fixed_causal_rotary_matches_float64(lq):
    # rotate_half rotary (theta 10000) on q and k, then causal.
    d = 32
    lib = attnc.compile("kernel k { heads = 2; head_dim = %d; seq_q = %d; seq_k = seq_q; "
                        "mask = causal; positional = rotary }" % (d, lq))
    rng = np.random.default_rng(77)
    q, k, v = (rng.standard_normal((1, 2, lq, d)).astype(np.float32) for _ in range(3))
    out = lib.k(q=q, k=k, v=v)
    positions = np.arange(lq, dtype=np.float64)
    turned = [turn_half(x.astype(np.float64), positions, 10000.0) for x in (q, k)]
    ref = reference(*turned, v, causal=True)[0]
    assert np.abs(out - ref).max() <= 1e-5


@pytest.mark.parametrize("lmax", [200, 1100])
def test_fixed_chunk_onto_a_contiguous_cache_matches_float64(lmax):
    # 40 new rows per sequence appended at cache_len (0 and 123) of a cache of
    # lmax, attending causally from positions cache_len + i.
    lq, d = 40, 16
    lib = attnc.compile("kernel k { batch = 2; heads = 2; head_dim = %d; seq_q = %d; "
                        "seq_k = %d; cache = contiguous; mask = causal }" % (d, lq, lmax))
    rng = np.random.default_rng(40)
    lens = [0, 123]
    q, k, v = (rng.standard_normal((2, 2, lq, d)).astype(np.float32) for _ in range(3))
    k_cache, v_cache = (rng.standard_normal((2, 2, lmax, d)).astype(np.float32) for _ in range(2))
    keys = [np.concatenate([k_cache[b, :, :n], k[b]], axis=1) for b, n in enumerate(lens)]
    values = [np.concatenate([v_cache[b, :, :n], v[b]], axis=1) for b, n in enumerate(lens)]
    out = lib.k(q=q, k=k, v=v, k_cache=k_cache, v_cache=v_cache,
                cache_len=np.array(lens, dtype=np.int32))
    for b in range(2):
        ref = reference(q[b:b + 1], keys[b][None], values[b][None], causal=True)[0]
        assert np.abs(out[b:b + 1] - ref).max() <= 1e-5
        assert np.array_equal(k_cache[b, :, lens[b]:lens[b] + lq], k[b])
