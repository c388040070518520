// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// One contract entry per argument and result.

// CHECK: {{.*}}/error-argument-count.mlir:5:1: error: kernel 'k': 'attn.arguments' has 3 entries for 3 arguments and 1 results
func @k(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %q, %k, %v {masks = ["causal"], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
