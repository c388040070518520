
func @window_missing(%s: tensor<1x2x4x4xf32>) {
  %r = attn.mask %s {kind = "window"} : tensor<1x2x4x4xf32>
  return
}

