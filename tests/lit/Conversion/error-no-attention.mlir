// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// IR enters the pass pipeline first: attn-verify-lowering rejects a kernel
// function without the fused op before the conversion reads it.

// CHECK: {{.*}}/error-no-attention.mlir:6:1: error: kernel 'k' must hold exactly one attn.attention, found 0
func @k(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  return %q : tensor<?x2x?x4xf32>
}
