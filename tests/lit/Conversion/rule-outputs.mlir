// RUN: attnc %s --emit=header | FileCheck %s
// weights and lse are the fused op's extra results.

// CHECK:      *   project = none, layout = bhsd, dtype = f32, outputs = out, weights, lse
// CHECK:      *   out weights : f32[B, H=2, Lq, Lk]  (row-major)
// CHECK-NEXT: *   out lse : f32[B, H=2, Lq]  (row-major)

func @k(%arg0: tensor<?x2x?x4xf32>, %arg1: tensor<?x2x?x4xf32>, %arg2: tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?xf32>)
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
      {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
      {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]},
      {name = "weights", role = "output", shape = ["B", "H=2", "Lq", "Lk"]},
      {name = "lse", role = "output", shape = ["B", "H=2", "Lq"]}], attn.layout = "bhsd"} {
  %0:3 = attn.attention %arg0, %arg1, %arg2 {masks = [], scale = 5.000000e-01 : f64, scale_on_query, score = "scaled_dot"} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?xf32>
  return %0#0, %0#1, %0#2 : tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?xf32>
}

