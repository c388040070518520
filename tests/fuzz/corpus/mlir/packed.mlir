module {
  func @varlen(%arg0: tensor<?x4x16xf32>, %arg1: tensor<?x2x16xf32>, %arg2: tensor<?x2x16xf32>, %arg3: tensor<?xi32>, %arg4: tensor<?xi32>) -> (tensor<?x4x16xf32>, tensor<4x?xf32>) attributes {attn.arguments = [{name = "q", role = "data", shape = ["Tq", "H=4", "D=16"]}, {name = "k", role = "data", shape = ["Tk", "G=2", "Dk=16"]}, {name = "v", role = "data", shape = ["Tk", "G=2", "Dv=16"]}, {name = "cu_seqlens_q", role = "data", shape = ["B+1"]}, {name = "cu_seqlens_k", role = "data", shape = ["B+1"]}, {name = "out", role = "output", shape = ["Tq", "H=4", "Dv=16"]}, {name = "lse", role = "output", shape = ["H=4", "Tq"]}], attn.layout = "bhsd"} {
    %0 = attn.sequences %arg0, %arg3 : tensor<?x4x16xf32>, tensor<?xi32> -> tensor<?x4x?x16xf32>
    %1 = attn.sequences %arg1, %arg4 : tensor<?x2x16xf32>, tensor<?xi32> -> tensor<?x2x?x16xf32>
    %2 = attn.sequences %arg2, %arg4 : tensor<?x2x16xf32>, tensor<?xi32> -> tensor<?x2x?x16xf32>
    %3 = attn.score %0, %1 {kind = "scaled_dot"} : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32> -> tensor<?x4x?x?xf32>
    %4 = attn.scale %3 {factor = 2.500000e-01 : f64} : tensor<?x4x?x?xf32>
    %5 = attn.mask %4 {kind = "causal"} : tensor<?x4x?x?xf32>
    %6 = attn.softmax %5 : tensor<?x4x?x?xf32>
    %7 = attn.weighted_sum %6, %2 : tensor<?x4x?x?xf32>, tensor<?x2x?x16xf32> -> tensor<?x4x?x16xf32>
    %8 = attn.pack %7, %arg3 : tensor<?x4x?x16xf32>, tensor<?xi32> -> tensor<?x4x16xf32>
    %9 = attn.logsumexp %5 : tensor<?x4x?x?xf32> -> tensor<?x4x?xf32>
    %10 = attn.pack %9, %arg3 : tensor<?x4x?xf32>, tensor<?xi32> -> tensor<4x?xf32>
    return %8, %10 : tensor<?x4x16xf32>, tensor<4x?xf32>
  }
}

