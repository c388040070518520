// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// Projection weights are bound by name: the key projection reads w_k.

// CHECK: {{.*}}/error-projection-weight.mlir:[[# @LINE + 10]]:8: error: 'attn.project' op weight must be the kernel argument 'w_k'
func @p(%x: tensor<?x?x8xf32>, %wq: tensor<8x8xf32>, %wk: tensor<8x8xf32>, %wv: tensor<8x8xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "x", role = "data", shape = ["B", "Lq", "M=8"]},
      {name = "w_q", role = "weight", shape = ["H*D=8", "M=8"]},
      {name = "W_K", role = "weight", shape = ["G*D=8", "M=8"]},
      {name = "w_v", role = "weight", shape = ["G*Dv=8", "M=8"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd", attn.seq_k_is_seq_q} {
  %0 = attn.project %x, %wq : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %1 = attn.split_heads %0 {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %2 = attn.project %x, %wk : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %3 = attn.split_heads %2 {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %4 = attn.project %x, %wv : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %5 = attn.split_heads %4 {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %6 = attn.attention %1, %3, %5 {masks = [], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %6 : tensor<?x2x?x4xf32>
}
