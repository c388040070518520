"""KV caches with the projections in the kernel (docs/language.md, KV caches):
the new tokens' x is projected, k turned at cache_len[b] + i and stored with v,
then the queries attend every cached row. Decoding a layer token by token (and
in chunks) through its cache must give what the whole layer gives in float64
over each full sequence, and leave the projected (turned) keys and values in
the cache. The llama kernel's widths (32, 16) are whole vectors, so its
projections read the weights in place; the cross kernel's (10, 7, 6) are not,
and its projections read transposed copies."""
import numpy as np
import pytest

import attnc
from conftest import assert_close, turn_half

BLOCK = 4


@pytest.fixture(scope="module")
def lib():
    return attnc.compile("""
kernel llama {
  heads = 4; kv_heads = 2; head_dim = 16
  project = self_qkv_out; model_dim = 32; proj_bias = q, v, o
  cache = paged(block = 4); kv_dtype = bf16
  positional = rotary(base = 500); mask = causal
}
kernel half {
  heads = 2; kv_heads = 1; head_dim = 16
  project = self_qkv_out; model_dim = 16; dtype = f16
  cache = contiguous; positional = rotary(style = interleaved)
}
kernel cross {
  heads = 2; head_dim = 6
  project = qkv; model_dim = 10; kv_model_dim = 7; proj_bias = true
  cache = contiguous; seq_k = 9; layout = bshd
  outputs = out, lse
}
""")


