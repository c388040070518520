// RUN: attnc-opt %s | attnc-opt | FileCheck %s
// Every attn op prints and parses back to itself.

// CHECK-LABEL: func @chain
func @chain(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x32xf32>, %len: tensor<?xi32>) -> tensor<?x8x?x32xf32> {
  // CHECK: attn.score %{{.*}}, %{{.*}} {kind = "scaled_dot"} : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x8x?x?xf32>
  %s = attn.score %q, %k {kind = "scaled_dot"} : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x8x?x?xf32>
  // CHECK: attn.scale %{{.*}} {factor = 1.250000e-01 : f64}
  %s1 = attn.scale %s {factor = 0.125 : f64} : tensor<?x8x?x?xf32>
  // CHECK: attn.softcap %{{.*}} {cap = 3.000000e+01 : f64}
  %s2 = attn.softcap %s1 {cap = 30.0 : f64} : tensor<?x8x?x?xf32>
  // CHECK: attn.bias %{{.*}} {kind = "alibi"}
  %s3 = attn.bias %s2 {kind = "alibi"} : tensor<?x8x?x?xf32>
  // CHECK: attn.mask %{{.*}} {kind = "window", window = 256 : i64}
  %s4 = attn.mask %s3 {kind = "window", window = 256 : i64} : tensor<?x8x?x?xf32>
  // CHECK: attn.mask %{{.*}} inputs(%{{.*}} : tensor<?xi32>) {kind = "valid_len"}
  %s5 = attn.mask %s4 inputs(%len : tensor<?xi32>) {kind = "valid_len"} : tensor<?x8x?x?xf32>
  // CHECK: attn.softmax
  %p = attn.softmax %s5 : tensor<?x8x?x?xf32>
  // CHECK: attn.weighted_sum %{{.*}}, %{{.*}} : tensor<?x8x?x?xf32>, tensor<?x2x?x32xf32> -> tensor<?x8x?x32xf32>
  %o = attn.weighted_sum %p, %v : tensor<?x8x?x?xf32>, tensor<?x2x?x32xf32> -> tensor<?x8x?x32xf32>
  return %o : tensor<?x8x?x32xf32>
}

// CHECK-LABEL: func @fused
func @fused(%q: tensor<1x4x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>) -> tensor<1x4x16x8xf32> {
  // CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} {key_hi_offset = 1 : i64, masks = ["causal"], scale = 5.000000e-01 : f64, scale_on_query, score = "dot"}
  %o = attn.attention %q, %k, %v {key_hi_offset = 1 : i64, masks = ["causal"], scale = 0.5 : f64, scale_on_query, score = "dot"} : tensor<1x4x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32> -> tensor<1x4x16x8xf32>
  return %o : tensor<1x4x16x8xf32>
}

// Projections: positions, q/k/v projections with and without bias, head
// split and merge, output projection.
// CHECK-LABEL: func @projections
func @projections(%x: tensor<?x?x16xf32>, %wq: tensor<8x16xf32>, %bq: tensor<8xf32>, %wo: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  // CHECK: attn.positions %{{.*}} {kind = "sinusoidal"} : tensor<?x?x16xf32>
  %px = attn.positions %x {kind = "sinusoidal"} : tensor<?x?x16xf32>
  // CHECK: attn.project %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<8xf32>) : tensor<?x?x16xf32>, tensor<8x16xf32> -> tensor<?x?x8xf32>
  %p = attn.project %px, %wq bias(%bq : tensor<8xf32>) : tensor<?x?x16xf32>, tensor<8x16xf32> -> tensor<?x?x8xf32>
  // CHECK: attn.split_heads %{{.*}} {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %h = attn.split_heads %p {heads = 2 : i64} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  // CHECK: attn.merge_heads %{{.*}} : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  %m = attn.merge_heads %h : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  // CHECK: attn.project %{{.*}}, %{{.*}} : tensor<?x?x8xf32>, tensor<16x8xf32> -> tensor<?x?x16xf32>
  %o = attn.project %m, %wo : tensor<?x?x8xf32>, tensor<16x8xf32> -> tensor<?x?x16xf32>
  return %o : tensor<?x?x16xf32>
}

