// RUN: attnc %s --emit=header | FileCheck %s
// Score kinds and the additive score's hidden size come from the fused op.

// CHECK-LABEL: /* Kernel general
// CHECK:      *   score = general, scale = 1
// CHECK:      *   in  score_w : f32[D=4, Dk=4]  (row-major)
// CHECK-LABEL: /* Kernel additive
// CHECK:      *   heads = 1, kv_heads = 1, head_dim = 4, key_dim = 6, value_dim = 4
// CHECK:      *   score = additive(hidden = 16), scale = 1
// CHECK:      *   in  score_wv : f32[N=16]  (row-major)

func @general(%arg0: tensor<?x2x?x4xf32>, %arg1: tensor<?x2x?x4xf32>, %arg2: tensor<?x2x?x4xf32>, %arg3: tensor<4x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
      {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
      {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
      {name = "score_w", role = "weight", shape = ["D=4", "Dk=4"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %arg0, %arg1, %arg2 extra(%arg3 : tensor<4x4xf32>) {masks = [], scale = 1.000000e+00 : f64, score = "general"} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
func @additive(%arg0: tensor<?x1x?x4xf32>, %arg1: tensor<?x1x?x6xf32>, %arg2: tensor<?x1x?x4xf32>, %arg3: tensor<16x4xf32>, %arg4: tensor<16x6xf32>, %arg5: tensor<16xf32>) -> tensor<?x1x?x4xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "H=1", "Lq", "D=4"]},
      {name = "k", role = "data", shape = ["B", "G=1", "Lk", "Dk=6"]},
      {name = "v", role = "data", shape = ["B", "G=1", "Lk", "Dv=4"]},
      {name = "score_wq", role = "weight", shape = ["N=16", "D=4"]},
      {name = "score_wk", role = "weight", shape = ["N=16", "Dk=6"]},
      {name = "score_wv", role = "weight", shape = ["N=16"]},
      {name = "out", role = "output", shape = ["B", "H=1", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %arg0, %arg1, %arg2 extra(%arg3, %arg4, %arg5 : tensor<16x4xf32>, tensor<16x6xf32>, tensor<16xf32>) {hidden = 16 : i64, masks = [], scale = 1.000000e+00 : f64, score = "additive"} : tensor<?x1x?x4xf32>, tensor<?x1x?x6xf32>, tensor<?x1x?x4xf32> -> tensor<?x1x?x4xf32>
  return %0 : tensor<?x1x?x4xf32>
}

