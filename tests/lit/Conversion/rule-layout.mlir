// RUN: attnc %s --emit=header | FileCheck %s
// attn.layout is the memory order of q, k, v and out.

// CHECK:      *   project = none, layout = bshd, dtype = f32, outputs = out
// CHECK:      *   in  q : f32[B, Lq, H=2, D=4]  (layout bshd)
// CHECK:      *   out out : f32[B, Lq, H=2, Dv=4]  (layout bshd)

func @k(%arg0: tensor<?x2x?x4xf32>, %arg1: tensor<?x2x?x4xf32>, %arg2: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "Lq", "H=2", "D=4"]},
      {name = "k", role = "data", shape = ["B", "Lk", "G=2", "Dk=4"]},
      {name = "v", role = "data", shape = ["B", "Lk", "G=2", "Dv=4"]},
      {name = "out", role = "output", shape = ["B", "Lq", "H=2", "Dv=4"]}], attn.layout = "bshd"} {
  %0 = attn.attention %arg0, %arg1, %arg2 {masks = [], scale = 5.000000e-01 : f64, scale_on_query, score = "scaled_dot"} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

