// RUN: attnc-opt %s --attn-fuse-attention | FileCheck %s

// CHECK-LABEL: func @full_chain
func @full_chain(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x32xf32>, %len: tensor<?xi32>) -> tensor<?x8x?x32xf32> {
  // CHECK: %[[O:.*]] = attn.attention %arg0, %arg1, %arg2 extra(%arg3 : tensor<?xi32>)
  // CHECK-SAME: bias = "alibi"
  // CHECK-SAME: masks = ["window", "valid_len"]
  // CHECK-SAME: scale = 1.250000e-01 : f64
  // CHECK-SAME: score = "scaled_dot"
  // CHECK-SAME: softcap = 3.000000e+01 : f64
  // CHECK-SAME: window = 256 : i64
  // CHECK-NOT: attn.softmax
  // CHECK: return %[[O]]
  %s = attn.score %q, %k {kind = "scaled_dot"} : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x8x?x?xf32>
  %s1 = attn.scale %s {factor = 0.125 : f64} : tensor<?x8x?x?xf32>
  %s2 = attn.softcap %s1 {cap = 30.0 : f64} : tensor<?x8x?x?xf32>
  %s3 = attn.bias %s2 {kind = "alibi"} : tensor<?x8x?x?xf32>
  %s4 = attn.mask %s3 {kind = "window", window = 256 : i64} : tensor<?x8x?x?xf32>
  %s5 = attn.mask %s4 inputs(%len : tensor<?xi32>) {kind = "valid_len"} : tensor<?x8x?x?xf32>
  %p = attn.softmax %s5 : tensor<?x8x?x?xf32>
  %o = attn.weighted_sum %p, %v : tensor<?x8x?x?xf32>, tensor<?x2x?x32xf32> -> tensor<?x8x?x32xf32>
  return %o : tensor<?x8x?x32xf32>
}

// Without a scale op the fused scale is 1.
// CHECK-LABEL: func @minimal
func @minimal(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  // CHECK: attn.attention %arg0, %arg1, %arg2 {masks = [], scale = 1.000000e+00 : f64, score = "dot"}
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = attn.softmax %s : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o : tensor<1x1x3x3xf32>
}

// The probabilities are also returned (the `weights` output): the fused op
// gets a second result.
// CHECK-LABEL: func @weights_output
func @weights_output(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) {
  // CHECK: %[[R:.*]]:2 = attn.attention
  // CHECK: return %[[R]]#0, %[[R]]#1
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = attn.softmax %s : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o, %p : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>
}

// Negative: the raw scores escape, so the chain cannot be fused.
// CHECK-LABEL: func @scores_escape
func @scores_escape(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) {
  // CHECK-NOT: attn.attention
  // CHECK: attn.weighted_sum
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = attn.softmax %s : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o, %s : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>
}

// Negative: a weighted sum of something that is not a softmax.
// CHECK-LABEL: func @no_softmax
func @no_softmax(%p: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  // CHECK-NOT: attn.attention
  // CHECK: attn.weighted_sum
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o : tensor<1x1x3x3xf32>
}

// The lse output: a logsumexp of the masked scores becomes the last result.
// CHECK-LABEL: func @lse_output
func @lse_output(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3xf32>) {
  // CHECK: %[[R:.*]]:3 = attn.attention
  // CHECK-SAME: -> tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3xf32>
  // CHECK-NOT: attn.logsumexp
  // CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %m = attn.mask %s {kind = "causal"} : tensor<1x1x3x3xf32>
  %p = attn.softmax %m : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %l = attn.logsumexp %m : tensor<1x1x3x3xf32> -> tensor<1x1x3xf32>
  return %o, %p, %l : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3xf32>
}

// Custom score, bias and mask regions move onto the fused op, unchanged;
// the declared inputs they read become extra operands.
// CHECK-LABEL: func @regions
func @regions(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %t: tensor<2xf32>) -> tensor<1x2x3x4xf32> {
  // CHECK: attn.attention %arg0, %arg1, %arg2 extra(%arg3 : tensor<2xf32>)
  // CHECK-SAME: bias = "custom", masks = ["causal", "custom"]
  // CHECK-SAME: score = "custom"
  // CHECK-SAME: score {
  // CHECK: ^bb0({{.*}}: index, {{.*}}: index, {{.*}}: index, {{.*}}: index, {{.*}}: index, {{.*}}: index, %[[DOT:.*]]: f32):
  // CHECK: attn.read %arg3
  // CHECK: arith.mulf %[[DOT]]
  // CHECK: } bias {
  // CHECK: arith.constant 5.000000e-01
  // CHECK: } masks {
  // CHECK: arith.cmpi ne
  // CHECK-NOT: attn.score
  %s = attn.score %q, %k inputs(%t : tensor<2xf32>) {kind = "custom"} : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x3xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index, %dot: f32):
    %0 = attn.read %t[%h] : tensor<2xf32> -> f32
    %1 = arith.mulf %dot, %0 : f32
    attn.yield %1 : f32
  }
  %s1 = attn.bias %s {kind = "custom"} : tensor<1x2x3x3xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.constant 0.5 : f32
    attn.yield %0 : f32
  }
  %s2 = attn.mask %s1 {kind = "causal"} : tensor<1x2x3x3xf32>
  %s3 = attn.mask %s2 {kind = "custom"} : tensor<1x2x3x3xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.cmpi ne, %i, %j : index
    attn.yield %0 : i1
  }
  %p = attn.softmax %s3 : tensor<1x2x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// Negative: the masked scores have a user other than softmax and logsumexp.
// CHECK-LABEL: func @masked_escape
func @masked_escape(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) {
  // CHECK-NOT: attn.attention
  // CHECK: attn.weighted_sum
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %m = attn.mask %s {kind = "causal"} : tensor<1x1x3x3xf32>
  %p = attn.softmax %m : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o, %m : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>
}
