/* Links two kernel objects built with --no-runtime and one runtime object
 * from --emit=runtime; runs both kernels on the "I am good" input. */
#include "dot.h"
#include "scaled.h"
#include <stdio.h>

int main(void) {
  const float x[9] = {1, 3, 2, 1, 1, 3, 1, 2, 1};
  float a[9], b[9];
  int err = dot_run(x, x, x, a, 1, 3, 3) || scaled_run(x, x, x, b, 1, 3, 3);
  if (err)
    return 1;
  printf("%f %f %f\n", a[0], a[1], a[2]);
  printf("%f %f %f\n", b[0], b[1], b[2]);
  return 0;
}
