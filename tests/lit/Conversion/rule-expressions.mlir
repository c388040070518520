// RUN: attnc %s --emit=header | FileCheck %s
// RUN: sed -e 's/ {source = "[^"]*"}//' %s > %t.mlir
// RUN: attnc %t.mlir --emit=header | FileCheck %s --check-prefix=NOSRC
// RUN: attnc %s --emit=halide | FileCheck %s --check-prefix=HALIDE
// Custom regions become expression graphs; the header shows each
// region's `source` text.

// CHECK:      *   score = dot(q, k) / temperature[h], scale = 1
// CHECK-NEXT: *   bias = -0.5 * abs(ip - j)
// CHECK-NEXT: *   mask = causal & (j % 4 != 3 or Lk < 16)
// CHECK-NEXT: *   project = none, layout = bhsd, dtype = f32, outputs = out
// CHECK-NEXT: *   input temperature : f32[H]

// Without `source` the header names the kind.
// NOSRC:      *   score = custom, scale = 1
// NOSRC-NEXT: *   bias = custom
// NOSRC-NEXT: *   mask = causal & custom

// The graphs are built into the algorithm: the mask tests j % 4 with
// Halide's `%`, the score divides by the clamped read of `temperature`
// (per chunk of 8 keys that a row of the tile sees: run-time sizes).
// HALIDE: func block_score(jj, ii, qt, kb, h, b) = (float32)undef()
// HALIDE: update block_score(((rjc$y*8) + rjc$x), ii, qt, kb, h, b) =
// HALIDE-SAME: (((t2 % 4) != 3) || (k.extent.1 < 16))
// HALIDE-SAME: (float32)qk(t2, t3, h, b)/(float32)temperature_clamped(

func @k(%arg0: tensor<?x2x?x4xf32>, %arg1: tensor<?x2x?x4xf32>, %arg2: tensor<?x2x?x4xf32>, %arg3: tensor<2xf32>) -> tensor<?x2x?x4xf32>
    attributes {attn.arguments = [
      {name = "q", role = "data", shape = ["B", "H=2", "Lq", "D=4"]},
      {name = "k", role = "data", shape = ["B", "G=2", "Lk", "Dk=4"]},
      {name = "v", role = "data", shape = ["B", "G=2", "Lk", "Dv=4"]},
      {name = "temperature", role = "declared", shape = ["H=2"]},
      {name = "out", role = "output", shape = ["B", "H=2", "Lq", "Dv=4"]}], attn.layout = "bhsd"} {
  %0 = attn.attention %arg0, %arg1, %arg2 extra(%arg3 : tensor<2xf32>) {bias = "custom", key_hi_offset = 1 : i64, mask_needs_test, masks = ["causal", "custom"], scale = 1.000000e+00 : f64, score = "custom"} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32> score {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index, %dot: f32):
    %1 = attn.read %arg3[%h] : tensor<2xf32> -> f32
    %2 = arith.divf %dot, %1 : f32
    attn.yield %2 {source = "dot(q, k) / temperature[h]"} : f32
  } bias {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %c0 = arith.constant 0 : index
    %cst = arith.constant 5.000000e-01 : f32
    %1 = arith.negf %cst : f32
    %2 = arith.subi %ip, %j : index
    %3 = arith.cmpi slt, %2, %c0 : index
    %4 = arith.subi %c0, %2 : index
    %5 = select %3, %4, %2 : index
    %6 = arith.index_cast %5 : index to i32
    %7 = arith.sitofp %6 : i32 to f32
    %8 = arith.mulf %1, %7 : f32
    attn.yield %8 {source = "-0.5 * abs(ip - j)"} : f32
  } masks {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %g: index, %ip: index):
    %c16 = arith.constant 16 : index
    %c3 = arith.constant 3 : index
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %1 = arith.remsi %j, %c4 : index
    %2 = arith.cmpi slt, %1, %c0 : index
    %3 = arith.addi %1, %c4 : index
    %4 = select %2, %3, %1 : index
    %5 = arith.cmpi ne, %4, %c3 : index
    %Lk = attn.size "Lk"
    %6 = arith.cmpi slt, %Lk, %c16 : index
    %7 = arith.ori %5, %6 : i1
    attn.yield %7 {source = "(j % 4 != 3 or Lk < 16)"} : i1
  }
  return %0 : tensor<?x2x?x4xf32>
}

