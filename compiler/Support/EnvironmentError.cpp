//===- EnvironmentError.cpp - Failures of the machine, not of attnc -------===//
//
// The errno text used by every message of this library.
//
//===----------------------------------------------------------------------===//
#include "compiler/Support/EnvironmentError.h"

#include <cstring>

namespace attnc {

const char *outOfMemoryMessage() {
  return "out of memory (the compile needs more memory than the process may use; raise "
         "'ulimit -v' or free memory)";
}

std::string errnoText(int err) { return std::strerror(err); }

} // namespace attnc
