
func @weights_missing(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  %s = attn.score %q, %k {kind = "general"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  return
}

