// RUN: attnc-opt %s -split-input-file -verify-diagnostics
// Every verifier message of the attn dialect.

func @heads_not_divisible(%q: tensor<1x6x4x8xf32>, %k: tensor<1x4x4x8xf32>) {
  // expected-error @+1 {{query heads (6) must be a multiple of key/value heads (4)}}
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x6x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x6x4x4xf32>
  return
}

// -----

func @batch_differs(%q: tensor<2x2x4x8xf32>, %k: tensor<3x2x4x8xf32>) {
  // expected-error @+1 {{batch sizes of query and key differ}}
  %s = attn.score %q, %k {kind = "dot"} : tensor<2x2x4x8xf32>, tensor<3x2x4x8xf32> -> tensor<2x2x4x4xf32>
  return
}

// -----

func @width_differs(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x16xf32>) {
  // expected-error @+1 {{query width 8 differs from key width 16; only the additive score allows that}}
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func @hidden_missing(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x16xf32>) {
  // expected-error @+1 {{'hidden' is required by, and only by, the additive score}}
  %s = attn.score %q, %k {kind = "additive"} : tensor<1x2x4x8xf32>, tensor<1x2x4x16xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func @weights_missing(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{score 'general' takes 1 weight tensors, got 0}}
  %s = attn.score %q, %k {kind = "general"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func @bad_result(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x5x8xf32>) {
  // expected-error @+1 {{result must be [B, H, Lq, Lk] of the query and key}}
  %s = attn.score %q, %k {kind = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x5x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func @unknown_score(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{attribute 'kind' failed to satisfy constraint: score function}}
  %s = attn.score %q, %k {kind = "bogus"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func @scale_nan(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{scale factor must be finite}}
  %r = attn.scale %s {factor = 0x7FF8000000000000 : f64} : tensor<1x2x4x4xf32>
  return
}

// -----

func @softcap_negative(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{softcap must be a positive finite constant}}
  %r = attn.softcap %s {cap = -1.0 : f64} : tensor<1x2x4x4xf32>
  return
}

// -----

func @window_missing(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'window' is required by, and only by, the window mask}}
  %r = attn.mask %s {kind = "window"} : tensor<1x2x4x4xf32>
  return
}

// -----

func @window_zero(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{window must be at least 1, got 0}}
  %r = attn.mask %s {kind = "window", window = 0 : i64} : tensor<1x2x4x4xf32>
  return
}

// -----

func @valid_len_missing(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{mask 'valid_len' takes 1 input tensors, got 0}}
  %r = attn.mask %s {kind = "valid_len"} : tensor<1x2x4x4xf32>
  return
}

// -----

func @keys_differ(%p: tensor<1x2x4x4xf32>, %v: tensor<1x2x5x8xf32>) {
  // expected-error @+1 {{probabilities cover 4 keys but value has 5}}
  %o = attn.weighted_sum %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x5x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @sum_result(%p: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{result must be [B, H, Lq, Dv]}}
  %o = attn.weighted_sum %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x7xf32>
  return
}

// -----

func @kv_heads_differ(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x4x4x8xf32>) {
  // expected-error @+1 {{key and value have different head counts}}
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
  return
}

// -----

