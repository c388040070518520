"""Kernels compiled with `dtype = f16 | bf16` and `kv_dtype` (docs/language.md,
storage types) called from Python: numpy and torch 16-bit arrays in and out,
against a float64 reference of the already rounded inputs, within
8e-3 * max(1, max|v|) for bf16 and 2e-3 * max(1, max|v|) for f16."""
import numpy as np
import pytest

import attnc
from conftest import assert_close, rand, reference

BOUND = {"bf16": 8e-3, "f16": 2e-3}


@pytest.fixture(scope="module")
def half():
    return attnc.compile("""
kernel mha_bf16 {
  heads = 2; head_dim = 16
  mask = causal
  dtype = bf16
}
kernel mha_f16 {
  heads = 2; head_dim = 16
  dtype = f16
}
kernel cache_bf16 {
  heads = 4; kv_heads = 2; head_dim = 16
  kv_dtype = bf16
}
""")


def test_arguments_carry_the_storage_types(half):
    assert [a.dtype for a in half.mha_bf16.arguments] == ["bf16"] * 4
    assert [a.dtype for a in half.mha_f16.arguments] == ["f16"] * 4
    assert [a.dtype for a in half.cache_bf16.arguments] == ["f32", "bf16", "bf16", "f32"]
    assert half.mha_bf16.arguments[0].shape_text == "bf16[B, H=2, Lq, D=16]"


def test_bf16_numpy_bits_in_bits_out(half):
    rng = np.random.default_rng(1)
    q, k, v = (attnc.f32_to_bf16(rand(rng, 2, 2, n, 16)) for n in (5, 5, 5))
    out = half.mha_bf16(q=q, k=k, v=v)
    assert out.dtype == np.uint16 and out.shape == (2, 2, 5, 16)
    wide = [attnc.bf16_to_f32(x) for x in (q, k, v)]
    assert_close(attnc.bf16_to_f32(out), reference(*wide, causal=True)[0], wide[2],
                 BOUND["bf16"])
    assert half.mha_bf16._last_pointers["q"] == q.ctypes.data


def test_bf16_torch_in_torch_out(half):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    q, k, v = (torch.from_numpy(rand(rng, 1, 2, n, 16)).to(torch.bfloat16) for n in (7, 9, 9))
    out = half.mha_bf16(q=q, k=k, v=v)
    assert out.dtype == torch.bfloat16 and out.shape == (1, 2, 7, 16)
    wide = [x.float().numpy() for x in (q, k, v)]
    assert_close(out.float().numpy(), reference(*wide, causal=True)[0], wide[2], BOUND["bf16"])
    buf = torch.empty(1, 2, 7, 16, dtype=torch.bfloat16)
    assert half.mha_bf16(q=q, k=k, v=v, out=buf) is buf
    assert half.mha_bf16._last_pointers["out"] == buf.data_ptr()
    assert torch.equal(buf, out)


def test_f16_numpy_and_torch(half):
    rng = np.random.default_rng(3)
    q, k, v = (rand(rng, 1, 2, n, 16).astype(np.float16) for n in (3, 17, 17))
    out = half.mha_f16(q=q, k=k, v=v)
    assert out.dtype == np.float16
    wide = [x.astype(np.float32) for x in (q, k, v)]
    assert_close(out, reference(*wide)[0], wide[2], BOUND["f16"])
    torch = pytest.importorskip("torch")
    out_t = half.mha_f16(q=torch.from_numpy(q), k=torch.from_numpy(k), v=torch.from_numpy(v))
    assert out_t.dtype == torch.float16
    np.testing.assert_array_equal(out_t.numpy(), out)


def test_large_scores_and_odd_sizes(half):
    rng = np.random.default_rng(4)
    q = rand(rng, 1, 2, 13, 16) * 100  # scores up to about +-1e4
    k, v = rand(rng, 1, 2, 13, 16) * 100, rand(rng, 1, 2, 13, 16)
    q, k, v = (attnc.f32_to_bf16(x) for x in (q, k, v))
    out = half.mha_bf16(q=q, k=k, v=v)
    wide = [attnc.bf16_to_f32(x) for x in (q, k, v)]
    assert_close(attnc.bf16_to_f32(out), reference(*wide, causal=True)[0], wide[2],
                 BOUND["bf16"])


def test_bf16_cache_under_f32_queries(half):
    rng = np.random.default_rng(5)
    q = rand(rng, 2, 4, 1, 16)
    k, v = (attnc.f32_to_bf16(rand(rng, 2, 2, 33, 16)) for _ in range(2))
    out = half.cache_bf16(q=q, k=k, v=v)
    assert out.dtype == np.float32
    wide = [attnc.bf16_to_f32(x) for x in (k, v)]
    assert_close(out, reference(q, *wide)[0], wide[1], BOUND["bf16"])


def test_f32_data_for_a_bf16_argument_is_refused(half):
    z = np.zeros((1, 2, 4, 16), np.float32)
    with pytest.raises(ValueError, match="argument 'q': dtype float32, expected bfloat16"):
        half.mha_bf16(q=z, k=z, v=z)
