
func @batch_differs(%q: tensor<2x2x4x8xf32>, %k: tensor<3x2x4x8xf32>) {
  %s = attn.score %q, %k {kind = "dot"} : tensor<2x2x4x8xf32>, tensor<3x2x4x8xf32> -> tensor<2x2x4x4xf32>
  return
}

