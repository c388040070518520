// RUN: attnc %s --emit=header | FileCheck %s
// Rotary embeddings are read back from the attn.rotary ops on q and k.

// CHECK-LABEL: /* Kernel rope
// CHECK: *   project = none, positional = rotary(base = 500, style = interleaved, dims = 2), layout = bhsd
// CHECK: int rope_run(const float *q, const float *k, const float *v, float *out, int64_t B, int64_t Lq, int64_t Lk);

func @rope(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
    {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
    {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
    {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %rq = attn.rotary %q {base = 5.0e2 : f64, dims = 2 : i64, rows = "queries", style = "interleaved"} : tensor<?x2x?x4xf32>
  %rk = attn.rotary %k {base = 5.0e2 : f64, dims = 2 : i64, rows = "keys", style = "interleaved"} : tensor<?x2x?x4xf32>
  %0 = attn.attention %rq, %rk, %v {masks = [], scale = 5.000000e-01 : f64, score = "scaled_dot"}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
