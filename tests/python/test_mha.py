"""attnc.torch.MultiheadAttention against torch.nn.MultiheadAttention."""
import pytest

torch = pytest.importorskip("torch")
import attnc.torch  # noqa: E402


def pair(E=16, H=4, bias=True, batch_first=False, kdim=None, seed=0):
    torch.manual_seed(seed)
    # The reference stays in training mode (dropout is 0): in eval mode torch
    # 1.13 takes its fast path, which fails without biases.
    ref = torch.nn.MultiheadAttention(E, H, bias=bias, batch_first=batch_first, kdim=kdim,
                                      vdim=kdim)
    ours = attnc.torch.MultiheadAttention(E, H, bias=bias, batch_first=batch_first, kdim=kdim,
                                          vdim=kdim).eval()
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def close(a, b, tol=2e-5):
    assert a.shape == b.shape, (a.shape, b.shape)
    err = (a.double() - b.double()).abs().max().item()
    assert err <= tol * max(1.0, b.abs().max().item()), err


def same_as_torch(ref, ours, *args, **kwargs):
    """Both modules on the same call: equal outputs and equal weights."""
    with torch.no_grad():
        r = ref(*args, **kwargs)
        o = ours(*args, **kwargs)
    close(o[0], r[0])
    close(o[1], r[1])


def test_state_dict_keys_match_torch():
    ref, ours = pair()
    assert list(ours.state_dict()) == list(ref.state_dict())
    _, cross = pair(kdim=12)
    assert list(cross.state_dict()) == list(
        torch.nn.MultiheadAttention(16, 4, kdim=12, vdim=12).state_dict())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_self_attention(batch_first, bias):
    ref, ours = pair(bias=bias, batch_first=batch_first)
    x = torch.randn((3, 7, 16) if batch_first else (7, 3, 16))
    same_as_torch(ref, ours, x, x, x)


def test_cross_attention_with_padding_and_kdim():
    ref, ours = pair(kdim=12)
    q, kv = torch.randn(5, 2, 16), torch.randn(9, 2, 12)
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[1, 6:] = True
    same_as_torch(ref, ours, q, kv, kv, key_padding_mask=pad, average_attn_weights=False)


def test_causal_attn_mask_bool_and_float_and_no_weights():
    ref, ours = pair()
    x = torch.randn(6, 2, 16)
    hidden = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    additive = torch.zeros(6, 6).masked_fill(hidden, float("-inf"))
    with torch.no_grad():
        r_out, _ = ref(x, x, x, attn_mask=hidden)
        o_out, o_w = ours(x, x, x, attn_mask=hidden, need_weights=False)
        o2, _ = ours(x, x, x, attn_mask=additive)
    assert o_w is None
    close(o_out, r_out)
    close(o2, r_out)


def test_kdim_different_from_vdim():
    torch.manual_seed(1)
    ref = torch.nn.MultiheadAttention(16, 2, kdim=8, vdim=12, batch_first=True)
    ours = attnc.torch.MultiheadAttention(16, 2, kdim=8, vdim=12, batch_first=True).eval()
    ours.load_state_dict(ref.state_dict())
    q, k, v = torch.randn(2, 3, 16), torch.randn(2, 5, 8), torch.randn(2, 5, 12)
    pad = torch.tensor([[0, 0, 0, 0, 1], [0, 1, 0, 0, 0]], dtype=torch.uint8)
    with torch.no_grad():  # torch takes bool masks, ours uint8 as well
        r = ref(q, k, v, key_padding_mask=pad.bool())
        o = ours(q, k, v, key_padding_mask=pad)
    close(o[0], r[0])
    close(o[1], r[1])


def test_self_attention_with_padding_and_causal():
    ref, ours = pair()
    x = torch.randn(6, 3, 16)
    pad = torch.zeros(3, 6, dtype=torch.bool)
    pad[2, 4:] = True
    hidden = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    same_as_torch(ref, ours, x, x, x, key_padding_mask=pad, attn_mask=hidden)


