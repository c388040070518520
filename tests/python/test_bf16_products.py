"""`attnc --bf16-products` (docs/tools.md): bf16 prefill whose Q.K^T and P.V
products are formed by AVX-512 BF16's vdpbf16ps where the host has it (P is
rounded to bf16 once more), against a float64 reference of the rounded inputs
within LANGUAGE.md 9.1's bound, 8e-3 * max(1, max|v|). On a host without the
instruction the option changes nothing and these are plain bf16 tests."""
import os
import subprocess

import numpy as np
import pytest

import attnc
from conftest import assert_close, reference

BOUND = 8e-3


def host_has_bf16_dot():
    with open("/proc/cpuinfo") as f:
        return "avx512_bf16" in f.read()


def compile_products(source):
    return attnc.compile(source, options="--bf16-products")


def bf16_inputs(rng, shapes, magnitude=1.0):
    bits = [attnc.f32_to_bf16((rng.standard_normal(s) * magnitude).astype(np.float32))
            for s in shapes]
    return bits, [attnc.bf16_to_f32(b) for b in bits]


@pytest.mark.parametrize("sizes, mask", [
    ("seq_q = 96; seq_k = 96", "causal"),        # fixed: both products in pairs
    ("", "causal"),                               # dynamic causal: P.V falls back to FMAs
    ("seq_q = 33; seq_k = 77", "none"),          # odd fixed sizes, keys past Lk in a pair
    ("", "none"),
])
def test_matches_reference(sizes, mask):
    lib = compile_products("kernel k { heads = 6; kv_heads = 2; head_dim = 64; %s; "
                           "dtype = bf16; mask = %s }" % (sizes, mask))
    rng = np.random.default_rng(7)
    Lq, Lk = (96, 96) if "96" in sizes else (33, 77)
    bits, wide = bf16_inputs(rng, [(2, 6, Lq, 64), (2, 2, Lk, 64), (2, 2, Lk, 64)])
    out = lib.k(q=bits[0], k=bits[1], v=bits[2])
    ref = reference(*wide, causal=mask == "causal")[0]
    assert_close(attnc.bf16_to_f32(out), ref, wide[2], BOUND)


def test_scores_of_1e4_fully_masked_rows_weights_and_lse():
    # Rows past a sequence's valid length see no key: zeros, lse -inf.
    lib = compile_products("""
kernel k {
  heads = 2; head_dim = 32; seq_q = 64; seq_k = 64; dtype = bf16
  score = dot
  mask = key_padding
  outputs = out, weights, lse
}""")
    rng = np.random.default_rng(3)
    bits, wide = bf16_inputs(rng, [(2, 2, 64, 32), (2, 2, 64, 32), (2, 2, 64, 32)], 30.0)
    padding = np.zeros((2, 64), dtype=np.uint8)
    padding[0, 40:] = 1
    padding[1, :] = 1  # batch row 1 sees nothing
    out, weights, lse = lib.k(q=bits[0], k=bits[1], v=bits[2], key_padding_mask=padding)
    ref_out, ref_p, ref_lse = reference(*wide, scale=1.0, key_padding=padding)
    assert np.max(np.abs(ref_lse[0])) > 1e3  # the scores are large
    assert_close(attnc.bf16_to_f32(out), ref_out, wide[2], BOUND)
    assert_close(attnc.bf16_to_f32(weights), ref_p, np.ones(1), BOUND)
    assert np.all(attnc.bf16_to_f32(out)[1] == 0)
    assert lse.dtype == np.float32 and np.all(np.isneginf(lse[1]))
    finite = np.isfinite(ref_lse)
    assert np.allclose(lse[finite], ref_lse[finite], rtol=1e-5, atol=1e-3)


def test_bshd_layout_and_a_custom_score_of_dot():
    lib = compile_products("""
kernel k {
  heads = 4; head_dim = 16; seq_q = 48; seq_k = 50; dtype = bf16
  layout = bshd
  score = dot(q, k) / 4 + 1
}""")
    rng = np.random.default_rng(5)
    bits, wide = bf16_inputs(rng, [(1, 48, 4, 16), (1, 50, 4, 16), (1, 50, 4, 16)])
    out = lib.k(q=bits[0], k=bits[1], v=bits[2])
    q, k, v = (np.transpose(x, (0, 2, 1, 3)) for x in wide)
    ref = np.transpose(reference(q, k, v, scale=0.25)[0], (0, 2, 1, 3))  # + 1 cancels
    assert_close(attnc.bf16_to_f32(out), ref, wide[2], BOUND)


def host_is_intel():
    with open("/proc/cpuinfo") as f:
        return "GenuineIntel" in f.read()


@pytest.mark.skipif(not host_has_bf16_dot(), reason="the host has no AVX-512 BF16")
def test_host_target_emits_vdpbf16ps_unless_intel_or_told_not_to(tmp_path):
    attnc_bin = os.environ.get("ATTNC_BIN")
    if not attnc_bin:
        pytest.skip("ATTNC_BIN (the attnc compiler) not given")
    source = tmp_path / "k.attn"
    source.write_text("kernel k { heads = 2; head_dim = 64; seq_q = 64; seq_k = 64; "
                      "dtype = bf16 }\n")

    def asm(*options):
        return subprocess.run([attnc_bin, str(source), "--emit=asm", *options], check=True,
                              capture_output=True, text=True).stdout
    assert "vdpbf16ps" in asm("--bf16-products")
    assert "vdpbf16ps" not in asm("--no-bf16-products")
    # Intel's Sapphire/Granite Rapids cores run vdpbf16ps at half the f32 FMA
    # rate; Zen 5 at the full rate (docs/benchmarks.md).
    assert ("vdpbf16ps" in asm()) == (not host_is_intel())
