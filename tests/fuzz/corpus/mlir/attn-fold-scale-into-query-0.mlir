
func @long_keys(%q: tensor<1x2x512x64xf32>, %k: tensor<1x2x512x64xf32>, %v: tensor<1x2x512x64xf32>) -> tensor<1x2x512x64xf32> {
  %o = attn.attention %q, %k, %v {masks = [], scale = 0.125 : f64, score = "scaled_dot"} : tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32> -> tensor<1x2x512x64xf32>
  return %o : tensor<1x2x512x64xf32>
}

func @dynamic_keys(%q: tensor<?x2x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>) -> tensor<?x2x?x64xf32> {
  %o = attn.attention %q, %k, %v {masks = [], scale = 0.125 : f64, score = "dot"} : tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x2x?x64xf32>
  return %o : tensor<?x2x?x64xf32>
}

func @few_keys(%q: tensor<1x2x512x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) -> tensor<1x2x512x64xf32> {
  %o = attn.attention %q, %k, %v {masks = [], scale = 0.125 : f64, score = "dot"} : tensor<1x2x512x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32> -> tensor<1x2x512x64xf32>
  return %o : tensor<1x2x512x64xf32>
}

func @unit_scale(%q: tensor<1x2x512x64xf32>, %k: tensor<1x2x512x64xf32>, %v: tensor<1x2x512x64xf32>) -> tensor<1x2x512x64xf32> {
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32>, tensor<1x2x512x64xf32> -> tensor<1x2x512x64xf32>
  return %o : tensor<1x2x512x64xf32>
}

func @additive(%q: tensor<1x1x1x8xf32>, %k: tensor<1x1x512x16xf32>, %v: tensor<1x1x512x16xf32>, %wq: tensor<4x8xf32>, %wk: tensor<4x16xf32>, %wv: tensor<4xf32>) -> tensor<1x1x1x16xf32> {
  %o = attn.attention %q, %k, %v extra(%wq, %wk, %wv : tensor<4x8xf32>, tensor<4x16xf32>, tensor<4xf32>) {hidden = 4 : i64, masks = [], scale = 0.5 : f64, score = "additive"} : tensor<1x1x1x8xf32>, tensor<1x1x512x16xf32>, tensor<1x1x512x16xf32> -> tensor<1x1x1x16xf32>
  return %o : tensor<1x1x1x16xf32>
}
