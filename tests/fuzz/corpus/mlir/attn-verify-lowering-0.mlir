
func @fused(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o : tensor<1x1x3x3xf32>
}

