// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// attn.seq_k_is_seq_q needs keys as long as the queries.

// CHECK: {{.*}}/error-seq-k-is-seq-q.mlir:5:1: error: kernel 'k': 'attn.seq_k_is_seq_q' but keys have 8 rows and queries 4
func @k(%q: tensor<?x2x4x4xf32>, %k: tensor<?x2x8x4xf32>, %v: tensor<?x2x8x4xf32>) -> tensor<?x2x4x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq=4", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk=8", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk=8", "Dv=4"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq=4", "Dv=4"]}], attn.layout = "bhsd", attn.seq_k_is_seq_q} {
  %0 = attn.attention %q, %k, %v {masks = [], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x4x4xf32>, tensor<?x2x8x4xf32>, tensor<?x2x8x4xf32> -> tensor<?x2x4x4xf32>
  return %0 : tensor<?x2x4x4xf32>
}
