/* Runs the gqa_alibi kernel of portable.attn and checks it against a float64
 * reference of docs/language.md §2. Exit 0 and "ok" when the numbers agree;
 * exit 3 and the error code when the kernel refuses to run (e.g. -100: this
 * CPU lacks the features of every variant); exit 1 on wrong numbers. The
 * tests run it natively and under qemu with other CPUs (tests/portable). */
#include "portable.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 2, H = 4, G = 2, L = 13, D = 16 };

static float q[B][H][L][D], k[B][G][L][D], v[B][G][L][D], out[B][H][L][D];

static float uniform(unsigned *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((*state >> 8) / 16777216.0 * 2.0 - 1.0);
}

int main(void) {
  unsigned seed = 12345;
  for (int i = 0; i < B * H * L * D; ++i) (&q[0][0][0][0])[i] = uniform(&seed);
  for (int i = 0; i < B * G * L * D; ++i) (&k[0][0][0][0])[i] = uniform(&seed);
  for (int i = 0; i < B * G * L * D; ++i) (&v[0][0][0][0])[i] = uniform(&seed);

  int err = gqa_alibi_run(&q[0][0][0][0], &k[0][0][0][0], &v[0][0][0][0], &out[0][0][0][0]);
  if (err != 0) {
    printf("gqa_alibi_run returned %d\n", err);
    return 3;
  }
  double worst = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      int g = h / (H / G);
      double slope = pow(2.0, -8.0 * (h + 1) / H);
      for (int i = 0; i < L; ++i) {
        double s[L], m = -INFINITY, sum = 0;
        for (int j = 0; j <= i; ++j) { /* causal, Lq == Lk */
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += (double)q[b][h][i][d] * k[b][g][j][d];
          s[j] = dot / sqrt((double)D) - slope * (i - j);
          if (s[j] > m) m = s[j];
        }
        for (int j = 0; j <= i; ++j) sum += exp(s[j] - m);
        for (int d = 0; d < D; ++d) {
          double ref = 0;
          for (int j = 0; j <= i; ++j) ref += exp(s[j] - m) / sum * v[b][g][j][d];
          double diff = fabs(ref - out[b][h][i][d]);
          if (!(diff <= worst)) worst = diff; /* NaN propagates */
        }
      }
    }
  if (!(worst <= 1e-4)) {
    printf("wrong: max |out - ref| = %g\n", worst);
    return 1;
  }
  printf("ok: max |out - ref| = %.2g\n", worst);
  return 0;
}
