// RUN: attnc-opt %s -split-input-file -verify-diagnostics --attn-verify-lowering

func @fused(%q: tensor<1x1x3x3xf32>, %k: tensor<1x1x3x3xf32>, %v: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %o = attn.attention %q, %k, %v {masks = [], scale = 1.0 : f64, score = "dot"} : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x3x3xf32>
  return %o : tensor<1x1x3x3xf32>
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
