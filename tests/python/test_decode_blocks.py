"""Decode (one query row per head, GQA) at key counts around its key blocks: 128
keys prefetched in software, or 256 keys read by the core's own prefetchers
(`--target=host` on an AMD core, TargetDispatch.h), split into chunks whose
partial states are merged. Against float64, fixed and dynamic seq_k."""
import numpy as np
import pytest

import attnc
from conftest import reference


@pytest.mark.parametrize("lk", [1, 200, 256, 257, 700, 2049, 4352])
@pytest.mark.parametrize("sizes", ["fixed", "dynamic"])
def test_decode_matches_float64_around_block_boundaries(lk, sizes):
    seq_k = "seq_k = %d" % lk if sizes == "fixed" else "seq_k = dynamic"
    lib = attnc.compile("kernel k { heads = 8; kv_heads = 2; head_dim = 64; seq_q = 1; "
                        "batch = 2; %s; outputs = out, lse }" % seq_k)
    rng = np.random.default_rng(lk)
    q = rng.standard_normal((2, 8, 1, 64)).astype(np.float32)
    k, v = (rng.standard_normal((2, 2, lk, 64)).astype(np.float32) for _ in range(2))
    out, lse = lib.k(q=q, k=k, v=v)
    ref, _, ref_lse = reference(q, k, v)
    assert np.abs(out - ref).max() <= 1e-5
    assert np.abs(lse - ref_lse).max() <= 1e-5


@pytest.mark.parametrize("mask", ["causal & window(300)", "sink(4) | window(100)"])
def test_decode_under_a_window_matches_float64(mask):
    lk = 1500
    lib = attnc.compile("kernel k { heads = 4; kv_heads = 1; head_dim = 32; seq_q = 1; "
                        "seq_k = %d; batch = 1; mask = %s }" % (lk, mask))
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1, 4, 1, 32)).astype(np.float32)
    k, v = (rng.standard_normal((1, 1, lk, 32)).astype(np.float32) for _ in range(2))
    out = lib.k(q=q, k=k, v=v)
    j = np.arange(lk)
    i = lk - 1  # the query's position: the last key
    seen = (j <= i) & (i - j < 300) if mask.startswith("causal") else (j < 4) | (abs(i - j) < 100)
    ref = reference(q, k[:, :, seen], v[:, :, seen])[0]
    assert np.abs(out - ref).max() <= 1e-5


@pytest.mark.parametrize("value_dim", [17, 33, 128])
@pytest.mark.parametrize("sizes", ["fixed", "dynamic"])
def test_decode_chunks_merge_every_value_column(value_dim, sizes):
    # 8 key chunks merged column by column, their rescaling read at the row's
    # last column: widths whose last vector holds one value (AVX-512: 17, 33)
    # and a whole-vector one, with scores large enough that the chunks'
    # maxima differ by more than exp's range.
    lk = 5000
    seq_k = "seq_k = %d" % lk if sizes == "fixed" else "seq_k = dynamic"
    lib = attnc.compile("kernel k { heads = 4; kv_heads = 2; head_dim = 32; value_dim = %d; "
                        "seq_q = 1; batch = 3; %s; outputs = out, lse }" % (value_dim, seq_k))
    rng = np.random.default_rng(value_dim)
    q = (rng.standard_normal((3, 4, 1, 32)) * 3).astype(np.float32)
    k = rng.standard_normal((3, 2, lk, 32)).astype(np.float32)
    v = rng.standard_normal((3, 2, lk, value_dim)).astype(np.float32)
    out, lse = lib.k(q=q, k=k, v=v)
    ref, _, ref_lse = reference(q, k, v)
    assert np.abs(out - ref).max() <= 1e-5
    assert np.abs(lse - ref_lse).max() <= 1e-5


SCORES = {  # score line, raw score of float64 q [B,H,1,D], k [B,H,Lk,D], w [D,D]
    "scaled_dot": ("scale = 0.125",
                   lambda q, k, w: 0.125 * np.einsum("bhid,bhjd->bhij", q, k)),
    "general": ("score = general; scale = 0.125",
                lambda q, k, w: 0.125 * np.einsum("bhid,de,bhje->bhij", q, w, k)),
    "expression": ("score = dot(q, k) * 0.1 + tanh(dot(q, k)); scale = 1",
                   lambda q, k, w: (lambda d: d * 0.1 + np.tanh(d))(
                       np.einsum("bhid,bhjd->bhij", q, k))),
}


