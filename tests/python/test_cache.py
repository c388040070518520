"""KV-cache kernels (docs/language.md, KV caches) from Python: k_cache and
v_cache are in-out arguments, passed by pointer and updated in place, so
several decode steps through one paged cache each see the rows the earlier
ones appended; outputs against a NumPy float64 reference over the whole
sequence. A cache is never copied: anything that would need a copy (wrong
dtype, not contiguous, read-only, a list) is a ValueError, and so is a
missing cache. A sequence that does not fit is attnc.Error naming it."""
import numpy as np
import pytest

import attnc
from conftest import assert_close

BLOCK, NUM_BLOCKS, MAX_BLOCKS = 4, 9, 4


@pytest.fixture(scope="module")
def kv():
    return attnc.compile("""
kernel paged {
  heads = 4; kv_heads = 2; head_dim = 8
  cache = paged(block = 4); mask = causal
}
kernel contiguous {
  heads = 2; head_dim = 8
  cache = contiguous; mask = causal
  outputs = out, lse
}
""")


def attend(q, keys, values, start):
    """float64 causal attention of q [H, Lq, D] at positions start + i over
    keys/values [G, T, D] (GQA: head h reads group h // (H // G))."""
    H, Lq, D = q.shape
    G = keys.shape[0]
    out = np.zeros((H, Lq, values.shape[-1]))
    for h in range(H):
        g = h // (H // G)
        for i in range(Lq):
            s = keys[g, :start + i + 1] @ q[h, i] / np.sqrt(D)
            p = np.exp(s - s.max())
            out[h, i] = p @ values[g, :start + i + 1] / p.sum()
    return out


def test_arguments_show_the_caches_as_inout(kv):
    args = {a.name: a for a in kv.paged.arguments}
    assert [a.direction for a in kv.paged.arguments] == \
        ["in", "in", "in", "inout", "inout", "in", "in", "out"]
    assert args["k_cache"].is_inout and not args["k_cache"].is_output
    assert not args["q"].is_inout and not args["out"].is_inout
    assert repr(args["v_cache"]) == "inout v_cache: f32[num_blocks, G=2, block=4, Dv=8]"
    assert [a.name for a in kv.paged.inouts] == ["k_cache", "v_cache"]


