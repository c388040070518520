/* jit_app: an app that links only the installed libattnrt (attnc::attnrt)
 * and compiles the i_am_good example's .attn at run time: the first call
 * compiles into the cache, the second loads from it. It runs the kernel
 * through the C API on X = [[1,3,2],[1,1,3],[1,2,1]] and checks
 * softmax(X X^T) X. Usage: jit_app FILE.attn (ATTNC_CACHE_DIR set). */
#include <attn/runtime.h>

#include <math.h>
#include <stdio.h>

static int run(const attn_library *lib) {
  float x[3][3] = {{1, 3, 2}, {1, 1, 3}, {1, 2, 1}};
  const double expected[3][3] = {
      {1, 2.957691, 2.011295}, {1, 1.540148, 2.722573}, {1, 2.864164, 2.000000}};
  float out[3][3];
  const int64_t shape[4] = {1, 1, 3, 3};
  attn_tensor args[4];
  for (int i = 0; i < 4; ++i) {
    attn_tensor t = {i < 3 ? (void *)&x[0][0] : (void *)&out[0][0], ATTN_F32, 4, shape, NULL};
    args[i] = t;
  }
  char err[1024];
  const attn_kernel *k = attn_kernel_find(lib, "i_am_good");
  if (!k || attn_kernel_run(k, args, 4, err, sizeof err) != ATTN_OK) {
    fprintf(stderr, "run failed: %s\n", k ? err : "no kernel i_am_good");
    return 1;
  }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (fabs(out[i][j] - expected[i][j]) > 1e-5) {
        fprintf(stderr, "mismatch at [%d][%d]: %f\n", i, j, out[i][j]);
        return 1;
      }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: jit_app FILE.attn\n");
    return 2;
  }
  for (int pass = 0; pass < 2; ++pass) {
    attn_library *lib = NULL;
    char err[8192];
    if (attn_library_compile_file(argv[1], "", &lib, err, sizeof err) != ATTN_OK) {
      fprintf(stderr, "compile failed: %s\n", err);
      return 1;
    }
    printf("%s: %s\n", pass == 0 ? "first" : "second",
           attn_library_from_cache(lib) ? "loaded from the cache" : "compiled");
    int bad = run(lib);
    attn_library_close(lib);
    if (bad)
      return 1;
  }
  return 0;
}