// Expression regions on the unfused ops, and the lse of the masked scores.
// CHECK-LABEL: func @regions
func @regions(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>, %t: tensor<2xf32>, %lens: tensor<?xi32>) -> tensor<?x2x?xf32> {
  // CHECK: attn.score %{{.*}}, %{{.*}} inputs(%{{.*}} : tensor<2xf32>) {kind = "custom"} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x?xf32> {
  // Block arguments print with the language's names; attn.size names its result.
  // CHECK-NEXT: ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index, %dot: f32):
  // CHECK: attn.read %{{.*}}[%h] : tensor<2xf32> -> f32
  // CHECK: %Lk = attn.size "Lk"
  // CHECK: attn.yield %{{.*}} : f32
  %s = attn.score %q, %k inputs(%t : tensor<2xf32>) {kind = "custom"} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x?xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index, %dot: f32):
    %0 = attn.read %t[%h] : tensor<2xf32> -> f32
    %1 = arith.mulf %dot, %0 : f32
    %n = attn.size "Lk"
    %2 = arith.index_cast %n : index to i32
    %3 = arith.sitofp %2 : i32 to f32
    %4 = arith.divf %1, %3 : f32
    attn.yield %4 : f32
  }
  // CHECK: attn.bias %{{.*}} {kind = "custom"} : tensor<?x2x?x?xf32> {
  // CHECK: math.tanh
  %s1 = attn.bias %s {kind = "custom"} : tensor<?x2x?x?xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.subi %ip, %j : index
    %1 = arith.index_cast %0 : index to i32
    %2 = arith.sitofp %1 : i32 to f32
    %3 = math.tanh %2 : f32
    attn.yield %3 : f32
  }
  // CHECK: attn.mask %{{.*}} inputs(%{{.*}} : tensor<?xi32>) {kind = "custom"} : tensor<?x2x?x?xf32> {
  // CHECK: select
  // CHECK: attn.yield %{{.*}} : i1
  %s2 = attn.mask %s1 inputs(%lens : tensor<?xi32>) {kind = "custom"} : tensor<?x2x?x?xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = attn.read %lens[%b] : tensor<?xi32> -> index
    %1 = arith.cmpi slt, %j, %0 : index
    %true = arith.constant true
    %2 = select %1, %true, %1 : i1
    attn.yield %2 : i1
  }
  // CHECK: attn.logsumexp %{{.*}} : tensor<?x2x?x?xf32> -> tensor<?x2x?xf32>
  %l = attn.logsumexp %s2 : tensor<?x2x?x?xf32> -> tensor<?x2x?xf32>
  return %l : tensor<?x2x?xf32>
}

// The fused op with all three kinds of region and the weights and lse results.
// CHECK-LABEL: func @fused_regions
func @fused_regions(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %lens: tensor<1xi32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4xf32>) {
  // CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} extra(%{{.*}} : tensor<1xi32>) {bias = "custom", key_hi_input = 0 : i64, masks = ["custom", "causal", "custom"], scale = 1.000000e+00 : f64, score = "custom"}
  // CHECK-SAME: -> tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4xf32> score {
  // CHECK: } bias {
  // CHECK: } masks {
  // CHECK: }, {
  %o:3 = attn.attention %q, %k, %v extra(%lens : tensor<1xi32>) {bias = "custom", key_hi_input = 0 : i64, masks = ["custom", "causal", "custom"], scale = 1.0 : f64, score = "custom"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4xf32> score {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index, %dot: f32):
    attn.yield %dot : f32
  } bias {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.constant -1.0 : f32
    attn.yield %0 : f32
  } masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = attn.read %lens[%b] : tensor<1xi32> -> index
    %1 = arith.cmpi slt, %j, %0 : index
    attn.yield %1 : i1
  }, {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.cmpi ne, %i, %j : index
    attn.yield %0 : i1
  }
  return %o#0, %o#1, %o#2 : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4xf32>
}