func @kv_length_differ(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x5x8xf32>) {
  // expected-error @+1 {{key and value have different sequence lengths}}
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x5x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @unknown_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{unknown mask kind 'diagonal'}}
  %o = attn.attention %q, %k, %v {masks = ["diagonal"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @no_results(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{expects 1 to 3 results (out, weights, lse), got 0}}
  "attn.attention"(%q, %k, %v) ({}, {}) {masks = [], scale = 1.0 : f64, score = "dot"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> ()
  return
}

// -----

func @out_width(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{first result must be out : [B, H, Lq, Dv]}}
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x3xf32>
  return
}

// -----
//===--- Expression regions ------------------------------------------------===//

func @custom_score_without_region(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{a custom score needs a 'score' region}}
  %s = attn.score %q, %k {kind = "custom"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func @region_on_builtin_bias(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{only a custom bias has a 'bias' region}}
  %b = attn.bias %s {kind = "alibi"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.constant 1.0 : f32
    attn.yield %0 : f32
  }
  return
}

// -----

func @inputs_on_builtin_score(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %t: tensor<2xf32>) {
  // expected-error @+1 {{only a custom score reads declared inputs}}
  %s = attn.score %q, %k inputs(%t : tensor<2xf32>) {kind = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func @inputs_on_builtin_bias(%s: tensor<1x2x4x4xf32>, %t: tensor<2xf32>) {
  // expected-error @+1 {{only a custom bias reads declared inputs}}
  %b = attn.bias %s inputs(%t : tensor<2xf32>) {kind = "alibi"} : tensor<1x2x4x4xf32>
  return
}

// -----

func @two_blocks(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'mask' region must have exactly one block}}
  %m = attn.mask %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    br ^bb1
  ^bb1:
    %0 = arith.constant true
    attn.yield %0 : i1
  }
  return
}

// -----

func @missing_arguments(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'bias' region takes (b, h, i, j, g, ip : index), got 5 arguments}}
  %b = attn.bias %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index):
    %0 = arith.constant 1.0 : f32
    attn.yield %0 : f32
  }
  return
}

// -----

func @argument_not_index(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'mask' region takes (b, h, i, j, g, ip : index), argument #2 is 'f32'}}
  %m = attn.mask %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: f32, %j: index, %g: index, %ip: index):
    %0 = arith.constant true
    attn.yield %0 : i1
  }
  return
}

// -----

func @dot_not_f32(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'score' region takes (b, h, i, j, g, ip : index, dot : f32), 'dot' is 'i32'}}
  %s = attn.score %q, %k {kind = "custom"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index, %dot: i32):
    %0 = arith.constant 1.0 : f32
    attn.yield %0 : f32
  }
  return
}

// -----

func @no_yield(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'bias' region must end with attn.yield}}
  %b = attn.bias %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    return
  }
  return
}

// -----

func @empty_block(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'bias' region must end with attn.yield}}
  %b = attn.bias %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
  }
  return
}

// -----

func @mask_yields_float(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'mask' region must yield 'i1', got 'f32'}}
  %m = attn.mask %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.constant 1.0 : f32
    attn.yield %0 : f32
  }
  return
}

// -----

func @op_not_allowed(%s: tensor<1x2x4x4xf32>) {
  %m = attn.mask %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %0 = arith.cmpi slt, %j, %ip : index
    // expected-error @+1 {{'std.assert' op is not allowed in an expression region (allowed: arith, math, select, attn.size, attn.read)}}
    assert %0, "j < ip"
    attn.yield %0 : i1
  }
  return
}

// -----

func @value_from_outside(%s: tensor<1x2x4x4xf32>, %n: index) {
  %m = attn.mask %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    // expected-error @+1 {{'arith.cmpi' op uses a value defined outside its expression region; only constants and the owner's input tensors may be used}}
    %0 = arith.cmpi slt, %j, %n : index
    attn.yield %0 : i1
  }
  return
}

// -----

func @unknown_size(%s: tensor<1x2x4x4xf32>) {
  %m = attn.mask %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    // expected-error @+1 {{unknown size 'Q' (expected B, H, G, Lq, Lk, D or Dv)}}
    %n = attn.size "Q"
    %0 = arith.cmpi slt, %j, %n : index
    attn.yield %0 : i1
  }
  return
}

// -----

func @read_outside_region(%t: tensor<2xf32>, %n: index) {
  // expected-error @+1 {{must be inside the expression region of an attn op}}
  %0 = attn.read %t[%n] : tensor<2xf32> -> f32
  return
}

// -----

