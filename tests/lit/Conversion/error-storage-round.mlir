// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// A 16-bit result is the arith.truncf of the attention's f32 result: the one
// rounding the back end performs.

// CHECK: {{.*}}/error-storage-round.mlir:6:1: error: kernel 'k': result 1 is 16-bit and must be an arith.truncf of an f32 tensor
func @k(%q: tensor<?x2x?x4xbf16>, %k: tensor<?x2x?x4xbf16>, %v: tensor<?x2x?x4xbf16>) -> (tensor<?x2x?x4xbf16>, tensor<?x2x?x?xbf16>)
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]},
    {name = "weights", role = "output", shape = ["B", "H=2", "Lq", "Lk"]}], attn.layout = "bhsd"} {
  %q32 = arith.extf %q : tensor<?x2x?x4xbf16> to tensor<?x2x?x4xf32>
  %k32 = arith.extf %k : tensor<?x2x?x4xbf16> to tensor<?x2x?x4xf32>
  %v32 = arith.extf %v : tensor<?x2x?x4xbf16> to tensor<?x2x?x4xf32>
  %0:2 = attn.attention %q32, %k32, %v32 {masks = [], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>
  %1 = arith.truncf %0#0 : tensor<?x2x?x4xf32> to tensor<?x2x?x4xbf16>
  %2 = arith.truncf %0#1 : tensor<?x2x?x?xf32> to tensor<?x2x?x?xbf16>
  %3 = arith.negf %2 : tensor<?x2x?x?xbf16>
  return %1, %3 : tensor<?x2x?x4xbf16>, tensor<?x2x?x?xbf16>
}
