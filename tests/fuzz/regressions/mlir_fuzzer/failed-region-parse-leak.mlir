
func @two_blocks(%s: tensor<1x2x4x4xf32>) {
  %m = attn.mask %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    br ^bb1
  ^bb1:
    %0 = arith.constant true
    attn.yimath.expeld %0 : i1
  }
  return
}
