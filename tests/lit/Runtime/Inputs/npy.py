# Makes and checks .npy files for the attnc-run tests (Debian's python3 with numpy).
#   npy.py random OUT.npy DTYPE D0,D1,... [SEED]   uniform [-1, 1] floats, or
#                                                  small integers for i4/u1
#   npy.py fill OUT.npy DTYPE D0,D1,... V0,V1,...  given values, C order
#   npy.py raw OUT.npy HEX                         arbitrary bytes
#   npy.py show FILE.npy                           dtype, shape and values
#   npy.py attention OUT.npy Q.npy K.npy V.npy     float64 softmax(q k^T/sqrt(D)) v
#   npy.py close A.npy B.npy TOL                   max |a - b| <= TOL
import sys
import numpy as np


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
        q, k, v = (np.load(p).astype(np.float64) for p in argv[3:6])
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        np.save(argv[2], p @ v)
    elif cmd == "close":
        a, b = np.load(argv[2]), np.load(argv[3])
        if a.shape != b.shape:
            print(f"shapes differ: {a.shape} vs {b.shape}")
            return 1
        err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
        print(f"max error {'ok' if err <= float(argv[4]) else err}")
        return 0 if err <= float(argv[4]) else 1
    return 0


sys.exit(main(sys.argv))
