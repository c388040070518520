//===- SanitizerDefaults.cpp - Default options of the sanitizer build --------===//
//
// Linked into every target of an ATTNC_SANITIZE build (top-level
// CMakeLists.txt), so attnc running at build time, the tests and the fuzzers
// all get the same settings without any environment: malloc may return
// NULL, UBSan prints stacks, and LeakSanitizer ignores what libHalide
// allocates, because Halide 14's IR graph keeps reference cycles alive at
// exit (docs/robustness.md). Options in
// ASAN_OPTIONS / UBSAN_OPTIONS / LSAN_OPTIONS still override these.
//
//===----------------------------------------------------------------------===//

#define ATTNC_SANITIZER_HOOK extern "C" __attribute__((visibility("default"), used))

// malloc returning NULL, as in production, so out-of-memory paths are tested
// (operator new still reports and aborts). Freed memory is held back 32 MiB
// deep instead of ASan's 256: Halide and LLVM allocate and free about that
// much per compile, and fresh pages for every allocation made each attnc
// call fault them in (a lit run of the spec examples: 74 -> 61 s; one
// compile 4.4 -> 3.4 s, half the resident memory).
ATTNC_SANITIZER_HOOK const char *__asan_default_options() {
  return "allocator_may_return_null=1:quarantine_size_mb=32";
}

ATTNC_SANITIZER_HOOK const char *__ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1";
}

ATTNC_SANITIZER_HOOK const char *__lsan_default_suppressions() {
  return "leak:libHalide14.so\n";
}

ATTNC_SANITIZER_HOOK const char *__lsan_default_options() {
  return "print_suppressions=0";
}