def test_paged_decode_steps_update_the_cache_in_place(kv):
    rng = np.random.default_rng(3)
    B, H, G, D = 2, 4, 2, 8
    lens = np.array([5, 0], dtype=np.int32)
    steps = [1, 1, 3, 1]  # decode, decode, a chunk of 3, decode
    total = lens + sum(steps)
    # Each sequence's keys and values, all steps included.
    keys = rng.uniform(-1, 1, (B, G, total.max(), D)).astype(np.float32)
    values = rng.uniform(-2, 2, (B, G, total.max(), D)).astype(np.float32)
    # Blocks scattered over the pool; block 0 is never used; the padding
    # entries past a sequence's blocks are never read.
    table = np.array([[3, 7, 1, 8], [6, 2, 5, -1]], dtype=np.int32)
    k_cache = np.full((NUM_BLOCKS, G, BLOCK, D), np.nan, dtype=np.float32)
    v_cache = np.full_like(k_cache, np.nan)

    def row(b, t):
        return table[b, t // BLOCK], t % BLOCK

    for b in range(B):  # the prefilled rows
        for t in range(lens[b]):
            k_cache[row(b, t)[0], :, row(b, t)[1]] = keys[b, :, t]
            v_cache[row(b, t)[0], :, row(b, t)[1]] = values[b, :, t]
    k_id, v_id = k_cache.ctypes.data, v_cache.ctypes.data

    for Lq in steps:
        q = rng.uniform(-1, 1, (B, H, Lq, D)).astype(np.float32)
        k = np.ascontiguousarray(np.stack([keys[b, :, lens[b]:lens[b] + Lq] for b in range(B)]))
        v = np.ascontiguousarray(np.stack([values[b, :, lens[b]:lens[b] + Lq] for b in range(B)]))
        out = kv.paged(q=q, k=k, v=v, k_cache=k_cache, v_cache=v_cache, cache_len=lens,
                       block_table=table)
        assert kv.paged._last_pointers["k_cache"] == k_id
        assert kv.paged._last_pointers["v_cache"] == v_id
        for b in range(B):
            ref = attend(q[b].astype(np.float64), keys[b].astype(np.float64),
                         values[b].astype(np.float64), int(lens[b]))
            assert_close(out[b], ref, values)
            for t in range(lens[b] + Lq):  # every row so far, bit for bit
                blk, r = row(b, t)
                assert np.array_equal(k_cache[blk, :, r], keys[b, :, t]), (b, t)
                assert np.array_equal(v_cache[blk, :, r], values[b, :, t]), (b, t)
        lens = lens + Lq
    # Rows nobody wrote are as they were.
    assert np.isnan(k_cache[0]).all() and np.isnan(v_cache[0]).all()
    assert np.isnan(k_cache[5, :, 1:]).all()  # sequence 1's third block, row 0 used


def contiguous_args(rng, lens, Lmax, Lq=1):
    B = len(lens)
    return dict(q=rng.uniform(-1, 1, (B, 2, Lq, 8)).astype(np.float32),
                k=rng.uniform(-1, 1, (B, 2, Lq, 8)).astype(np.float32),
                v=rng.uniform(-1, 1, (B, 2, Lq, 8)).astype(np.float32),
                k_cache=rng.uniform(-1, 1, (B, 2, Lmax, 8)).astype(np.float32),
                v_cache=rng.uniform(-1, 1, (B, 2, Lmax, 8)).astype(np.float32),
                cache_len=np.array(lens, dtype=np.int32))


def test_overflow_is_an_error_naming_the_sequence_and_writes_nothing(kv):
    args = contiguous_args(np.random.default_rng(4), [3, 10, 2], Lmax=10)
    before = {n: args[n].copy() for n in ("k_cache", "v_cache")}
    with pytest.raises(attnc.Error) as e:
        kv.contiguous(**args)
    assert e.value.status == "kernel"
    assert str(e.value) == ("kernel 'contiguous' failed: KV cache: sequence 1 has cache_len 10 "
                            "and 1 new tokens, more than its cache's 10 rows; nothing was "
                            "written")
    for name, array in before.items():
        assert np.array_equal(args[name], array), name


def test_block_outside_the_pool_is_an_error_naming_the_sequence(kv):
    rng = np.random.default_rng(5)
    q = rng.uniform(-1, 1, (2, 4, 1, 8)).astype(np.float32)
    k, v = (rng.uniform(-1, 1, (2, 2, 1, 8)).astype(np.float32) for _ in range(2))
    k_cache = rng.uniform(-1, 1, (NUM_BLOCKS, 2, BLOCK, 8)).astype(np.float32)
    v_cache = k_cache * 2
    before = k_cache.copy()
    table = np.array([[0, 1, 2, 3], [4, NUM_BLOCKS, 6, 7]], dtype=np.int32)
    with pytest.raises(attnc.Error, match=r"KV cache: sequence 1 uses block 9 \(entry 1 of its "
                                          r"block_table\), outside the pool of 9 blocks; "
                                          r"nothing was written"):
        kv.paged(q=q, k=k, v=v, k_cache=k_cache, v_cache=v_cache,
                 cache_len=np.array([2, 5], dtype=np.int32), block_table=table)
    assert np.array_equal(k_cache, before)


def test_caches_are_never_copied(kv):
    rng = np.random.default_rng(6)
    args = contiguous_args(rng, [1, 2], Lmax=6)
    good = dict(args)

    missing = dict(good)
    del missing["v_cache"]
    with pytest.raises(ValueError, match="'v_cache'.*in-out.*must be given"):
        kv.contiguous(**missing)
    with pytest.raises(ValueError, match="'k_cache'.*in-out.*must be given"):
        kv.contiguous(**dict(good, k_cache=None))

    wide = np.zeros((2, 2, 6, 16), dtype=np.float32)[..., ::2]  # not contiguous
    with pytest.raises(ValueError, match="'k_cache' is in-out and must be C-contiguous"):
        kv.contiguous(**dict(good, k_cache=wide))
    with pytest.raises(ValueError, match="'k_cache' is in-out: dtype float64, expected float32"):
        kv.contiguous(**dict(good, k_cache=good["k_cache"].astype(np.float64)))
    with pytest.raises(ValueError, match="'v_cache' is in-out: it must be a numpy array"):
        kv.contiguous(**dict(good, v_cache=good["v_cache"].tolist()))
    frozen = good["v_cache"].copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="'v_cache' is in-out: the array is read-only"):
        kv.contiguous(**dict(good, v_cache=frozen))
    # A cache sharing memory with another argument is the runtime's refusal.
    pool = np.zeros(2 * 2 * 6 * 8 + 8, dtype=np.float32)
    shape = good["k_cache"].shape
    with pytest.raises(ValueError, match="'k_cache': its memory overlaps argument 'v_cache'"):
        kv.contiguous(**dict(good, k_cache=pool[:-8].reshape(shape),
                             v_cache=pool[8:].reshape(shape)))

    # A good call writes the new row of each sequence at cache_len.
    out, lse = kv.contiguous(**good)
    assert out.shape == (2, 2, 1, 8) and lse.shape == (2, 2, 1)
    for b, n in enumerate([1, 2]):
        assert np.array_equal(good["k_cache"][b, :, n], good["k"][b, :, 0])
        assert np.array_equal(good["v_cache"][b, :, n], good["v"][b, :, 0])


