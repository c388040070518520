"""16-bit arguments without the compiler: attnc.f32_to_bf16 / bf16_to_f32
against torch's rounding, and f16/bf16 arrays and tensors passed to the fake
library's half_io (h f16[N], b bf16[N] -> h_out f16, b_out bf16 copies,
sum f32 = h + b; tests/runtime/FakeKernelLibrary.cpp)."""
import os

import numpy as np
import pytest

import attnc
from attnc import _capi


def _fake_half():
    # tests/CMakeLists.txt names the folder; from the build tree's package it
    # is also build/tests/runtime/fake beside build/lib/libattnrt.so.0.
    folder = os.environ.get("ATTNC_FAKE_LIB_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(_capi._library_path())), "tests", "runtime", "fake")
    return attnc.load(os.path.join(folder, "libfake_half.so"))


@pytest.fixture(scope="module")
def half_io():
    return _fake_half().half_io


SPECIALS = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-40, 1e-45,
                     1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -9, 65504.0, 1e30], np.float32)


def test_f32_to_bf16_rounds_like_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2 ** 32, size=200000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), SPECIALS])
    x = x[~np.isnan(x)]
    ours = attnc.f32_to_bf16(x)
    theirs = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert ours.dtype == np.uint16 and ours.shape == x.shape
    np.testing.assert_array_equal(ours, theirs)


def test_bf16_ties_go_to_even_and_nan_stays_nan():
    x = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 3.4028235e38, -0.0], np.float32)
    assert [hex(b) for b in attnc.f32_to_bf16(x)] == ["0x3f80", "0x3f82", "0x7f80", "0x8000"]
    nan_low_payload = np.array([0x7f800001, 0xffc00000], np.uint32).view(np.float32)
    back = attnc.bf16_to_f32(attnc.f32_to_bf16(nan_low_payload))
    assert np.isnan(back).all() and np.signbit(back[1])


def test_every_bf16_widens_exactly_and_rounds_back():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    wide = attnc.bf16_to_f32(bits)
    assert wide.dtype == np.float32
    np.testing.assert_array_equal(wide.view(np.uint32), bits.astype(np.uint32) << 16)
    finite = ~np.isnan(wide)
    np.testing.assert_array_equal(attnc.f32_to_bf16(wide)[finite], bits[finite])
    with pytest.raises(ValueError, match="bf16_to_f32 takes uint16 bf16 bits, not float32"):
        attnc.bf16_to_f32(wide)


def test_arguments_name_16_bit_dtypes(half_io):
    assert [a.dtype for a in half_io.arguments] == ["f16", "bf16", "f16", "bf16", "f32"]
    assert half_io.arguments[1].shape_text == "bf16[N]"


def test_numpy_float16_and_uint16_bits_in_and_out(half_io):
    h = np.array([1.5, -2.0, 6e-8], np.float16)
    b = attnc.f32_to_bf16(np.array([0.25, 3.0, -1.0], np.float32))
    h_out, b_out, total = half_io(h=h, b=b)
    assert h_out.dtype == np.float16 and b_out.dtype == np.uint16  # bf16 as raw bits
    np.testing.assert_array_equal(h_out, h)
    np.testing.assert_array_equal(b_out, b)
    np.testing.assert_array_equal(total, h.astype(np.float32) + attnc.bf16_to_f32(b))
    assert half_io._last_pointers["h"] == h.ctypes.data
    assert half_io._last_pointers["b"] == b.ctypes.data


def test_torch_float16_and_bfloat16_in_and_out_without_copies(half_io):
    torch = pytest.importorskip("torch")
    h = torch.tensor([1.5, -2.0], dtype=torch.float16)
    b = torch.tensor([0.25, 3.0], dtype=torch.bfloat16)
    h_out, b_out, total = half_io(h=h, b=b)
    assert h_out.dtype == torch.float16 and b_out.dtype == torch.bfloat16
    assert torch.equal(h_out, h) and torch.equal(b_out, b)
    assert total.tolist() == [1.75, 1.0]
    buf = torch.empty(2, dtype=torch.bfloat16)
    half_io(h=h, b=b, b_out=buf)
    assert half_io._last_pointers["h"] == h.data_ptr()
    assert half_io._last_pointers["b_out"] == buf.data_ptr()
    assert torch.equal(buf, b)


@pytest.mark.parametrize("bad, message", [
    (dict(h=np.zeros(2, np.float32)),
     "argument 'h': dtype float32, expected float16 (numpy float16 or torch.float16)"),
    (dict(h=np.zeros(2, np.uint16)), "argument 'h': dtype uint16, expected float16"),
    (dict(b=np.zeros(2, np.float32)),
     "argument 'b': dtype float32, expected bfloat16 (torch.bfloat16, or numpy uint16 "
     "holding the raw bf16 bits: attnc.f32_to_bf16 makes them)"),
    (dict(b=np.zeros(2, np.float16)), "argument 'b': dtype float16, expected bfloat16"),
    (dict(h_out=np.zeros(2, np.float32)), "argument 'h_out': dtype float32, expected float16"),
])
def test_wrong_16_bit_dtype_names_the_argument_and_what_it_takes(half_io, bad, message):
    args = dict(h=np.zeros(2, np.float16), b=np.zeros(2, np.uint16))
    args.update(bad)
    with pytest.raises(ValueError) as e:
        half_io(**args)
    assert message in str(e.value)


def test_wrong_torch_16_bit_dtype(half_io):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="argument 'h': dtype bfloat16, expected float16"):
        half_io(h=torch.zeros(2, dtype=torch.bfloat16), b=torch.zeros(2, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="argument 'b': dtype float16, expected bfloat16"):
        half_io(h=torch.zeros(2, dtype=torch.float16), b=torch.zeros(2, dtype=torch.float16))
