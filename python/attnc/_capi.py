"""ctypes declarations of libattnrt's C API (runtime/include/attn/runtime.h).

The package talks to the runtime only through this module. ctypes over the C
API, not a compiled extension: the C API already checks every argument and
reports every error as text, so a binding adds nothing but a second ABI to
keep in step; ctypes needs no build step and no Python headers, and the
package works with any Python 3 that has numpy.
"""
import ctypes
import os

from . import _paths

# attn_status
OK, ERROR_INVALID, ERROR_LOAD, ERROR_ARGUMENT, ERROR_KERNEL = 0, 1, 2, 3, 4
ERROR_UNSUPPORTED, ERROR_IO, ERROR_COMPILE = 5, 6, 7
STATUS_NAMES = {
    ERROR_INVALID: "invalid", ERROR_LOAD: "load", ERROR_ARGUMENT: "argument",
    ERROR_KERNEL: "kernel", ERROR_UNSUPPORTED: "unsupported", ERROR_IO: "io",
    ERROR_COMPILE: "compile",
}

# attn_dtype; F16 and BF16 travel as their 16-bit patterns
F32, I32, U8, F16, BF16 = 0, 1, 2, 3, 4
DTYPE_NAMES = {F32: "f32", I32: "i32", U8: "u8", F16: "f16", BF16: "bf16"}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64))]


class DimInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64)]


class ArgInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("is_output", ctypes.c_int),
                ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(DimInfo)), ("shape_text", ctypes.c_char_p),
                ("is_written", ctypes.c_int)]


def _library_path():
    """$ATTNC_RUNTIME_LIBRARY, else the libattnrt this package was built or
    installed with."""
    override = os.environ.get("ATTNC_RUNTIME_LIBRARY")
    if override:
        return override
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, _paths.RUNTIME_LIBRARY))


def _declare(lib):
    c = ctypes
    handle, kernel = c.c_void_p, c.c_void_p
    sig = {
        "attn_version": (c.c_char_p, []),
        "attn_library_open": (c.c_int, [c.c_char_p, c.POINTER(handle), c.c_char_p, c.c_size_t]),
        "attn_library_compile": (c.c_int, [c.c_char_p, c.c_size_t, c.c_char_p, c.POINTER(handle),
                                           c.c_char_p, c.c_size_t]),
        "attn_library_from_cache": (c.c_int, [handle]),
        "attn_library_close": (None, [handle]),
        "attn_library_path": (c.c_char_p, [handle]),
        "attn_library_kernel_count": (c.c_size_t, [handle]),
        "attn_library_kernel": (kernel, [handle, c.c_size_t]),
        "attn_kernel_find": (kernel, [handle, c.c_char_p]),
        "attn_kernel_name": (c.c_char_p, [kernel]),
        "attn_kernel_target": (c.c_char_p, [kernel]),
        "attn_kernel_arg_count": (c.c_size_t, [kernel]),
        "attn_kernel_arg": (c.POINTER(ArgInfo), [kernel, c.c_size_t]),
        "attn_kernel_output_shape": (c.c_int, [kernel, c.POINTER(Tensor), c.c_size_t, c.c_size_t,
                                               c.POINTER(c.c_int64), c.c_char_p, c.c_size_t]),
        "attn_kernel_run": (c.c_int, [kernel, c.POINTER(Tensor), c.c_size_t, c.c_char_p,
                                      c.c_size_t]),
        "attn_set_num_threads": (c.c_int, [c.c_int]),
        "attn_get_num_threads": (c.c_int, []),
        "attn_cache_directory": (c.c_size_t, [c.c_char_p, c.c_size_t]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


_lib = None


def lib():
    """libattnrt, loaded on first use."""
    global _lib
    if _lib is None:
        path = _library_path()
        try:
            _lib = _declare(ctypes.CDLL(path))
        except OSError as e:
            raise ImportError("attnc: cannot load the runtime library %s: %s "
                              "(set ATTNC_RUNTIME_LIBRARY to libattnrt.so)" % (path, e)) from e
    return _lib
