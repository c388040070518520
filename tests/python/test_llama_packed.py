"""A Llama-3-8B attention layer (32 heads, 8 KV heads, head_dim 128, hidden
4096, rope theta 500000) over a packed batch of two prompts, against Hugging
Face's LlamaAttention written out in float64 with NumPy: nn.Linear weights,
apply_rotary_pos_emb with rotate_half, repeat_kv, causal mask, o_proj."""
import numpy as np

import attnc

M, H, G, D, THETA = 4096, 32, 8, 128, 500000.0


def rotate_half_rope(x):
    """apply_rotary_pos_emb on x [L, heads, D] at positions 0 .. L-1."""
    L = x.shape[0]
    inv_freq = THETA ** (-np.arange(0, D, 2) / D)
    freqs = np.arange(L)[:, None] * inv_freq[None]
    cos = np.concatenate([np.cos(freqs)] * 2, -1)[:, None]
    sin = np.concatenate([np.sin(freqs)] * 2, -1)[:, None]
    rotated = np.concatenate([-x[..., D // 2:], x[..., :D // 2]], -1)
    return x * cos + rotated * sin


def llama_attention(x, wq, wk, wv, wo):
    L = x.shape[0]
    q = rotate_half_rope((x @ wq.T).reshape(L, H, D))
    k = np.repeat(rotate_half_rope((x @ wk.T).reshape(L, G, D)), H // G, 1)
    v = np.repeat((x @ wv.T).reshape(L, G, D), H // G, 1)
    s = np.einsum("ihd,jhd->hij", q, k) / np.sqrt(D)
    s = np.where(np.tril(np.ones((L, L), bool))[None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("hij,jhd->ihd", p, v).reshape(L, H * D) @ wo.T


def test_llama3_layer_over_a_packed_batch():
    kernel = attnc.compile("""
kernel llama_prefill {
  heads = 32; kv_heads = 8; head_dim = 128
  project = self_qkv_out; model_dim = 4096
  batch = packed; mask = causal; positional = rotary(base = 500000)
}
""").llama_prefill
    rng = np.random.default_rng(0)
    lens = [100, 37]
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    x = rng.standard_normal((cu[-1], M), dtype=np.float32)
    weight = lambda rows, cols: (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(
        np.float32)
    wq, wk, wv, wo = weight(H * D, M), weight(G * D, M), weight(G * D, M), weight(M, H * D)
    out = kernel(x, cu, cu, wq, wk, wv, wo)
    assert out.shape == (cu[-1], M)
    f64 = lambda a: a.astype(np.float64)
    for b in range(len(lens)):
        rows = slice(cu[b], cu[b + 1])
        ref = llama_attention(f64(x[rows]), f64(wq), f64(wk), f64(wv), f64(wo))
        err = np.max(np.abs(out[rows] - ref))
        assert err <= 1e-4 * max(1.0, np.max(np.abs(ref))), "sequence %d: max error %g" % (b, err)