func @read_not_an_operand(%s: tensor<1x2x4x4xf32>, %t: tensor<2xf32>) {
  %b = attn.bias %s {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    // expected-error @+1 {{reads a tensor that is not an operand of the enclosing 'attn.bias'}}
    %0 = attn.read %t[%h] : tensor<2xf32> -> f32
    attn.yield %0 : f32
  }
  return
}

// -----

func @read_rank(%s: tensor<1x2x4x4xf32>, %t: tensor<2xf32>) {
  %b = attn.bias %s inputs(%t : tensor<2xf32>) {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    // expected-error @+1 {{reads a rank-1 tensor with 2 indices}}
    %0 = attn.read %t[%h, %i] : tensor<2xf32> -> f32
    attn.yield %0 : f32
  }
  return
}

// -----

func @read_f16(%s: tensor<1x2x4x4xf32>, %t: tensor<2xf16>) {
  %b = attn.bias %s inputs(%t : tensor<2xf16>) {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    // expected-error @+1 {{reads f32 or integer tensors, not 'f16'}}
    %0 = attn.read %t[%h] : tensor<2xf16> -> f32
    attn.yield %0 : f32
  }
  return
}

// -----

func @read_int_as_float(%s: tensor<1x2x4x4xf32>, %t: tensor<2xi32>) {
  %b = attn.bias %s inputs(%t : tensor<2xi32>) {kind = "custom"} : tensor<1x2x4x4xf32> {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    // expected-error @+1 {{returns f32 for f32 tensors and index for integer tensors, expected 'index'}}
    %0 = attn.read %t[%h] : tensor<2xi32> -> f32
    attn.yield %0 : f32
  }
  return
}

// -----
//===--- The fused op's regions and results --------------------------------===//

func @mask_regions_count(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{has 1 custom mask terms but 0 mask regions}}
  %o = attn.attention %q, %k, %v {masks = ["custom"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @fused_custom_score_without_region(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{a custom score needs a 'score' region}}
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "custom"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @key_hi_input_range(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{key_hi_input 3 is not an extra operand}}
  %o = attn.attention %q, %k, %v {key_hi_input = 3 : i64, masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @results_order(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{results after out must be weights [B, H, Lq, Lk] then lse [B, H, Lq], each at most once}}
  %o:3 = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4x4xf32>
  return
}

// -----

func @lse_shape(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{lse result must share [B, H, Lq] with out}}
  %o:2 = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x5xf32>
  return
}

// -----

func @weights_shape(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{weights result must be [B, H, Lq, Lk]}}
  %o:2 = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x5xf32>
  return
}

// -----

func @logsumexp_shape(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{result must be [B, H, Lq] of the scores}}
  %l = attn.logsumexp %s : tensor<1x2x4x4xf32> -> tensor<1x3x4xf32>
  return
}

// -----
//===--- Projections -------------------------------------------------------===//

func @project_width(%x: tensor<1x3x8xf32>, %w: tensor<4x16xf32>) {
  // expected-error @+1 {{input width 8 differs from the weight's columns 16 (weights are [out, in])}}
  %p = attn.project %x, %w : tensor<1x3x8xf32>, tensor<4x16xf32> -> tensor<1x3x4xf32>
  return
}

// -----

func @project_bias(%x: tensor<1x3x8xf32>, %w: tensor<4x8xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{bias width 5 differs from the weight's rows 4}}
  %p = attn.project %x, %w bias(%b : tensor<5xf32>) : tensor<1x3x8xf32>, tensor<4x8xf32> -> tensor<1x3x4xf32>
  return
}

// -----

func @project_result(%x: tensor<1x3x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{result must be [B, L, N] for input [B, L, M] and weight [N, M]}}
  %p = attn.project %x, %w : tensor<1x3x8xf32>, tensor<4x8xf32> -> tensor<1x3x8xf32>
  return
}

// -----

