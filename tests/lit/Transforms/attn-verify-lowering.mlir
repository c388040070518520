// RUN: attnc-opt %s -split-input-file -verify-diagnostics --attn-verify-lowering

func @fused(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o : tensor<1x1x3x3xf32>
}

// -----

// Projections around the fused op, and the ops of its regions, are legal.
func @projected(%x: tensor<1x3x8xf32>, %wq: tensor<8x8xf32>, %wk: tensor<4x8xf32>, %wv: tensor<4x8xf32>, %wo: tensor<8x8xf32>) -> tensor<1x3x8xf32> {
  %px = attn.positions %x {kind = "sinusoidal"} : tensor<1x3x8xf32>
  %q0 = attn.project %px, %wq : tensor<1x3x8xf32>, tensor<8x8xf32> -> tensor<1x3x8xf32>
  %q = attn.split_heads %q0 {heads = 2 : i64} : tensor<1x3x8xf32> -> tensor<1x2x3x4xf32>
  %k0 = attn.project %px, %wk : tensor<1x3x8xf32>, tensor<4x8xf32> -> tensor<1x3x4xf32>
  %k = attn.split_heads %k0 {heads = 1 : i64} : tensor<1x3x4xf32> -> tensor<1x1x3x4xf32>
  %v0 = attn.project %px, %wv : tensor<1x3x8xf32>, tensor<4x8xf32> -> tensor<1x3x4xf32>
  %v = attn.split_heads %v0 {heads = 1 : i64} : tensor<1x3x4xf32> -> tensor<1x1x3x4xf32>
  %o = attn.attention %q, %k, %v {masks = ["custom"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>, tensor<1x1x3x4xf32> -> tensor<1x2x3x4xf32> masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.cmpi sle, %j, %ip : index
    attn.yield %0 : i1
  }
  %m = attn.merge_heads %o : tensor<1x2x3x4xf32> -> tensor<1x3x8xf32>
  %r = attn.project %m, %wo : tensor<1x3x8xf32>, tensor<8x8xf32> -> tensor<1x3x8xf32>
  return %r : tensor<1x3x8xf32>
}

// -----

func @unfused(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  // expected-error @+1 {{op was not fused into attn.attention; the Halide lowering only handles the fused form}}
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  %p = attn.softmax %s : tensor<1x1x3x3xf32>
  %o = attn.weighted_sum %p, %v : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o : tensor<1x1x3x3xf32>
}

// -----

// expected-error @+1 {{kernel 'empty' must hold exactly one attn.attention, found 0}}
func @empty(%q: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  return %q : tensor<1x1x3x3xf32>
}
