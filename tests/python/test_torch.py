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


def test_function_refuses_outputs_and_non_kernels(gqa):
    f = attnc.torch.function(gqa.plain)
    z = torch.zeros(1, 2, 3, 8)
    with pytest.raises(TypeError, match="do not pass 'out'"):
        f(z, z, z, out=z)
    with pytest.raises(TypeError, match="takes an attnc kernel"):
        attnc.torch.function(len)
