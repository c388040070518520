"""attnc from Python: compile `.attn` kernels, call them on NumPy arrays or
torch CPU tensors (docs/python.md).

    import attnc, numpy as np
    lib = attnc.compile("kernel mha { heads = 8; head_dim = 64 }")
    out = lib.mha(q=q, k=k, v=v)          # outputs allocated, same kind as q
    lib.mha(q=q, k=k, v=v, out=buf)       # or written into caller memory
    print(lib.mha.arguments)

16-bit arguments: f16 takes numpy float16 or torch.float16; bf16 takes
torch.bfloat16, or numpy uint16 holding the raw bits (attnc.f32_to_bf16 /
attnc.bf16_to_f32 convert).

The package is a thin layer over libattnrt's C API (ctypes): the runtime
checks every argument and compiles through the same disk cache as
attn_library_compile and attnc-run.
"""
import ctypes
import os
import threading

from . import _arrays, _capi
from ._bf16 import bf16_to_f32, f32_to_bf16

__all__ = ["compile", "load", "Library", "Kernel", "Argument", "Error",
           "set_num_threads", "get_num_threads", "cache_directory", "runtime_version",
           "bf16_to_f32", "f32_to_bf16"]

_ERROR_BYTES = 8192


class Error(RuntimeError):
    """A failure reported by the runtime: compile diagnostics, a library that
    does not load, a kernel that returned an error. `status` is the runtime's
    status name ("compile", "load", "kernel", "io", ...)."""

    def __init__(self, message, status="kernel"):
        super().__init__(message)
        self.status = status


def _raise(status, buffer, what):
    message = buffer.value.decode("utf-8", "replace") or what
    if status == _capi.ERROR_ARGUMENT:
        raise ValueError(message)
    raise Error(message, _capi.STATUS_NAMES.get(status, str(status)))


def runtime_version():
    return _capi.lib().attn_version().decode()


def set_num_threads(n):
    """Worker threads of every kernel (0: Halide's default, HL_NUM_THREADS or
    the number of cores); returns the previous setting."""
    return _capi.lib().attn_set_num_threads(int(n))


def get_num_threads():
    return _capi.lib().attn_get_num_threads()


def cache_directory():
    """The run-time compilation cache ($ATTNC_CACHE_DIR, else
    $XDG_CACHE_HOME/attnc, else ~/.cache/attnc); None when none is set."""
    buffer = ctypes.create_string_buffer(4096)
    n = _capi.lib().attn_cache_directory(buffer, len(buffer))
    return buffer.value.decode() if n else None


class Argument:
    """One kernel argument: name, dtype ("f32", "i32", "u8", "f16", "bf16"),
    logical shape as (size name, fixed value or None) pairs, and its
    direction: "in", "out", or "inout" for arguments the kernel reads and
    updates in place (a KV cache's k_cache and v_cache)."""

    def __init__(self, info, index):
        self.index = index
        self.name = info.name.decode()
        self.is_output = bool(info.is_output)
        self.is_inout = bool(info.is_written)
        self.direction = "out" if self.is_output else "inout" if self.is_inout else "in"
        self.dtype_code = info.dtype
        self.dtype = _capi.DTYPE_NAMES.get(info.dtype, "?")
        self.shape = tuple((info.dims[d].name.decode(), info.dims[d].value or None)
                           for d in range(info.rank))
        self.shape_text = info.shape_text.decode()

    def __repr__(self):
        return "%s %s: %s" % (self.direction, self.name, self.shape_text)


