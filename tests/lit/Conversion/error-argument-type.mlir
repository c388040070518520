// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// Element types are f32, f16, bf16, i32 or ui8.

// CHECK: {{.*}}/error-argument-type.mlir:5:1: error: kernel 'k': 'attn.arguments' entry 3 ('lens') has type 'tensor<?xf64>'; expected a ranked tensor of f32, f16, bf16, i32 or ui8
func @k(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %lens: tensor<?xf64>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "lens", role = "declared", shape = ["B"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %q, %k, %v {masks = ["causal"], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
