/*===- attn/runtime.h - libattnrt: load and run attnc kernels ------*- C -*-===*\
|*                                                                            *|
|* The C ABI of the attnc runtime (docs/tools.md §4). It loads a shared     *|
|* library made by `attnc model.attn -o libx.so`, lists its kernels and their *|
|* arguments (name, direction, element type, logical shape with size names),  *|
|* checks caller tensors against that signature and runs a kernel, returning  *|
|* every error, Halide's run-time errors included, as text to the caller.     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef ATTN_RUNTIME_H
#define ATTN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ATTN_API __declspec(dllexport)
#else
#define ATTN_API __attribute__((visibility("default")))
#endif

/* Status codes. Every function that can fail returns one and, when given an
 * error buffer, writes a one-line, NUL-terminated message into it (truncated
 * to errlen - 1 bytes). */
typedef enum attn_status {
  ATTN_OK = 0,
  ATTN_ERROR_INVALID = 1,     /* a NULL handle or pointer given to the API */
  ATTN_ERROR_LOAD = 2,        /* dlopen failed or not an attnc kernel library */
  ATTN_ERROR_ARGUMENT = 3,    /* tensors do not match the kernel's signature */
  ATTN_ERROR_KERNEL = 4,      /* the kernel (Halide runtime) reported an error */
  ATTN_ERROR_UNSUPPORTED = 5, /* a feature this version does not provide */
  ATTN_ERROR_IO = 6,          /* a file could not be read or written */
  ATTN_ERROR_COMPILE = 7      /* `.attn` source did not compile (diagnostics) */
} attn_status;

/* Element types, as in the `.attn` language. The last enumerator keeps the
 * type 32 bits wide and makes any int32 a valid value, so a wrong value from
 * a caller is reported rather than undefined. */
typedef enum attn_dtype {
  ATTN_F32 = 0,
  ATTN_I32 = 1,
  ATTN_U8 = 2,
  ATTN_F16 = 3,  /* IEEE binary16, passed as uint16_t bits */
  ATTN_BF16 = 4, /* bfloat16 (an f32's upper half), passed as uint16_t bits */
  /* Make every int a valid value in C++, so that checking a caller's stray
   * value is defined behaviour (the checks reject it by name). */
  ATTN_DTYPE_MIN_ = -0x7fffffff - 1,
  ATTN_DTYPE_MAX_ = 0x7fffffff
} attn_dtype;

/* "f32", "i32", "u8", "f16", "bf16"; "?" for values outside the enum. */
ATTN_API const char *attn_dtype_name(attn_dtype dtype);
/* Bytes per element; 0 for values outside the enum. */
ATTN_API size_t attn_dtype_size(attn_dtype dtype);
/* The runtime's version, "MAJOR.MINOR.PATCH". */
ATTN_API const char *attn_version(void);

/* A caller's tensor: a view, never owned by the runtime. `shape` holds
 * `rank` extents in logical order (outermost first, as in
 * docs/language.md §6). `strides` are in elements; NULL means dense row-major. This
 * version accepts only dense row-major tensors: non-NULL strides must equal
 * the dense ones. */
typedef struct attn_tensor {
  void *data;
  attn_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  const int64_t *strides;
} attn_tensor;

/* One logical dimension of an argument: a size name ("B", "Lq", "H*D", a
 * declared input's own name...) or "" for an anonymous constant, and its fixed
 * value (0 when the size is dynamic, i.e. given by the caller's tensors). */
typedef struct attn_dim_info {
  const char *name;
  int64_t value;
} attn_dim_info;

/* One kernel argument, in the contract order of docs/language.md §6.
 * Directions: an input (is_output 0, is_written 0) is only read; an output
 * (is_output 1) is only written; an in-out argument (is_output 0,
 * is_written 1), a KV cache, is read and updated in place: it must be given,
 * is checked like an input, and may not share memory with any other
 * argument. */
