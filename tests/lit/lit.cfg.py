# lit configuration for attnc: one folder per pipeline stage.
import os
import lit.formats
import lit.llvm

lit.llvm.initialize(lit_config, config)
from lit.llvm import llvm_config

config.name = "attnc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".attn", ".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attnc_obj_root, "tests", "lit")
# lit starts the slowest tests first by the times of the last run, which it
# keeps in the build tree; a fresh build has none and reads the committed
# .lit_test_times.txt beside this file instead, so the long compiles (the spec
# examples, the IR round trip) do not start last and leave a core idle (the
# whole lit 171 s instead of 191 s on 2 cores). Refresh it from a build:
#   awk '{printf "%.1f %s\n", $1, $2}' build/tests/lit/.lit_test_times.txt | sort -rn \
#     > tests/lit/.lit_test_times.txt

# ASan reserves terabytes of address space: tests that set `ulimit -v` say
# `UNSUPPORTED: asan`.
if config.attnc_sanitize.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")

# `--target=host` tunes decode for the host's vendor (TargetDispatch.h):
# tests of the AMD choice say `REQUIRES: amd-host`.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        if "AuthenticAMD" in cpuinfo.read():
            config.available_features.add("amd-host")
except OSError:
    pass

config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%srcroot", config.attnc_src_root))
# A target with AVX-512 BF16 (Sapphire Rapids' feature set), whatever the host.
config.substitutions.append(("%{spr}", "x86-64-linux-avx512_sapphirerapids-avx512_cannonlake"
                             "-avx512_skylake-avx512-avx2-avx-f16c-fma"))
# Drops the one line AddressSanitizer prints when Halide switches to a larger
# compile stack (ucontext), so "no diagnostics" checks hold in build-asan too.
config.substitutions.append(("%no-sanitizer-notes",
                             "sed -e '/makecontext\\/swapcontext functions/d'"))

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.attnc_tools_dir, append_path=True)
llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(["attnc", "attnc-opt", "attnc-run"], [config.attnc_tools_dir])
