# Decode steps against a KV cache for kv-cache.test (Debian's python3 with
# numpy). Every sequence has a fixed history of keys and values (seeded);
# the cache files start with its first rows and NaN everywhere else, and
# each step feeds the next Lq tokens.
#   kvcache.py init DIR KIND           k_cache.npy, v_cache.npy, cache_len0.npy
#                                      (and block_table.npy when paged)
#   kvcache.py step DIR KIND N         q, k, v of step N (qN.npy, kN.npy, vN.npy)
#                                      and cache_lenN.npy, its cache lengths
#   kvcache.py check DIR KIND N OUT    OUT against float64 attention over each
#                                      sequence's rows 0 .. len + Lq - 1, and
#                                      the cache files holding exactly those
#                                      rows (bit for bit) and NaN elsewhere
#   kvcache.py overflow DIR KIND       DIR/full_len.npy: cache lengths where
#                                      sequence 1 is full; when paged also
#                                      DIR/full_table.npy, its block table
#                                      with every entry inside the pool
# KIND is contiguous, paged or bf16 (a contiguous cache of bf16 bits, `<u2`).
import os
import sys

import numpy as np

KINDS = {
    # H, G, D, Lmax (contiguous) or block (paged), initial lengths, Lq per step
    "contiguous": dict(H=4, G=2, D=8, rows=12, lens=[5, 0], steps=[1, 2]),
    "paged": dict(H=2, G=1, D=8, rows=4, lens=[6, 3], steps=[1, 2],
                  # blocks 1 and 4 are never used; 99 is past sequence 1's
                  # used blocks, so it is neither read nor checked
                  table=[[5, 2, 6], [0, 3, 99]], num_blocks=7),
    "bf16": dict(H=2, G=2, D=8, rows=10, lens=[2, 7], steps=[1, 2]),
}


def to_bf16_bits(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x7fff) + ((u >> np.uint32(16)) & np.uint32(1)))
            >> np.uint32(16)).astype("<u2")


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def history(cfg):
    """k, v [B, G, T, D] for every token any step uses; float32, already
    rounded to bf16 for the bf16 kind (what the cache stores)."""
    rng = np.random.default_rng(7)
    B, T = len(cfg["lens"]), max(cfg["lens"]) + sum(cfg["steps"])
    k = rng.uniform(-1, 1, (B, cfg["G"], T, cfg["D"])).astype(np.float32)
    v = rng.uniform(-2, 2, (B, cfg["G"], T, cfg["D"])).astype(np.float32)
    return k, v


def rounded(kind, a):
    return from_bf16_bits(to_bf16_bits(a)) if kind == "bf16" else a


def where(cfg, b, t):
    """The (outer index, row) of token t of sequence b in the cache."""
    if "table" in cfg:
        return cfg["table"][b][t // cfg["rows"]], t % cfg["rows"]
    return b, t


def expected_cache(kind, cfg, k, length):
    """The cache holding rows 0 .. length[b] - 1 of history k, NaN elsewhere."""
    B, G, D = len(cfg["lens"]), cfg["G"], cfg["D"]
    outer = cfg.get("num_blocks", B)
    cache = np.full((outer, G, cfg["rows"], D), np.nan, dtype=np.float32)
    for b in range(B):
        for t in range(length[b]):
            o, r = where(cfg, b, t)
            cache[o, :, r, :] = rounded(kind, k[b, :, t, :])
    return cache


def save_cache(kind, path, cache):
    np.save(path, to_bf16_bits(cache) if kind == "bf16" else cache.astype("<f4"))


def load_cache(kind, path):
    a = np.load(path)
    want = "<u2" if kind == "bf16" else "<f4"
    if a.dtype.str != want:
        raise SystemExit(f"{path}: dtype {a.dtype.str}, expected {want}")
    return from_bf16_bits(a) if kind == "bf16" else a


def lengths(cfg, n):
    return [length + sum(cfg["steps"][:n]) for length in cfg["lens"]]


def queries(cfg, n):
    rng = np.random.default_rng(100 + n)
    B = len(cfg["lens"])
    return rng.uniform(-1, 1, (B, cfg["H"], cfg["steps"][n], cfg["D"])).astype(np.float32)


def main(argv):
    cmd, folder, kind = argv[1], argv[2], argv[3]
    cfg = KINDS[kind]
    k, v = history(cfg)
    path = lambda name: os.path.join(folder, name)  # noqa: E731
    if cmd == "init":
        save_cache(kind, path("k_cache.npy"), expected_cache(kind, cfg, k, cfg["lens"]))
        save_cache(kind, path("v_cache.npy"), expected_cache(kind, cfg, v, cfg["lens"]))
        np.save(path("cache_len0.npy"), np.array(cfg["lens"], dtype="<i4"))
        if "table" in cfg:
            np.save(path("block_table.npy"), np.array(cfg["table"], dtype="<i4"))
    elif cmd == "step":
        n = int(argv[4])
        start, Lq = lengths(cfg, n), cfg["steps"][n]
        np.save(path(f"q{n}.npy"), queries(cfg, n))
        for name, a in (("k", k), ("v", v)):
            new = np.stack([a[b, :, start[b]:start[b] + Lq, :] for b in range(len(start))])
            np.save(path(f"{name}{n}.npy"), new.astype("<f4"))
        np.save(path(f"cache_len{n}.npy"), np.array(start, dtype="<i4"))
    elif cmd == "check":
        n, out = int(argv[4]), np.load(argv[5])
        start, Lq, H, G = lengths(cfg, n), cfg["steps"][n], cfg["H"], cfg["G"]
        q = queries(cfg, n).astype(np.float64)
        kr, vr = (rounded(kind, a).astype(np.float64) for a in (k, v))
        ref = np.zeros(q.shape)
        for b in range(len(start)):
            for h in range(H):
                g = h // (H // G)
                for i in range(Lq):
                    ip = start[b] + i  # causal: keys 0 .. ip
                    s = kr[b, g, :ip + 1] @ q[b, h, i] / np.sqrt(cfg["D"])
                    p = np.exp(s - s.max())
                    ref[b, h, i] = p @ vr[b, g, :ip + 1] / p.sum()
        bound = (8e-3 if kind == "bf16" else 1e-4) * max(1.0, float(np.abs(vr).max()))
        err = float(np.max(np.abs(out.astype(np.float64) - ref)))
        if out.shape != ref.shape or not err <= bound:
            print(f"step {n}: out {out.shape} max error {err} (bound {bound})")
            return 1
        end = [s + Lq for s in start]
        for name, a in (("k_cache", k), ("v_cache", v)):
            got, want = load_cache(kind, path(f"{name}.npy")), expected_cache(kind, cfg, a, end)
            if not np.array_equal(got, want, equal_nan=True):
                print(f"step {n}: {name} differs from the rows 0 .. len + Lq - 1")
                return 1
        print(f"step {n} ok: lengths {start} -> {end}")
    elif cmd == "overflow":
        full = list(lengths(cfg, 0))
        full[1] = cfg["rows"] * (len(cfg["table"][0]) if "table" in cfg else 1)
        np.save(path("full_len.npy"), np.array(full, dtype="<i4"))
        # Room for exactly the 2 new tokens of step 1: they land in the last block.
        edge = list(full)
        edge[1] -= 2
        np.save(path("edge_len.npy"), np.array(edge, dtype="<i4"))
        if "table" in cfg:
            table = [[e if e < cfg["num_blocks"] else 1 for e in row] for row in cfg["table"]]
            np.save(path("full_table.npy"), np.array(table, dtype="<i4"))
    return 0


sys.exit(main(sys.argv))
