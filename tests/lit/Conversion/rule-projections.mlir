// RUN: attnc %s --emit=header | FileCheck %s
// Projections are read back from positions / project / split_heads
// around the op and merge_heads / project after it.

// CHECK-LABEL: /* Kernel self
// CHECK:      *   batch = dynamic, seq_q = dynamic, seq_k = seq_q
// CHECK:      *   project = self_qkv_out, model_dim = 8, proj_bias = true, positional = sinusoidal, layout = bhsd, dtype = f32, outputs = out
// CHECK: int self_run(const float *x, const float *w_q, const float *w_k, const float *w_v, const float *w_o, const float *b_q, const float *b_k, const float *b_v, const float *b_o, float *out, int64_t B, int64_t Lq);
// CHECK-LABEL: /* Kernel cross
// CHECK:      *   project = qkv, model_dim = 8, proj_bias = false, positional = none, layout = bhsd, dtype = f32, outputs = out
// CHECK: int cross_run(const float *x_q, const float *x_kv, const float *w_q, const float *w_k, const float *w_v, float *out, int64_t B, int64_t Lq, int64_t Lk);

func @self(%arg0: tensor<?x?x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>, %arg4: tensor<8x8xf32>, %arg5: tensor<8xf32>, %arg6: tensor<8xf32>, %arg7: tensor<8xf32>, %arg8: tensor<8xf32>) -> tensor<?x?x8xf32>
    attributes {attn.arguments = [
      {name = "x", role = "data", shape = ["B", "Lq", "M=8"]},
      {name = "w_q", role = "weight", shape = ["H*D=8", "M=8"]},
      {name = "w_k", role = "weight", shape = ["G*D=8", "M=8"]},
      {name = "w_v", role = "weight", shape = ["G*Dv=8", "M=8"]},
      {name = "w_o", role = "weight", shape = ["M=8", "H*Dv=8"]},
      {name = "b_q", role = "weight", shape = ["H*D=8"]},
      {name = "b_k", role = "weight", shape = ["G*D=8"]},
      {name = "b_v", role = "weight", shape = ["G*Dv=8"]},
      {name = "b_o", role = "weight", shape = ["M=8"]},
      {name = "out", role = "output", shape = ["B", "Lq", "M=8"]}], attn.layout = "bhsd", attn.seq_k_is_seq_q} {
  %0 = attn.positions %arg0 {kind = "sinusoidal"} : tensor<?x?x8xf32>
  %1 = attn.project %0, %arg1 bias(%arg5 : tensor<8xf32>) : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %2 = attn.split_heads %1 {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %3 = attn.project %0, %arg2 bias(%arg6 : tensor<8xf32>) : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %4 = attn.split_heads %3 {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %5 = attn.project %0, %arg3 bias(%arg7 : tensor<8xf32>) : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %6 = attn.split_heads %5 {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %7 = attn.attention %2, %4, %6 {masks = [], scale = 5.000000e-01 : f64, scale_on_query, score = "scaled_dot"} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  %8 = attn.merge_heads %7 : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  %9 = attn.project %8, %arg4 bias(%arg8 : tensor<8xf32>) : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  return %9 : tensor<?x?x8xf32>
}
func @cross(%arg0: tensor<?x?x8xf32>, %arg1: tensor<?x?x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>, %arg4: tensor<8x8xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "x_q", role = "data", shape = ["B", "Lq", "M=8"]},
      {name = "x_kv", role = "data", shape = ["B", "Lk", "M=8"]},
      {name = "w_q", role = "weight", shape = ["H*D=8", "M=8"]},
      {name = "w_k", role = "weight", shape = ["G*D=8", "M=8"]},
      {name = "w_v", role = "weight", shape = ["G*Dv=8", "M=8"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.project %arg0, %arg2 : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %1 = attn.split_heads %0 {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %2 = attn.project %arg1, %arg3 : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %3 = attn.split_heads %2 {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %4 = attn.project %arg1, %arg4 : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %5 = attn.split_heads %4 {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %6 = attn.attention %1, %3, %5 {masks = [], scale = 5.000000e-01 : f64, scale_on_query, score = "scaled_dot"} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %6 : tensor<?x2x?x4xf32>
}

