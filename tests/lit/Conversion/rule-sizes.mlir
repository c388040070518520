// RUN: attnc %s --emit=header | FileCheck %s
// Sizes come from the attention op's operand types; attn.seq_k_is_seq_q
// ties the keys to the queries, so NAME_run takes no sizes here.

// CHECK:      *   heads = 4, kv_heads = 2, head_dim = 8, key_dim = 8, value_dim = 6
// CHECK-NEXT: *   batch = 3, seq_q = 16, seq_k = seq_q
// CHECK:      *   in  k : f32[B=3, G=2, Lk=16, Dk=8]  (layout bhsd)
// CHECK: int k_run(const float *q, const float *k, const float *v, float *out);

func @k(%arg0: tensor<3x4x16x8xf32>, %arg1: tensor<3x2x16x8xf32>, %arg2: tensor<3x2x16x6xf32>) -> tensor<3x4x16x6xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B=3", "H=4", "Lq=16", "D=8"]},
      {name = "k", role = "data", shape = ["B=3", "G=2", "Lk=16", "Dk=8"]},
      {name = "v", role = "data", shape = ["B=3", "G=2", "Lk=16", "Dv=6"]},
      {name = "out", role = "output", shape = ["B=3", "H=4", "Lq=16", "Dv=6"]}], attn.layout = "bhsd", attn.seq_k_is_seq_q} {
  %0 = attn.attention %arg0, %arg1, %arg2 {masks = [], scale = 0.35355339059327373 : f64, scale_on_query, score = "scaled_dot"} : tensor<3x4x16x8xf32>, tensor<3x2x16x8xf32>, tensor<3x2x16x6xf32> -> tensor<3x4x16x6xf32>
  return %0 : tensor<3x4x16x6xf32>
}

