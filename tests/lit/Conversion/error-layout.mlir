// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// The layout is bhsd or bshd.

// CHECK: {{.*}}/error-layout.mlir:5:1: error: kernel 'k' needs 'attn.layout' = "bhsd" or "bshd"
func @k(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "sbhd"} {
  %0 = attn.attention %q, %k, %v {masks = ["causal"], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
