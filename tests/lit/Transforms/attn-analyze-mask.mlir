// RUN: attnc-opt %s --attn-analyze-mask | FileCheck %s
// Interval masks record [ip + key_lo_offset, ip + key_hi_offset).

// CHECK-LABEL: func @causal
func @causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-SAME: key_hi_offset = 1 : i64
  // CHECK-NOT: key_lo_offset
  // CHECK-NOT: mask_needs_test
  %o = attn.attention %q, %k, %v {masks = ["causal"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// CHECK-LABEL: func @window
func @window(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-SAME: key_hi_offset = 1 : i64, key_lo_offset = -255 : i64
  %o = attn.attention %q, %k, %v {masks = ["window"], window = 256 : i64, scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// A conjunction intersects: causal & valid_len.
// CHECK-LABEL: func @causal_and_valid_len
func @causal_and_valid_len(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %len: tensor<1xi32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-SAME: key_hi_offset = 1 : i64, key_hi_valid_len
  %o = attn.attention %q, %k, %v extra(%len : tensor<1xi32>) {masks = ["causal", "valid_len"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// Negative: a mask tensor is not an interval and keeps the element test.
// CHECK-LABEL: func @mask_tensor
func @mask_tensor(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x4x4xui8>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-NOT: key_hi_offset
  // CHECK-SAME: mask_needs_test
  %o = attn.attention %q, %k, %v extra(%m : tensor<1x4x4xui8>) {masks = ["input"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// Negative: no mask, no interval.
// CHECK-LABEL: func @unmasked
func @unmasked(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention %arg0, %arg1, %arg2 {masks = [], scale = 1.000000e+00 : f64, score = "dot"}
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}
