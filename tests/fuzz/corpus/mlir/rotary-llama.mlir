module {
  func @rope_llama(%arg0: tensor<?x?x64xf32>, %arg1: tensor<64x64xf32>, %arg2: tensor<32x64xf32>, %arg3: tensor<32x64xf32>, %arg4: tensor<64x64xf32>) -> tensor<?x?x64xf32> attributes {attn.arguments = [{name = "x", role = "data", shape = ["B", "Lq", "M=64"]}, {name = "w_q", role = "weight", shape = ["H*D=64", "M=64"]}, {name = "w_k", role = "weight", shape = ["G*D=32", "M=64"]}, {name = "w_v", role = "weight", shape = ["G*Dv=32", "M=64"]}, {name = "w_o", role = "weight", shape = ["M=64", "H*Dv=64"]}, {name = "out", role = "output", shape = ["B", "Lq", "M=64"]}], attn.layout = "bhsd", attn.seq_k_is_seq_q} {
    %0 = attn.project %arg0, %arg1 : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
    %1 = attn.split_heads %0 {heads = 4 : i64} : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
    %2 = attn.project %arg0, %arg2 : tensor<?x?x64xf32>, tensor<32x64xf32> -> tensor<?x?x32xf32>
    %3 = attn.split_heads %2 {heads = 2 : i64} : tensor<?x?x32xf32> -> tensor<?x2x?x16xf32>
    %4 = attn.project %arg0, %arg3 : tensor<?x?x64xf32>, tensor<32x64xf32> -> tensor<?x?x32xf32>
    %5 = attn.split_heads %4 {heads = 2 : i64} : tensor<?x?x32xf32> -> tensor<?x2x?x16xf32>
    %6 = attn.rotary %1 {base = 5.000000e+05 : f64, dims = 16 : i64, rows = "queries", style = "half"} : tensor<?x4x?x16xf32>
    %7 = attn.rotary %3 {base = 5.000000e+05 : f64, dims = 16 : i64, rows = "keys", style = "half"} : tensor<?x2x?x16xf32>
    %8 = attn.score %6, %7 {kind = "scaled_dot"} : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32> -> tensor<?x4x?x?xf32>
    %9 = attn.scale %8 {factor = 2.500000e-01 : f64} : tensor<?x4x?x?xf32>
    %10 = attn.mask %9 {kind = "causal"} : tensor<?x4x?x?xf32>
    %11 = attn.softmax %10 : tensor<?x4x?x?xf32>
    %12 = attn.weighted_sum %11, %5 : tensor<?x4x?x?xf32>, tensor<?x2x?x16xf32> -> tensor<?x4x?x16xf32>
    %13 = attn.merge_heads %12 : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
    %14 = attn.project %13, %arg4 : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
    return %14 : tensor<?x?x64xf32>
  }
}

