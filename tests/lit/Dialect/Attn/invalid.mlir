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
  %s = attn.score %q, %k {kind = "cosine"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
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
  "attn.attention"(%q, %k, %v) {masks = [], scale = 1.0 : f64, score = "dot"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> ()
  return
}

// -----

func @out_width(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{first result must be out : [B, H, Lq, Dv]}}
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x3xf32>
  return
}
