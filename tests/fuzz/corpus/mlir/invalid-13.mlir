
func @sum_result(%p: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x8xf32>) {
  %o = attn.weighted_sum %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x7xf32>
  return
}

