"""NumPy arrays and torch CPU tensors as the runtime's attn_tensor views.

A contiguous array is passed by pointer, never copied; the kinds of array
differ only in how their pointer, dtype and shape are read and how an output
of the same kind is allocated. 16-bit arguments take their own bits: f16 is
numpy float16 or torch.float16; bf16 is torch.bfloat16, or numpy uint16
holding the raw bits (NumPy has no bfloat16; see bf16_to_f32/f32_to_bf16).
"""
import ctypes
import sys

import numpy as np

from . import _capi

# What each runtime dtype accepts from numpy; the first is what outputs get.
_NUMPY_DTYPES = {_capi.F32: (np.float32,), _capi.I32: (np.int32,),
                 _capi.U8: (np.uint8, np.bool_), _capi.F16: (np.float16,),
                 _capi.BF16: (np.uint16,)}


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def is_torch(value):
    # Without importing torch: a torch tensor means torch is imported already.
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _torch_dtypes(torch):
    # bool tensors (PyTorch's key_padding_mask) have u8's size and values 0/1.
    return {_capi.F32: (torch.float32,), _capi.I32: (torch.int32,),
            _capi.U8: (torch.uint8, torch.bool), _capi.F16: (torch.float16,),
            _capi.BF16: (torch.bfloat16,)}


def dtype_name(value):
    if is_torch(value):
        return str(value.dtype).replace("torch.", "")
    return str(value.dtype)


_EXPECTED = {
    _capi.F32: "float32", _capi.I32: "int32", _capi.U8: "uint8 (or bool)",
    _capi.F16: "float16 (numpy float16 or torch.float16)",
    _capi.BF16: "bfloat16 (torch.bfloat16, or numpy uint16 holding the raw bf16 bits: "
                "attnc.f32_to_bf16 makes them)",
}


def expected_dtype_text(dtype):
    return _EXPECTED[dtype]


def as_view(name, value, dtype, is_output, is_inout=False):
    """(array, pointer): `value` as a contiguous array of the runtime's
    `dtype`, and its data pointer. Inputs that are not contiguous are copied
    once; outputs must be contiguous (the kernel writes into them). In-out
    arguments (KV caches) are never copied either: the kernel updates them in
    place, and a copy would lose the update, so anything but a contiguous,
    writable array of the right dtype is refused."""
    if is_inout:
        return _inout_view(name, value, dtype)
    if is_torch(value):
        torch = _torch()
        if value.device.type != "cpu":
            raise ValueError("argument '%s': a %s tensor; attnc kernels run on the CPU"
                             % (name, value.device.type))
        if value.dtype not in _torch_dtypes(torch)[dtype]:
            raise ValueError("argument '%s': dtype %s, expected %s"
                             % (name, dtype_name(value), expected_dtype_text(dtype)))
        if value.requires_grad:
            value = value.detach()
        if not value.is_contiguous():
            if is_output:
                raise ValueError("argument '%s': the output must be contiguous" % name)
            value = value.contiguous()
        return value, value.data_ptr()
    if not isinstance(value, np.ndarray):
        if is_output:
            raise ValueError("argument '%s': the output must be a numpy array or a torch "
                             "tensor, not %s" % (name, type(value).__name__))
        value = np.asarray(value)
    if value.dtype not in [np.dtype(t) for t in _NUMPY_DTYPES[dtype]]:
        raise ValueError("argument '%s': dtype %s, expected %s"
                         % (name, value.dtype, expected_dtype_text(dtype)))
    if not value.flags.c_contiguous:
        if is_output:
            raise ValueError("argument '%s': the output must be C-contiguous" % name)
        value = np.ascontiguousarray(value)
    if is_output and not value.flags.writeable:
        raise ValueError("argument '%s': the output array is read-only" % name)
    return value, value.ctypes.data


def _inout_view(name, value, dtype):
    why = ("the kernel updates it in place, and a copy would lose the update")
    if is_torch(value):
        torch = _torch()
        if value.device.type != "cpu":
            raise ValueError("argument '%s': a %s tensor; attnc kernels run on the CPU"
                             % (name, value.device.type))
        if value.dtype not in _torch_dtypes(torch)[dtype][:1]:
            raise ValueError("argument '%s' is in-out: dtype %s, expected %s (%s)"
                             % (name, dtype_name(value), expected_dtype_text(dtype), why))
        if value.requires_grad:
            value = value.detach()  # the same memory
        if not value.is_contiguous():
            raise ValueError("argument '%s' is in-out and must be contiguous (%s)"
                             % (name, why))
        return value, value.data_ptr()
    if not isinstance(value, np.ndarray):
        raise ValueError("argument '%s' is in-out: it must be a numpy array or a torch "
                         "tensor, not %s (%s)" % (name, type(value).__name__, why))
    if value.dtype != np.dtype(_NUMPY_DTYPES[dtype][0]):
        raise ValueError("argument '%s' is in-out: dtype %s, expected %s (%s)"
                         % (name, value.dtype, expected_dtype_text(dtype), why))
    if not value.flags.c_contiguous:
        raise ValueError("argument '%s' is in-out and must be C-contiguous (%s)"
                         % (name, why))
    if not value.flags.writeable:
        raise ValueError("argument '%s' is in-out: the array is read-only (%s)"
                         % (name, why))
    return value, value.ctypes.data


def allocate(dtype, shape, like_torch):
    if like_torch:
        torch = _torch()
        return torch.empty(tuple(shape), dtype=_torch_dtypes(torch)[dtype][0])
    return np.empty(tuple(shape), dtype=_NUMPY_DTYPES[dtype][0])


def fill_tensor(tensor, array, pointer, dtype, keep):
    """Fills the attn_tensor `tensor`; `keep` holds the ctypes shape array."""
    shape = (ctypes.c_int64 * max(1, array.ndim))(*tuple(array.shape))
    keep.append(shape)
    tensor.data = pointer
    tensor.dtype = dtype
    tensor.rank = array.ndim
    tensor.shape = shape
    tensor.strides = None