typedef struct attn_arg_info {
  const char *name;
  int is_output;
  attn_dtype dtype;
  int32_t rank;
  const attn_dim_info *dims; /* rank entries, outermost first */
  const char *shape_text;    /* e.g. "f32[B, H=8, Lq, D=64]" */
  int is_written;            /* 1 for in-out arguments; last, so the fields
                              * above keep their offsets */
} attn_arg_info;

typedef struct attn_library attn_library;
typedef struct attn_kernel attn_kernel;

/* --- Libraries ------------------------------------------------------------ */

/* Loads a kernel library made by `attnc -o libx.so`. On success *lib owns the
 * library until attn_library_close. Fails with ATTN_ERROR_LOAD when the file
 * cannot be loaded or is not an attnc kernel library (no `attnc_kernels`,
 * missing entry points, metadata that disagrees with the signature). */
ATTN_API attn_status attn_library_open(const char *path, attn_library **lib,
                                       char *err, size_t errlen);

/* Compiles `.attn` source text at run time with the compiler and loads the
 * result (docs/tools.md §4). The compiler is the plugin libattnc_jit.so,
 * loaded from libattnrt's folder (or $ATTNC_JIT_LIBRARY) on the first call;
 * without it this fails with ATTN_ERROR_COMPILE and a message naming it.
 * `options` are attnc options as one string (NULL or "" for none): --kernel=NAME,
 * --target=T, --schedule=S, -D FIELD=VALUE. The shared library is kept in
 * the cache directory ($ATTNC_CACHE_DIR, else $XDG_CACHE_HOME/attnc, else
 * ~/.cache/attnc) under a hash of the source, options, target and compiler
 * version; a later request with the same key loads it without compiling.
 * Concurrent processes sharing the cache never see a half-written file; a
 * process compiling the same key is waited for at most $ATTNC_LOCK_TIMEOUT
 * seconds (default 120). An entry that no longer matches the size and digest
 * recorded when it was compiled is compiled again. With ATTNC_CACHE_DIR,
 * XDG_CACHE_HOME and HOME all unset this fails with ATTN_ERROR_IO.
 * Errors: ATTN_ERROR_INVALID (bad options), ATTN_ERROR_COMPILE (the
 * source's diagnostics, several lines), ATTN_ERROR_IO (cache directory,
 * lock timeout), ATTN_ERROR_LOAD. */
ATTN_API attn_status attn_library_compile(const char *source, size_t length,
                                          const char *options,
                                          attn_library **lib, char *err,
                                          size_t errlen);
/* attn_library_compile on the contents of a `.attn` file. */
ATTN_API attn_status attn_library_compile_file(const char *path,
                                               const char *options,
                                               attn_library **lib, char *err,
                                               size_t errlen);

/* 1 when `lib` came from attn_library_compile* and was found in the cache
 * rather than compiled by that call; else 0. */
ATTN_API int attn_library_from_cache(const attn_library *lib);

/* Writes the cache directory run-time compilation uses (NUL-terminated,
 * truncated to len - 1 bytes); returns its full length. Returns 0 (and an
 * empty string) when ATTNC_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset:
 * run-time compilation then fails with ATTN_ERROR_IO asking to set one. */
ATTN_API size_t attn_cache_directory(char *buffer, size_t len);

/* Unloads the library; its kernels and infos become invalid. NULL is a no-op.
 * No kernel of it may be running. */
ATTN_API void attn_library_close(attn_library *lib);

ATTN_API const char *attn_library_path(const attn_library *lib);
ATTN_API size_t attn_library_kernel_count(const attn_library *lib);
/* NULL when index is out of range. */
ATTN_API const char *attn_library_kernel_name(const attn_library *lib,
                                              size_t index);
ATTN_API const attn_kernel *attn_library_kernel(const attn_library *lib,
                                                size_t index);
/* NULL when the library has no kernel of that name. */
ATTN_API const attn_kernel *attn_kernel_find(const attn_library *lib,
                                             const char *name);

