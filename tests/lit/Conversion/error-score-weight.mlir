// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// The general score reads the argument named score_w.

// CHECK: {{.*}}/error-score-weight.mlir:5:1: error: kernel 'k' needs the argument 'score_w' in 'attn.arguments'
func @k(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %w: tensor<4x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "w", role = "weight", shape = ["D=4", "Dk=4"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %q, %k, %v extra(%w : tensor<4x4xf32>) {masks = [], scale = 1.000000e+00 : f64, score = "general"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
