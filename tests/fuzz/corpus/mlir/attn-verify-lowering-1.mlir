
func @unfused(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = attn.softmax %s : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o : tensor<1x1x3x3xf32>
}