def test_distinct_key_and_value_tensors():
    ref, ours = pair()
    q, k, v = torch.randn(4, 2, 16), torch.randn(5, 2, 16), torch.randn(5, 2, 16)
    with torch.no_grad():
        close(ours(q, k, v)[0], ref(q, k, v)[0])


def test_unbatched_input():
    ref, ours = pair()
    x = torch.randn(5, 16)
    with torch.no_grad():
        close(ours(x, x, x)[0], ref(x, x, x)[0])


def test_refusals():
    with pytest.raises(ValueError, match="add_bias_kv"):
        attnc.torch.MultiheadAttention(16, 4, add_bias_kv=True)
    _, ours = pair()
    x = torch.randn(4, 1, 16)
    with pytest.raises(ValueError, match="only a causal attn_mask"):
        ours(x, x, x, attn_mask=torch.zeros(4, 4, dtype=torch.bool).fill_diagonal_(True))
    training = attnc.torch.MultiheadAttention(16, 4, dropout=0.1)
    with pytest.raises(RuntimeError, match="dropout"):
        training(x, x, x)


def gradients_match_torch(ref, ours, args, kwargs, tol=1e-4):
    """Forward and every gradient (inputs and parameters) of one call."""
    inputs = [a.detach().clone().requires_grad_() for a in args]
    theirs = [a.detach().clone().requires_grad_() for a in args]
    o, _ = ours(*inputs, **kwargs)
    r, _ = ref(*theirs, **kwargs)
    close(o, r)
    grad = torch.randn_like(r)
    o.backward(grad)
    r.backward(grad)
    for a, b in zip(inputs, theirs):
        close(a.grad, b.grad, tol)
    for (name, p), q in zip(ours.named_parameters(), ref.parameters()):
        assert p.grad is not None, name
        close(p.grad, q.grad, tol)


@pytest.mark.parametrize("bias", [True, False])
def test_self_attention_gradients(bias):
    ref, ours = pair(bias=bias, batch_first=True)
    x = torch.randn(3, 7, 16)
    gradients_match_torch(ref, ours, (x, x, x), {"need_weights": False})


def test_causal_self_attention_gradients_with_weights_returned():
    ref, ours = pair()
    x = torch.randn(6, 2, 16)
    hidden = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    gradients_match_torch(ref, ours, (x, x, x), {"attn_mask": hidden})


def test_cross_attention_gradients_with_padding():
    ref, ours = pair(kdim=12)
    q, kv = torch.randn(5, 2, 16), torch.randn(9, 2, 12)
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[1, 6:] = True
    # kv is one tensor: the projecting kernel, kv_model_dim = 12.
    qi, kvi = q.clone().requires_grad_(), kv.clone().requires_grad_()
    qr, kvr = q.clone().requires_grad_(), kv.clone().requires_grad_()
    o, _ = ours(qi, kvi, kvi, key_padding_mask=pad, need_weights=False)
    r, _ = ref(qr, kvr, kvr, key_padding_mask=pad, need_weights=False)
    close(o, r)
    g = torch.randn_like(r)
    o.backward(g)
    r.backward(g)
    close(qi.grad, qr.grad, 1e-4)
    close(kvi.grad, kvr.grad, 1e-4)
    for (name, p), q_ in zip(ours.named_parameters(), ref.parameters()):
        close(p.grad, q_.grad, 1e-4)


def test_separate_key_and_value_gradients():
    torch.manual_seed(3)
    ref = torch.nn.MultiheadAttention(16, 2, kdim=8, vdim=12, batch_first=True)
    ours = attnc.torch.MultiheadAttention(16, 2, kdim=8, vdim=12, batch_first=True)
    ours.load_state_dict(ref.state_dict())
    args = (torch.randn(2, 3, 16), torch.randn(2, 5, 8), torch.randn(2, 5, 12))
    gradients_match_torch(ref, ours, args, {"need_weights": False})


def test_gradient_through_weights_is_refused():
    _, ours = pair()
    x = torch.randn(4, 1, 16, requires_grad=True)
    _, w = ours(x, x, x)
    with pytest.raises(RuntimeError, match="gradients through 'weights' are not supported"):
        w.sum().backward()
