// RUN: attnc %s --emit=halide | FileCheck %s
// scale_on_query: the back end multiplies q by the scale (Lq*D multiplies),
// and the scores are not multiplied again.

// CHECK-LABEL: // kernel on_query
// CHECK: func q_scaled(d, i, h, b) = ((float32)q_in(d, i, h, b)*0.250000f)
// CHECK: func block_score
// CHECK-NOT: 0.250000f
// CHECK: func block_max

func @on_query(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
      {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
      {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %q, %k, %v {masks = [], scale = 2.500000e-01 : f64, scale_on_query, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
