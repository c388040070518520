
func @width_differs(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x16xf32>) {
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32> -> tensor<1x2x4x4xf32>
  return
}

