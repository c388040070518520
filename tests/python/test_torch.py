"""attnc.torch: kernels as autograd functions (docs/python.md)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import attnc  # noqa: E402
import attnc.torch  # noqa: E402
from conftest import assert_close, reference  # noqa: E402


def test_function_forward_matches_the_reference(gqa):
    f = attnc.torch.function(gqa.plain)
    q, k, v = (torch.rand(2, 2, 5, 8) for _ in range(3))
    out = f(q, k, v)
    assert_close(out.numpy(), reference(q.numpy(), k.numpy(), v.numpy())[0], v.numpy())


def test_backward_without_a_backward_kernel_is_a_clear_error(gqa):
    f = attnc.torch.function(gqa.plain)
    q = torch.rand(1, 2, 3, 8, requires_grad=True)
    k, v = torch.rand(1, 2, 3, 8), torch.rand(1, 2, 3, 8)
    out = f(q=q, k=k, v=v)
    assert out.requires_grad
    with pytest.raises(RuntimeError,
                       match="kernel 'plain' has no backward kernel; compile it with "
                             "'backward = true'"):
        out.sum().backward()


def test_function_backward_runs_the_backward_kernel():
    lib = attnc.compile("kernel g { heads = 4; kv_heads = 2; head_dim = 8; mask = causal\n"
                        "outputs = out, lse; backward = true }")
    f = attnc.torch.function(lib.g)
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, h, 6, 8, requires_grad=True) for h in (4, 2, 2))
    out, lse = f(q, k, v)
    (out * torch.arange(8.0)).sum().backward()
    ref = [x.detach().double().requires_grad_() for x in (q, k, v)]
    s = ref[0] @ ref[1].repeat_interleave(2, 1).transpose(-1, -2) / 8 ** 0.5
    s = s.masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), float("-inf"))
    o = torch.softmax(s, -1) @ ref[2].repeat_interleave(2, 1)
    (o * torch.arange(8.0, dtype=torch.float64)).sum().backward()
    for got, want in zip((q, k, v), ref):
        assert (got.grad.double() - want.grad).abs().max() < 1e-4
    with pytest.raises(RuntimeError, match="gradients through 'lse' are not supported"):
        f(q, k, v)[1].sum().backward()


def test_function_refuses_outputs_and_non_kernels(gqa):
    f = attnc.torch.function(gqa.plain)
    z = torch.zeros(1, 2, 3, 8)
    with pytest.raises(TypeError, match="do not pass 'out'"):
        f(z, z, z, out=z)
    with pytest.raises(TypeError, match="takes an attnc kernel"):
        attnc.torch.function(len)
