//===- HalideWarnings.cpp - Halide's compile-time warnings, collected ----===//
#include "compiler/HalideBackend/HalideWarnings.h"

#include <mutex>

using namespace Halide;

namespace attnc::halide_backend {

namespace {
std::mutex &reporterMutex() {
  static std::mutex m;
  return m;
}

class Collector : public CompileTimeErrorReporter {
public:
  explicit Collector(std::vector<std::string> &warnings) : warnings(warnings) {}
  void warning(const char *msg) override {
    std::string text(msg);
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
    const std::string prefix = "Warning: ";
    if (text.compare(0, prefix.size(), prefix) == 0)
      text.erase(0, prefix.size());
    warnings.push_back(text);
  }
  // What Halide itself would throw (its internal errors' messages say so).
  void error(const char *msg) override {
    if (std::string(msg).find("Internal Error") != std::string::npos)
      throw InternalError(msg);
    throw CompileError(msg);
  }

private:
  std::vector<std::string> &warnings;
};
} // namespace

struct HalideWarningScope::State {
  std::lock_guard<std::mutex> lock{reporterMutex()};
  Collector collector;
  explicit State(std::vector<std::string> &warnings) : collector(warnings) {}
};

HalideWarningScope::HalideWarningScope(std::vector<std::string> &warnings)
    : state(std::make_unique<State>(warnings)) {
  set_custom_compile_time_error_reporter(&state->collector);
}

HalideWarningScope::~HalideWarningScope() { set_custom_compile_time_error_reporter(nullptr); }

bool isUnreachableBoundsAssertion(const std::string &warning) {
  return warning.find("guaranteed to fail an assertion at runtime") != std::string::npos &&
         warning.find("halide_error_explicit_bounds_too_small") != std::string::npos;
}

} // namespace attnc::halide_backend
