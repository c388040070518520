/* Calls the i_am_good kernel through its plain-pointer entry point. */
#include "k.h"
#include <stdio.h>

int main(void) {
  const float x[9] = {1, 3, 2, 1, 1, 3, 1, 2, 1};
  float out[9];
  int err = i_am_good_run(x, x, x, out, 1, 3, 3);
  if (err)
    return err;
  for (int i = 0; i < 3; ++i)
    printf("%f %f %f\n", out[3 * i], out[3 * i + 1], out[3 * i + 2]);
  return 0;
}
