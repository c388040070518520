// RUN: attnc-opt %s --attn-analyze-mask | FileCheck %s
// Interval masks record [ip + key_lo_offset, ip + key_hi_offset) and
// key_hi_input (j < extra[n][b]); built-in masks and the same masks written
// as expression regions get the same bounds.

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
  // CHECK-SAME: key_hi_input = 0 : i64, key_hi_offset = 1 : i64
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

// The same masks as expression regions: j <= ip and j > ip - 256.
// CHECK-LABEL: func @expr_window
func @expr_window(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-SAME: key_hi_offset = 1 : i64, key_lo_offset = -255 : i64
  // CHECK-NOT: mask_needs_test
  %o = attn.attention %q, %k, %v {masks = ["custom"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %c256 = arith.constant 256 : index
    %0 = arith.cmpi sle, %j, %ip : index
    %1 = arith.subi %ip, %c256 : index
    %2 = arith.cmpi sgt, %j, %1 : index
    %3 = arith.andi %0, %2 : i1
    attn.yield %3 : i1
  }
  return %o : tensor<1x2x4x8xf32>
}

// Reversed operands and constants on either side: ip >= j, ip - 3 < j.
// CHECK-LABEL: func @expr_reversed
func @expr_reversed(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-SAME: key_hi_offset = 1 : i64, key_lo_offset = -2 : i64
  %o = attn.attention %q, %k, %v {masks = ["custom"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %c3 = arith.constant 3 : index
    %0 = arith.cmpi sge, %ip, %j : index
    %1 = arith.subi %ip, %c3 : index
    %2 = arith.cmpi slt, %1, %j : index
    %3 = arith.andi %0, %2 : i1
    attn.yield %3 : i1
  }
  return %o : tensor<1x2x4x8xf32>
}

// j < lens[b] bounds like valid_len, by the extra operand it reads.
// CHECK-LABEL: func @expr_lengths
func @expr_lengths(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %lens: tensor<1xi32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-SAME: key_hi_input = 0 : i64
  // CHECK-NOT: mask_needs_test
  %o = attn.attention %q, %k, %v extra(%lens : tensor<1xi32>) {masks = ["custom"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = attn.read %lens[%b] : tensor<1xi32> -> index
    %1 = arith.cmpi slt, %j, %0 : index
    attn.yield %1 : i1
  }
  return %o : tensor<1x2x4x8xf32>
}

// Negative: j % 2 == 0 is not an interval; it keeps the element test.
// CHECK-LABEL: func @expr_not_interval
func @expr_not_interval(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-NOT: key_hi_offset
  // CHECK-SAME: mask_needs_test
  %o = attn.attention %q, %k, %v {masks = ["custom"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %0 = arith.remsi %j, %c2 : index
    %1 = arith.cmpi eq, %0, %c0 : index
    attn.yield %1 : i1
  }
  return %o : tensor<1x2x4x8xf32>
}

// Negative: a disjunction is no interval, even of interval terms; a causal
// term beside it still bounds the keys.
// CHECK-LABEL: func @expr_or
func @expr_or(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-SAME: key_hi_offset = 1 : i64
  // CHECK-NOT: key_lo_offset
  // CHECK-SAME: mask_needs_test
  %o = attn.attention %q, %k, %v {masks = ["causal", "custom"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %c4 = arith.constant 4 : index
    %0 = arith.cmpi slt, %j, %c4 : index
    %1 = arith.subi %ip, %c4 : index
    %2 = arith.cmpi sgt, %j, %1 : index
    %3 = arith.ori %0, %2 : i1
    attn.yield %3 : i1
  }
  return %o : tensor<1x2x4x8xf32>
}

// With static lengths, i = ip - (Lk - Lq): j <= i is an interval (Lk - Lq = 2).
// CHECK-LABEL: func @expr_query_index
func @expr_query_index(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32> {
  // CHECK: attn.attention
  // CHECK-SAME: key_hi_offset = -1 : i64
  // CHECK-NOT: mask_needs_test
  %o = attn.attention %q, %k, %v {masks = ["custom"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32> -> tensor<1x2x4x8xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.cmpi sle, %j, %i : index
    attn.yield %0 : i1
  }
  return %o : tensor<1x2x4x8xf32>
}

// Negative: with a dynamic length, i is not known relative to ip.
// CHECK-LABEL: func @expr_query_index_dynamic
func @expr_query_index_dynamic(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  // CHECK: attn.attention
  // CHECK-NOT: key_hi_offset
  // CHECK-SAME: mask_needs_test
  %o = attn.attention %q, %k, %v {masks = ["custom"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.cmpi sle, %j, %i : index
    attn.yield %0 : i1
  }
  return %o : tensor<1x2x?x8xf32>
}