/* --- Kernels -------------------------------------------------------------- */

ATTN_API const char *attn_kernel_name(const attn_kernel *kernel);
/* The Halide target string the kernel was compiled for. */
ATTN_API const char *attn_kernel_target(const attn_kernel *kernel);
/* The variants compiled into the kernel (docs/targets.md), one line each:
 * "<Halide target> <CPU features it needs, comma-separated, or ->". The best
 * variant the CPU supports runs; when none does, attn_kernel_run fails with a
 * message naming the missing features. Empty for libraries made by attnc
 * versions before multi-target objects. */
ATTN_API const char *attn_kernel_variants(const attn_kernel *kernel);
ATTN_API size_t attn_kernel_arg_count(const attn_kernel *kernel);
/* NULL when index is out of range. Valid while the library is open. */
ATTN_API const attn_arg_info *attn_kernel_arg(const attn_kernel *kernel,
                                              size_t index);
/* The index of the argument called `name`, or -1. */
ATTN_API int64_t attn_kernel_arg_index(const attn_kernel *kernel,
                                       const char *name);

/* Checks `args` (one per kernel argument, in order) without running:
 * count, NULL data, dtype, rank, fixed sizes, agreement of each size name
 * across arguments, dense strides, Halide's int32 extent/stride limits,
 * alignment of data to the element size, outputs and in-out arguments
 * overlapping other arguments. Messages name the argument and what was expected, e.g.
 * "argument 'v': dimension 2 (Lk) is 7 but 'k' has Lk = 5". */
ATTN_API attn_status attn_kernel_check(const attn_kernel *kernel,
                                       const attn_tensor *args, size_t nargs,
                                       char *err, size_t errlen);

/* The value a size name (e.g. "Lk") takes for the input tensors of `args`
 * (outputs are ignored), or its fixed value; ATTN_ERROR_ARGUMENT when the
 * inputs do not check or no argument has a dimension of that name. */
ATTN_API attn_status attn_kernel_size(const attn_kernel *kernel,
                                      const attn_tensor *args, size_t nargs,
                                      const char *size_name, int64_t *value);

/* The shape of argument `index` (typically an output) implied by the input
 * tensors of `args` (outputs in `args` are ignored and may be zeroed):
 * fixed sizes and sizes named by some input. Writes rank values into
 * `shape`. Fails when the inputs do not check, a size is not given by any
 * input, or the shape is beyond a Halide buffer's limits (int32 extents, at
 * most 2^31 - 1 elements), so nothing that large is allocated in vain. Lets
 * callers allocate outputs before attn_kernel_run. */
ATTN_API attn_status attn_kernel_output_shape(const attn_kernel *kernel,
                                              const attn_tensor *args,
                                              size_t nargs, size_t index,
                                              int64_t *shape, char *err,
                                              size_t errlen);

/* attn_kernel_check, then runs the kernel. Safe to call concurrently on the
 * same kernel from several threads (with distinct outputs and in-out
 * arguments). A Halide run-time error comes back as ATTN_ERROR_KERNEL with
 * Halide's message; a failed requirement of the generated code comes back as
 * its own words, e.g. "kernel 'decode' failed: KV cache: sequence 1 has
 * cache_len 97 and 4 new tokens, more than its cache's 100 rows; nothing was
 * written" (a kernel that fails that way leaves its in-out arguments as they
 * were). */
ATTN_API attn_status attn_kernel_run(const attn_kernel *kernel,
                                     const attn_tensor *args, size_t nargs,
                                     char *err, size_t errlen);

/* --- Threads -------------------------------------------------------------- */

/* Sets the number of worker threads of the Halide thread pool(s) of every
 * open library and of libraries opened later; 0 restores Halide's default
 * (HL_NUM_THREADS or the number of cores). Returns the previous setting. */
ATTN_API int attn_set_num_threads(int n);
ATTN_API int attn_get_num_threads(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTN_RUNTIME_H */
