"""NAME_backward (docs/language.md, training) against float64 autograd: the same
attention written in PyTorch at float64, differentiated by torch.autograd, over a
matrix of scores, softcap, biases, masks, head groupings, layouts and dtypes at odd
sizes. The bound is 1e-3 * max(1, max |ref|) per gradient (16-bit: the 9.1 bound)."""
import math

import numpy as np
import pytest

import attnc

torch = pytest.importorskip("torch")


def alibi_slopes(H):
    P = 2 ** int(math.floor(math.log2(H)))
    return [2.0 ** (-8.0 * (h + 1) / P) if h < P else 2.0 ** (-4.0 * (2 * (h - P) + 1) / P)
            for h in range(H)]


def rotate(x, positions, style, base, dims):
    """Rotary embeddings of x [..., L, D] at positions [L] (float64)."""
    half = dims // 2
    freq = base ** (-torch.arange(half, dtype=torch.float64) / half)
    angle = positions.double()[:, None] * freq[None, :]
    cos, sin = torch.cos(angle), torch.sin(angle)
    if style == "half":
        a, b = x[..., :half], x[..., half:dims]
    else:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
    ra, rb = a * cos - b * sin, b * cos + a * sin
    turned = torch.cat([ra, rb], -1) if style == "half" else \
        torch.stack([ra, rb], -1).flatten(-2)
    return torch.cat([turned, x[..., dims:]], -1)


