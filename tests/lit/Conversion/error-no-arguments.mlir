// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// A kernel function must state its argument contract.

// CHECK: {{.*}}/error-no-arguments.mlir:5:1: error: kernel 'k' has no 'attn.arguments' (its argument contract)
func @k(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.layout = "bhsd"} {
  %0 = attn.attention %q, %k, %v {masks = ["causal"], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
