"""Packed variable-length batches from Python (docs/language.md, packed batches): tokens of
several sequences in one array with FlashAttention's cu_seqlens, checked
per sequence against the float64 reference; bad offsets raise attnc.Error."""
import numpy as np
import pytest

import attnc
from conftest import assert_close, rand, reference


@pytest.fixture(scope="module")
def varlen():
    return attnc.compile("""
kernel varlen {
  heads = 4; kv_heads = 2; head_dim = 8
  batch = packed; mask = causal
  outputs = out, lse
}
""").varlen


def test_each_sequence_matches_its_own_reference(varlen):
    rng = np.random.default_rng(5)
    lq, lk = [3, 0, 17, 40], [3, 5, 20, 40]
    cu_q = np.concatenate([[0], np.cumsum(lq)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lk)]).astype(np.int32)
    q, k, v = rand(rng, cu_q[-1], 4, 8), rand(rng, cu_k[-1], 2, 8), rand(rng, cu_k[-1], 2, 8)
    out, lse = varlen(q, k, v, cu_q, cu_k)
    assert out.shape == (cu_q[-1], 4, 8) and lse.shape == (4, cu_q[-1])
    for b in range(len(lq)):
        rows, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        as_batch = lambda x: x.transpose(1, 0, 2)[None]  # [L, H, D] -> [1, H, L, D]
        ref_out, _, ref_lse = reference(as_batch(q[rows]), as_batch(k[keys]),
                                        as_batch(v[keys]), causal=True)
        assert_close(as_batch(out[rows]), ref_out, v)
        assert_close(lse[:, rows][None], ref_lse, np.ones(1))


def test_bad_offsets_are_an_error_naming_them(varlen):
    q, k, v = (np.zeros((10, h, 8), np.float32) for h in (4, 2, 2))
    good = np.array([0, 4, 10], np.int32)
    with pytest.raises(attnc.Error, match="cu_seqlens_k must start at 0, never decrease"):
        varlen(q, k, v, good, np.array([0, 7, 5], np.int32))
