// RUN: attnc %s --emit=header | FileCheck %s
// The argument contract (attn.arguments: names, roles, element types,
// logical shapes) is the entry points' parameter list and the header's
// argument table; a `declared` argument is an input of the kernel.

// CHECK:      *   input lens : i32[B]
// CHECK:      * Arguments (dense, row-major, last dimension contiguous):
// CHECK-NEXT: *   in  q : f32[B, H=2, Lq, D=4]  (layout bhsd)
// CHECK-NEXT: *   in  k : f32[B, G=2, Lk, Dk=4]  (layout bhsd)
// CHECK-NEXT: *   in  v : f32[B, G=2, Lk, Dv=4]  (layout bhsd)
// CHECK-NEXT: *   in  lens : i32[B]  (row-major)
// CHECK-NEXT: *   out out : f32[B, H=2, Lq, Dv=4]  (layout bhsd)
// CHECK: int k(struct halide_buffer_t *q, struct halide_buffer_t *k, struct halide_buffer_t *v, struct halide_buffer_t *lens, struct halide_buffer_t *out);
// CHECK: int k_run(const float *q, const float *k, const float *v, const int32_t *lens, float *out, int64_t B, int64_t Lq, int64_t Lk);

func @k(%arg0: tensor<?x2x?x4xf32>, %arg1: tensor<?x2x?x4xf32>, %arg2: tensor<?x2x?x4xf32>, %arg3: tensor<?xi32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
      {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
      {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
      {name = "lens", role = "declared", shape = ["B"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %arg0, %arg1, %arg2 extra(%arg3 : tensor<?xi32>) {key_hi_input = 0 : i64, masks = ["custom"], scale = 5.000000e-01 : f64, scale_on_query, score = "scaled_dot"} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %1 = attn.read %arg3[%b] : tensor<?xi32> -> index
    %2 = arith.cmpi slt, %j, %1 : index
    attn.yield %2 {source = "j < lens[b]"} : i1
  }
  return %0 : tensor<?x2x?x4xf32>
}

