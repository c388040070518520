// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// A 16-bit argument is read only through the arith.extf that widens it to f32.

// CHECK: {{.*}}/error-storage-widen.mlir:10:10: error: 'arith.extf' op reads the 16-bit argument #0; 16-bit arguments must be widened to f32 by arith.extf first
func @k(%q: tensor<?x2x?x4xf16>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %q64 = arith.extf %q : tensor<?x2x?x4xf16> to tensor<?x2x?x4xf64>
  %q32 = arith.truncf %q64 : tensor<?x2x?x4xf64> to tensor<?x2x?x4xf32>
  %0 = attn.attention %q32, %k, %v {masks = [], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