func @project_element_type(%x: tensor<1x3x8xf16>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{operand #0 must be 2D/3D tensor of 32-bit float values}}
  %p = attn.project %x, %w : tensor<1x3x8xf16>, tensor<8x4xf32> -> tensor<1x3x4xf32>
  return
}

// -----

func @split_zero_heads(%x: tensor<1x3x8xf32>) {
  // expected-error @+1 {{heads must be at least 1, got 0}}
  %h = attn.split_heads %x {heads = 0 : i64} : tensor<1x3x8xf32> -> tensor<1x2x3x4xf32>
  return
}

// -----

func @split_head_count(%x: tensor<1x3x8xf32>) {
  // expected-error @+1 {{result has 3 heads, expected 2}}
  %h = attn.split_heads %x {heads = 2 : i64} : tensor<1x3x8xf32> -> tensor<1x3x3x4xf32>
  return
}

// -----

func @split_shape(%x: tensor<1x3x8xf32>) {
  // expected-error @+1 {{result must be [B, heads, L, W] for input [B, L, heads * W]}}
  %h = attn.split_heads %x {heads = 2 : i64} : tensor<1x3x8xf32> -> tensor<1x2x5x4xf32>
  return
}

// -----

func @split_width(%x: tensor<1x3x8xf32>) {
  // expected-error @+1 {{input width 8 is not heads (2) x head width (3)}}
  %h = attn.split_heads %x {heads = 2 : i64} : tensor<1x3x8xf32> -> tensor<1x2x3x3xf32>
  return
}

// -----

func @merge_shape(%x: tensor<1x2x3x4xf32>) {
  // expected-error @+1 {{result must be [B, L, H * W] for input [B, H, L, W]}}
  %m = attn.merge_heads %x : tensor<1x2x3x4xf32> -> tensor<1x2x8xf32>
  return
}

// -----

func @merge_width(%x: tensor<1x2x3x4xf32>) {
  // expected-error @+1 {{result width 6 is not heads (2) x head width (4)}}
  %m = attn.merge_heads %x : tensor<1x2x3x4xf32> -> tensor<1x3x6xf32>
  return
}

// -----

func @sink_missing(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'sink' is required by, and only by, the sink mask}}
  %r = attn.mask %s {kind = "sink"} : tensor<1x2x4x4xf32>
  return
}

// -----

func @sink_on_causal(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'sink' is required by, and only by, the sink mask}}
  %r = attn.mask %s {kind = "causal", sink = 4 : i64} : tensor<1x2x4x4xf32>
  return
}

// -----

func @groups_empty(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{'groups' must name at least one group}}
  %r = attn.mask %s {kind = "causal", groups = []} : tensor<1x2x4x4xf32>
  return
}

// -----

func @groups_negative(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{group numbers must be in [0, 16), got -1}}
  %r = attn.mask %s {kind = "causal", groups = [-1]} : tensor<1x2x4x4xf32>
  return
}

// -----

func @key_padding_without_input(%s: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{mask 'key_padding' takes 1 input tensors, got 0}}
  %r = attn.mask %s {kind = "key_padding"} : tensor<1x2x4x4xf32>
  return
}

// -----

func @mask_groups_count(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{has 2 mask terms but 1 entries in 'mask_groups'}}
  %o = attn.attention %q, %k, %v {masks = ["causal", "sink"], mask_groups = [[0]], sink = 2 : i64, scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @mask_groups_gap(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{mask groups must be numbered 0 to n-1 without gaps}}
  %o = attn.attention %q, %k, %v {masks = ["causal", "sink"], mask_groups = [[0], [2]], sink = 2 : i64, scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @mask_groups_empty_entry(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{each 'mask_groups' entry must be a non-empty array of groups}}
  %o = attn.attention %q, %k, %v {masks = ["causal"], mask_groups = [[]], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @union_two_windows(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{a union of masks has at most one window and one sink term}}
  %o = attn.attention %q, %k, %v {masks = ["window", "window"], mask_groups = [[0], [1]], window = 2 : i64, scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @fused_sink_width_missing(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'window' and 'sink' are required by, and only by, those masks}}
  %o = attn.attention %q, %k, %v {masks = ["sink"], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return
}

// -----

func @rotary_base(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'attn.rotary' op base must be a finite number greater than 1, got 1}}
  %r = attn.rotary %q {base = 1.0 : f64, dims = 8 : i64, rows = "queries", style = "half"} : tensor<1x2x4x8xf32>
  return
}

// -----

func @rotary_odd_dims(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'attn.rotary' op dims must be even and at least 2, got 5}}
  %r = attn.rotary %q {base = 1.0e4 : f64, dims = 5 : i64, rows = "queries", style = "half"} : tensor<1x2x4x8xf32>
  return
}

