"""Windows whose key blocks follow each query tile's band (docs/language.md,
mask; AttentionAlgorithm.cpp chooseKeyBand): under `window(W)` a tile's
blocks start at its first visible key, not at multiples of the block size.
Checked against a float64 reference where that start moves: GQA tiles whose
rows are not a multiple of the group, queries aligned bottom-right with more
or fewer keys than queries (fully masked rows give 0), windows wider than the
keys, bf16 value pairs (an even start), weights and lse, fixed sizes."""
import numpy as np
import pytest

import attnc
from conftest import assert_close, reference


@pytest.fixture(scope="module")
def lib():
    return attnc.compile("""
kernel mha { heads = 2; head_dim = 16; mask = causal & window(40) }
kernel gqa3 { heads = 6; kv_heads = 2; head_dim = 8; mask = causal & window(37) }
kernel alone { heads = 2; head_dim = 8; mask = window(100) }
kernel fixed {
  heads = 4; kv_heads = 1; head_dim = 16; seq_q = 331; seq_k = seq_q
  mask = causal & window(64); outputs = out, weights, lse
}
kernel half { heads = 2; head_dim = 16; dtype = bf16; mask = causal & window(50) }
""")


def rand(rng, *shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


@pytest.mark.parametrize("Lq,Lk", [(300, 300), (1, 300), (50, 333), (333, 50), (17, 17), (97, 96)])
def test_mha_band_at_odd_sizes(lib, Lq, Lk):
    rng = np.random.default_rng(Lq * 1000 + Lk)
    q, k, v = rand(rng, 2, 2, Lq, 16), rand(rng, 2, 2, Lk, 16), rand(rng, 2, 2, Lk, 16)
    assert_close(lib.mha(q=q, k=k, v=v), reference(q, k, v, window=40)[0], v)


@pytest.mark.parametrize("Lq", [259, 40, 3])
def test_gqa_tiles_of_rows_not_a_multiple_of_the_group(lib, Lq):
    rng = np.random.default_rng(Lq)
    q, k, v = rand(rng, 1, 6, Lq, 8), rand(rng, 1, 2, Lq, 8), rand(rng, 1, 2, Lq, 8)
    assert_close(lib.gqa3(q=q, k=k, v=v), reference(q, k, v, window=37)[0], v)


@pytest.mark.parametrize("L", [257, 60])
def test_window_alone_and_wider_than_the_keys(lib, L):
    rng = np.random.default_rng(L + 7)
    q, k, v = rand(rng, 1, 2, L, 8), rand(rng, 1, 2, L, 8), rand(rng, 1, 2, L, 8)
    assert_close(lib.alone(q=q, k=k, v=v), reference(q, k, v, window=100)[0], v)


def test_fixed_sizes_with_weights_and_lse(lib):
    rng = np.random.default_rng(331)
    q, k, v = rand(rng, 1, 4, 331, 16), rand(rng, 1, 1, 331, 16), rand(rng, 1, 1, 331, 16)
    out, weights, lse = lib.fixed(q=q, k=k, v=v)
    ref_out, ref_w, ref_lse = reference(q, k, v, window=64)
    assert_close(out, ref_out, v)
    assert_close(weights, ref_w, np.ones(1))
    assert_close(lse, ref_lse, np.ones(1))


@pytest.mark.parametrize("L", [301, 130])
def test_bf16_value_pairs_from_an_even_start(lib, L):
    rng = np.random.default_rng(L + 11)
    q, k, v = (attnc.f32_to_bf16(rand(rng, 1, 2, L, 16)) for _ in range(3))
    wide = [attnc.bf16_to_f32(x) for x in (q, k, v)]
    out = attnc.bf16_to_f32(lib.half(q=q, k=k, v=v))
    assert_close(out, reference(*wide, window=50)[0], wide[2], 8e-3)