class Kernel:
    """A kernel of a Library; call it with its arguments by keyword or by
    position (the kernel's order: inputs, then outputs). Outputs not given are
    allocated, as the kind of the inputs (torch tensors if any input is one,
    else numpy arrays), and returned: one array, or a tuple in output order.
    A bf16 output allocated as numpy is uint16 raw bits (attnc.bf16_to_f32).
    In-out arguments (KV caches) must be given, as contiguous writable arrays
    of their exact dtype: the kernel updates them in place, never a copy."""

    def __init__(self, library, handle):
        self._library = library  # keeps the shared library loaded
        self._handle = handle
        c = _capi.lib()
        self.name = c.attn_kernel_name(handle).decode()
        self.target = c.attn_kernel_target(handle).decode()
        self.arguments = [Argument(c.attn_kernel_arg(handle, i).contents, i)
                          for i in range(c.attn_kernel_arg_count(handle))]
        # Everything the caller gives (in-out arguments included), and the
        # in-out arguments alone.
        self.inputs = [a for a in self.arguments if not a.is_output]
        self.inouts = [a for a in self.arguments if a.is_inout]
        self.outputs = [a for a in self.arguments if a.is_output]
        self._last_pointers = {}

    def __repr__(self):
        return "<attnc kernel %s(%s)>" % (self.name, ", ".join(a.name for a in self.arguments))

    def _bind(self, args, kwargs):
        if len(args) > len(self.arguments):
            raise TypeError("%s() takes %d arguments (%s), %d given"
                            % (self.name, len(self.arguments),
                               ", ".join(a.name for a in self.arguments), len(args)))
        given = {}
        for arg, value in zip(self.arguments, args):
            given[arg.name] = value
        names = {a.name for a in self.arguments}
        for name, value in kwargs.items():
            if name not in names:
                raise TypeError("%s() has no argument '%s'; its arguments: %s"
                                % (self.name, name, ", ".join(a.name for a in self.arguments)))
            if name in given:
                raise TypeError("%s() got argument '%s' twice" % (self.name, name))
            given[name] = value
        missing = [a.name for a in self.inputs
                   if not a.is_inout and given.get(a.name) is None]
        if missing:
            raise TypeError("%s() is missing input(s): %s" % (self.name, ", ".join(missing)))
        for a in self.inouts:
            if given.get(a.name) is None:
                raise ValueError("%s(): argument '%s' (%s) is in-out: the kernel updates it "
                                 "in place, so it must be given (an array of %s)"
                                 % (self.name, a.name, a.shape_text,
                                    _arrays.expected_dtype_text(a.dtype_code)))
        return given

    def __call__(self, *args, threads=None, **kwargs):
        given = self._bind(args, kwargs)
        c = _capi.lib()
        n = len(self.arguments)
        tensors = (_capi.Tensor * n)()
        keep, arrays = [], {}
        for arg in self.inputs:
            array, pointer = _arrays.as_view(arg.name, given[arg.name], arg.dtype_code, False,
                                             arg.is_inout)
            arrays[arg.name] = array
            _arrays.fill_tensor(tensors[arg.index], array, pointer, arg.dtype_code, keep)
        like_torch = any(_arrays.is_torch(given[a.name]) for a in self.inputs)
        error = ctypes.create_string_buffer(_ERROR_BYTES)
        results = []
        for arg in self.outputs:
            value = given.get(arg.name)
            if value is None:
                shape = (ctypes.c_int64 * max(1, len(arg.shape)))()
                status = c.attn_kernel_output_shape(self._handle, tensors, n, arg.index, shape,
                                                    error, len(error))
                if status != _capi.OK:
                    _raise(status, error, "cannot size output '%s'" % arg.name)
                value = _arrays.allocate(arg.dtype_code, shape[:len(arg.shape)], like_torch)
            array, pointer = _arrays.as_view(arg.name, value, arg.dtype_code, True)
            arrays[arg.name] = array
            _arrays.fill_tensor(tensors[arg.index], array, pointer, arg.dtype_code, keep)
            results.append(value)
        self._last_pointers = {a.name: tensors[a.index].data for a in self.arguments}
        previous = None
        if threads is not None:
            previous = _threads_lock_set(int(threads))
        try:
            status = c.attn_kernel_run(self._handle, tensors, n, error, len(error))
        finally:
            if threads is not None:
                _threads_restore(previous)
        if status != _capi.OK:
            _raise(status, error, "kernel '%s' failed" % self.name)
        return results[0] if len(results) == 1 else tuple(results)


