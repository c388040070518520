
func @softcap_negative(%s: tensor<1x2x4x4xf32>) {
  %r = attn.softcap %s {cap = -1.0 : f64} : tensor<1x2x4x4xf32>
  return
}

