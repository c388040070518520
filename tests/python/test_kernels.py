"""attnc.compile / load / calls on NumPy arrays and torch tensors (docs/python.md)."""
import ctypes
import os
import subprocess

import numpy as np
import pytest

import attnc
from conftest import assert_close, rand, reference


def test_numpy_numerics_against_float64(gqa):
    rng = np.random.default_rng(1)
    q, k, v = rand(rng, 2, 4, 7, 16), rand(rng, 2, 2, 11, 16), rand(rng, 2, 2, 11, 16)
    out, weights, lse = gqa.gqa(q=q, k=k, v=v)
    ref_out, ref_p, ref_lse = reference(q, k, v, causal=True)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert out.shape == (2, 4, 7, 16) and weights.shape == (2, 4, 7, 11) and lse.shape == (2, 4, 7)
    assert_close(out, ref_out, v)
    assert_close(weights, ref_p, np.ones(1))
    assert_close(lse, ref_lse, np.ones(1))


def test_positional_arguments_and_kernel_lookup(gqa):
    rng = np.random.default_rng(2)
    q, k, v = rand(rng, 1, 2, 3, 8), rand(rng, 1, 2, 5, 8), rand(rng, 1, 2, 5, 8)
    assert gqa.kernels == ["gqa", "plain"]
    assert gqa["plain"] is gqa.plain and "plain" in gqa
    out = gqa.plain(q, k, v)
    assert_close(out, reference(q, k, v)[0], v)


def test_arguments_describe_names_dtypes_and_shapes(gqa):
    args = gqa.gqa.arguments
    assert [a.name for a in args] == ["q", "k", "v", "out", "weights", "lse"]
    assert [a.is_output for a in args] == [False] * 3 + [True] * 3
    assert {a.dtype for a in args} == {"f32"}
    assert args[0].shape == (("B", None), ("H", 4), ("Lq", None), ("D", 16))
    assert args[1].shape_text == "f32[B, G=2, Lk, Dk=16]"
    assert repr(args[5]) == "out lse: f32[B, H=4, Lq]"


def test_torch_tensors_in_torch_tensors_out(gqa):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    q, k, v = rand(rng, 1, 4, 5, 16), rand(rng, 1, 2, 6, 16), rand(rng, 1, 2, 6, 16)
    out, weights, lse = gqa.gqa(q=torch.from_numpy(q), k=torch.from_numpy(k),
                                v=torch.from_numpy(v))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert_close(out.numpy(), reference(q, k, v, causal=True)[0], v)


def test_out_writes_into_caller_memory_without_copies(gqa):
    rng = np.random.default_rng(4)
    q, k, v = rand(rng, 1, 2, 4, 8), rand(rng, 1, 2, 4, 8), rand(rng, 1, 2, 4, 8)
    buf = np.full((1, 2, 4, 8), np.nan, dtype=np.float32)
    result = gqa.plain(q=q, k=k, v=v, out=buf)
    assert result is buf
    assert_close(buf, reference(q, k, v)[0], v)
    pointers = gqa.plain._last_pointers
    assert pointers == {"q": q.ctypes.data, "k": k.ctypes.data, "v": v.ctypes.data,
                        "out": buf.ctypes.data}


def test_torch_out_and_inputs_are_not_copied(gqa):
    torch = pytest.importorskip("torch")
    q, k, v = (torch.rand(1, 2, 4, 8) for _ in range(3))
    buf = torch.empty(1, 2, 4, 8)
    assert gqa.plain(q=q, k=k, v=v, out=buf) is buf
    assert gqa.plain._last_pointers == {"q": q.data_ptr(), "k": k.data_ptr(),
                                        "v": v.data_ptr(), "out": buf.data_ptr()}
    assert_close(buf.numpy(), reference(q.numpy(), k.numpy(), v.numpy())[0], v.numpy())


def test_non_contiguous_inputs_are_copied_once_and_correct(gqa):
    rng = np.random.default_rng(5)
    big = rand(rng, 1, 2, 4, 16)
    q = big[..., ::2]  # strided view
    k, v = rand(rng, 1, 2, 4, 8), rand(rng, 1, 2, 4, 8)
    out = gqa.plain(q=q, k=k, v=v)
    assert_close(out, reference(q, k, v)[0], v)
    assert gqa.plain._last_pointers["q"] != big.ctypes.data


@pytest.mark.parametrize("bad, message", [
    (dict(k=np.zeros((1, 2, 5, 8), np.float32)),
     "argument 'v': dimension 2 (Lk) is 4 but 'k' has Lk = 5"),
    (dict(q=np.zeros((1, 3, 4, 8), np.float32)), "argument 'q'"),
    (dict(q=np.zeros((1, 2, 4, 8), np.float64)), "argument 'q': dtype float64, expected float32"),
    (dict(v=np.zeros((2, 4, 8), np.float32)), "argument 'v'"),
    (dict(out=np.zeros((1, 2, 4, 8), np.float64)),
     "argument 'out': dtype float64, expected float32"),
    (dict(out=np.zeros((1, 2, 4, 16), np.float32)[..., ::2]),
     "argument 'out': the output must be C-contiguous"),
    (dict(out=np.zeros((1, 2, 4, 9), np.float32)), "argument 'out'"),
])
def test_wrong_shape_or_dtype_raises_value_error_naming_the_argument(gqa, bad, message):
    args = {n: np.zeros((1, 2, 4, 8), np.float32) for n in ("q", "k", "v")}
    args.update(bad)
    with pytest.raises(ValueError) as e:
        gqa.plain(**args)
    assert message in str(e.value)


