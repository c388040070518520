
func @valid_len_missing(%s: tensor<1x2x4x4xf32>) {
  %r = attn.mask %s {kind = "valid_len"} : tensor<1x2x4x4xf32>
  return
}

