//===- LibHalideOriginal.h - libHalide14's own definition of a replaced function ===//
//
// The files of this folder define functions of libHalide14 again (see
// HalideFixes.h); a wrapper among them still calls the library's own, which
// the dynamic linker finds after attnc's definition (RTLD_NEXT).
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <dlfcn.h>

#include <string>

namespace attnc::halide_backend::fixes {

/// libHalide14's definition of the symbol `mangled`, as a pointer of type
/// Fn; throws Halide's InternalError naming `what` if the library has none.
template <typename Fn> Fn libHalideOriginal(const char *mangled, const char *what) {
  void *symbol = dlsym(RTLD_NEXT, mangled);
  if (!symbol)
    throw Halide::InternalError(std::string("attnc: libHalide14 has no ") + what);
  return reinterpret_cast<Fn>(symbol);
}

} // namespace attnc::halide_backend::fixes