def test_read_only_out_is_refused(gqa):
    args = {n: np.zeros((1, 2, 4, 8), np.float32) for n in ("q", "k", "v")}
    out = np.zeros((1, 2, 4, 8), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="argument 'out': the output array is read-only"):
        gqa.plain(**args, out=out)


def test_call_errors_are_type_errors(gqa):
    z = np.zeros((1, 2, 4, 8), np.float32)
    with pytest.raises(TypeError, match=r"plain\(\) is missing input\(s\): v"):
        gqa.plain(q=z, k=z)
    with pytest.raises(TypeError, match="plain\\(\\) has no argument 'x'; its arguments: q, k, v, out"):
        gqa.plain(q=z, k=z, v=z, x=z)
    with pytest.raises(TypeError, match="got argument 'q' twice"):
        gqa.plain(z, q=z, k=z, v=z)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        gqa.plain(z, z, z, z, z)


def test_unknown_kernel(gqa):
    with pytest.raises(AttributeError, match="has no kernel 'nope'; it has: gqa, plain"):
        gqa.nope
    with pytest.raises(KeyError, match="nope"):
        gqa["nope"]


def test_compile_errors_carry_the_diagnostics():
    with pytest.raises(attnc.Error) as e:
        attnc.compile("kernel bad {\n  heads = 0\n  head_dim = 8\n}\n")
    assert e.value.status == "compile"
    assert "<source>:2:11: error: 'heads' must be an integer >= 1, but it is '0'" in str(e.value)


def test_bad_options_are_errors():
    with pytest.raises(attnc.Error) as e:
        attnc.compile("kernel k { head_dim = 8 }", schedule="fastest")
    assert e.value.status == "invalid"
    assert "schedule" in str(e.value)


def test_defines_kernel_selection_and_the_cache(tmp_path):
    source = "kernel a { head_dim = 8; heads = 1 }\nkernel b { head_dim = 8 }\n"
    lib = attnc.compile(source, defines={"heads": 3}, kernel="a")
    assert lib.kernels == ["a"]
    assert lib.a.arguments[0].shape[1] == ("H", 3)
    again = attnc.compile(source, defines={"heads": 3}, kernel="a")
    assert again.from_cache and again.path == lib.path
    assert os.path.dirname(lib.path) == attnc.cache_directory()


def test_compile_from_a_path(tmp_path):
    path = tmp_path / "model.attn"
    path.write_text("kernel from_file { head_dim = 4 }\n")
    assert attnc.compile(path).kernels == ["from_file"]
    assert attnc.compile(str(path)).kernels == ["from_file"]


def test_load_a_shared_library(tmp_path):
    attnc_bin = os.environ.get("ATTNC_BIN")
    if not attnc_bin:
        pytest.skip("ATTNC_BIN (the attnc compiler) not given")
    src = tmp_path / "m.attn"
    src.write_text("kernel loaded { heads = 2; head_dim = 8 }\n")
    subprocess.run([attnc_bin, str(src), "-o", str(tmp_path / "libm.so")], check=True)
    lib = attnc.load(tmp_path / "libm.so")
    rng = np.random.default_rng(6)
    q, k, v = rand(rng, 1, 2, 3, 8), rand(rng, 1, 2, 3, 8), rand(rng, 1, 2, 3, 8)
    assert_close(lib.loaded(q, k, v), reference(q, k, v)[0], v)


def test_load_errors(tmp_path):
    with pytest.raises(attnc.Error) as e:
        attnc.load(tmp_path / "missing.so")
    assert e.value.status == "load"
    (tmp_path / "junk.so").write_bytes(b"not a library")
    with pytest.raises(attnc.Error):
        attnc.load(tmp_path / "junk.so")


def test_threads_argument_restores_the_setting(gqa):
    previous = attnc.set_num_threads(2)
    try:
        z = np.zeros((1, 2, 4, 8), np.float32)
        gqa.plain(q=z, k=z, v=z, threads=1)
        assert attnc.get_num_threads() == 2
    finally:
        attnc.set_num_threads(previous)


def test_fully_masked_rows_give_zeros(gqa):
    # Lq > Lk with a causal mask: the first Lq - Lk rows see no key.
    rng = np.random.default_rng(7)
    q, k, v = rand(rng, 1, 4, 6, 16), rand(rng, 1, 2, 3, 16), rand(rng, 1, 2, 3, 16)
    out, weights, lse = gqa.gqa(q=q, k=k, v=v)
    assert np.all(out[:, :, :3] == 0) and np.all(weights[:, :, :3] == 0)
    assert np.all(np.isneginf(lse[:, :, :3]))
    assert_close(out, reference(q, k, v, causal=True)[0], v)
