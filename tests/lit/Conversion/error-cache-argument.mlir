// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// The back end binds the caches by name: k goes to k_cache, v to v_cache.

// CHECK: {{.*}}/error-cache-argument.mlir:9:8: error: 'attn.attention' op k must be appended to the kernel argument 'k_cache' and v to 'v_cache'
func @dec(%q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>, %kc: tensor<?x2x?x8xf32>, %vc: tensor<?x2x?x8xf32>, %len: tensor<?xi32>) -> tensor<?x4x?x8xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=4", "Lq", "D=8"]}, {name = "k", role = "data", shape = ["B", "G=2", "Lq", "Dk=8"]}, {name = "v", role = "data", shape = ["B", "G=2", "Lq", "Dv=8"]}, {name = "k_cache", role = "cache", shape = ["B", "G=2", "Lmax", "Dk=8"]}, {name = "v_cache", role = "cache", shape = ["B", "G=2", "Lmax", "Dv=8"]}, {name = "cache_len", role = "data", shape = ["B"]}, {name = "out", role = "output", shape = ["B", "H=4", "Lq", "Dv=8"]}], attn.layout = "bhsd"} {
  %kc2 = attn.cache %vc, %k, %len {kind = "contiguous"} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?xi32> -> tensor<?x2x?x8xf32>
  %vc2 = attn.cache %kc, %v, %len {kind = "contiguous"} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?xi32> -> tensor<?x2x?x8xf32>
  %0 = attn.attention %q, %kc2, %vc2 {masks = ["causal"], scale = 0.35355339059327373 : f64, score = "scaled_dot"} : tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}
