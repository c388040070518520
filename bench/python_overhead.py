#!/usr/bin/python3
#===- bench/python_overhead.py - Call overhead of attnc from Python --------===#
#
# One small kernel (B=1, H=1, L=16, D=64) called three ways, one thread:
# the C `NAME_run` of an object linked into a C loop, `attnc-run --bench`
# (libattnrt's checked call), and the Python package (with out= given, and
# with the output allocated). Writes RESULTS/python_overhead.json; report.py
# adds it to the table. Usage: python_overhead.py RESULTS_DIR ATTNC_BIN BUILD_DIR
#
#===------------------------------------------------------------------------===#
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = "kernel small { batch = 1; heads = 1; head_dim = 64; seq_q = 16; seq_k = seq_q }\n"
HARNESS = r"""
#include "small.h"
#include <stdio.h>
#include <time.h>
static double now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(void) {
  static float q[16 * 64], k[16 * 64], v[16 * 64], out[16 * 64];
  for (int i = 0; i < 16 * 64; ++i) q[i] = k[i] = v[i] = (float)(i % 7) / 7.0f;
  for (int i = 0; i < 2000; ++i) small_run(q, k, v, out);
  for (int rep = 0; rep < 7; ++rep) {
    int n = 20000; double t0 = now();
    for (int i = 0; i < n; ++i) if (small_run(q, k, v, out)) return 1;
    printf("%.9f\n", (now() - t0) / n);
  }
  return 0;
}
"""


def c_call_seconds(attnc_bin, work):
    with open(os.path.join(work, "small.attn"), "w") as f:
        f.write(SOURCE)
    with open(os.path.join(work, "harness.c"), "w") as f:
        f.write(HARNESS)
    subprocess.run([attnc_bin, "small.attn", "-o", "small.o"], cwd=work, check=True)
    subprocess.run(["cc", "-O2", "harness.c", "small.o", "-o", "harness", "-lpthread", "-ldl",
                    "-lm"], cwd=work, check=True)
    env = dict(os.environ, HL_NUM_THREADS="1")
    lines = subprocess.run(["./harness"], cwd=work, check=True, env=env,
                           capture_output=True, text=True).stdout.split()
    return statistics.median(float(x) for x in lines)


def attnc_run_seconds(build, work):
    import numpy as np
    for name in "qkv":
        np.save(os.path.join(work, name + ".npy"), np.full((1, 1, 16, 64), 0.5, np.float32))
    text = subprocess.run([os.path.join(build, "bin", "attnc-run"), "small.attn",
                           "--in", "q=q.npy", "--in", "k=k.npy", "--in", "v=v.npy",
                           "--bench", "5000", "--threads", "1"],
                          cwd=work, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", text).group(1)) * 1e-3


def python_seconds(build):
    sys.path.insert(0, os.path.join(build, "python"))
    import attnc
    import numpy as np
    attnc.set_num_threads(1)
    kernel = attnc.compile(SOURCE).small
    q = np.full((1, 1, 16, 64), 0.5, np.float32)
    out = np.empty_like(q)
    result = {}
    for label, call in (("python_out", lambda: kernel(q=q, k=q, v=q, out=out)),
                        ("python_alloc", lambda: kernel(q=q, k=q, v=q))):
        for _ in range(2000):
            call()
        reps = []
        for _ in range(7):
            n = 5000
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            reps.append((time.perf_counter() - t0) / n)
        result[label] = statistics.median(reps)
    return result


def main():
    if len(sys.argv) != 4:
        print(__doc__ or "usage: python_overhead.py RESULTS_DIR ATTNC_BIN BUILD_DIR",
              file=sys.stderr)
        return 2
    results_dir, attnc_bin, build = (os.path.abspath(a) for a in sys.argv[1:])
    with tempfile.TemporaryDirectory() as work:
        os.environ.setdefault("ATTNC_CACHE_DIR", os.path.join(work, "cache"))
        row = {"kernel": "B=1 H=1 L=16 D=64, 1 thread",
               "c_run_s": c_call_seconds(attnc_bin, work),
               "attnc_run_s": attnc_run_seconds(build, work)}
        row.update(python_seconds(build))
    with open(os.path.join(results_dir, "python_overhead.json"), "w") as f:
        json.dump(row, f, indent=1)
    print(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
