func @read_not_an_operand(%s: tensor<1x2x4x4xf32>, %t: tensor<2xf32>) {
  %b = attn.bias %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
  }
  return
}
