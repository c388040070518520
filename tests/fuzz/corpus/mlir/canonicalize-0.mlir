
func @scale_of_one(%s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %r = attn.scale %s {factor = 1.0 : f64} : tensor<1x2x4x4xf32>
  return %r : tensor<1x2x4x4xf32>
}

func @merge_scales(%s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %a = attn.scale %s {factor = 0.5 : f64} : tensor<1x2x4x4xf32>
  %b = attn.scale %a {factor = 0.25 : f64} : tensor<1x2x4x4xf32>
  return %b : tensor<1x2x4x4xf32>
}

func @scales_cancel(%s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %a = attn.scale %s {factor = 2.0 : f64} : tensor<1x2x4x4xf32>
  %b = attn.scale %a {factor = 0.5 : f64} : tensor<1x2x4x4xf32>
  return %b : tensor<1x2x4x4xf32>
}

func @other_scale_kept(%s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %a = attn.scale %s {factor = 3.0 : f64} : tensor<1x2x4x4xf32>
  return %a : tensor<1x2x4x4xf32>
}
