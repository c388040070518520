// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// Rotary embeddings turn q and k alike, each at its own positions.

// CHECK: {{.*}}/error-rotary-rows.mlir:12:8: error: 'attn.attention' op q must be turned at the queries' positions and k at the keys'
func @rope(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %rq = attn.rotary %q {base = 1.0e4 : f64, dims = 4 : i64, rows = "keys", style = "half"} : tensor<?x2x?x4xf32>
  %rk = attn.rotary %k {base = 1.0e4 : f64, dims = 4 : i64, rows = "keys", style = "half"} : tensor<?x2x?x4xf32>
  %0 = attn.attention %rq, %rk, %v {masks = [], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
