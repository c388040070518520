
func @full_chain(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x32xf32>, %len: tensor<?xi32>) -> tensor<?x8x?x32xf32> {
  %s = attn.score %q, %k {kind = "scaled_dot"} : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x8x?x?xf32>
  %s1 = attn.scale %s {factor = 0.125 : f64} : tensor<?x8x?x?xf32>
  %s2 = attn.softcap %s1 {cap = 30.0 : f64} : tensor<?x8x?x?xf32>
  %s3 = attn.bias %s2 {kind = "alibi"} : tensor<?x8x?x?xf32>
  %s4 = attn.mask %s3 {kind = "window", window = 256 : i64} : tensor<?x8x?x?xf32>
  %s5 = attn.mask %s4 inputs(%len : tensor<?xi32>) {kind = "valid_len"} : tensor<?x8x?x?xf32>
  %p = attn.softmax %s5 : tensor<?x8x?x?xf32>
  %o = attn.weighted_sum %p, %v : tensor<?x8x?x?xf32>, tensor<?x2x?x32xf32> -> tensor<?x8x?x32xf32>
  return %o : tensor<?x8x?x32xf32>
}

func @minimal(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = attn.softmax %s : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o : tensor<1x1x3x3xf32>
}

func @weights_output(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) {
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = attn.softmax %s : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o, %p : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>
}

func @scores_escape(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) {
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = attn.softmax %s : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o, %s : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>
}

func @no_softmax(%p: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o : tensor<1x1x3x3xf32>
}
