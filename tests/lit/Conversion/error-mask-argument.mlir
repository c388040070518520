// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// A valid_len mask reads the argument named valid_len.

// CHECK: {{.*}}/error-mask-argument.mlir:5:1: error: kernel 'k' needs the argument 'valid_len' in 'attn.arguments'
func @k(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %n: tensor<?xi32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "n", role = "mask", shape = ["B"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %q, %k, %v extra(%n : tensor<?xi32>) {key_hi_input = 0 : i64, masks = ["valid_len"], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
