// RUN: attnc %s --emit=header | FileCheck %s
// attn.cache on k and v: the kernel's cache kind, its caches written in place
// (role "cache"), their capacity (the cache type's rows) and NAME_run's -4.

// CHECK: *   project = none, layout = bhsd, dtype = f32, outputs = out
// CHECK: io  k_cache : f32[B, G=2, Lmax, Dk=8]
// CHECK: -4: a sequence's cache_len + Lq exceeds its cache
// CHECK: int dec_run(const float *q, const float *k, const float *v, float *k_cache, float *v_cache, const int32_t *cache_len, float *out, int64_t B, int64_t Lq, int64_t Lmax);
func @dec(%q: tensor<?x4x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>, %kc: tensor<?x2x?x8xf32>, %vc: tensor<?x2x?x8xf32>, %len: tensor<?xi32>) -> tensor<?x4x?x8xf32>
    attributes {attn.arguments = [{name = "q", role = "data", shape = ["B", "H=4", "Lq", "D=8"]}, {name = "k", role = "data", shape = ["B", "G=2", "Lq", "Dk=8"]}, {name = "v", role = "data", shape = ["B", "G=2", "Lq", "Dv=8"]}, {name = "k_cache", role = "cache", shape = ["B", "G=2", "Lmax", "Dk=8"]}, {name = "v_cache", role = "cache", shape = ["B", "G=2", "Lmax", "Dv=8"]}, {name = "cache_len", role = "data", shape = ["B"]}, {name = "out", role = "output", shape = ["B", "H=4", "Lq", "Dv=8"]}], attn.layout = "bhsd"} {
  %kc2 = attn.cache %kc, %k, %len {kind = "contiguous"} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?xi32> -> tensor<?x2x?x8xf32>
  %vc2 = attn.cache %vc, %v, %len {kind = "contiguous"} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?xi32> -> tensor<?x2x?x8xf32>
  %0 = attn.attention %q, %kc2, %vc2 {masks = ["causal"], scale = 0.35355339059327373 : f64, score = "scaled_dot"} : tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}