// -----

func @rotary_too_wide(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'attn.rotary' op rotates 10 channels of rows 8 wide}}
  %r = attn.rotary %q {base = 1.0e4 : f64, dims = 10 : i64, rows = "keys", style = "half"} : tensor<1x2x4x8xf32>
  return
}

// -----

func @rotary_style(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'attn.rotary' op attribute 'style' failed to satisfy constraint: channel pairs of rotary embeddings}}
  %r = attn.rotary %q {base = 1.0e4 : f64, dims = 8 : i64, rows = "keys", style = "sideways"} : tensor<1x2x4x8xf32>
  return
}

// -----

func @rotary_rows(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{'attn.rotary' op attribute 'rows' failed to satisfy constraint: whose positions rotary embeddings use}}
  %r = attn.rotary %q {base = 1.0e4 : f64, dims = 8 : i64, rows = "values", style = "half"} : tensor<1x2x4x8xf32>
  return
}

// -----

func @sequences_heads(%q: tensor<?x4x16xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'attn.sequences' op result must be [B, heads, L, W] for tokens [T, heads, W]}}
  %s = attn.sequences %q, %cu : tensor<?x4x16xf32>, tensor<?xi32> -> tensor<?x2x?x16xf32>
  return
}

// -----

func @sequences_count(%q: tensor<?x4x16xf32>, %cu: tensor<4xi32>) {
  // expected-error @+1 {{'attn.sequences' op has 4 cu_seqlens entries for 2 sequences; expected B + 1}}
  %s = attn.sequences %q, %cu : tensor<?x4x16xf32>, tensor<4xi32> -> tensor<2x4x?x16xf32>
  return
}

// -----

func @pack_rank(%o: tensor<?x4x?x16xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'attn.pack' op result must be [T, H, W] for rows [B, H, L, W]}}
  %p = attn.pack %o, %cu : tensor<?x4x?x16xf32>, tensor<?xi32> -> tensor<4x?xf32>
  return
}

// -----

func @pack_lse(%l: tensor<?x4x?xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{'attn.pack' op result must be [H, T] for rows [B, H, L]}}
  %p = attn.pack %l, %cu : tensor<?x4x?xf32>, tensor<?xi32> -> tensor<3x?xf32>
  return
}

// -----

func @split_tokens_width(%x: tensor<5x8xf32>) {
  // expected-error @+1 {{'attn.split_heads' op input width 8 is not heads (2) x head width (3)}}
  %s = attn.split_heads %x {heads = 2 : i64} : tensor<5x8xf32> -> tensor<5x2x3xf32>
  return
}

// -----

func @project_tokens(%x: tensor<5x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'attn.project' op result must be [T, N] for tokens [T, M] and weight [N, M]}}
  %p = attn.project %x, %w : tensor<5x8xf32>, tensor<4x8xf32> -> tensor<5x3xf32>
  return
}

// -----

func @cache_element_type(%c: tensor<2x2x64x8xf64>, %k: tensor<2x2x?x8xf32>, %len: tensor<2xi32>) {
  // expected-error @+1 {{'attn.cache' op cache must be a rank-4 tensor of f32, f16 or bf16, got 'tensor<2x2x64x8xf64>'}}
  %r = attn.cache %c, %k, %len {kind = "contiguous"} : tensor<2x2x64x8xf64>, tensor<2x2x?x8xf32>, tensor<2xi32> -> tensor<2x2x?x8xf32>
  return
}

