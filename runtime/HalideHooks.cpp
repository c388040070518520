//===- HalideHooks.cpp - The runtime's hold on Halide's runtime -----------===//
//
// A kernel library made by attnc shares the process's one Halide runtime
// (libattnc_halide_runtime, which libattnrt links); older or hand-made ones
// embed their own. So the hooks are looked up through its dlopen handle and
// in the process, and installed in each distinct copy found. The registry
// keeps one entry per library so thread counts reach runtimes loaded later.
//
//===----------------------------------------------------------------------===//
#include "runtime/HalideHooks.h"

#include <HalideRuntime.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

namespace attnc::runtime {

namespace {
using SetErrorHandlerFn = halide_error_handler_t (*)(halide_error_handler_t);
using SetNumThreadsFn = int (*)(int);

struct Attached {
  void *handle;
  std::vector<SetNumThreadsFn> setNumThreads;
};

std::mutex registryMutex;
std::vector<Attached> registry;
int threadSetting = 0;

// Errors raised where no capture is active (Halide worker threads).
std::mutex uncapturedMutex;
std::string uncapturedText;
uint64_t uncapturedSequence = 0;

thread_local ErrorCapture *currentCapture = nullptr;
// Captures alive in the process: while none is, an error cannot belong to an
// attn_kernel_run and comes from the app's own call of a kernel linked to
// the shared runtime (attnc_add_kernel); it goes to stderr like Halide's
// default handler would print it.
std::atomic<int> liveCaptures{0};

void captureError(void * /*user_context*/, const char *message) {
  if (!message)
    message = "(no message)";
  if (currentCapture) {
    currentCapture->append(message);
    return;
  }
  if (liveCaptures.load() == 0) {
    std::fputs(message, stderr);
    size_t n = std::strlen(message);
    if (n == 0 || message[n - 1] != '\n')
      std::fputc('\n', stderr);
    return;
  }
  std::lock_guard<std::mutex> lock(uncapturedMutex);
  uncapturedText = message;
  ++uncapturedSequence;
}

template <typename Fn> void addUnique(std::vector<Fn> &fns, Fn fn) {
  if (fn && std::find(fns.begin(), fns.end(), fn) == fns.end())
    fns.push_back(fn);
}
} // namespace

void attachHalideRuntime(void *handle) {
  std::vector<SetErrorHandlerFn> setHandlers;
  Attached entry{handle, {}};
  for (void *scope : {handle, RTLD_DEFAULT}) {
    addUnique(setHandlers, reinterpret_cast<SetErrorHandlerFn>(
                               dlsym(scope, "halide_set_error_handler")));
    addUnique(entry.setNumThreads, reinterpret_cast<SetNumThreadsFn>(
                                       dlsym(scope, "halide_set_num_threads")));
  }
  for (SetErrorHandlerFn set : setHandlers)
    set(captureError);
  std::lock_guard<std::mutex> lock(registryMutex);
  if (threadSetting)
    for (SetNumThreadsFn set : entry.setNumThreads)
      set(threadSetting);
  registry.push_back(std::move(entry));
}

void detachHalideRuntime(void *handle) {
  // A library built for a `profile` target registered its pipelines' stats,
  // whose names live in the library, with the Halide runtime, which reports
  // them at exit: after dlclose that read freed memory (attnc-run crashed
  // in halide_profiler_report). The report is printed now, and forgotten.
  using ProfilerReportFn = void (*)(void *);
  using ProfilerResetFn = void (*)();
  auto report = reinterpret_cast<ProfilerReportFn>(dlsym(handle, "halide_profiler_report"));
  auto reset = reinterpret_cast<ProfilerResetFn>(dlsym(handle, "halide_profiler_reset"));
  if (report && reset) {
    report(nullptr);
    reset();
  }
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = std::find_if(registry.begin(), registry.end(),
                         [&](const Attached &a) { return a.handle == handle; });
  if (it != registry.end())
    registry.erase(it);
}

int setNumThreads(int n) {
  if (n < 0)
    n = 0;
  std::lock_guard<std::mutex> lock(registryMutex);
  int previous = threadSetting;
  threadSetting = n;
  // The shared runtime libattnrt links (libattnc_halide_runtime), which
  // kernel libraries made by attnc and apps built with attnc_add_kernel use,
  // takes the setting even before any library is opened.
  halide_set_num_threads(n);
  for (const Attached &a : registry)
    for (SetNumThreadsFn set : a.setNumThreads)
      set(n);
  return previous;
}

int numThreads() {
  std::lock_guard<std::mutex> lock(registryMutex);
  return threadSetting;
}

ErrorCapture::ErrorCapture() : outer_(currentCapture) {
  ++liveCaptures;
  {
    std::lock_guard<std::mutex> lock(uncapturedMutex);
    startSequence_ = uncapturedSequence;
  }
  currentCapture = this;
}

ErrorCapture::~ErrorCapture() {
  currentCapture = outer_;
  --liveCaptures;
}

void ErrorCapture::append(const char *text) {
  if (!text_.empty() && text_.back() != '\n')
    text_ += '\n';
  text_ += text;
}

std::string ErrorCapture::message() const {
  std::string text = text_;
  if (text.empty()) {
    std::lock_guard<std::mutex> lock(uncapturedMutex);
    if (uncapturedSequence != startSequence_)
      text = uncapturedText;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

} // namespace attnc::runtime
