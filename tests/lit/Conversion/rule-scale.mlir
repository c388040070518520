// RUN: attnc %s --emit=header | FileCheck %s
// scale, softcap and bias come from the fused op.

// CHECK:      *   score = scaled_dot, scale = 0.25, softcap = 30
// CHECK-NEXT: *   bias = alibi

func @k(%arg0: tensor<?x2x?x4xf32>, %arg1: tensor<?x2x?x4xf32>, %arg2: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
      {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
      {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %arg0, %arg1, %arg2 {bias = "alibi", masks = [], scale = 2.500000e-01 : f64, scale_on_query, score = "scaled_dot", softcap = 3.000000e+01 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

