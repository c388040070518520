// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s
// Packed batches: q by cu_seqlens_q, k and v by cu_seqlens_k, results packed.

// CHECK: {{.*}}/error-packed-offsets.mlir:10:{{[0-9]+}}: error: 'attn.attention' op q must be viewed by the kernel argument 'cu_seqlens_q', k and v by 'cu_seqlens_k'
module {
  func @varlen(%arg0: tensor<?x4x16xf32>, %arg1: tensor<?x2x16xf32>, %arg2: tensor<?x2x16xf32>, %arg3: tensor<?xi32>, %arg4: tensor<?xi32>) -> (tensor<?x4x16xf32>, tensor<4x?xf32>) attributes {attn.arguments = [{name = "q", role = "data", shape = ["Tq", "H=4", "D=16"]}, {name = "k", role = "data", shape = ["Tk", "G=2", "Dk=16"]}, {name = "v", role = "data", shape = ["Tk", "G=2", "Dv=16"]}, {name = "cu_seqlens_q", role = "data", shape = ["B+1"]}, {name = "cu_seqlens_k", role = "data", shape = ["B+1"]}, {name = "out", role = "output", shape = ["Tq", "H=4", "Dv=16"]}, {name = "lse", role = "output", shape = ["H=4", "Tq"]}], attn.layout = "bhsd"} {
    %0 = attn.sequences %arg0, %arg3 : tensor<?x4x16xf32>, tensor<?xi32> -> tensor<?x4x?x16xf32>
    %1 = attn.sequences %arg1, %arg3 : tensor<?x2x16xf32>, tensor<?xi32> -> tensor<?x2x?x16xf32>
    %2 = attn.sequences %arg2, %arg4 : tensor<?x2x16xf32>, tensor<?xi32> -> tensor<?x2x?x16xf32>
    %3:2 = attn.attention %0, %1, %2 {key_hi_offset = 1 : i64, masks = ["causal"], scale = 2.500000e-01 : f64, scale_on_query, score = "scaled_dot"} : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32> -> tensor<?x4x?x16xf32>, tensor<?x4x?xf32>
    %4 = attn.pack %3#0, %arg3 : tensor<?x4x?x16xf32>, tensor<?xi32> -> tensor<?x4x16xf32>
    %5 = attn.pack %3#1, %arg3 : tensor<?x4x?xf32>, tensor<?xi32> -> tensor<4x?xf32>
    return %4, %5 : tensor<?x4x16xf32>, tensor<4x?xf32>
  }
}
