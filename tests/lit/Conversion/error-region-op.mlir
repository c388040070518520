// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// Every op of an expression region needs a translation (math.sin has none).

// CHECK: {{.*}}/error-region-op.mlir:[[# @LINE + 14]]:10: error: 'math.sin' op has no Halide translation in an expression region
func @k(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %lens: tensor<?xi32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
      {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
      {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
      {name = "lens", role = "declared", shape = ["B"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %q, %k, %v extra(%lens : tensor<?xi32>) {masks = ["custom"], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %1 = attn.read %lens[%b] : tensor<?xi32> -> index
    %ji = arith.index_cast %j : index to i32
    %f = arith.sitofp %ji : i32 to f32
    %c = math.sin %f : f32
    %z = arith.constant 0.0 : f32
    %2 = arith.cmpf olt, %c, %z : f32
    attn.yield %2 : i1
  }
  return %0 : tensor<?x2x?x4xf32>
}
