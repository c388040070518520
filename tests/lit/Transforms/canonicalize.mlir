// RUN: attnc-opt %s --canonicalize | FileCheck %s
// Scale folds: a scale of 1 is the identity; two scales merge.

// CHECK-LABEL: func @scale_of_one
func @scale_of_one(%s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // CHECK-NOT: attn.scale
  // CHECK: return %arg0
  %r = attn.scale %s {factor = 1.0 : f64} : tensor<1x2x4x4xf32>
  return %r : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func @merge_scales
func @merge_scales(%s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // CHECK: %[[R:.*]] = attn.scale %arg0 {factor = 1.250000e-01 : f64}
  // CHECK-NOT: attn.scale
  // CHECK: return %[[R]]
  %a = attn.scale %s {factor = 0.5 : f64} : tensor<1x2x4x4xf32>
  %b = attn.scale %a {factor = 0.25 : f64} : tensor<1x2x4x4xf32>
  return %b : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func @scales_cancel
func @scales_cancel(%s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // CHECK-NOT: attn.scale
  // CHECK: return %arg0
  %a = attn.scale %s {factor = 2.0 : f64} : tensor<1x2x4x4xf32>
  %b = attn.scale %a {factor = 0.5 : f64} : tensor<1x2x4x4xf32>
  return %b : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func @other_scale_kept
func @other_scale_kept(%s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // CHECK: attn.scale %arg0 {factor = 3.000000e+00 : f64}
  %a = attn.scale %s {factor = 3.0 : f64} : tensor<1x2x4x4xf32>
  return %a : tensor<1x2x4x4xf32>
}

// Constants folded inside an expression region stay in it (the dialect's
// fold interface), so the region stays self-contained.
// CHECK-LABEL: func @fold_in_region
func @fold_in_region(%s: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // CHECK-NOT: arith.constant
  // CHECK: attn.bias
  // CHECK-NEXT: ^bb0
  // CHECK-NEXT: %[[C:.*]] = arith.constant 7 : index
  // CHECK-NEXT: %[[X:.*]] = arith.addi %j, %[[C]] : index
  %b = attn.bias %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %0 = arith.addi %c3, %c4 : index
    %1 = arith.addi %j, %0 : index
    %2 = arith.index_cast %1 : index to i32
    %3 = arith.sitofp %2 : i32 to f32
    attn.yield %3 : f32
  }
  return %b : tensor<1x2x4x4xf32>
}
