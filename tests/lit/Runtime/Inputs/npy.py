# Makes and checks .npy files for the attnc-run tests (Debian's python3 with numpy).
#   npy.py random OUT.npy DTYPE D0,D1,... [SEED]   uniform [-1, 1] floats, or
#                                                  small integers for i4/u1
#   npy.py fill OUT.npy DTYPE D0,D1,... V0,V1,...  given values, C order
#   npy.py raw OUT.npy HEX                         arbitrary bytes
#   npy.py show FILE.npy                           dtype, shape and values
#   npy.py attention OUT.npy Q.npy K.npy V.npy     float64 softmax(q k^T/sqrt(D)) v
#   npy.py close A.npy B.npy TOL [V.npy]           max |a - b| <= TOL (* max(1, max |v|))
#   npy.py round OUT.npy IN.npy f16|bf16           f32 values rounded to 16 bits, as <f4
#   npy.py bits OUT.npy IN.npy                     f32 values as <u2 bf16 bits
# Files of <u2 are read as bf16 bits (widened to f32), as attnc-run does.
import sys
import numpy as np


def to_bf16_bits(a):
    """Round to nearest even; NaN stays (quiet) NaN."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    with np.errstate(over="ignore"):
        bits = ((u + np.uint32(0x7fff) + ((u >> np.uint32(16)) & np.uint32(1)))
                >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(a)
    bits[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return bits


def load(path):
    a = np.load(path)
    if a.dtype == np.uint16:
        return (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return a


def shape_of(text):
    return tuple(int(x) for x in text.split(",")) if text else ()


def main(argv):
    cmd = argv[1]
    if cmd == "random":
        shape = shape_of(argv[4])
        rng = np.random.default_rng(int(argv[5]) if len(argv) > 5 else 0)
        if argv[3] == "<f4":
            a = rng.uniform(-1, 1, shape).astype("<f4")
        else:
            a = rng.integers(0, 3, shape).astype(argv[3])
        np.save(argv[2], a)
    elif cmd == "fill":
        values = [float(x) for x in argv[5].split(",")]
        np.save(argv[2], np.array(values).astype(argv[3]).reshape(shape_of(argv[4])))
    elif cmd == "raw":
        with open(argv[2], "wb") as f:
            f.write(bytes.fromhex(argv[3]))
    elif cmd == "show":
        a = np.load(argv[2])
        print(a.dtype.str, a.shape, " ".join(f"{x:g}" for x in a.ravel()))
    elif cmd == "attention":
        q, k, v = (load(p).astype(np.float64) for p in argv[3:6])
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        np.save(argv[2], p @ v)
    elif cmd == "close":
        a, b = load(argv[2]), load(argv[3])
        if a.shape != b.shape:
            print(f"shapes differ: {a.shape} vs {b.shape}")
            return 1
        err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
        tol = float(argv[4])
        if len(argv) > 5:
            tol *= max(1.0, float(np.max(np.abs(load(argv[5])))))
        print(f"max error {'ok' if err <= tol else err}")
        return 0 if err <= tol else 1
    elif cmd == "round":
        a = np.load(argv[3]).astype(np.float32)
        if argv[4] == "f16":
            r = a.astype(np.float16).astype(np.float32)
        else:
            r = (to_bf16_bits(a).astype(np.uint32) << np.uint32(16)).view(np.float32)
        np.save(argv[2], r.astype("<f4"))
    elif cmd == "bits":
        np.save(argv[2], to_bf16_bits(np.load(argv[3]).astype(np.float32)).astype("<u2"))
    return 0


sys.exit(main(sys.argv))
