//===- CpuFeatures.cpp - The x86 CPU features a kernel variant may need ---===//
#include "abi/CpuFeatures.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace attnc {

const std::vector<CpuFeature> &x86CpuFeatures() {
  // Leaf 1 and 7 bits from Intel's SDM vol. 2A (CPUID), 0x80000001 from AMD's.
  static const std::vector<CpuFeature> table = {
      {"sse4.1", 1, 0, CpuFeature::ECX, 19, 0},
      {"sse4.2", 1, 0, CpuFeature::ECX, 20, 0},
      {"popcnt", 1, 0, CpuFeature::ECX, 23, 0},
      {"avx", 1, 0, CpuFeature::ECX, 28, 0x6},
      {"f16c", 1, 0, CpuFeature::ECX, 29, 0x6},
      {"fma", 1, 0, CpuFeature::ECX, 12, 0x6},
      {"movbe", 1, 0, CpuFeature::ECX, 22, 0},
      {"avx2", 7, 0, CpuFeature::EBX, 5, 0x6},
      {"bmi", 7, 0, CpuFeature::EBX, 3, 0},
      {"bmi2", 7, 0, CpuFeature::EBX, 8, 0},
      {"lzcnt", 0x80000001, 0, CpuFeature::ECX, 5, 0},
      {"avx512f", 7, 0, CpuFeature::EBX, 16, 0xe6},
      {"avx512dq", 7, 0, CpuFeature::EBX, 17, 0xe6},
      {"avx512ifma", 7, 0, CpuFeature::EBX, 21, 0xe6},
      {"avx512cd", 7, 0, CpuFeature::EBX, 28, 0xe6},
      {"avx512bw", 7, 0, CpuFeature::EBX, 30, 0xe6},
      {"avx512vl", 7, 0, CpuFeature::EBX, 31, 0xe6},
      {"avx512vbmi", 7, 0, CpuFeature::ECX, 1, 0xe6},
      {"avx512vnni", 7, 0, CpuFeature::ECX, 11, 0xe6},
      {"avx512bf16", 7, 1, CpuFeature::EAX, 5, 0xe6},
  };
  return table;
}

int x86CpuFeatureIndex(const std::string &name) {
  const auto &table = x86CpuFeatures();
  for (size_t i = 0; i < table.size(); ++i)
    if (name == table[i].name)
      return (int)i;
  return -1;
}

#if defined(__x86_64__) || defined(__i386__)
static bool hostHas(const CpuFeature &f) {
  unsigned regs[4] = {0, 0, 0, 0};
  unsigned top = __get_cpuid_max(f.leaf & 0x80000000u, nullptr);
  if (top < f.leaf || !__get_cpuid_count(f.leaf, f.subleaf, &regs[0], &regs[1], &regs[2], &regs[3]))
    return false;
  if (!((regs[f.reg] >> f.bit) & 1))
    return false;
  if (!f.xcr0)
    return true;
  unsigned a, b, c, d;
  __cpuid(1, a, b, c, d);
  if (!((c >> 27) & 1)) // OSXSAVE: xgetbv is available
    return false;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & f.xcr0) == f.xcr0;
}
#endif

std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &required) {
  std::vector<std::string> missing;
#if defined(__x86_64__) || defined(__i386__)
  for (const std::string &name : required) {
    int row = x86CpuFeatureIndex(name);
    if (row < 0 || !hostHas(x86CpuFeatures()[row]))
      missing.push_back(name);
  }
#else
  (void)required;
#endif
  return missing;
}

} // namespace attnc