_threads_lock = threading.Lock()


def _threads_lock_set(n):
    _threads_lock.acquire()
    return _capi.lib().attn_set_num_threads(n)


def _threads_restore(previous):
    _capi.lib().attn_set_num_threads(previous)
    _threads_lock.release()


class Library:
    """A loaded kernel library: kernels as attributes (`lib.mha`), by name
    (`lib["mha"]`), and listed by `lib.kernels`."""

    def __init__(self, handle, from_cache=False):
        self._handle = handle
        self._close = _capi.lib().attn_library_close
        c = _capi.lib()
        self.path = c.attn_library_path(handle).decode()
        self.from_cache = from_cache
        self._kernels = {}
        for i in range(c.attn_library_kernel_count(handle)):
            kernel = Kernel(self, c.attn_library_kernel(handle, i))
            self._kernels[kernel.name] = kernel

    @property
    def kernels(self):
        return list(self._kernels)

    def __getitem__(self, name):
        try:
            return self._kernels[name]
        except KeyError:
            raise KeyError("library %s has no kernel '%s'; it has: %s"
                           % (self.path, name, ", ".join(self._kernels))) from None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._kernels[name]
        except KeyError:
            raise AttributeError("library %s has no kernel '%s'; it has: %s"
                                 % (self.path, name, ", ".join(self._kernels))) from None

    def __contains__(self, name):
        return name in self._kernels

    def __repr__(self):
        return "<attnc library %s: %s>" % (self.path, ", ".join(self._kernels))

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._close(handle)


def load(path):
    """Loads a kernel library made by `attnc model.attn -o libk.so`."""
    handle = ctypes.c_void_p()
    error = ctypes.create_string_buffer(_ERROR_BYTES)
    status = _capi.lib().attn_library_open(os.fsencode(path), ctypes.byref(handle), error,
                                           len(error))
    if status != _capi.OK:
        _raise(status, error, "cannot load %s" % path)
    return Library(handle)


def _quote(word):
    return "'" + str(word).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _option_text(defines, kernel, target, schedule, options):
    words = []
    for field, value in (defines or {}).items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        words += ["-D", _quote("%s=%s" % (field, value))]
    for k in ([kernel] if isinstance(kernel, str) else (kernel or [])):
        words.append(_quote("--kernel=" + k))
    if target:
        words.append(_quote("--target=" + target))
    if schedule:
        words.append(_quote("--schedule=" + schedule))
    if options:
        words.append(options)
    return " ".join(words)


def compile(source, defines=None, kernel=None, target=None, schedule=None, options=None):
    """Compiles `.attn` source text (or the file at a path: an os.PathLike, or
    a one-line string naming an existing file ending in .attn) into a kernel
    library, through the runtime's disk cache: a second call with the same
    source and options loads the cached library without compiling.
    `defines={"heads": 8}` are attnc's `-D FIELD=VALUE`; `kernel`, `target`
    and `schedule` are `--kernel`, `--target`, `--schedule`; `options` is
    further attnc options as one string. Raises attnc.Error with the
    compiler's diagnostics when the source does not compile."""
    if isinstance(source, os.PathLike) or (
            isinstance(source, str) and "\n" not in source and source.endswith(".attn")
            and os.path.isfile(source)):
        with open(source, "rb") as f:
            text = f.read()
    elif isinstance(source, bytes):
        text = source
    elif isinstance(source, str):
        text = source.encode("utf-8")
    else:
        raise TypeError("attnc.compile() takes source text or a path, not %s"
                        % type(source).__name__)
    handle = ctypes.c_void_p()
    error = ctypes.create_string_buffer(1 << 16)
    c = _capi.lib()
    status = c.attn_library_compile(text, len(text),
                                    _option_text(defines, kernel, target, schedule,
                                                 options).encode(),
                                    ctypes.byref(handle), error, len(error))
    if status != _capi.OK:
        _raise(status, error, "compilation failed")
    return Library(handle, from_cache=bool(c.attn_library_from_cache(handle)))