// -----

func @cache_width(%c: tensor<2x2x64x16xf32>, %k: tensor<2x2x?x8xf32>, %len: tensor<2xi32>) {
  // expected-error @+1 {{'attn.cache' op cache, new rows and result must agree in kv heads and width}}
  %r = attn.cache %c, %k, %len {kind = "contiguous"} : tensor<2x2x64x16xf32>, tensor<2x2x?x8xf32>, tensor<2xi32> -> tensor<2x2x?x8xf32>
  return
}

// -----

func @cache_lengths(%c: tensor<2x2x64x8xf32>, %k: tensor<2x2x?x8xf32>, %len: tensor<3xi32>) {
  // expected-error @+1 {{'attn.cache' op cache_len must hold one length per sequence of the new rows}}
  %r = attn.cache %c, %k, %len {kind = "contiguous"} : tensor<2x2x64x8xf32>, tensor<2x2x?x8xf32>, tensor<3xi32> -> tensor<2x2x?x8xf32>
  return
}

// -----

func @cache_paged_without_table(%c: tensor<?x2x16x8xf32>, %k: tensor<2x2x?x8xf32>, %len: tensor<2xi32>) {
  // expected-error @+1 {{'attn.cache' op paged caches need a block_table operand and a block size}}
  %r = attn.cache %c, %k, %len {kind = "paged", block = 16} : tensor<?x2x16x8xf32>, tensor<2x2x?x8xf32>, tensor<2xi32> -> tensor<2x2x?x8xf32>
  return
}

// -----

func @cache_contiguous_with_table(%c: tensor<2x2x64x8xf32>, %k: tensor<2x2x?x8xf32>, %len: tensor<2xi32>, %t: tensor<2x?xi32>) {
  // expected-error @+1 {{'attn.cache' op contiguous caches take no block_table or block size}}
  %r = attn.cache %c, %k, %len, %t {kind = "contiguous"} : tensor<2x2x64x8xf32>, tensor<2x2x?x8xf32>, tensor<2xi32>, tensor<2x?xi32> -> tensor<2x2x?x8xf32>
  return
}

// -----

func @cache_block_rows(%c: tensor<?x2x8x8xf32>, %k: tensor<2x2x?x8xf32>, %len: tensor<2xi32>, %t: tensor<2x?xi32>) {
  // expected-error @+1 {{'attn.cache' op cache blocks hold 8 rows, not the block size 16}}
  %r = attn.cache %c, %k, %len, %t {kind = "paged", block = 16} : tensor<?x2x8x8xf32>, tensor<2x2x?x8xf32>, tensor<2xi32>, tensor<2x?xi32> -> tensor<2x2x?x8xf32>
  return
}

// -----

func @cache_contiguous_batch(%c: tensor<3x2x64x8xf32>, %k: tensor<2x2x?x8xf32>, %len: tensor<2xi32>) {
  // expected-error @+1 {{'attn.cache' op a contiguous cache holds one row per sequence of the new rows}}
  %r = attn.cache %c, %k, %len {kind = "contiguous"} : tensor<3x2x64x8xf32>, tensor<2x2x?x8xf32>, tensor<2xi32> -> tensor<2x2x?x8xf32>
  return
}

// -----

// expected-error @+1 {{'attn.backward' is a unit attribute}}
func @backward_not_unit() attributes {attn.backward = true} {
  return
}

// -----

// expected-error @+1 {{'attn.backward' needs the kernel to return 'lse' (an output of 'attn.arguments'): its gradients are recomputed from it}}
func @backward_without_lse() attributes {attn.backward, attn.arguments = [{name = "out", role = "output", shape = ["B"]}]} {
  return
}

// -----

func @backward_on_an_op() {
  // expected-error @+1 {{'attn.backward' belongs on a kernel function}}
  %c = arith.constant {attn.backward} 1 : i32
  return
}