def test_torch_caches_are_updated_in_place(kv):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    args = {n: torch.from_numpy(a) for n, a in contiguous_args(rng, [0, 3], Lmax=5).items()}
    k_cache = args["k_cache"]
    out, lse = kv.contiguous(**args)
    assert isinstance(out, torch.Tensor)
    assert kv.contiguous._last_pointers["k_cache"] == k_cache.data_ptr()
    assert torch.equal(k_cache[0, :, 0], args["k"][0, :, 0])
    assert torch.equal(k_cache[1, :, 3], args["k"][1, :, 0])
    with pytest.raises(ValueError, match="'k_cache' is in-out and must be contiguous"):
        kv.contiguous(**dict(args, k_cache=torch.zeros(2, 2, 8, 5).transpose(2, 3)))
    with pytest.raises(ValueError, match="'v_cache' is in-out: dtype float64"):
        kv.contiguous(**dict(args, v_cache=args["v_cache"].double()))


@pytest.mark.parametrize("cache", ["contiguous", "paged(block = 16)"])
def test_bf16_cache_decode_reads_channel_pairs(cache):
    # Decode steps (seq_q = 1) over bf16 caches of 64-channel rows, sequences
    # of 0 to 300 cached tokens: the rows are read back as 32-bit words, each
    # chunk's even channels then its odd ones (AlgorithmFuncs::evenOddLanes);
    # out and lse against float64 of the same bf16 values.
    B, H, G, D, Lmax, block = 3, 8, 2, 64, 320, 16
    paged = cache.startswith("paged")
    lib = attnc.compile(
        "kernel c { heads = %d; kv_heads = %d; head_dim = %d; seq_q = 1; batch = %d; %s; "
        "cache = %s; kv_dtype = bf16; mask = causal; outputs = out, lse }"
        % (H, G, D, B, "" if paged else "seq_k = %d" % Lmax, cache))
    rng = np.random.default_rng(11)
    lens = np.array([0, 37, 300], dtype=np.int32)
    steps = 2
    keys = attnc.f32_to_bf16(rng.standard_normal((B, G, Lmax, D)).astype(np.float32))
    values = attnc.f32_to_bf16(rng.standard_normal((B, G, Lmax, D)).astype(np.float32))
    blocks = Lmax // block
    table = rng.permutation(B * blocks).astype(np.int32).reshape(B, blocks)
    if paged:  # the pool's block table[b, t // block] holds rows t of sequence b
        k_cache = np.zeros((B * blocks, G, block, D), np.uint16)
        v_cache = np.zeros_like(k_cache)
        for b in range(B):
            for t in range(lens[b]):
                k_cache[table[b, t // block], :, t % block] = keys[b, :, t]
                v_cache[table[b, t // block], :, t % block] = values[b, :, t]
    else:
        k_cache, v_cache = keys.copy(), values.copy()
    wide_k, wide_v = (attnc.bf16_to_f32(x).astype(np.float64) for x in (keys, values))
    for _ in range(steps):
        q = rng.standard_normal((B, H, 1, D)).astype(np.float32)
        new = dict(k=np.ascontiguousarray(np.stack([keys[b, :, lens[b]:lens[b] + 1]
                                                     for b in range(B)])),
                   v=np.ascontiguousarray(np.stack([values[b, :, lens[b]:lens[b] + 1]
                                                     for b in range(B)])))
        extra = dict(block_table=table) if paged else {}
        out, lse = lib.c(q=q, k_cache=k_cache, v_cache=v_cache, cache_len=lens, **new, **extra)
        for b in range(B):
            seen = lens[b] + 1
            kb = np.repeat(wide_k[b, :, :seen], H // G, axis=0)
            vb = np.repeat(wide_v[b, :, :seen], H // G, axis=0)
            s = np.einsum("hd,hjd->hj", q[b, :, 0].astype(np.float64), kb) / np.sqrt(D)
            m = s.max(axis=-1, keepdims=True)
            p = np.exp(s - m)
            ref = np.einsum("hj,hjd->hd", p / p.sum(axis=-1, keepdims=True), vb)
            assert np.abs(out[b, :, 0] - ref).max() <= 2e-5, b
            assert np.abs(lse[b, :, 0] - (np.log(p.sum(axis=-1)) + m[:, 0])).max() <= 2e-5
        lens = lens + 1