// CHECK-LABEL: func @rotary
func @rotary(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>) {
  // CHECK: attn.rotary %{{.*}} {base = 1.000000e+04 : f64, dims = 64 : i64, rows = "queries", style = "half"} : tensor<?x8x?x64xf32>
  %rq = attn.rotary %q {base = 1.0e4 : f64, dims = 64 : i64, rows = "queries", style = "half"} : tensor<?x8x?x64xf32>
  // CHECK: attn.rotary %{{.*}} {base = 5.000000e+05 : f64, dims = 32 : i64, rows = "keys", style = "interleaved"} : tensor<?x2x?x64xf32>
  %rk = attn.rotary %k {base = 5.0e5 : f64, dims = 32 : i64, rows = "keys", style = "interleaved"} : tensor<?x2x?x64xf32>
  return %rq, %rk : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>
}

// CHECK-LABEL: func @packed
func @packed(%q: tensor<?x4x16xf32>, %cu: tensor<3xi32>) -> (tensor<?x4x16xf32>) {
  // CHECK: attn.sequences %{{.*}}, %{{.*}} : tensor<?x4x16xf32>, tensor<3xi32> -> tensor<2x4x?x16xf32>
  %s = attn.sequences %q, %cu : tensor<?x4x16xf32>, tensor<3xi32> -> tensor<2x4x?x16xf32>
  // CHECK: attn.pack %{{.*}}, %{{.*}} : tensor<2x4x?x16xf32>, tensor<3xi32> -> tensor<?x4x16xf32>
  %p = attn.pack %s, %cu : tensor<2x4x?x16xf32>, tensor<3xi32> -> tensor<?x4x16xf32>
  return %p : tensor<?x4x16xf32>
}

// CHECK-LABEL: func @caches
func @caches(%kc: tensor<?x2x4096x64xbf16>, %pc: tensor<?x2x16x64xf32>, %k: tensor<?x2x?x64xf32>,
             %len: tensor<?xi32>, %table: tensor<?x?xi32>) -> (tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) {
  // CHECK: attn.cache %{{.*}}, %{{.*}}, %{{.*}} {kind = "contiguous"} : tensor<?x2x4096x64xbf16>, tensor<?x2x?x64xf32>, tensor<?xi32> -> tensor<?x2x?x64xf32>
  %c = attn.cache %kc, %k, %len {kind = "contiguous"} : tensor<?x2x4096x64xbf16>, tensor<?x2x?x64xf32>, tensor<?xi32> -> tensor<?x2x?x64xf32>
  // CHECK: attn.cache %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {block = 16 : i64, kind = "paged"} : tensor<?x2x16x64xf32>, tensor<?x2x?x64xf32>, tensor<?xi32>, tensor<?x?xi32> -> tensor<?x2x?x64xf32>
  %p = attn.cache %pc, %k, %len, %table {block = 16 : i64, kind = "paged"} : tensor<?x2x16x64xf32>, tensor<?x2x?x64xf32>, tensor<?xi32>, tensor<?x?xi32> -> tensor<?x2x?x64xf32>
  return %c, %p : tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>
}

// CHECK-LABEL: func @token_projections
func @token_projections(%x: tensor<?x16xf32>, %w: tensor<8x16xf32>) -> tensor<?x8xf32> {
  // CHECK: attn.project %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
  %p = attn.project %x, %w : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
  // CHECK: attn.split_heads %{{.*}} {heads = 2 : i64} : tensor<?x8xf32> -> tensor<?x2x4xf32>
  %s = attn.split_heads %p {heads = 2 : i64} : tensor<?x8xf32> -> tensor<?x2x4xf32>
  // CHECK: attn.merge_heads %{{.*}} : tensor<?x2x4xf32> -> tensor<?x8xf32>
  %m = attn.merge_heads %s : tensor<?x2x4xf32> -> tensor<?x8xf32>
  return %m : tensor<?x8xf32>
}