def torch_attention(q, k, v, *, scale, score="dot", w=None, softcap=None, bias=None,
                    visible=None, score_fn=None, additive=None, rotary=None):
    """float64 attention on bhsd tensors (k, v with G heads); returns out and lse."""
    H, G = q.shape[1], k.shape[1]
    if rotary is not None:  # (style, base, dims): queries at i + Lk - Lq, keys at j
        Lq, Lk = q.shape[2], k.shape[2]
        q = rotate(q, torch.arange(Lq) + (Lk - Lq), *rotary)
        k = rotate(k, torch.arange(Lk), *rotary)
    k = k.repeat_interleave(H // G, dim=1)
    v = v.repeat_interleave(H // G, dim=1)
    if score == "additive":  # additive = (W_q [N, D], W_k [N, Dk], w_v [N])
        wq, wk, wv = additive
        hq = torch.einsum("nd,bhid->bhin", wq, q)
        hk = torch.einsum("nd,bhjd->bhjn", wk, k)
        raw = torch.einsum("bhijn,n->bhij", torch.tanh(hq[:, :, :, None] + hk[:, :, None]), wv)
    elif score == "general":
        raw = torch.einsum("bhid,de,bhje->bhij", q, w, k)
    elif score == "cosine":
        qn = q / q.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        kn = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        raw = torch.einsum("bhid,bhjd->bhij", qn, kn)
    else:
        raw = torch.einsum("bhid,bhjd->bhij", q, k)
    s = score_fn(raw) if score_fn is not None else raw
    s = s * scale
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    if bias is not None:
        s = s + bias
    if visible is not None:
        s = s.masked_fill(~visible, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    live = torch.isfinite(lse)
    p = torch.where(live[..., None], torch.exp(s - torch.where(live, lse, 0)[..., None]),
                    torch.zeros_like(s))
    return torch.einsum("bhij,bhjd->bhid", p, v), lse


def check(got, ref, bound, name):
    ref = ref.detach().numpy()
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == ref.shape, name
    assert np.all(np.isfinite(got)), "%s has non-finite values" % name
    err = float(np.max(np.abs(got - ref)))
    assert err <= bound * max(1.0, float(np.max(np.abs(ref)))), "%s: max error %g" % (name, err)


CASES = {
    # name: (fields, reference keywords)
    "mha_dense": ("heads = 3; head_dim = 16", {}),
    "gqa_causal": ("heads = 4; kv_heads = 2; head_dim = 8; mask = causal", {"causal": True}),
    "mqa_window_sink": ("heads = 4; kv_heads = 1; head_dim = 8; mask = window(5) | sink(2)",
                        {"window": 5, "sink": 2}),
    # The forward's sink prefix with the additive score's hoisted W_k k at the root.
    "additive_streaming": ("heads = 2; head_dim = 8; score = additive(hidden = 5);"
                           " mask = causal & (window(7) | sink(3))",
                           {"score": "additive", "scale": 1.0, "causal": True, "window": 7,
                            "sink": 3}),
    "softcap_alibi": ("heads = 3; head_dim = 8; softcap = 2; bias = alibi; scale = 0.5",
                      {"softcap": 2.0, "alibi": True, "scale": 0.5}),
    "general": ("heads = 2; head_dim = 8; key_dim = 8; score = general", {"score": "general", "scale": 1.0}),
    "cosine": ("heads = 2; head_dim = 8; score = cosine; scale = 4", {"score": "cosine",
                                                                      "scale": 4.0}),
    "expression": ("heads = 2; head_dim = 8; score = dot(q, k) * 0.3 + tanh(dot(q, k))"
                   "; bias = -0.1 * float(abs(ip - j))",
                   {"score_fn": lambda x: x * 0.3 + torch.tanh(x), "scale": 1.0,
                    "distance_bias": 0.1}),
    "bshd_value_dim": ("heads = 2; head_dim = 8; value_dim = 12; layout = bshd; mask = causal",
                       {"causal": True, "bshd": True}),
    "rotary_half_gqa_causal": ("heads = 4; kv_heads = 2; head_dim = 8; positional = rotary;"
                               " mask = causal", {"causal": True, "rotary": ("half", 10000.0, 8)}),
    "rotary_interleaved_partial": ("heads = 2; head_dim = 8; positional = rotary(style = "
                                   "interleaved, dims = 4, base = 100)",
                                   {"rotary": ("interleaved", 100.0, 4)}),
    "valid_len_empty_rows": ("heads = 2; head_dim = 8; mask = valid_len", {"valid_len": True}),
    "additive_gqa_causal": ("heads = 4; kv_heads = 2; head_dim = 8; score = additive(hidden = 6);"
                            " mask = causal", {"score": "additive", "scale": 1.0, "causal": True}),
    "additive_valid_len": ("heads = 2; head_dim = 8; key_dim = 6; score = additive(hidden = 5);"
                           " mask = valid_len; softcap = 3",
                           {"score": "additive", "scale": 1.0, "valid_len": True, "softcap": 3.0}),
}


def reference_masks(B, H, Lq, Lk, opts, valid_len=None):
    ip = torch.arange(Lq)[:, None] + (Lk - Lq)
    j = torch.arange(Lk)[None, :]
    visible = torch.ones(B, 1, Lq, Lk, dtype=torch.bool)
    if opts.get("causal"):
        visible &= (j <= ip)[None, None]
    if "window" in opts:
        seen = (j <= ip) & (j > ip - opts["window"])
        if "sink" in opts:
            seen |= j < opts["sink"]
        visible &= seen[None, None]
    if valid_len is not None:
        visible &= (j[None] < torch.tensor(valid_len)[:, None, None])[:, None]
    bias = None
    if opts.get("alibi"):
        slopes = torch.tensor(alibi_slopes(H), dtype=torch.float64)[None, :, None, None]
        bias = -slopes * (ip - j).to(torch.float64)[None, None]
    if "distance_bias" in opts:
        bias = -opts["distance_bias"] * (ip - j).abs().to(torch.float64)[None, None]
    return visible, bias


@pytest.fixture(scope="module")
def libraries():
    return {}


def compile_case(name, dtype="f32"):
    fields, _ = CASES[name]
    source = "kernel k { %s; outputs = out, lse; backward = true; dtype = %s }" % (fields, dtype)
    return attnc.compile(source)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_float64_autograd(name):
    fields, opts = CASES[name]
    lib = compile_case(name)
    assert lib.kernels == ["k", "k_backward"]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    B, Lq, Lk = 2, 37, 45
    args = {a.name: a for a in lib.k.arguments}
    H = dict(args["q"].shape)["H"]
    G = dict(args["k"].shape)["G"]
    D = dict(args["q"].shape)["D"]
    Dk = dict(args["k"].shape)["Dk"]
    Dv = dict(args["v"].shape)["Dv"]
    bshd = opts.get("bshd", False)

    def tensor(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    q, k, v = tensor(B, H, Lq, D), tensor(B, G, Lk, Dk), tensor(B, G, Lk, Dv)
    d_out = tensor(B, H, Lq, Dv)
    w = tensor(D, D) * 0.3 if opts.get("score") == "general" else None
    valid_len = np.array([0, 30], dtype=np.int32) if opts.get("valid_len") else None

    def layout(x):  # bhsd -> the kernel's layout
        return np.ascontiguousarray(x.transpose(0, 2, 1, 3)) if bshd else x

    inputs = {"q": layout(q), "k": layout(k), "v": layout(v)}
    if w is not None:
        inputs["score_w"] = w
    hidden = {}
    if opts.get("score") == "additive":
        N = args["score_wv"].shape[0][1]
        hidden = {"score_wq": tensor(N, D) * 0.5, "score_wk": tensor(N, Dk) * 0.5,
                  "score_wv": tensor(N)}
        inputs.update(hidden)
    if valid_len is not None:
        inputs["valid_len"] = valid_len
    out, lse = lib.k(**inputs)
    grads = lib.k_backward(**inputs, out=out, lse=lse, d_out=layout(d_out))
    names = [a.name for a in lib.k_backward.arguments if a.is_output]
    assert names == (["d_q", "d_k", "d_v"] + (["d_score_w"] if w is not None else []) +
                     ["d_" + n for n in hidden])
    got = dict(zip(names, grads))

    tq, tk, tv = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (q, k, v))
    tw = torch.tensor(w, dtype=torch.float64, requires_grad=True) if w is not None else None
    th = {n: torch.tensor(x, dtype=torch.float64, requires_grad=True) for n, x in hidden.items()}
    visible, bias = reference_masks(B, H, Lq, Lk, opts, valid_len)
    scale = opts.get("scale", 1.0 / math.sqrt(D))
    ref_out, ref_lse = torch_attention(tq, tk, tv, scale=scale, score=opts.get("score", "dot"),
                                       w=tw, softcap=opts.get("softcap"), bias=bias,
                                       visible=visible, score_fn=opts.get("score_fn"),
                                       additive=[th["score_w" + n] for n in "qkv"] if th else None,
                                       rotary=opts.get("rotary"))
    ref_out.backward(torch.tensor(d_out, dtype=torch.float64))

    unlayout = (lambda x: x.transpose(0, 2, 1, 3)) if bshd else (lambda x: x)
    check(unlayout(out), ref_out, 1e-4, "out")
    check(unlayout(got["d_q"]), tq.grad, 1e-3, "d_q")
    check(unlayout(got["d_k"]), tk.grad, 1e-3, "d_k")
    check(unlayout(got["d_v"]), tv.grad, 1e-3, "d_v")
    if w is not None:
        check(got["d_score_w"], tw.grad, 1e-3, "d_score_w")
    for n, t in th.items():
        check(got["d_" + n], t.grad, 1e-3, "d_" + n)
    if valid_len is not None:  # sequence 0 sees no key: zero gradients, not NaN
        assert np.all(got["d_q"][0] == 0) and np.all(got["d_k"][0] == 0)
        assert np.all(got["d_v"][0] == 0)


@pytest.mark.parametrize("dtype,bound", [("bf16", 8e-3), ("f16", 2e-3)])
def test_half_gradients_are_in_the_storage_type(dtype, bound):
    lib = compile_case("gqa_causal", dtype)
    rng = np.random.default_rng(7)
    B, H, G, L, D = 1, 4, 2, 19, 8
    torch_type = torch.bfloat16 if dtype == "bf16" else torch.float16
    q, k, v, d_out = (torch.tensor(rng.standard_normal(s), dtype=torch_type)
                      for s in ((B, H, L, D), (B, G, L, D), (B, G, L, D), (B, H, L, D)))
    out, lse = lib.k(q=q, k=k, v=v)
    d_q, d_k, d_v = lib.k_backward(q=q, k=k, v=v, out=out, lse=lse, d_out=d_out)
    assert d_q.dtype == torch_type and d_k.dtype == torch_type
    # The reference differentiates the rounded inputs at float64.
    tq, tk, tv = (x.to(torch.float64).requires_grad_() for x in (q, k, v))
    visible, _ = reference_masks(B, H, L, L, {"causal": True})
    ref_out, _ = torch_attention(tq, tk, tv, scale=1 / math.sqrt(D), visible=visible)
    ref_out.backward(d_out.to(torch.float64))
    for got, ref, name in ((d_q, tq.grad, "d_q"), (d_k, tk.grad, "d_k"), (d_v, tv.grad, "d_v")):
        check(got.to(torch.float64).numpy(), ref, bound, name)


def test_backward_requires_lse():
    with pytest.raises(attnc.Error, match="needs 'lse' among the outputs"):
        attnc.compile("kernel k { head_dim = 8; backward = true }")


PROJECTED = {
    # name: (fields, self-attention, output projection, biases, kv width)
    "self_qkv_out_bias_causal": ("heads = 2; head_dim = 8; project = self_qkv_out; model_dim = 12;"
                                 " proj_bias = true; mask = causal", True, True, "qkvo", 12),
    "self_qkv_gqa_sinusoidal": ("heads = 4; kv_heads = 2; head_dim = 4; project = self_qkv;"
                                " model_dim = 10; positional = sinusoidal", True, False, "", 10),
    "llama_rotary_gqa": ("heads = 4; kv_heads = 2; head_dim = 8; project = self_qkv_out;"
                         " model_dim = 16; positional = rotary(base = 500000); mask = causal",
                         True, True, "", 16),
    "cross_qkv_out_whisper": ("heads = 2; head_dim = 8; project = qkv_out; model_dim = 12;"
                              " kv_model_dim = 6; proj_bias = q, v, o", False, True, "qvo", 6),
    # A key bias matters under rotary (each key turns it by its own position) and
    # under a softcap: d_b_k is not 0 there (it was returned as 0).
    "qwen2_rotary_qkv_bias": ("heads = 4; kv_heads = 2; head_dim = 8; project = self_qkv;"
                              " model_dim = 16; proj_bias = q, k, v;"
                              " positional = rotary(base = 500000); mask = causal",
                              True, False, "qkv", 16),
    "softcap_key_bias": ("heads = 2; head_dim = 8; project = self_qkv; model_dim = 12;"
                         " proj_bias = true; softcap = 0.5", True, False, "qkv", 12),
}


def sinusoids(L, M):
    i = torch.arange(L, dtype=torch.float64)[:, None]
    m = torch.arange(M)[None, :]
    angle = i / torch.pow(10000.0, (m - m % 2).to(torch.float64) / M)
    return torch.where(m % 2 == 0, torch.sin(angle), torch.cos(angle))


@pytest.mark.parametrize("name", sorted(PROJECTED))
def test_projection_gradients_match_float64_autograd(name):
    fields, self_attention, out_projected, biases, kv_width = PROJECTED[name]
    lib = attnc.compile("kernel k { %s; outputs = out, lse; backward = true }" % fields)
    fwd_args = [a for a in lib.k.arguments if not a.is_output]
    rng = np.random.default_rng(11)
    B, Lq, Lk = 2, 13, 17 if not self_attention else 13
    sizes = {"B": B, "Lq": Lq, "Lk": Lk}
    inputs = {}
    for a in fwd_args:
        shape = tuple(v if v is not None else sizes[n] for n, v in a.shape)
        inputs[a.name] = (rng.standard_normal(shape) * 0.5).astype(np.float32)
    out, lse = lib.k(**inputs)
    d_out = rng.standard_normal(out.shape).astype(np.float32)
    grads = lib.k_backward(**inputs, out=out, lse=lse, d_out=d_out)
    names = [a.name for a in lib.k_backward.arguments if a.is_output]
    assert names == ["d_" + a.name for a in fwd_args]
    got = dict(zip(names, grads))

    t = {n: torch.tensor(x, dtype=torch.float64, requires_grad=True) for n, x in inputs.items()}
    args = {a.name: a for a in lib.k.arguments}
    HD = args["w_q"].shape[0][1]
    H = int(fields.split("heads = ")[1].split(";")[0])
    G = int(fields.split("kv_heads = ")[1].split(";")[0]) if "kv_heads" in fields else H
    D = HD // H
    x_q = t["x"] if self_attention else t["x_q"]
    x_kv = t["x"] if self_attention else t["x_kv"]
    if "sinusoidal" in fields:
        x_q = x_q + sinusoids(Lq, x_q.shape[-1])
        x_kv = x_q

    def linear(x, w, b):
        y = x @ t[w].T
        return y + t[b] if b in t else y

    q = linear(x_q, "w_q", "b_q").view(B, Lq, H, D).transpose(1, 2)
    k = linear(x_kv, "w_k", "b_k").view(B, Lk, G, D).transpose(1, 2)
    v = linear(x_kv, "w_v", "b_v").view(B, Lk, G, -1).transpose(1, 2)
    if "rotary" in fields:
        q = rotate(q, torch.arange(Lq) + (Lk - Lq), "half", 500000.0, D)
        k = rotate(k, torch.arange(Lk), "half", 500000.0, D)
    visible = None
    if "causal" in fields:
        visible, _ = reference_masks(B, H, Lq, Lk, {"causal": True})
    softcap = float(fields.split("softcap = ")[1]) if "softcap" in fields else None
    o, _ = torch_attention(q, k, v, scale=1 / math.sqrt(D), visible=visible, softcap=softcap)
    if out_projected:
        o = linear(o.transpose(1, 2).reshape(B, Lq, -1), "w_o", "b_o")
    check(out, o, 1e-4, "out")
    o.backward(torch.tensor(d_out, dtype=torch.float64))
    for n, x in t.items():
        check(got["d_" + n], x.grad, 1e-3, "d_" + n)
    if "b_k" in got and not ("rotary" in fields or softcap):
        # A key bias shifts a row's scores alike, which no softmax sees: exactly 0 (9.8).
        assert np.all(got["d_b_k"] == 0)
    elif "b_k" in got:
        assert np.max(np.abs(got["d_b_k"])) > 1e-3


def t5_buckets(Lq, Lk):
    i = torch.arange(Lq)[:, None]
    j = torch.arange(Lk)[None, :]
    return torch.where(j - i > 0, 8, 0) + torch.clamp((j - i).abs(), max=7)


DECLARED = {
    # name: (fields and inputs, reference bias or score of the float64 inputs)
    "alibi_slopes": ("bias = -slopes[h] * float(abs(ip - j))\n  input slopes : f32[H]",
                     lambda t, Lq, Lk: {"bias": -t["slopes"][None, :, None, None] *
                                        (torch.arange(Lq)[:, None] + Lk - Lq -
                                         torch.arange(Lk)[None, :]).abs().double()}),
    "t5_relative": ("bias = rel[h, select(j - i > 0, 8, 0) + min(abs(j - i), 7)]; mask = causal\n"
                    "  input rel : f32[H, 16]",
                    lambda t, Lq, Lk: {"bias": t["rel"][:, t5_buckets(Lq, Lk)][None],
                                       "causal": True}),
    "temperature": ("score = dot(q, k) / (sqrt(8.0) * temperature[h]) + 0.5 * shift[h]\n"
                    "  input temperature : f32[H]\n  input shift : f32[H]",
                    lambda t, Lq, Lk: {"score_fn": lambda raw: raw / (
                        math.sqrt(8.0) * t["temperature"][None, :, None, None]) +
                        0.5 * t["shift"][None, :, None, None]}),
}


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_declared_input_gradients_match_float64_autograd(name):
    fields, reference = DECLARED[name]
    lib = attnc.compile("kernel k {\n  heads = 3; head_dim = 8; outputs = out, lse; "
                        "backward = true\n  %s\n}" % fields)
    rng = np.random.default_rng(5)
    B, H, Lq, Lk, D = 2, 3, 11, 14, 8
    sizes = {"B": B, "Lq": Lq, "Lk": Lk}
    inputs = {}
    for a in lib.k.arguments:
        if not a.is_output:
            shape = tuple(v if v is not None else sizes[n] for n, v in a.shape)
            inputs[a.name] = rng.standard_normal(shape).astype(np.float32)
    if "temperature" in inputs:
        inputs["temperature"] = np.abs(inputs["temperature"]) + 0.5
    out, lse = lib.k(**inputs)
    d_out = rng.standard_normal(out.shape).astype(np.float32)
    grads = dict(zip([a.name for a in lib.k_backward.arguments if a.is_output],
                     lib.k_backward(**inputs, out=out, lse=lse, d_out=d_out)))
    t = {n: torch.tensor(x, dtype=torch.float64, requires_grad=True) for n, x in inputs.items()}
    opts = reference(t, Lq, Lk)
    visible = reference_masks(B, H, Lq, Lk, opts)[0] if opts.get("causal") else None
    scale = 1.0 if "score_fn" in opts else 1 / math.sqrt(D)
    ref_out, _ = torch_attention(t["q"], t["k"], t["v"], scale=scale, bias=opts.get("bias"),
                                 visible=visible, score_fn=opts.get("score_fn"))
    check(out, ref_out, 1e-4, "out")
    ref_out.backward(torch.tensor(d_out, dtype=torch.float64))
    for n, x in t.items():
        check(grads["d_" + n], x.grad, 1e-3, "d_" + n)


@pytest.mark.parametrize("variant", ["plain", "projected", "rotary"])
def test_packed_gradients_match_float64_autograd(variant):
    # Rotary: each sequence's rows turn at their own positions, in the backward
    # too (the sequences after the first were turned back at packed positions).
    projected, rotary = variant == "projected", variant == "rotary"
    fields = ("heads = 2; kv_heads = 1; head_dim = 8; batch = packed; mask = causal" +
              ("; project = self_qkv; model_dim = 12; proj_bias = true" if projected else "") +
              ("; positional = rotary" if rotary else ""))
    lib = attnc.compile("kernel k { %s; outputs = out, lse; backward = true }" % fields)
    rng = np.random.default_rng(8)
    lq = [5, 1, 9] if projected else [5, 0, 9]
    lk = lq if projected else [7, 3, 9]
    cu_q = np.concatenate([[0], np.cumsum(lq)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lk)]).astype(np.int32)
    H, G, D = 2, 1, 8
    if projected:
        inputs = {"x": rng.standard_normal((cu_q[-1], 12)).astype(np.float32)}
        for n, shape in (("w_q", (H * D, 12)), ("w_k", (G * D, 12)), ("w_v", (G * D, 12)),
                         ("b_q", (H * D,)), ("b_k", (G * D,)), ("b_v", (G * D,))):
            inputs[n] = (rng.standard_normal(shape) * 0.4).astype(np.float32)
    else:
        inputs = {"q": rng.standard_normal((cu_q[-1], H, D)).astype(np.float32),
                  "k": rng.standard_normal((cu_k[-1], G, D)).astype(np.float32),
                  "v": rng.standard_normal((cu_k[-1], G, D)).astype(np.float32)}
    inputs.update(cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
    out, lse = lib.k(**inputs)
    d_out = rng.standard_normal(out.shape).astype(np.float32)
    names = [a.name for a in lib.k_backward.arguments if a.is_output]
    grads = dict(zip(names, lib.k_backward(**inputs, out=out, lse=lse, d_out=d_out)))
    assert "d_cu_seqlens_q" not in grads

    t = {n: torch.tensor(x, dtype=torch.float64, requires_grad=True)
         for n, x in inputs.items() if x.dtype == np.float32}
    if projected:
        q = (t["x"] @ t["w_q"].T + t["b_q"]).view(-1, H, D)
        k = (t["x"] @ t["w_k"].T + t["b_k"]).view(-1, G, D)
        v = (t["x"] @ t["w_v"].T + t["b_v"]).view(-1, G, D)
    else:
        q, k, v = t["q"], t["k"], t["v"]
    pieces = []
    for b in range(len(lq)):
        qs, ks, vs = (x[c[b]:c[b + 1]].transpose(0, 1)[None] for x, c in
                      ((q, cu_q), (k, cu_k), (v, cu_k)))
        visible, _ = reference_masks(1, H, lq[b], lk[b], {"causal": True})
        o, _ = torch_attention(qs, ks, vs, scale=1 / math.sqrt(D), visible=visible,
                               rotary=("half", 10000.0, D) if rotary else None)
        pieces.append(o[0].transpose(0, 1))
    ref_out = torch.cat(pieces)
    check(out, ref_out, 1e-4, "out")
    ref_out.backward(torch.tensor(d_out, dtype=torch.float64))
    for n, x in t.items():
        check(grads["d_" + n], x.grad, 1e-3, "d_" + n)
