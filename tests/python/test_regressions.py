"""Regressions found by the randomized differential tester (test_random_kernels.py),
each pinned with its minimal kernel."""
import numpy as np

import attnc
from conftest import reference


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


def _softmax_attention(q, k, v, heads_per_group, causal=False):
    """float64 softmax(q k^T / sqrt(D)) v over (B, H, L, D) arrays, K/V heads shared by
    groups of `heads_per_group` query heads; `causal`: keys j <= i + Lk - Lq only."""
    k = np.repeat(k.astype(np.float64), heads_per_group, axis=1)
    v = np.repeat(v.astype(np.float64), heads_per_group, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k) / np.sqrt(q.shape[-1])
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.arange(lk)[None, :] <= np.arange(lq)[:, None] + lk - lq, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def test_value_rows_whose_last_vector_holds_one_value():
    # Halide 14 miscompiled softmax_state's merge when a row's last vector has
    # one value: value_dim 33 lost its last column; 65 (and up) corrupted the
    # heap; a GQA decode tile lost the guard of its second row; rows wider
    # than 32 vectors (257) took the loop path and broke the same way.
    rng = np.random.default_rng(2)
    for dv, heads, kv_heads, lq, lk in ((33, 1, 1, 2, 3), (65, 4, 2, 1, 300),
                                        (129, 3, 1, 5, 1000), (257, 4, 2, 1, 300)):
        lib = attnc.compile("kernel k { head_dim = 8; value_dim = %d; heads = %d; "
                            "kv_heads = %d }" % (dv, heads, kv_heads))
        q = rng.standard_normal((2, heads, lq, 8)).astype(np.float32)
        k = rng.standard_normal((2, kv_heads, lk, 8)).astype(np.float32)
        v = rng.standard_normal((2, kv_heads, lk, dv)).astype(np.float32)
        out = lib.k(q=q, k=k, v=v)
        ref = _softmax_attention(q, k, v, heads // kv_heads)
        assert np.abs(out - ref).max() <= 1e-5, (dv, heads, kv_heads, lq, lk)


def test_value_rows_wider_than_eight_vectors_in_chunks():
    # P.V of rows wider than 8 vectors (head_dim 256, Gemma's) runs in chunks
    # of 4 vectors for 4 rows at a time (Schedules.cpp scheduleTuned; it was
    # one whole row at a time, 1.6x slower); chunks of 4, 4 and 1 vectors (a
    # last vector of one value) and rows of run-time and fixed size, causal
    # and not, against float64.
    rng = np.random.default_rng(3)
    for d, dv, heads, kv_heads, lq, lk, extra in (
            (256, 256, 2, 1, 70, 70, "mask = causal"),
            (64, 129, 2, 2, 37, 50, ""),
            (32, 192, 4, 2, 33, 33, "seq_q = 33; seq_k = 33; mask = causal"),
            (16, 257, 1, 1, 40, 17, "")):
        lib = attnc.compile("kernel k { head_dim = %d; value_dim = %d; heads = %d; "
                            "kv_heads = %d; %s }" % (d, dv, heads, kv_heads, extra))
        q = rng.standard_normal((1, heads, lq, d)).astype(np.float32)
        k = rng.standard_normal((1, kv_heads, lk, d)).astype(np.float32)
        v = rng.standard_normal((1, kv_heads, lk, dv)).astype(np.float32)
        out = lib.k(q=q, k=k, v=v)
        ref = _softmax_attention(q, k, v, heads // kv_heads, causal="causal" in extra)
        assert np.abs(out - ref).max() <= 1e-5, (d, dv, heads, kv_heads, lq, lk)


def _rope(x, dims, style, base=10000.0):
    """float64 rotary embeddings of x [..., L, D] at positions 0..L-1."""
    x = x.astype(np.float64).copy()
    half = dims // 2
    angle = np.arange(x.shape[-2])[:, None] * base ** (-np.arange(half) / half)[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    a, b = ((slice(0, half), slice(half, dims)) if style == "half" else
            (slice(0, dims, 2), slice(1, dims, 2)))
    x[..., a], x[..., b] = x[..., a] * cos - x[..., b] * sin, x[..., b] * cos + x[..., a] * sin
    return x


def test_rotary_with_nine_pairs():
    # The cos/sin table's last vector held one pair (dims = 18): Halide 14
    # stored its first vector twice and left the ninth pair uninitialised.
    rng = np.random.default_rng(3)
    for style in ("half", "interleaved"):
        lib = attnc.compile("kernel k { head_dim = 64; positional = rotary(style = %s, "
                            "dims = 18) }" % style)
        q, k, v = (rng.standard_normal((1, 1, 37, 64)).astype(np.float32) for _ in range(3))
        out = lib.k(q=q, k=k, v=v)
        ref = _softmax_attention(_rope(q, 18, style), _rope(k, 18, style), v, 1)
        assert np.abs(out - ref).max() <= 1e-5, style


def test_decode_block_of_seventeen_keys_under_softcap():
    # The scores of a 17-key block (seq_k = 17, a last vector of one key):
    # Halide 14 dropped the guard of the last vector and stored 8 scores past
    # the block's end, over the state of the row.
    rng = np.random.default_rng(4)
    lib = attnc.compile("kernel k { head_dim = 8; seq_q = 1; seq_k = 17; softcap = 0.5; "
                        "outputs = out, lse }")
    q = rng.standard_normal((2, 1, 1, 8)).astype(np.float32)
    k, v = (rng.standard_normal((2, 1, 17, 8)).astype(np.float32) for _ in range(2))
    out, lse = lib.k(q=q, k=k, v=v)
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k) / np.sqrt(8)
    s = 0.5 * np.tanh(s / 0.5)
    m = s.max(-1, keepdims=True)
    ref_lse = (m + np.log(np.exp(s - m).sum(-1, keepdims=True)))[..., 0]
    ref = np.exp(s - ref_lse[..., None]) @ v.astype(np.float64)
    assert np.abs(out - ref).max() <= 1e-5
    assert np.abs(lse - ref_lse).max() <= 1e-5


def test_weights_of_nine_fixed_keys():
    # The weights' rows of seq_k = 9 keys (a last vector of one key): Halide 14
    # dropped the guard, left the ninth weight 0 and stored 7 floats past the
    # row, corrupting the next rows and the heap.
    rng = np.random.default_rng(5)
    lib = attnc.compile("kernel k { head_dim = 4; batch = 1; seq_k = 9; "
                        "score = additive(hidden = 4); outputs = out, weights }")
    q = rng.standard_normal((1, 1, 3, 4)).astype(np.float32)
    k, v = (rng.standard_normal((1, 1, 9, 4)).astype(np.float32) for _ in range(2))
    wq, wk = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
    wv = rng.standard_normal(4).astype(np.float32)
    out, weights = lib.k(q=q, k=k, v=v, score_wq=wq, score_wk=wk, score_wv=wv)
    s = np.tanh((q[0, 0].astype(np.float64) @ wq.T)[:, None, :] +
                (k[0, 0].astype(np.float64) @ wk.T)[None, :, :]) @ wv
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    assert np.abs(weights[0, 0] - p).max() <= 1e-5
    assert np.abs(out[0, 0] - p @ v[0, 0]).max() <= 1e-5


def test_alibi_with_a_mask_of_the_offset():
    # `ip - i` is the offset Lk - Lq. Beside ALiBi (which reads ip too) Halide
    # 14's correlated-differences pass turned `ip - i != c` into `tile != 0`
    # and masked every row of the first query tile.
    rng = np.random.default_rng(6)
    q = rng.standard_normal((1, 1, 3, 4)).astype(np.float32)
    k, v = (rng.standard_normal((1, 1, 5, 4)).astype(np.float32) for _ in range(2))
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k) / 2.0
    ip = np.arange(3)[:, None] + 2
    s = s - 2.0 ** -8 * (ip - np.arange(5)[None, :])  # ALiBi, one head
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
    for mask, expected in (("ip - i != -2", ref), ("ip - i != 2", np.zeros_like(ref))):
        lib = attnc.compile("kernel k { head_dim = 4; bias = alibi; mask = %s }" % mask)
        assert np.abs(lib.k(q=q, k=k, v=v) - expected).max() <= 1e-5, mask


def test_out_rows_whose_last_vector_holds_one_value_stay_in_bounds():
    # Kernels whose only output is `out` store it where each query tile's state
    # is computed; Halide 14 dropped that store's guard for rows whose last
    # vector holds one value (value_dim 33 = 2 x 16 + 1 on AVX-512, 4 x 8 + 1 on
    # AVX2): every row was written whole vectors long, over the next row's start
    # and, at the last row, past the end of `out` ("corrupted size vs.
    # prev_size", intermittently). `out` is a view of a larger buffer here, so a
    # store past its end shows in the sentinels after it.
    rng = np.random.default_rng(4)
    for Dv in (17, 33, 65):
        for source in ("kernel k { heads = 2; head_dim = 16; value_dim = %d; seq_q = 5; "
                       "seq_k = 7; batch = 2 }",
                       "kernel k { heads = 2; head_dim = 16; value_dim = %d; seq_q = 1; "
                       "seq_k = 8; batch = 2; cache = contiguous }"):
            lib = attnc.compile(source % Dv)
            cache = "cache" in source
            Lq, Lk = (1, 8) if cache else (5, 7)
            q = rng.standard_normal((2, 2, Lq, 16)).astype(np.float32)
            k = rng.standard_normal((2, 2, Lk, 16)).astype(np.float32)
            v = rng.standard_normal((2, 2, Lk, Dv)).astype(np.float32)
            buf = np.full(2 * 2 * Lq * Dv + 64, 7.0, dtype=np.float32)
            out = buf[:2 * 2 * Lq * Dv].reshape(2, 2, Lq, Dv)
            if cache:
                k_cache, v_cache = k.copy(), v.copy()
                lib.k(q=q, k=k[:, :, -1:], v=v[:, :, -1:], k_cache=k_cache, v_cache=v_cache,
                      cache_len=np.full(2, Lk - 1, dtype=np.int32), out=out)
            else:
                lib.k(q=q, k=k, v=v, out=out)
            assert np.all(buf[out.size:] == 7.0), (Dv, source)
            ref = _softmax_attention(q, k, v, 1)
            assert np.abs(out - ref).max() <= 1e-4 * max(1.0, np.abs(v).max()), (Dv, source)


def test_decode_key_chunks_merge_a_one_value_last_vector():
    # Decode splits the keys into chunks whose softmax states are merged; Halide
    # 14 compiled the merge's loop over a row's vectors into one that repeated
    # its first vector when the last holds one value (head_dim 17 on AVX-512):
    # the last column stayed 0 (found by the random tester in a paged-cache
    # decode; a contiguous cache and plain decode have the same merge).
    rng = np.random.default_rng(6)
    for D in (17, 33):
        for cache in ("paged(block = 1)", "paged(block = 4)", "contiguous; seq_k = 64", ""):
            source = "kernel k { heads = 1; head_dim = %d; seq_q = 1; batch = 1; %s }" % (
                D, "cache = " + cache if cache else "seq_k = 41")
            lib = attnc.compile(source)
            q, k_new, v_new = (rng.standard_normal((1, 1, 1, D)).astype(np.float32)
                               for _ in range(3))
            if not cache:
                k = rng.standard_normal((1, 1, 41, D)).astype(np.float32)
                v = rng.standard_normal((1, 1, 41, D)).astype(np.float32)
                out = lib.k(q=q, k=k, v=v)
            else:
                block = 1 if "block = 1" in cache else 4 if "block = 4" in cache else 64
                blocks = 64 // block
                k_cache, v_cache = (rng.standard_normal((blocks, 1, block, D)).astype(np.float32)
                                    for _ in range(2))
                args = dict(q=q, k=k_new, v=v_new, k_cache=k_cache, v_cache=v_cache,
                            cache_len=np.array([40], dtype=np.int32))
                if "paged" in cache:
                    table = rng.permutation(blocks).astype(np.int32)[None]
                    args["block_table"] = table
                    rows = lambda c: c[table[0]].reshape(64, D)
                else:
                    rows = lambda c: c[0, 0]
                out = lib.k(**args)
                k, v = rows(k_cache)[None, None, :41], rows(v_cache)[None, None, :41]
            ref = _softmax_attention(q, k, v, 1)
            assert np.abs(out - ref).max() <= 1e-4 * max(1.0, np.abs(v).max()), source


def test_gqa_weights_with_general_score_or_rotary():
    # GQA kernels with `weights` put the W-transformed (general) or turned
    # (rotary) queries inside the state's query tiles, where the weights, read
    # outside them, could not see them: Halide refused the schedule ("computed
    # at an invalid location").
    lib = attnc.compile("""
kernel general { heads = 4; kv_heads = 2; head_dim = 8; score = general; outputs = out, weights }
kernel rotary { heads = 4; kv_heads = 2; head_dim = 8; positional = rotary; mask = causal
  outputs = out, weights }""")
    rng = np.random.default_rng(9)
    q = rng.standard_normal((2, 4, 5, 8)).astype(np.float32)
    k = rng.standard_normal((2, 2, 7, 8)).astype(np.float32)
    v = rng.standard_normal((2, 2, 7, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8)).astype(np.float32) * 0.3
    out, weights = lib.general(q=q, k=k, v=v, score_w=w)
    qw = np.einsum("bhid,de->bhie", q.astype(np.float64), w.astype(np.float64))
    s = np.einsum("bhie,bhje->bhij", qw, np.repeat(k.astype(np.float64), 2, axis=1))
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    assert np.abs(weights - p).max() <= 1e-5
    assert np.abs(out - p @ np.repeat(v.astype(np.float64), 2, axis=1)).max() <= 1e-4 * 4

    def turn(x, positions):  # rotate_half, base 10000, over all 8 channels
        freq = 10000.0 ** (-np.arange(4) / 4)
        angle = positions[:, None] * freq[None, :]
        cos, sin = np.cos(angle), np.sin(angle)
        a, b = x[..., :4], x[..., 4:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)
    out, weights = lib.rotary(q=q, k=k, v=v)
    qt = turn(q.astype(np.float64), np.arange(5) + 2.0)  # queries at i + Lk - Lq
    kt = np.repeat(turn(k.astype(np.float64), np.arange(7.0)), 2, axis=1)
    s = np.einsum("bhid,bhjd->bhij", qt, kt) / np.sqrt(8)
    s = np.where(np.arange(7)[None, :] <= np.arange(5)[:, None] + 2, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    assert np.abs(weights - p).max() <= 1e-5
    assert np.abs(out - p @ np.repeat(v.astype(np.float64), 2, axis=1)).max() <= 1e-4 * 4


def test_cosine_norms_of_seventeen_fixed_rows():
    # The cosine score's row norms are sums vectorized over rows; Halide 14
    # miscompiled that update's guarded vectors for 17 fixed rows (16 + 1 on
    # AVX-512): a bf16 cosine kernel with seq_k = 17 was off by 2.8 (a campaign
    # on AVX-512, seed 123541612190497).
    rng = np.random.default_rng(10)
    for Lq, Lk in ((64, 17), (17, 40), (33, 33)):
        lib = attnc.compile("kernel k { heads = 1; head_dim = 8; batch = 1; seq_q = %d; "
                            "seq_k = %d; dtype = bf16; score = cosine }" % (Lq, Lk))
        bits = [attnc.f32_to_bf16(rng.standard_normal((1, 1, n, 8)).astype(np.float32))
                for n in (Lq, Lk, Lk)]
        q, k, v = (attnc.bf16_to_f32(b).astype(np.float64)[0, 0] for b in bits)
        out = attnc.bf16_to_f32(lib.k(q=bits[0], k=bits[1], v=bits[2]))[0, 0]
        s = (q / np.linalg.norm(q, axis=-1, keepdims=True)) @ \
            (k / np.linalg.norm(k, axis=-1, keepdims=True)).T
        p = np.exp(s - s.max(-1, keepdims=True))
        ref = (p / p.sum(-1, keepdims=True)) @ v
        assert np.abs(out - ref).max() <= 8e-3 * max(1.0, np.abs(v).max()), (Lq, Lk)


def test_gqa_groups_of_three_under_a_causal_mask():
    # Halide 14's solver rewrote (64 kb - Lk) * 3 / 32 as 6 kb - 3 Lk / 32 (floor
    # division does not commute with negation), and its correlated-differences
    # pass put that into the mask: with 3 query heads per KV head and a fixed
    # seq_q, the first query tile of each key block was masked as the next tile
    # (rows 42-53 at Lk = 17). attnc now links a corrected solver
    # (compiler/HalideBackend/HalideFixes).
    rng = np.random.default_rng(5)
    for heads, kv_heads, lq in ((3, 1, 64), (6, 2, 64), (3, 1, 32), (6, 1, 96), (5, 1, 48)):
        lib = attnc.compile("kernel k { head_dim = 8; heads = %d; kv_heads = %d; seq_q = %d; "
                            "mask = causal }" % (heads, kv_heads, lq))
        for lk in (17, lq, 100):
            q = rng.standard_normal((1, heads, lq, 8)).astype(np.float32)
            k = rng.standard_normal((1, kv_heads, lk, 8)).astype(np.float32)
            v = rng.standard_normal((1, kv_heads, lk, 8)).astype(np.float32)
            out = lib.k(q=q, k=k, v=v)
            ref = reference(q, k, v, causal=True)[0]
            assert np.abs(out - ref).max() <= 1e-5, (heads, kv_heads, lq, lk)


def test_sink_prefix_of_seventeen_rows():
    # A mask union with sink(S) starts each query tile's state from the sink
    # keys' scores (the sink prefix). With a fixed seq_q of 17 the tile's 17 rows
    # ended in a one-row vector, and Halide 14 dropped that guarded vector's
    # store in the prefix's pure stages: row 16 read an uninitialised exp.
    rng = np.random.default_rng(6)
    lib = attnc.compile("kernel k { head_dim = 2; value_dim = 5; heads = 4; seq_q = 17; "
                        "seq_k = seq_q; mask = sink(1) | ((b < h) or (b <= j)) }")
    q = rng.standard_normal((2, 4, 17, 2)).astype(np.float32)
    k = rng.standard_normal((2, 4, 17, 2)).astype(np.float32)
    v = rng.standard_normal((2, 4, 17, 5)).astype(np.float32)
    out = lib.k(q=q, k=k, v=v)
    b, h, j = np.ix_(range(2), range(4), range(17))
    visible = (j < 1) | (b < h) | (b <= j)  # [B, H, Lk], the same for every row
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(2)
    s = np.where(visible[:, :, None, :], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
    assert np.abs(out - ref).max() <= 1e-5


def test_fixed_batch_and_rows_under_valid_len_and_causal():
    # Halide 14's simplifier returned an undefined statement for an `if` it
    # proved false with no else branch, and crashed on it (fixed batch = 1,
    # seq_q = 64, heads = 1, valid_len & causal); attnc links the upstream fix
    # (compiler/HalideBackend/HalideFixes/SimplifyIfThenElse.cpp).
    lib = attnc.compile("kernel k { head_dim = 8; batch = 1; seq_q = 64; "
                        "mask = valid_len & causal }")
    rng = np.random.default_rng(7)
    for lk, valid in ((64, 40), (100, 77), (17, 17), (64, 0), (200, 300)):
        q = rng.standard_normal((1, 1, 64, 8)).astype(np.float32)
        k = rng.standard_normal((1, 1, lk, 8)).astype(np.float32)
        v = rng.standard_normal((1, 1, lk, 8)).astype(np.float32)
        out = lib.k(q=q, k=k, v=v, valid_len=np.array([valid], np.int32))
        padding = (np.arange(lk) >= valid)[None, :]  # valid_len as a key-padding mask
        ref = reference(q, k, v, causal=True, key_padding=padding)[0]
        assert np.abs(out - ref).max() <= 1e-5, (lk, valid)


def test_score_condition_on_the_head_keeps_head_reads_in_bounds():
    # Seed 138619306766822 (minimized): `i - ip == -h` is false for every head when
    # Lq > Lk (ip = i + Lk - Lq), and Halide's bounds inference, trimming k's region
    # through that condition, asked for heads past k's (the call failed: "Input buffer
    # k is accessed at 30, which is beyond the max (3) in dimension 1"). The inputs'
    # head indices are clamped now.
    for Lk in (1, 2, 40):
        lib = attnc.compile("kernel k { seq_q = 33; heads = 4; head_dim = 3; layout = bshd; "
                            f"seq_k = {Lk}; score = select(i - ip == -h, dot(q, k), 0.0) }}")
        rng = np.random.default_rng(Lk)
        B, Lq, H, D = 2, 33, 4, 3
        q, k, v = (rng.uniform(-2, 2, (B, L, H, D)).astype(np.float32) for L in (Lq, Lk, Lk))
        out = lib.k(q=q, k=k, v=v)
        Q, K, V = (a.astype(np.float64).transpose(0, 2, 1, 3) for a in (q, k, v))
        i = np.arange(Lq)[:, None]
        keep = np.stack([(i - (i + Lk - Lq)) == -h for h in range(H)])  # [H, Lq, 1]
        s = np.where(keep[None], np.einsum("bhqd,bhkd->bhqk", Q, K), 0.0)
        p = np.exp(s - s.max(-1, keepdims=True))
        ref = ((p / p.sum(-1, keepdims=True)) @ V).transpose(0, 2, 1, 3)
        assert np.abs(out - ref).max() <= 1e-5, Lk


def test_key_gradient_of_seventeen_channels_and_one_kv_head():
    # Seed 112742411570197 (2026-11-27): with rotary, projections, one KV head
    # and head_dim 17, the backward's d_k laid out per projection row
    # (d_k_flat, 17 x 1 values) ended in a one-value vector, and Halide 14
    # dropped its guard: d_x_kv was wrong in every element (H = 2 or 8; fine
    # for head_dim 16, 18 or two KV heads). Pure chain stages now shift that
    # vector inwards (pureTail). Checked against the tester's float64 reference.
    import test_random_kernels as tester
    K, source, trials = tester.gen_case(112742411570197)
    assert "head_dim = 17" in source and "kv_heads = 1" in source
    assert tester.run_kernel(K, source, trials, 112742411570197)[0] == "ok"


def test_cosine_query_gradient_of_seventeen_fixed_rows():
    # Seed 52570164235637 (2026-11-27): a cosine score with rotary and a
    # fixed seq_q of 17 gave NaN or inf in d_q's last row (fine for 16, 18,
    # or a dynamic seq_q). The backward vectorized its per-row sums (the
    # queries' norms, the rows' dot products) over 17 rows with guarded
    # vectors, and Halide 14 drops the guard of a last vector of one value;
    # they now keep such rows unguarded as the forward does (pureTail, a
    # plain loop for the sums). Checked against the tester's float64 reference.
    import test_random_kernels as tester
    K, source, trials = tester.gen_case(52570164235637)
    assert "seq_q = 17" in source and "score = cosine" in source
    assert tester.run_kernel(K, source, trials, 52570164235637)[0] == "ok"


def test_backward_of_a_gqa_projection_layer_of_seventeen_values_compiles():
    # Seed 261399672752256 (BUG-12, 2026-11-27): the backward of a GQA layer with
    # an output projection and value_dim = 17 at fixed sizes never finished
    # compiling for AVX-512. The zeros of its P.V sums (o_rows, 2 x 8 x 32 rows
    # of 17 values) were stored by a serial loop nest that LLVM unrolled into
    # one block of 512 stores and 512 one-lane masked stores, and LLVM 14's
    # instruction selection ran for hours on it. They are stored by the sums'
    # parallel tasks now. Checked against the tester's float64 reference.
    import test_random_kernels as tester
    K, source, trials = tester.gen_case(261399672752256)
    assert "value_dim = 17" in source and "project = qkv_out" in source
    assert tester.run_kernel(K, source, trials, 261399672752256)[0] == "ok"


def test_sixteen_bit_gradients_where_exact_ones_cancel():
    # 16-bit `out` (2026-11-27): the backward took D_i = dO . O from the
    # caller's rounded `out`, off by up to 2^-9 of |dO| |O| (bf16); gradients
    # whose exact values cancel carried that to 1.5-4.3x the 16-bit bound.
    # Seed 183780652708934: an f16 additive layer with `project = qkv` and
    # Lk = 1, where every weight is 1 and the exact d_w_q is 0 (it reached
    # 0.0073 against the bound 0.002); seed 112344445927105: d_t0 of a
    # per-KV-head bias of a packed bf16 layer, 0 in exact arithmetic. O is
    # now recomputed in float32 from lse. Checked against the tester's
    # float64 reference.
    import test_random_kernels as tester
    for seed in (183780652708934, 112344445927105):
        K, source, trials = tester.gen_case(seed)
        assert "backward = true" in source and ("f16" in source or "bf16" in source)
        assert tester.run_kernel(K, source, trials, seed)[0] == "ok", seed


def test_weights_of_a_score_whose_condition_reads_rows_and_keys():
    # Seed 275316916293998 (minimized): the weights' scores (qk_weights) were
    # computed inside the weights' vectorized key loop, where bounds inference
    # trimmed their region through `j > i` lane by lane, and the vectorizer
    # indexed the 16-float buffer far past its end: a crash (SIGSEGV or a
    # smashed stack) at every row count. They are computed per vector now.
    lib = attnc.compile("kernel k { head_dim = 8; value_dim = 65; heads = 3; kv_heads = 1; "
                        "outputs = out, weights; score = select(j > i, dot(q, k), 2.0) }")
    rng = np.random.default_rng(7)
    for B, Lq, Lk in ((2, 70, 17), (1, 16, 16), (1, 33, 40)):
        q = rng.uniform(-2, 2, (B, 3, Lq, 8)).astype(np.float32)
        k = rng.uniform(-2, 2, (B, 1, Lk, 8)).astype(np.float32)
        v = rng.uniform(-2, 2, (B, 1, Lk, 65)).astype(np.float32)
        out, weights = lib.k(q=q, k=k, v=v)
        Q, K, V = (a.astype(np.float64) for a in (q, k, v))
        i, j = np.arange(Lq)[:, None], np.arange(Lk)[None, :]
        s = np.where(j > i, np.einsum("bhqd,bgkd->bhqk", Q, K), 2.0)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        assert np.abs(weights - p).max() <= 1e-5, (B, Lq, Lk)
        assert np.abs(out - p @ V).max() <= 1e-4 * max(1.0, np.abs(v).max()), (B, Lq, Lk)


def test_weights_of_fewer_fixed_rows_than_a_block():
    # The weights' scores are computed in blocks of 4 rows (Schedules.cpp
    # scheduleWeights); a fixed seq_q of 1 or 3 takes blocks of that many
    # rows, and 5 a last partial block, under a causal mask with GQA.
    rng = np.random.default_rng(8)
    Lk = 37
    for Lq in (1, 3, 5):
        lib = attnc.compile(f"kernel k {{ heads = 4; kv_heads = 2; head_dim = 16; seq_q = {Lq}; "
                            "mask = causal; outputs = out, weights }")
        q = rng.standard_normal((2, 4, Lq, 16)).astype(np.float32)
        k, v = (rng.standard_normal((2, 2, Lk, 16)).astype(np.float32) for _ in range(2))
        out, weights = lib.k(q=q, k=k, v=v)
        K, V = (np.repeat(a, 2, axis=1).astype(np.float64) for a in (k, v))
        s = q.astype(np.float64) @ K.transpose(0, 1, 3, 2) / 4.0
        i, j = np.arange(Lq)[:, None] + Lk - Lq, np.arange(Lk)[None, :]
        s = np.where(j <= i, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        assert np.abs(weights - p).max() <= 1e-6, Lq
        assert np.abs(out - p @ V).max() <= 1e-5, Lq


def test_weights_of_cosine_general_and_window_scores_in_bands():
    # The weights' score blocks read a key-major copy of the keys each score
    # form reads (k_unit for cosine, k_in otherwise), and a window trims each
    # band's first keys; odd run-time sizes, GQA.
    rng = np.random.default_rng(9)
    B, H, G, D, Lq, Lk = 2, 4, 2, 8, 19, 41
    q = rng.standard_normal((B, H, Lq, D)).astype(np.float32)
    k, v = (rng.standard_normal((B, G, Lk, D)).astype(np.float32) for _ in range(2))
    w = (rng.standard_normal((D, D)) / 3).astype(np.float32)
    Q, K, V = q.astype(np.float64), np.repeat(k, 2, 1).astype(np.float64), np.repeat(v, 2, 1).astype(np.float64)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)
    i, j = np.arange(Lq)[:, None] + Lk - Lq, np.arange(Lk)[None, :]
    cases = {
        "score = cosine; scale = 4": (4 * unit(Q) @ unit(K).transpose(0, 1, 3, 2), {}),
        "score = general": (Q @ w.astype(np.float64) @ K.transpose(0, 1, 3, 2), {"score_w": w}),
        "mask = causal & window(7)": (np.where((j <= i) & (j > i - 7),
                                               Q @ K.transpose(0, 1, 3, 2) / np.sqrt(D), -np.inf), {}),
    }
    for body, (s, extra) in cases.items():
        lib = attnc.compile(f"kernel k {{ heads = {H}; kv_heads = {G}; head_dim = {D}; {body}; "
                            "outputs = out, weights }")
        out, weights = lib.k(q=q, k=k, v=v, **extra)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        assert np.abs(weights - p).max() <= 1e-6, body
        assert np.abs(out - p @ V).max() <= 1e-5, body


def test_interleaved_rotary_of_seventeen_pairs_turns_every_channel():
    # Found by a sweep of rotary gradients (2026-11-28): head_dim 33 with
    # interleaved rotary splits each row into 17 pair slots, one vector and one
    # slot; Halide 14 dropped the guarded last vector of q_in, stored the first
    # 16 slots twice and never channel 32, so every score read an uninitialised
    # value (lse 7e34 for one key). That vector now shifts inwards (pureTail).
    rng = np.random.default_rng(11)
    for lq, lk in ((1, 1), (5, 9)):
        lib = attnc.compile("kernel k { heads = 2; head_dim = 33; seq_q = %d; seq_k = %d; "
                            "positional = rotary(dims = 2, style = interleaved); "
                            "outputs = out, lse }" % (lq, lk))
        q = rng.standard_normal((1, 2, lq, 33)).astype(np.float32)
        k, v = (rng.standard_normal((1, 2, lk, 33)).astype(np.float32) for _ in range(2))
        out, lse = lib.k(q=q, k=k, v=v)
        # (queries at positions i + Lk - Lq: turned as the last rows of Lk)
        padded = np.concatenate([np.zeros((1, 2, lk - lq, 33), np.float32), q], axis=2)
        rq, rk = _rope(padded, 2, "interleaved")[:, :, lk - lq:], _rope(k, 2, "interleaved")
        ref, _, ref_lse = reference(rq, rk, v)
        assert np.abs(lse - ref_lse).max() <= 1e-5, (lq, lk)
        assert np.abs(out - ref).max() <= 1e-5, (lq, lk)


def test_backward_of_gqa_interleaved_rotary_of_one_query_runs():
    # Seed 58929571999637 (BUG-13, 2026-11-28): the backward of a GQA kernel
    # (4 heads, 1 KV head) with head_dim 17, interleaved rotary and one query
    # crashed. Its d_q rows (4 x 17 values) were updated through even and odd
    # lanes of each row; Halide 14 claimed 64-byte alignment for row 3's odd
    # lanes at a float offset of 50 (vmovaps on an address 8 bytes past an
    # alignment). The sums' rows are padded to whole vectors (align_storage),
    # so each row starts aligned and every claim holds.
    import test_random_kernels as tester
    K, source, trials = tester.gen_case(58929571999637)
    assert "head_dim = 17" in source and "interleaved" in source
    assert tester.run_kernel(K, source, trials, 58929571999637)[0] == "ok"


def test_decode_cache_of_thirty_three_values_compiles_in_seconds():
    # Seed 259264337144413 (BUG-14, 2026-11-28): a GQA decode kernel (4 heads,
    # 1 KV head) on a paged cache with value_dim = 33 and a batch of 3 took
    # over 9 minutes to compile (value_dim 32: 1 s). The key chunks' starting
    # states (3 x 8 x 4 rows of 33 values) were stored by a serial loop nest
    # that LLVM unrolled into one block of 96 rows' masked stores, and LLVM 14's
    # instruction selection crawled through it. The states' parallel tasks store
    # them now, as BUG-12's sums. Checked against the tester's float64 reference.
    import time
    import test_random_kernels as tester
    K, source, trials = tester.gen_case(259264337144413)
    assert "value_dim = 33" in source and "cache = paged" in source
    start = time.monotonic()
    assert tester.run_kernel(K, source, trials, 259264337144413)[0] == "ok"
    assert time.monotonic() - start < 120


def test_packed_additive_backward_keeps_its_key_gradient_loop():
    # Seed 183739998708025 (2026-11-29): lowered without Halide's asserts, the
    # backward of a packed bf16 layer (additive score, `prefix & sink(9)`,
    # projections) lost the whole loop that sums dK and dV: d_x of its
    # one-token sequence was 0. Halide 14's simplifier left the bounds of an
    # empty, partitioned prologue loop ([0, -1]) in scope, found the next loop
    # of that name out of bounds and dropped it (HalideFixes/SimplifyFor.cpp,
    # unit HalideFixes.UnreachableLoopKeepsItsBoundsToItself). Checked against
    # the tester's float64 reference.
    import test_random_kernels as tester
    K, source, trials = tester.gen_case(183739998708025)
    assert "batch = packed" in source and "backward = true" in source
    assert tester.run_kernel(K, source, trials, 183739998708025)[0] == "ok"


def test_lse_of_a_narrow_value_row_reads_the_first_column():
    # Seed 201320925562417 (2026-11-29): with lse read at a row's last value
    # column (value_dim 4, a causal & window(1) additive bf16 layer), lse's
    # loads over rows were a stride-4 load at offset 3, which Halide 14 turned
    # into an aligned vector load at a misaligned stack address: SIGSEGV.
    # weights and lse read m, l and u at column 0 again (out at the last one).
    # Run in a child process, since a crash would take pytest down with it.
    import subprocess, sys
    child = subprocess.run(
        [sys.executable, "-c",
         "import test_random_kernels as t; K, s, n = t.gen_case(201320925562417); "
         "assert 'outputs = out, lse' in s and 'value_dim = 4' in s, s; "
         "print(t.run_kernel(K, s, n, 201320925562417)[0])"],
        capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.strip().splitlines()[-1] == "ok", child.stdout[-2000:]


def test_stacked_projection_of_one_row_copies_each_head_alone():
    # The stacked QKV projection is copied per head in column blocks of 64;
    # Halide 14's simplifier took the masked copy of columns 32-63 of a
    # 32-column head for unreachable (it lies past the task's one-row stack
    # buffer), so with a fixed seq_q of 1 each task copied 64 columns: over
    # the next head's and past the buffer's end (wrong values, an ASan
    # overflow). HalideFixes/PredicatedAccesses.cpp; lit
    # HalideBackend/projection-one-row-copy.attn pins the copy's loop, this
    # the numbers (the damage depends on the order the tasks run in).
    rng = np.random.default_rng(11)
    for dtype, tol in (("f16", 4e-3), ("f32", 1e-5)):
        lib = attnc.compile("kernel k { heads = %d; head_dim = 32; model_dim = 8; seq_q = 1; "
                            "seq_k = seq_q; project = self_qkv_out; proj_bias = k, v; "
                            "dtype = %s }" % (1 if dtype == "f16" else 2, dtype))
        H = 1 if dtype == "f16" else 2
        np_type = np.float16 if dtype == "f16" else np.float32
        x = rng.uniform(-1, 1, (3, 1, 8)).astype(np_type)
        w = {n: rng.uniform(-1, 1, (H * 32, 8)).astype(np_type) for n in ("w_q", "w_k", "w_v")}
        w_o = rng.uniform(-1, 1, (8, H * 32)).astype(np_type)
        b = {n: rng.uniform(-1, 1, H * 32).astype(np_type) for n in ("b_k", "b_v")}
        out = lib.k(x=x, w_o=w_o, **w, **b)
        # One key: its softmax weight is 1 and each row's output is W_o (W_v x + b_v).
        v = x.astype(np.float64) @ w["w_v"].astype(np.float64).T + b["b_v"].astype(np.float64)
        ref = v @ w_o.astype(np.float64).T
        assert np.abs(out.astype(np.float64) - ref).max() <= tol * max(1.0, np.abs(ref).max()), dtype


def test_cache_append_of_one_interleaved_rotary_pair_compiles_and_turns_the_key():
    # The new keys were turned inside the cache's write, vectorized over the
    # channels: with one interleaved pair (head_dim 2) the partner 1 - d was a
    # reversed masked load, and in the decode variant (a constant row) its
    # masked lanes lay before the row's start: Halide 14's code generation
    # failed ("base >= 0", an internal error). The keys are now turned per
    # row, split at the pairs (random campaign seed 20261229, case
    # 226887471634832).
    lib = attnc.compile("kernel k { positional = rotary(style = interleaved); "
                        "cache = contiguous; batch = 1; head_dim = 2 }")
    rng = np.random.default_rng(12)

    def turn(x, pos):  # interleaved pairs (x0, x1), one frequency (1.0)
        c, s = np.cos(pos), np.sin(pos)
        return np.stack([x[..., 0] * c - x[..., 1] * s, x[..., 1] * c + x[..., 0] * s], -1)

    for Lq, L0 in ((1, 5), (3, 7)):
        Lmax = L0 + Lq + 2
        q, k, v = (rng.uniform(-1, 1, (1, 1, Lq, 2)).astype(np.float32) for _ in range(3))
        k_cache = rng.uniform(-1, 1, (1, 1, Lmax, 2)).astype(np.float32)
        v_cache = rng.uniform(-1, 1, (1, 1, Lmax, 2)).astype(np.float32)
        old_k, old_v = k_cache[0, 0, :L0].astype(np.float64), v_cache[0, 0, :L0].astype(np.float64)
        out = lib.k(q=q, k=k, v=v, k_cache=k_cache, v_cache=v_cache,
                    cache_len=np.array([L0], dtype=np.int32))
        pos = L0 + np.arange(Lq)
        new_k = turn(k[0, 0].astype(np.float64), pos)
        assert np.abs(k_cache[0, 0, L0:L0 + Lq] - new_k).max() <= 1e-6, Lq
        keys = np.concatenate([old_k, new_k])
        values = np.concatenate([old_v, v[0, 0].astype(np.float64)])
        s = turn(q[0, 0].astype(np.float64), pos) @ keys.T / np.sqrt(2)
        p = np.exp(s - s.max(-1, keepdims=True))
        ref = (p / p.sum(-1, keepdims=True)) @ values
        assert np.abs(out[0, 0] - ref).max() <= 1e-5, Lq
