/* i_am_good: out = softmax(X X^T) X for the three-token example, computed by
 * a kernel attnc generated from i_am_good.attn and linked into this app. It
 * prints the 3x3 result and exits non-zero if it differs from the known one. */
#include "i_am_good.h"

#include <math.h>
#include <stdio.h>

int main(void) {
  const float x[3][3] = {{1, 3, 2}, {1, 1, 3}, {1, 2, 1}};
  const double expected[3][3] = {
      {1, 2.957691, 2.011295}, {1, 1.540148, 2.722573}, {1, 2.864164, 2.000000}};
  float out[3][3];
  /* q = k = v = X as [B=1, H=1, L=3, D=3]; B, Lq and Lk are dynamic. */
  int err = i_am_good_run(&x[0][0], &x[0][0], &x[0][0], &out[0][0], 1, 3, 3);
  if (err) {
    fprintf(stderr, "i_am_good_run failed with error %d\n", err);
    return 1;
  }
  int bad = 0;
  for (int i = 0; i < 3; ++i) {
    printf("[%f, %f, %f]\n", out[i][0], out[i][1], out[i][2]);
    for (int j = 0; j < 3; ++j)
      bad |= fabs(out[i][j] - expected[i][j]) > 1e-5;
  }
  if (bad)
    fprintf(stderr, "mismatch against the expected result\n");
  return bad;
}
