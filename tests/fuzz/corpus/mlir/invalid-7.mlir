
func @scale_nan(%s: tensor<1x2x4x4xf32>) {
  %r = attn.scale %s {factor = 0x7FF8000000000000 : f64} : tensor<1x2x4x4xf32>
  return
}