def bf16(x):
    """float32 rounded to bfloat16 (nearest even), back as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def attend(q, k, v, start, causal):
    """float64 attention of q [H, Lq, D] at start + i over k, v [G, T, *]."""
    H, Lq, D = q.shape
    G = k.shape[0]
    out, lse = np.zeros((H, Lq, v.shape[-1])), np.zeros((H, Lq))
    for h in range(H):
        g = h // (H // G)
        for i in range(Lq):
            n = start + i + 1 if causal else k.shape[1]
            s = k[g, :n] @ q[h, i] / np.sqrt(D)
            p = np.exp(s - s.max())
            out[h, i] = p @ v[g, :n] / p.sum()
            lse[h, i] = np.log(p.sum()) + s.max()
    return out, lse


def heads(y, n):
    """[L, n * W] -> [n, L, W]."""
    return y.reshape(y.shape[0], n, -1).transpose(1, 0, 2)


def test_projected_paged_cache_matches_the_whole_layer(lib):
    rng = np.random.default_rng(11)
    B, H, G, D, M = 2, 4, 2, 16, 32
    w = {n: (rng.uniform(-1, 1, s) / np.sqrt(s[-1])).astype(np.float32)
         for n, s in [("w_q", (H * D, M)), ("w_k", (G * D, M)), ("w_v", (G * D, M)),
                      ("w_o", (M, H * D))]}
    w.update(b_q=rng.uniform(-1, 1, H * D).astype(np.float32),
             b_v=rng.uniform(-1, 1, G * D).astype(np.float32),
             b_o=rng.uniform(-1, 1, M).astype(np.float32))
    steps = [3, 1, 1, 5, 1]  # a prefill chunk, decodes, a chunk, a decode
    total = sum(steps)
    xs = rng.uniform(-1, 1, (B, total, M)).astype(np.float32)
    table = np.array([[5, 0, 7, 2], [1, 6, 3, 4]], dtype=np.int32)
    k_cache = np.full((8, G, BLOCK, D), 0x7FC0, dtype=np.uint16)  # bf16 NaN
    v_cache = k_cache.copy()
    lens = np.zeros(B, dtype=np.int32)
    for Lq in steps:
        x = np.ascontiguousarray(np.stack([xs[b, lens[b]:lens[b] + Lq] for b in range(B)]))
        out = lib.llama(x=x, k_cache=k_cache, v_cache=v_cache, cache_len=lens,
                        block_table=table, **w)
        for b in range(B):
            # The whole layer over this sequence so far, float64, from the
            # cache's storage: its keys and values rounded to bf16.
            seq = xs[b, :lens[b] + Lq].astype(np.float64)
            pos = np.arange(len(seq), dtype=np.float64)
            q = turn_half(heads(seq @ w["w_q"].T + w["b_q"], H), pos, 500.0)
            k = bf16(turn_half(heads(seq @ w["w_k"].T, G), pos, 500.0)).astype(np.float64)
            v = bf16(heads(seq @ w["w_v"].T + w["b_v"], G)).astype(np.float64)
            o, _ = attend(q[:, lens[b]:], k, v, int(lens[b]), causal=True)
            ref = o.transpose(1, 0, 2).reshape(Lq, H * D) @ w["w_o"].T + w["b_o"]
            assert_close(out[b], ref, ref, bound=8e-3)
            # The cache holds every projected, turned row (bf16 bits).
            for t in range(lens[b] + Lq):
                blk, r = table[b, t // BLOCK], t % BLOCK
                got = (k_cache[blk, :, r].astype(np.uint32) << 16).view(np.float32)
                assert np.max(np.abs(got - k[:, t])) <= 8e-3 * max(1, np.abs(k).max()), (b, t)
        lens = lens + Lq
    # Rows nobody wrote are as they were.
    unused = [blk for blk in range(8) if blk not in table[:, :(total + BLOCK - 1) // BLOCK]]
    for blk in unused:
        assert (k_cache[blk] == 0x7FC0).all() and (v_cache[blk] == 0x7FC0).all()


def test_projected_cross_attention_cache_in_bshd(lib):
    rng = np.random.default_rng(12)
    B, H, D, M, Mkv, Lmax = 3, 2, 6, 10, 7, 9
    w = {n: rng.uniform(-1, 1, s).astype(np.float32)
         for n, s in [("w_q", (H * D, M)), ("w_k", (H * D, Mkv)), ("w_v", (H * D, Mkv)),
                      ("b_q", (H * D,)), ("b_k", (H * D,)), ("b_v", (H * D,))]}
    lens = np.array([0, 4, 6], dtype=np.int32)
    Lq = 2
    x_q = rng.uniform(-1, 1, (B, Lq, M)).astype(np.float32)
    x_kv = rng.uniform(-1, 1, (B, Lq, Mkv)).astype(np.float32)
    k_cache = rng.uniform(-1, 1, (B, Lmax, H, D)).astype(np.float32)
    v_cache = rng.uniform(-1, 1, (B, Lmax, H, D)).astype(np.float32)
    before_k, before_v = k_cache.copy(), v_cache.copy()
    out, lse = lib.cross(x_q=x_q, x_kv=x_kv, k_cache=k_cache, v_cache=v_cache,
                         cache_len=lens, **w)
    assert out.shape == (B, Lq, H, D) and lse.shape == (B, H, Lq)
    for b in range(B):
        n = lens[b]
        kn = x_kv[b].astype(np.float64) @ w["w_k"].T + w["b_k"]  # [Lq, H * D]
        vn = x_kv[b].astype(np.float64) @ w["w_v"].T + w["b_v"]
        keys = np.concatenate([before_k[b, :n].reshape(n, H * D), kn])
        values = np.concatenate([before_v[b, :n].reshape(n, H * D), vn])
        q = heads(x_q[b].astype(np.float64) @ w["w_q"].T + w["b_q"], H)
        o, l = attend(q, heads(keys, H), heads(values, H), int(n), causal=False)
        assert_close(out[b], o.transpose(1, 0, 2), values)
        assert np.max(np.abs(lse[b] - l)) <= 1e-4
        assert np.allclose(k_cache[b, n:n + Lq].reshape(Lq, -1), kn, atol=1e-5)
        assert np.allclose(v_cache[b, n:n + Lq].reshape(Lq, -1), vn, atol=1e-5)
        assert np.array_equal(k_cache[b, n + Lq:], before_k[b, n + Lq:])
        assert np.array_equal(k_cache[b, :n], before_k[b, :n])


def test_sinusoidal_positions_are_refused_with_a_cache():
    with pytest.raises(attnc.Error, match="'positional = sinusoidal' is refused with a cache"):
        attnc.compile("kernel k { head_dim = 8; project = self_qkv; model_dim = 16\n"
                      "  positional = sinusoidal; cache = contiguous }")


def turn_interleaved(x, positions):
    """Rotary (GPT-J pairs 2c, 2c + 1) of x [heads, L, D] at positions [L], float64."""
    half = x.shape[-1] // 2
    angle = positions[:, None] * 10000.0 ** (-np.arange(half) / half)[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * cos - b * sin, b * cos + a * sin
    return out


def test_f16_layer_stores_f16_rows_and_matches_the_rounded_reference(lib):
    """dtype = f16: x, weights, caches and out in f16, arithmetic in f32; the
    reference computes in float64 from the same f16 values, the cache rows it
    stores rounded to f16 (docs/language.md, storage types: 2e-3 bound)."""
    rng = np.random.default_rng(13)
    B, H, D, M, Lmax, Lq = 2, 2, 16, 16, 12, 3
    w = {n: (rng.uniform(-1, 1, s) / 4).astype(np.float16)
         for n, s in [("w_q", (H * D, M)), ("w_k", (D, M)), ("w_v", (D, M)), ("w_o", (M, H * D))]}
    x = rng.uniform(-1, 1, (B, Lq, M)).astype(np.float16)
    lens = np.array([4, 9], dtype=np.int32)
    k_cache = rng.uniform(-1, 1, (B, 1, Lmax, D)).astype(np.float16)
    v_cache = rng.uniform(-1, 1, (B, 1, Lmax, D)).astype(np.float16)
    before_k, before_v = k_cache.astype(np.float64), v_cache.astype(np.float64)
    out = lib.half(x=x, k_cache=k_cache, v_cache=v_cache, cache_len=lens, **w)
    assert out.dtype == np.float16 and out.shape == (B, Lq, M)
    W = {n: a.astype(np.float64) for n, a in w.items()}
    for b in range(B):
        n = int(lens[b])
        xb = x[b].astype(np.float64)
        pos = np.arange(n, n + Lq, dtype=np.float64)
        q = turn_interleaved(heads(xb @ W["w_q"].T, H), pos)
        kn = turn_interleaved(heads(xb @ W["w_k"].T, 1), pos)
        vn = heads(xb @ W["w_v"].T, 1)
        # The new rows are stored as f16.
        assert np.abs(k_cache[b, :, n:n + Lq] - kn).max() <= 2e-3 * max(1, np.abs(kn).max())
        assert np.abs(v_cache[b, :, n:n + Lq] - vn).max() <= 2e-3 * max(1, np.abs(vn).max())
        keys = np.concatenate([before_k[b, :, :n], kn.astype(np.float16)], 1)
        values = np.concatenate([before_v[b, :, :n], vn.astype(np.float16)], 1)
        o, _ = attend(q, keys, values, n, causal=False)
        ref = o.transpose(1, 0, 2).reshape(Lq, H * D) @ W["w_o"].T
        assert_close(out[b].astype(np.float64), ref, ref, bound=2e-3)



def test_projected_paged_bshd_cache_of_one_channel_heads():
    # In-place projections (model_dim 16, a whole AVX-512 vector) into a bshd paged
    # cache with head_dim 1: a `bound()` on the projections' columns once made this
    # kernel read past a buffer and crash (a fix for another kernel, reverted).
    lib = attnc.compile("kernel k { cache = paged(block = 4); value_dim = 16; model_dim = 16; "
                        "project = self_qkv_out; head_dim = 1; layout = bshd }")
    rng = np.random.default_rng(13)
    B, Lq, M, D, Dv, bs, n = 1, 3, 16, 1, 16, 4, 80
    blocks = (n + Lq + bs - 1) // bs
    f = lambda *s: rng.uniform(-1, 1, s).astype(np.float32)
    k_cache, v_cache = f(blocks + 1, bs, 1, D), f(blocks + 1, bs, 1, Dv)
    table = rng.permutation(blocks + 1)[:blocks].astype(np.int32)[None, :]
    w = dict(w_q=f(D, M), w_k=f(D, M), w_v=f(Dv, M), w_o=f(M, Dv))
    x = f(B, Lq, M)
    old_k, old_v = k_cache.copy(), v_cache.copy()
    out = lib.k(x=x, k_cache=k_cache, v_cache=v_cache, cache_len=np.array([n], np.int32),
                block_table=table, **w)
    rows = [(table[0, t // bs], t % bs) for t in range(n)]
    xb = x[0].astype(np.float64)
    k = np.concatenate([np.stack([old_k[b, r, 0] for b, r in rows]), xb @ w["w_k"].T])[None]
    v = np.concatenate([np.stack([old_v[b, r, 0] for b, r in rows]), xb @ w["w_v"].T])[None]
    o, _ = attend((xb @ w["w_q"].T)[None], k, v, n, causal=False)
    ref = o[0] @ w["w_o"].T
    assert_close(out[0], ref, ref, bound=1e-5)


@pytest.mark.parametrize("cache,head_dim", [("paged(block = 16)", 3), ("contiguous", 17)])
def test_projected_cache_with_a_fixed_seq_q(cache, head_dim):
    # In-place projections into a cache with `seq_q` fixed failed to compile
    # ("Can only unroll for loops over a constant extent": the projections'
    # region started at the cache's channel min, which the caller chooses).
    # head_dim 17 also stores rows whose last vector holds one value.
    H, G, D, M, Lq = 4, 2, head_dim, 16, 3
    lib = attnc.compile(f"kernel k {{ cache = {cache}; seq_q = {Lq}; heads = {H}; "
                        f"kv_heads = {G}; head_dim = {D}; project = self_qkv; "
                        f"model_dim = {M}; proj_bias = true; mask = causal }}")
    rng = np.random.default_rng(14)
    f = lambda *s: rng.uniform(-1, 1, s).astype(np.float32)
    B, lens = 3, np.array([0, 5, 30], np.int32)
    w = dict(w_q=f(H * D, M), w_k=f(G * D, M), w_v=f(G * D, M),
             b_q=f(H * D), b_k=f(G * D), b_v=f(G * D))
    x = f(B, Lq, M)
    args = {}
    if cache == "contiguous":
        k_cache, v_cache = f(B, G, 40, D), f(B, G, 40, D)
        rows = lambda b: [(b, t) for t in range(lens[b] + Lq)]
        cache_row = lambda c, b, t: c[b, :, t]
    else:
        k_cache, v_cache = f(7, G, 16, D), f(7, G, 16, D)
        table = np.array([[6, -1, -1], [2, -1, -1], [0, 5, 3]], np.int32)
        args["block_table"] = table
        rows = lambda b: [(table[b, t // 16], t % 16) for t in range(lens[b] + Lq)]
        cache_row = lambda c, blk, r: c[blk, :, r]
    old_k, old_v = k_cache.astype(np.float64), v_cache.astype(np.float64)
    out = lib.k(x=x, k_cache=k_cache, v_cache=v_cache, cache_len=lens, **args, **w)
    W = {n: a.astype(np.float64) for n, a in w.items()}
    for b in range(B):
        n = int(lens[b])
        xb = x[b].astype(np.float64)
        kn, vn = heads(xb @ W["w_k"].T + W["b_k"], G), heads(xb @ W["w_v"].T + W["b_v"], G)
        old = rows(b)[:n]
        k = np.concatenate([np.stack([cache_row(old_k, *r) for r in old], 1).reshape(G, n, D)
                            if n else np.zeros((G, 0, D)), kn], 1)
        v = np.concatenate([np.stack([cache_row(old_v, *r) for r in old], 1).reshape(G, n, D)
                            if n else np.zeros((G, 0, D)), vn], 1)
        o, _ = attend(heads(xb @ W["w_q"].T + W["b_q"], H), k, v, n, causal=True)
        assert_close(out[b], o, v, bound=1e-5)
        for t, r in enumerate(rows(b)[n:]):  # the new rows are in the cache
            assert np.allclose(cache_row(k_cache, *r), kn[:, t], atol=1e-5)
            assert np.allclose(cache_row(v_cache, *r), vn[:, t], atol=1e-5)
