// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// The results are the fused op's (rounded once when 16-bit); the back end
// computes nothing else, so any other op between them is refused.

// CHECK: {{.*}}/error-result-not-attention.mlir:6:1: error: kernel 'k': result 0 must be result 0 of the attn.attention
func @k(%q: tensor<?x2x?x4xbf16>, %k: tensor<?x2x?x4xbf16>, %v: tensor<?x2x?x4xbf16>) -> tensor<?x2x?x4xbf16>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %q32 = arith.extf %q : tensor<?x2x?x4xbf16> to tensor<?x2x?x4xf32>
  %k32 = arith.extf %k : tensor<?x2x?x4xbf16> to tensor<?x2x?x4xf32>
  %v32 = arith.extf %v : tensor<?x2x?x4xbf16> to tensor<?x2x?x4xf32>
  %0 = attn.attention %q32, %k32, %v32 {masks = [], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  %1 = arith.truncf %0 : tensor<?x2x?x4xf32> to tensor<?x2x?x4xf16>
  %2 = arith.extf %1 : tensor<?x2x?x4xf16> to tensor<?x2x?x4xf32>
  %3 = arith.truncf %2 : tensor<?x2x?x4xf32> to tensor<?x2x?x4xbf16>
  return %3 : tensor<?x2x?x4xbf16>
}
