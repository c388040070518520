// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// Sinusoidal positions would number a cache's new tokens from 0 on every call.

// CHECK: {{.*}}/error-cache-positions.mlir:19:11: error: 'attn.attention' op sinusoidal positions would number a cache's new tokens from 0: not supported
func @layer(%arg0: tensor<?x?x16xf32>, %arg1: tensor<?x2x?x8xf32>, %arg2: tensor<?x2x?x8xf32>, %arg3: tensor<?xi32>, %arg4: tensor<16x16xf32>, %arg5: tensor<16x16xf32>, %arg6: tensor<16x16xf32>) -> tensor<?x2x?x8xf32> 
    attributes {attn.arguments = [{name = "x", role = "data", shape = ["B", "Lq", "M=16"]}, {name = "k_cache", role = "cache", shape = ["B", "G=2", "Lmax", "Dk=8"]}, {name = "v_cache", role = "cache", shape = ["B", "G=2", "Lmax", "Dv=8"]}, {name = "cache_len", role = "data", shape = ["B"]}, {name = "w_q", role = "weight", shape = ["H*D=16", "M=16"]}, {name = "w_k", role = "weight", shape = ["G*D=16", "M=16"]}, {name = "w_v", role = "weight", shape = ["G*Dv=16", "M=16"]}, {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=8"]}], attn.layout = "bhsd"} {
    %p = attn.positions %arg0 {kind = "sinusoidal"} : tensor<?x?x16xf32>
    %0 = attn.project %p, %arg4 : tensor<?x?x16xf32>, tensor<16x16xf32> -> tensor<?x?x16xf32>
    %1 = attn.split_heads %0 {heads = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
    %2 = attn.project %p, %arg5 : tensor<?x?x16xf32>, tensor<16x16xf32> -> tensor<?x?x16xf32>
    %3 = attn.split_heads %2 {heads = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
    %4 = attn.project %p, %arg6 : tensor<?x?x16xf32>, tensor<16x16xf32> -> tensor<?x?x16xf32>
    %5 = attn.split_heads %4 {heads = 2 : i64} : tensor<?x?x16xf32> -> tensor<?x2x?x8xf32>
    %6 = attn.cache %arg1, %3, %arg3 {kind = "contiguous"} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?xi32> -> tensor<?x2x?x8xf32>
    %7 = attn.cache %arg2, %5, %arg3 {kind = "contiguous"} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?xi32> -> tensor<?x2x?x8xf32>
    %8 = attn.score %1, %6 {kind = "scaled_dot"} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x?xf32>
    %9 = attn.scale %8 {factor = 0.35355339059327373 : f64} : tensor<?x2x?x?xf32>
    %10 = attn.softmax %9 : tensor<?x2x?x?xf32>
    %11 = attn.weighted_sum %10, %7 : tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
    return %11 : tensor<?x2x?x8xf32>
  }
