
func @heads_not_divisible(%q: tensor<1x6x4x8xf32>, %k: tensor<1x4x4x8xf32>) {
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x6x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x6x4x4xf32>
  return
}

