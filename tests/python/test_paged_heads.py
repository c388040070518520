"""Paged decode with every KV head in one task (AttentionAlgorithm.cpp
chooseTiles, headsInsideBlocks): a task is one sequence's key chunk, its key
blocks of whole pages read page by page, each page's heads in turn. Decode
steps over pools of shuffled pages, sequences of 0 to several key chunks
with a partial last page, GQA and MHA, page sizes that do and do not divide
128, f32 and f16 pools; out and lse against float64 over the same values,
and the appended row in the pool."""
import numpy as np
import pytest

import attnc

CASES = [
    # heads, kv_heads, head_dim, page, kv_dtype, lengths
    (32, 8, 128, 16, "f32", [0, 1, 700, 2100]),
    (8, 8, 64, 12, "f32", [13, 0, 400]),
    (12, 4, 40, 16, "f16", [255, 256, 31]),
    (6, 2, 32, 64, "f32", [1000, 3]),
]


@pytest.mark.parametrize("H, G, D, page, kv_dtype, lens", CASES)
def test_paged_decode_over_every_head_matches_float64(H, G, D, page, kv_dtype, lens):
    B = len(lens)
    lib = attnc.compile(
        "kernel c { heads = %d; kv_heads = %d; head_dim = %d; seq_q = 1; batch = %d; "
        "cache = paged(block = %d); kv_dtype = %s; outputs = out, lse }"
        % (H, G, D, B, page, kv_dtype))
    rng = np.random.default_rng(H * 1000 + page)
    dtype = np.float16 if kv_dtype == "f16" else np.float32
    pages = max(lens) // page + 1
    keys = rng.standard_normal((B, G, pages * page, D)).astype(dtype)
    values = rng.standard_normal((B, G, pages * page, D)).astype(dtype)
    # Spare pages in the pool hold NaN: a row read past a sequence poisons out.
    table = rng.permutation(B * pages + 3).astype(np.int32)[:B * pages].reshape(B, pages)
    k_cache = np.full((B * pages + 3, G, page, D), np.nan, dtype)
    v_cache = np.full_like(k_cache, np.nan)
    for b in range(B):
        for t in range(lens[b]):
            k_cache[table[b, t // page], :, t % page] = keys[b, :, t]
            v_cache[table[b, t // page], :, t % page] = values[b, :, t]
    q = rng.standard_normal((B, H, 1, D)).astype(np.float32)
    new_k = np.ascontiguousarray(np.stack([keys[b, :, lens[b]:lens[b] + 1] for b in range(B)]))
    new_v = np.ascontiguousarray(np.stack([values[b, :, lens[b]:lens[b] + 1] for b in range(B)]))
    cache_len = np.array(lens, np.int32)
    out, lse = lib.c(q=q, k=new_k, v=new_v, k_cache=k_cache, v_cache=v_cache,
                     cache_len=cache_len, block_table=table)
    for b in range(B):
        t = lens[b]
        assert np.array_equal(k_cache[table[b, t // page], :, t % page], keys[b, :, t])
        assert np.array_equal(v_cache[table[b, t // page], :, t % page], values[b, :, t])
        seen = t + 1
        kb = np.repeat(keys[b, :, :seen].astype(np.float64), H // G, axis=0)
        vb = np.repeat(values[b, :, :seen].astype(np.float64), H // G, axis=0)
        s = np.einsum("hd,hjd->hj", q[b, :, 0].astype(np.float64), kb) / np.sqrt(D)
        m = s.max(axis=-1, keepdims=True)
        p = np.exp(s - m)
        ref = np.einsum("hj,hjd->hd", p / p.sum(axis=-1, keepdims=True), vb)
        assert np.abs(out[b, :, 0] - ref).max() <= 2e-5, b
        assert np.abs(lse[b, :, 0] - (np.log(p.sum(axis=-1)) + m[:, 0])).max() <= 2e-5, b
