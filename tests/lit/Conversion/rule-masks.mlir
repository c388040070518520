// RUN: attnc %s --emit=header | FileCheck %s
// The mask terms, in order, with the window of window terms.

// CHECK:      *   mask = causal & window(8) & valid_len & input
// CHECK: int k_run(const float *q, const float *k, const float *v, const int32_t *valid_len, const uint8_t *mask, float *out, int64_t B, int64_t Lq, int64_t Lk);

func @k(%arg0: tensor<?x2x?x4xf32>, %arg1: tensor<?x2x?x4xf32>, %arg2: tensor<?x2x?x4xf32>, %arg3: tensor<?xi32>, %arg4: tensor<?x?x?xui8>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
      {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
      {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
      {name = "valid_len", role = "mask", shape = ["B"]},
      {name = "mask", role = "mask", shape = ["B", "Lq", "Lk"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %arg0, %arg1, %arg2 extra(%arg3, %arg4 : tensor<?xi32>, tensor<?x?x?xui8>) {key_hi_input = 0 : i64, key_hi_offset = 1 : i64, key_lo_offset = -7 : i64, mask_needs_test, masks = ["causal", "window", "valid_len", "input"], scale = 5.000000e-01 : f64, scale_on_query, score = "scaled_dot", window = 8 : i64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

