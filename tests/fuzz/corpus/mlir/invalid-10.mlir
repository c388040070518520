
func @window_zero(%s: tensor<1x2x4x4xf32>) {
  %r = attn.mask %s {kind = "window", window = 0 : i64} : tensor<1x2x4x4xf32>
  return
}