@pytest.mark.parametrize("heads,kv_heads,head_dim,value_dim", [
    (8, 2, 64, 64),     # GQA, 4 rows a tile: 2 chunks of 32 channels
    (4, 4, 32, 96),     # MHA, one row a tile (its own q_rows), 3 chunks of values
    (32, 8, 128, 128),  # Llama-3's decode
    (2, 1, 256, 32),    # 16 vectors of keys, all unrolled
])
@pytest.mark.parametrize("score", sorted(SCORES))
@pytest.mark.parametrize("sizes", ["fixed", "dynamic"])
def test_bf16_kv_decode_read_as_channel_pairs(heads, kv_heads, head_dim, value_dim, score,
                                              sizes):
    # Decode with bf16 K/V rows sums its channels in the order of their
    # 32-bit words, even channels then odd ones per chunk of 2 x 16 (AVX-512;
    # AlgorithmFuncs::evenOddLanes), and writes out, weights and lse back in
    # channel order: against float64 of the same bf16 values.
    B, lk = 2, 1200
    seq_k = "seq_k = %d" % lk if sizes == "fixed" else "seq_k = dynamic"
    lib = attnc.compile(
        "kernel k { heads = %d; kv_heads = %d; head_dim = %d; value_dim = %d; seq_q = 1; "
        "batch = %d; %s; kv_dtype = bf16; %s; outputs = out, weights, lse }"
        % (heads, kv_heads, head_dim, value_dim, B, seq_k, SCORES[score][0]))
    rng = np.random.default_rng(head_dim + value_dim)
    q = rng.standard_normal((B, heads, 1, head_dim)).astype(np.float32)
    k = attnc.f32_to_bf16(rng.standard_normal((B, kv_heads, lk, head_dim)).astype(np.float32))
    v = attnc.f32_to_bf16(rng.standard_normal((B, kv_heads, lk, value_dim)).astype(np.float32))
    w = (rng.standard_normal((head_dim, head_dim)) * 0.2).astype(np.float32)
    inputs = {"q": q, "k": k, "v": v}
    if score == "general":
        inputs["score_w"] = w
    out, weights, lse = lib.k(**inputs)
    q64, w64 = q.astype(np.float64), w.astype(np.float64)
    k64, v64 = (np.repeat(attnc.bf16_to_f32(x).astype(np.float64), heads // kv_heads, axis=1)
                for x in (k, v))
    s = SCORES[score][1](q64, k64, w64)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    total = p.sum(axis=-1, keepdims=True)
    ref = np.einsum("bhij,bhjd->bhid", p / total, v64)
    assert np.abs(out - ref).max() <= 2e-5
    assert np.abs(weights - p / total).max() <= 1e-5
    assert np.abs(lse - (np.log(total[..., 0]) + s.max(axis=-1))).max() <= 2e-5


def test_bf16_kv_decode_channel_pairs_with_a_sink_prefix():
    # 8 sequences x 8 KV heads fill the threads with one key chunk, so the
    # union's sinks are the state's start (AlgorithmFuncs::sinkScore), whose
    # P.V sums in slot order too.
    B, H, G, D, lk = 8, 32, 8, 64, 1500
    lib = attnc.compile("kernel k { heads = %d; kv_heads = %d; head_dim = %d; seq_q = 1; "
                        "seq_k = %d; batch = %d; kv_dtype = bf16; "
                        "mask = causal & (window(256) | sink(4)) }" % (H, G, D, lk, B))
    rng = np.random.default_rng(5)
    q = rng.standard_normal((B, H, 1, D)).astype(np.float32)
    k = attnc.f32_to_bf16(rng.standard_normal((B, G, lk, D)).astype(np.float32))
    v = attnc.f32_to_bf16(rng.standard_normal((B, G, lk, D)).astype(np.float32))
    out = lib.k(q=q, k=k, v=v)
    j, i = np.arange(lk), lk - 1
    seen = (j <= i) & ((i - j < 256) | (j < 4))
    wide_k, wide_v = (attnc.bf16_to_f32(x)[:, :, seen] for x in (k, v))
    assert np.abs(out - reference(q, wide_k, wide_v)[0]).max() <= 2e-5


@pytest.mark.parametrize("kv_dtype", ["bf16", "f16"])
def test_long_fixed_16bit_decode_in_1024_key_blocks(kv_dtype):
    # A fixed seq_k of 8192 or more reads 16-bit rows in 1024-key blocks where
    # the core's prefetchers fetch them (`host` on an AMD core;
    # AttentionAlgorithm.cpp chooseTiles); 9000 keys end in a partial block.
    B, H, G, D, lk = 1, 8, 2, 64, 9000
    lib = attnc.compile("kernel k { heads = %d; kv_heads = %d; head_dim = %d; seq_q = 1; "
                        "seq_k = %d; batch = %d; kv_dtype = %s; outputs = out, lse }"
                        % (H, G, D, lk, B, kv_dtype))
    rng = np.random.default_rng(9)
    q = (rng.standard_normal((B, H, 1, D)) * 2).astype(np.float32)
    k, v = (rng.standard_normal((B, G, lk, D)).astype(np.float32) for _ in range(2))
    if kv_dtype == "bf16":
        k, v = attnc.f32_to_bf16(k), attnc.f32_to_bf16(v)
        wide_k, wide_v = attnc.bf16_to_f32(k), attnc.bf16_to_f32(v)
    else:
        k, v = k.astype(np.float16), v.astype(np.float16)
        wide_k, wide_v = k.astype(np.float32), v.astype(np.float32)
    out, lse = lib.k(q=q, k=k, v=v)
    ref, _, ref_lse = reference(q, wide_k, wide_v)
    assert np.abs(out - ref).max() <= 2e-5
    assert np.abs(lse - ref_lse).max() <= 2e-5
