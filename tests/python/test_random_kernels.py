"""Randomized differential tests: random but valid `.attn` kernels combining the
language's features (docs/language.md, /work/shared/spec/LANGUAGE.md sections 1-9),
compiled and run through the `attnc` package and compared with an independent
float64 reference written here in PyTorch (autograd for `backward = true`).

Feature axes: scores (dot, scaled_dot, general, additive, cosine, expressions of
dot(q, k)), scale, softcap, biases (alibi, expressions over index variables and
declared f32 / i32 / u8 inputs, T5 buckets with floor / log2 / int / float), masks
(causal, window, sink, valid_len, prefix, key_padding, input, expressions, unions
with | and & and parentheses), MHA / GQA / MQA, bhsd / bshd, dtype and kv_dtype in
f32 / f16 / bf16, rotary (half, interleaved, partial, bases), projections (all four,
nn.Linear layout, kv_model_dim, proj_bias lists, sinusoidal), outputs (out, weights,
lse), packed batches, KV caches (contiguous and paged, per-sequence cache_len,
decode and chunked prefill, rows past a sequence filled with NaN), backward,
fixed and dynamic sizes, odd sizes, fully masked rows. Combinations the spec
forbids are generated now and then on purpose: they must be refused with a located
diagnostic, never a crash.

CI: `pytest tests/python/test_random_kernels.py` runs a few cases of a fixed seed.
More cases in pytest: ATTNC_RANDOM_KERNELS=N ATTNC_RANDOM_SEED=S (in-process).
A long campaign, each case in a worker process (crashes and hangs are caught):

    PYTHONPATH=build/python:tests/python /usr/bin/python3 \\
        tests/python/test_random_kernels.py --campaign 500 --seed 1 --jobs 2

(add --avoid-known to skip the cases that match a known bug's signature, known_bugs,
--minutes M to stop after M minutes, and --asan to compile every kernel for
host-asan and run the workers with AddressSanitizer preloaded: an access out of
bounds that leaves the numbers right is a finding too), and one case again, with
its source, sizes and the comparison:

    ... tests/python/test_random_kernels.py --case CASE_SEED
"""
import json
import math
import os
import random
import re
import sys
import tempfile
import time
import traceback

if __name__ == "__main__" or "attnc" not in sys.modules:
    # Outside pytest's conftest: a private compilation cache, and the build tree's package.
    if "ATTNC_CACHE_DIR" not in os.environ:
        import atexit
        import shutil
        os.environ["ATTNC_CACHE_DIR"] = tempfile.mkdtemp(prefix="attnc-random-")
        atexit.register(shutil.rmtree, os.environ["ATTNC_CACHE_DIR"], ignore_errors=True)
    _here = os.path.dirname(os.path.abspath(__file__))
    _build = os.path.join(_here, "..", "..", "build", "python")
    if os.path.isdir(_build) and _build not in sys.path:
        sys.path.append(_build)

import numpy as np  # noqa: E402

import attnc  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError:  # pragma: no cover
    torch = None

F64 = None if torch is None else torch.float64
F32 = None if torch is None else torch.float32
if torch is not None:  # the float64 ALiBi slopes, rotary and positions of the backward tests
    from test_backward import alibi_slopes, rotate, sinusoids  # noqa: E402

# ----------------------------------------------------------------------------------------
# Expressions (docs/language.md section 5): an AST rendered to `.attn` text and
# evaluated in torch, float64 (the reference) or float32 (to measure how much the
# kernel's float32 evaluation may differ: the tolerance grows by that much, and a
# mask or a discrete value that flips between the two makes the case ambiguous).
# ----------------------------------------------------------------------------------------

INT, FLOAT, BOOL = "int", "float", "bool"


def _fmt_float(x):
    s = repr(float(x))
    if "e" not in s and "." not in s:
        s += ".0"
    return s


class Ex:
    typ = None
    has_dot = False

    def inputs(self):
        out = set()
        for c in self.children():
            out |= c.inputs()
        return out

    def children(self):
        return []


class Lit(Ex):
    def __init__(self, value, typ):
        self.value, self.typ = value, typ

    def text(self):
        if self.typ == BOOL:
            return "true" if self.value else "false"
        s = str(int(self.value)) if self.typ == INT else _fmt_float(self.value)
        return "(%s)" % s if s.startswith("-") else s

    def ev(self, env):
        if self.typ == BOOL:
            return torch.tensor(bool(self.value))
        if self.typ == INT:
            return torch.tensor(int(self.value), dtype=torch.int64)
        return torch.tensor(float(self.value), dtype=env["fdt"])


class Var(Ex):
    """An index variable (b h i j g ip) or a size (B H G Lq Lk D Dk Dv M)."""

    def __init__(self, name):
        self.name, self.typ = name, INT

    def text(self):
        return self.name

    def ev(self, env):
        return env["vars"][self.name]


class Dot(Ex):
    typ, has_dot = FLOAT, True

    def text(self):
        return "dot(q, k)"

    def ev(self, env):
        return env["dot"].to(env["fdt"])


class Inp(Ex):
    def __init__(self, decl, idx):
        self.decl, self.idx = decl, idx
        self.typ = FLOAT if decl["type"] == "f32" else INT

    def children(self):
        return list(self.idx)

    def inputs(self):
        return Ex.inputs(self) | {self.decl["name"]}

    def text(self):
        if not self.decl["dims"]:
            return self.decl["name"]
        return "%s[%s]" % (self.decl["name"], ", ".join(e.text() for e in self.idx))

    def ev(self, env):
        tensor, extents = env["inputs"][self.decl["name"]]
        flat = torch.tensor(0, dtype=torch.int64)
        for e, n in zip(self.idx, extents):
            flat = flat * n + e.ev(env).clamp(0, n - 1)  # out of range: clamped
        values = tensor.reshape(-1)
        if self.typ == FLOAT:
            values = values.to(env["fdt"])
        return values[flat]


def _promote(env, *xs):
    if any(x.dtype.is_floating_point for x in xs):
        return [x.to(env["fdt"]) for x in xs]
    return list(xs)


def _num_type(*es):
    return FLOAT if any(e.typ == FLOAT for e in es) else INT


class Bin(Ex):
    ARITH, CMP, LOGIC = ("+", "-", "*", "/", "%"), ("<", "<=", ">", ">=", "==", "!="), \
        ("and", "or")

    def __init__(self, op, a, b):
        self.op, self.a, self.b = op, a, b
        if op in self.CMP or op in self.LOGIC:
            self.typ = BOOL
        elif op == "/":
            self.typ = FLOAT
        elif op == "%":
            self.typ = INT
        else:
            self.typ = _num_type(a, b)
        self.has_dot = a.has_dot or b.has_dot

    def children(self):
        return [self.a, self.b]

    def text(self):
        return "(%s %s %s)" % (self.a.text(), self.op, self.b.text())

    def ev(self, env):
        a, b = self.a.ev(env), self.b.ev(env)
        op = self.op
        if op == "and":
            return a & b
        if op == "or":
            return a | b
        if op == "/":
            return a.to(env["fdt"]) / b.to(env["fdt"])
        if op == "%":
            return torch.remainder(a, b)  # Euclidean for the positive divisors generated
        a, b = _promote(env, a, b)
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                "<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b,
                ">=": lambda: a >= b, "==": lambda: a == b, "!=": lambda: a != b}[op]()


class Un(Ex):
    def __init__(self, op, a):
        self.op, self.a = op, a
        self.typ = BOOL if op == "not" else a.typ
        self.has_dot = a.has_dot

    def children(self):
        return [self.a]

    def text(self):
        return "(not %s)" % self.a.text() if self.op == "not" else "(-%s)" % self.a.text()

    def ev(self, env):
        a = self.a.ev(env)
        return ~a if self.op == "not" else -a


class Call(Ex):
    FLOAT_FNS = ("exp", "log", "sqrt", "rsqrt", "tanh", "floor", "ceil", "log2", "float")

    def __init__(self, fn, *args):
        self.fn, self.args = fn, list(args)
        if fn in self.FLOAT_FNS:
            self.typ = FLOAT
        elif fn == "int":
            self.typ = INT
        elif fn == "abs":
            self.typ = args[0].typ
        elif fn == "select":
            self.typ = BOOL if args[1].typ == BOOL else _num_type(args[1], args[2])
        else:  # min max clamp
            self.typ = _num_type(*args)
        self.has_dot = any(a.has_dot for a in args)

    def children(self):
        return self.args

    def text(self):
        return "%s(%s)" % (self.fn, ", ".join(a.text() for a in self.args))

    def ev(self, env):
        xs = [a.ev(env) for a in self.args]
        fn, fdt = self.fn, env["fdt"]
        if fn in ("exp", "log", "sqrt", "rsqrt", "tanh", "floor", "ceil", "log2", "float"):
            x = xs[0].to(fdt)
            return {"exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt,
                    "rsqrt": torch.rsqrt, "tanh": torch.tanh, "floor": torch.floor,
                    "ceil": torch.ceil, "log2": torch.log2, "float": lambda t: t}[fn](x)
        if fn == "int":
            x = xs[0]
            if x.dtype.is_floating_point:
                x = torch.nan_to_num(torch.trunc(x), nan=0.0, posinf=2.0 ** 31,
                                     neginf=-2.0 ** 31).to(torch.int64)
            return x
        if fn == "abs":
            return xs[0].abs()
        if fn == "select":
            a, b = _promote(env, xs[1], xs[2]) if self.typ != BOOL else xs[1:]
            return torch.where(xs[0], a, b)
        xs = _promote(env, *xs)
        if fn == "min":
            return torch.minimum(xs[0], xs[1])
        if fn == "max":
            return torch.maximum(xs[0], xs[1])
        if fn == "clamp":
            return torch.minimum(torch.maximum(xs[0], xs[1]), xs[2])
        raise AssertionError(fn)


INDEX_VARS = ("b", "h", "i", "j", "g", "ip")


class ExprGen:
    """Random well-typed expressions over the index variables, the sizes and the
    kernel's declared inputs; every function stays inside its domain and
    every division's divisor is away from zero."""

    def __init__(self, r, decls, sizes=("H", "G", "Lq", "Lk", "D", "Dv")):
        self.r, self.decls, self.sizes = r, decls, sizes

    def _lookup(self, want, depth):
        decls = [d for d in self.decls if (d["type"] == "f32") == (want == FLOAT)]
        if not decls:
            return None
        d = self.r.choice(decls)
        idx = []
        for dim in d["dims"]:
            natural = {"H": "h", "G": "g", "B": "b", "Lq": "i", "Lk": "j"}.get(dim)
            roll = self.r.random()
            if natural and roll < 0.6:
                idx.append(Var(natural if not (natural == "i" and self.r.random() < 0.3)
                               else "ip"))
            elif roll < 0.8 or depth <= 0:
                idx.append(Var(self.r.choice(INDEX_VARS)))  # clamped when out of range
            else:
                idx.append(self.int_(depth - 1))
        return Inp(d, idx)

    def int_(self, depth):
        r = self.r
        if depth <= 0 or r.random() < 0.25:
            roll = r.random()
            if roll < 0.6:
                return Var(r.choice(INDEX_VARS))
            if roll < 0.8:
                return Var(r.choice(self.sizes))
            return Lit(r.randint(-4, 9), INT)
        choice = r.randrange(12)
        if choice == 0:
            return Bin("-", Var(r.choice(("ip", "i", "j"))), Var(r.choice(("j", "i", "ip"))))
        if choice in (1, 2):
            return Bin(r.choice("+-"), self.int_(depth - 1), self.int_(depth - 1))
        if choice == 3:
            return Bin("*", self.int_(depth - 1), Lit(r.randint(-3, 4), INT))
        if choice == 4:
            return Bin("%", self.int_(depth - 1), Lit(r.randint(1, 7), INT))
        if choice == 5:
            return Call("abs", self.int_(depth - 1))
        if choice == 6:
            return Call(r.choice(("min", "max")), self.int_(depth - 1), self.int_(depth - 1))
        if choice == 7:
            lo = r.randint(-3, 5)
            return Call("clamp", self.int_(depth - 1), Lit(lo, INT), Lit(lo + r.randint(0, 9), INT))
        if choice == 8:
            return Call("select", self.bool_(depth - 1), self.int_(depth - 1), self.int_(depth - 1))
        if choice == 9:  # a float made integral: int() truncates toward zero
            return Call("int", self.float_(depth - 1, dot=False))
        if choice == 10:
            e = self._lookup(INT, depth)
            if e is not None:
                return e
        return Un("-", self.int_(depth - 1))

    def float_(self, depth, dot=False):
        """A float expression; with `dot`, dot(q, k) may appear, and only where the
        result stays continuous in it (no floor, int, comparison of it)."""
        r = self.r
        if depth <= 0 or r.random() < 0.2:
            roll = r.random()
            if dot and roll < 0.5:
                return Dot()
            if roll < 0.65:
                return Lit(r.choice((0.5, 0.25, 1.5, -0.75, 2.0, 0.1, -0.3, 3.0)), FLOAT)
            if roll < 0.85:
                e = self._lookup(FLOAT, depth)
                if e is not None:
                    return e
            return Call("float", self.int_(max(0, depth - 1)))
        choice = r.randrange(16)
        sub = lambda: self.float_(depth - 1, dot)  # noqa: E731
        if choice in (0, 1):
            return Bin(r.choice("+-"), sub(), sub() if r.random() < 0.7 else self.int_(depth - 1))
        if choice == 2:
            return Bin("*", sub(), Lit(r.choice((0.5, -0.25, 0.1, 2.0, 0.3)), FLOAT))
        if choice == 3:
            return Bin("*", sub(), Call("tanh", sub()))
        if choice == 4:  # divisor >= 1 in magnitude
            return Bin("/", sub(), Bin("+", Call("abs", sub() if r.random() < 0.5 else
                                                   self.int_(depth - 1)), Lit(1, INT)))
        if choice == 5:
            lit = Lit(r.choice((2, 3, 4, 8)), INT) if r.random() < 0.5 else \
                Lit(r.choice((0.5, 2.5)), FLOAT)
            return Bin("/", self.int_(depth - 1), lit)
        if choice == 6:
            return Call("tanh", sub())
        if choice == 7:
            return Call("exp", Call("clamp", sub(), Lit(-3.0, FLOAT), Lit(2.0, FLOAT)))
        if choice == 8:
            return Call("log", Bin("+", Call("abs", sub()), Lit(1.0, FLOAT)))
        if choice == 9:
            return Call(r.choice(("sqrt", "rsqrt")),
                        Bin("+", Call("abs", sub()), Lit(0.5 if r.random() < 0.5 else 1, FLOAT)))
        if choice == 10:
            return Call(r.choice(("min", "max")), sub(), sub() if r.random() < 0.6
                        else self.int_(depth - 1))
        if choice == 11:
            return Call("clamp", sub(), Lit(-1.5, FLOAT), Lit(r.choice((0.5, 2, 1.25)), FLOAT))
        if choice == 12:  # discrete functions of dot-free values
            inner = self.float_(depth - 1, False)
            return Call(r.choice(("floor", "ceil")), Bin("*", inner, Lit(2.5, FLOAT)))
        if choice == 13:
            return Call("log2", Bin("+", Call("float", Call("abs", self.int_(depth - 1))),
                                    Lit(1, INT)))
        if choice == 14:
            return Call("select", self.bool_(depth - 1), sub(), sub())
        return Call("abs", sub())

    def bool_(self, depth):
        r = self.r
        roll = r.random()
        if depth <= 0 or roll < 0.55:
            if r.random() < 0.8:
                return Bin(r.choice(Bin.CMP), self.int_(max(0, depth - 1)),
                           self.int_(max(0, depth - 1)))
            return Bin(r.choice(("<", ">", "<=", ">=")), self.float_(max(0, depth - 1)),
                       self.float_(max(0, depth - 1)))
        if roll < 0.85:
            return Bin(r.choice(Bin.LOGIC), self.bool_(depth - 1), self.bool_(depth - 1))
        if roll < 0.97:
            return Un("not", self.bool_(depth - 1))
        return Lit(r.random() < 0.7, BOOL)


# ----------------------------------------------------------------------------------------
# Masks: a tree of terms joined by & and |; a term is a built-in or an expression.
# ----------------------------------------------------------------------------------------


class MaskNode:
    def __init__(self, kind, parts=None, term=None, expr=None):
        self.kind, self.parts, self.term, self.expr = kind, parts or [], term, expr

    def text(self, top=True):
        if self.kind == "term":
            return self.term
        if self.kind == "expr":
            return self.expr.text()
        sep = " & " if self.kind == "and" else " | "
        body = sep.join(p.text(False) for p in self.parts)
        return body if top or self.kind == "and" else "(%s)" % body

    def dnf(self):
        """Alternatives as lists of leaves (the compiler's disjunctive normal form)."""
        if self.kind in ("term", "expr"):
            return [[self]]
        if self.kind == "or":
            return [alt for p in self.parts for alt in p.dnf()]
        out = [[]]
        for p in self.parts:
            out = [a + b for a in out for b in p.dnf()]
        return out

    def leaves(self):
        if self.kind in ("term", "expr"):
            return [self]
        return [l for p in self.parts for l in p.leaves()]


def gen_mask(r, K, egen):
    builtins = ["causal", "window", "sink", "valid_len", "prefix"]
    if K["mode"] == "plain":
        builtins += ["key_padding", "input"]

    def term():
        if r.random() < 0.3:
            return MaskNode("expr", expr=egen.bool_(r.randint(1, 3)))
        t = r.choice(builtins)
        if t == "window":
            return MaskNode("term", term="window(%d)" % K["window"])
        if t == "sink":
            return MaskNode("term", term="sink(%d)" % K["sink"])
        return MaskNode("term", term=t)

    def union(depth):
        n = r.choice((1, 1, 2, 2, 3))
        return MaskNode("or", [conj(depth) for _ in range(n)]) if n > 1 else conj(depth)

    def conj(depth):
        n = r.choice((1, 1, 2, 2, 3))
        parts = [union(depth + 1) if depth < 1 and r.random() < 0.3 else term()
                 for _ in range(n)]
        return MaskNode("and", parts) if n > 1 else parts[0]

    for _ in range(50):
        m = union(0)
        alts = m.dnf()
        if len(alts) > 16:
            continue
        # A built-in twice in one conjunction is an error (unless the union's
        # distribution made it so, which the compiler accepts); keep it simple.
        if any(len([l.term for l in a if l.kind == "term"]) !=
               len({l.term for l in a if l.kind == "term"}) for a in alts):
            continue
        return m
    return MaskNode("term", term="causal")


# ----------------------------------------------------------------------------------------
# Kernel generator
# ----------------------------------------------------------------------------------------

SCALES = [("0.5", lambda z: 0.5), ("1/sqrt(D)", lambda z: 1 / math.sqrt(z["D"])),
          ("rsqrt(Dk)", lambda z: 1 / math.sqrt(z["Dk"])), ("0.125", lambda z: 0.125),
          ("-0.7", lambda z: -0.7), ("0", lambda z: 0.0), ("2", lambda z: 2.0),
          ("H / 4", lambda z: z["H"] / 4), ("1 / (G + 1)", lambda z: 1 / (z["G"] + 1)),
          ("exp(-1)", lambda z: math.exp(-1)), ("log(3.0)", lambda z: math.log(3.0)),
          ("clamp(D, 1, 4) / 8", lambda z: min(max(z["D"], 1), 4) / 8),
          ("sqrt(2.0) * 0.3", lambda z: math.sqrt(2.0) * 0.3)]
SOFTCAPS = [("2", 2.0), ("0.5", 0.5), ("30", 30.0), ("5.5", 5.5), ("sqrt(3.0)", math.sqrt(3.0))]


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def gen_decls(r, K):
    """Declared inputs; dims Lq / Lk only where every sequence has one Lq and Lk."""
    decls = []
    n = r.choice((0, 0, 1, 1, 2, 3))
    dims_pool = [["H"], ["H", "8"], ["B"], ["16", "H"], ["G"], [], ["5"], ["H", "3", "4"]]
    if K["mode"] == "plain":
        dims_pool += [["Lk"], ["B", "Lq"], ["B", "Lk"], ["H", "Lq", "Lk"], ["Lq", "Lk"]]
    for c in range(n):
        typ = r.choice(("f32", "f32", "f32", "i32", "u8"))
        dims = r.choice(dims_pool)
        decls.append({"name": "t%d" % c, "type": typ, "dims": dims})
    return decls


def t5_bias(r, decl, bidirectional):
    """Hugging Face T5's relative_position_bucket in the language (log2 or log)."""
    nb = int(decl["dims"][0])
    use_log2 = r.random() < 0.7
    if bidirectional:
        half = nb // 2
        ret = Call("select", Bin(">", Bin("-", Var("j"), Var("i")), Lit(0, INT)),
                   Lit(half, INT), Lit(0, INT))
        n = Call("abs", Bin("-", Var("j"), Var("i")))
    else:
        half = nb
        ret = Lit(0, INT)
        n = Call("max", Bin("-", Var("ip"), Var("j")), Lit(0, INT))
    exact = half // 2
    maxd = r.choice((2 * exact * 2, 32, 128, 20))
    if use_log2:
        ratio = Bin("/", Call("log2", Bin("/", Call("float", n), Lit(exact, INT))),
                    Call("log2", Lit(float(maxd) / exact, FLOAT)))
    else:
        ratio = Bin("/", Call("log", Bin("/", Call("float", n), Lit(exact, INT))),
                    Lit(math.log(maxd / exact), FLOAT))
    large = Call("min", Bin("+", Lit(exact, INT),
                            Call("int", Bin("*", ratio, Lit(half - exact, INT)))),
                 Lit(half - 1, INT))
    bucket = Bin("+", ret, Call("select", Bin("<", n, Lit(exact, INT)), n, large))
    idx = [bucket, Var("h")] if decl["dims"][1] == "H" else [bucket, Lit(0, INT)]
    return Inp(decl, idx)


INVALID = [
    # (name, how to break a kernel) - each must be refused with a located diagnostic
    "cache_backward", "packed_weights", "packed_layout", "packed_key_padding", "cache_sinusoidal",
    "rotary_general", "rotary_sinusoidal", "backward_no_lse", "key_dim_dot",
    "sinusoidal_no_project", "kv_model_dim_self", "proj_bias_o_no_out", "two_windows",
    "cache_weights", "paged_seq_k", "rotary_odd_dims", "none_and_causal", "kv_heads_divide",
    "packed_seq_q", "cache_input_mask", "softcap_zero", "dropout", "builtin_in_expr",
    "float_modulo", "duplicate_field", "rotary_dims_too_big", "bool_as_number",
    "unknown_name", "dot_in_bias",
]


def gen_kernel(r, invalid_rate=0.08, cheap=False, r2=None):
    """r2: a second stream for decisions added later (KV caches with projections), so
    that the cases of earlier seeds stay what they were."""
    r2 = r2 or random.Random(r.random())
    K = {}
    K["mode"] = r.choice(["plain"] * 6 + ["packed"] * 2 + ["cache"] * 2)
    H = r.choice((1, 2, 3, 4, 4, 6, 8) if not cheap else (1, 2, 3, 4))
    G = r.choice(divisors(H))
    D = r.choice((1, 2, 3, 4, 5, 8, 8, 16, 16, 17, 32, 64) if not cheap else (2, 3, 4, 8, 16))
    # Head dims whose vectors (or rotary's pair lanes) end in one value on
    # AVX-512 (33, 34, 65: test_regressions.py), from a stream seeded by the
    # state so far, which leaves every other seed's case as it was (model_dims
    # of that kind likewise, below).
    extra = random.Random(repr(r.getstate()))
    if not cheap and extra.random() < 0.1:
        D = extra.choice((33, 34, 65))
    K.update(H=H, G=G, D=D)
    K["score"] = r.choice(["dot", "scaled_dot", "general", "additive", "cosine", "expr", None])
    Dk = D
    if K["score"] == "additive":
        K["hidden"] = r.choice((1, 3, 5, 8))
        if r.random() < 0.5:
            Dk = r.choice((2, 3, 5, 8, 12))
    K["Dk"] = Dk
    # Rows whose last vector holds one value (33, 65) miscompiled in Halide 14
    # (test_regressions.py).
    K["Dv"] = D if r.random() < 0.5 else r.choice((1, 3, 5, 8, 12, 16) if cheap else
                                                  (1, 3, 5, 8, 12, 16, 33, 65))
    K["set_value_dim"] = K["Dv"] != D or r.random() < 0.2
    K["set_kv_heads"] = G != H or r.random() < 0.3
    mode = K["mode"]
    # projections
    K["project"] = None
    rp = r2 if mode == "cache" else r
    if (mode != "cache" and r.random() < 0.3) or (mode == "cache" and r2.random() < 0.35):
        K["project"] = rp.choice(("self_qkv", "qkv", "qkv_out", "self_qkv_out"))
        K["M"] = rp.choice((3, 4, 6, 8, 12, 16))
        wide = random.Random(repr(rp.getstate()) + "model_dim")
        if not cheap and wide.random() < 0.1:  # (model rows ending in a one-lane vector)
            K["M"] = wide.choice((17, 33, 65))
        K["Mkv"] = K["M"]
        if K["project"] in ("qkv", "qkv_out") and rp.random() < 0.5:
            K["Mkv"] = rp.choice((2, 5, 10))
            K["set_kv_model_dim"] = True
        pb = rp.random()
        has_o = K["project"].endswith("_out")
        if pb < 0.4:
            K["proj_bias"] = None
        elif pb < 0.6:
            K["proj_bias"] = "true"
        elif pb < 0.65:
            K["proj_bias"] = "false"
        else:
            names = [p for p in "qkvo" if (p != "o" or has_o) and rp.random() < 0.5] or ["q"]
            K["proj_bias"] = ", ".join(names)
    K["self"] = K["project"] in ("self_qkv", "self_qkv_out")
    # positional
    K["rotary"] = None
    K["positional"] = None
    dotty = K["score"] in ("dot", "scaled_dot", "cosine", "expr", None)
    roll = r.random()
    if roll < 0.3 and dotty and D >= 2 and Dk == D:
        args, style, base, dims = [], "half", 10000.0, D
        if r.random() < 0.5:
            style = r.choice(("half", "interleaved"))
            args.append("style = " + style)
        if r.random() < 0.5:
            base = r.choice((10000.0, 500000.0, 100.0, 10.0))
            args.append("base = %s" % (int(base) if r.random() < 0.7 else _fmt_float(base)))
        if r.random() < 0.4 or D % 2:  # an odd head_dim needs an even 'dims'
            dims = r.choice(range(2, D + 1, 2))
            args.append("dims = %d" % dims)
        r.shuffle(args)
        K["rotary"] = (style, base, dims)
        if args:
            K["positional"] = "rotary(%s)" % ", ".join(args)
        else:
            K["positional"] = "rotary" if r.random() < 0.9 else "rotary()"
    elif roll < 0.45 and K["project"] and mode not in ("packed", "cache"):
        K["positional"] = "sinusoidal"
    # declared inputs, score expression, bias
    K["decls"] = gen_decls(r, K)
    egen = ExprGen(r, K["decls"])
    if K["score"] == "expr":
        roll = r.random()
        f32s = [d for d in K["decls"] if d["type"] == "f32" and d["dims"] in (["H"], [], ["G"])]
        if roll < 0.3:
            K["score_expr"] = Bin("+", Bin("*", Dot(), Lit(0.3, FLOAT)), Call("tanh", Dot()))
        elif roll < 0.45 and f32s:
            d = f32s[0]
            idx = {"H": [Var("h")], "G": [Var("g")]}.get(d["dims"][0] if d["dims"] else "", [])
            K["score_expr"] = Bin("/", Dot(), Bin("*", Call("sqrt", Lit(float(D), FLOAT)),
                                                  Bin("+", Call("abs", Inp(d, idx)),
                                                      Lit(0.5, FLOAT))))
        else:
            K["score_expr"] = egen.float_(r.randint(1, 3), dot=True)
    roll = r.random()
    K["bias"] = None
    if roll < 0.2:
        K["bias"] = "alibi"
    elif roll < 0.55:
        t5 = [d for d in K["decls"] if d["type"] == "f32" and len(d["dims"]) == 2 and
              d["dims"][0] == "16"]
        if t5 and r.random() < 0.7:
            K["bias_expr"] = t5_bias(r, t5[0], r.random() < 0.5)
        elif r.random() < 0.3:
            K["bias_expr"] = Bin("*", Un("-", Call("abs", Lit(0.1, FLOAT))),
                                 Call("abs", Bin("-", Var("ip"), Var("j"))))
        else:
            K["bias_expr"] = egen.float_(r.randint(1, 3))
        K["bias"] = "expr"
    # scale, softcap
    K["scale"] = r.choice(SCALES) if r.random() < 0.3 else None
    K["softcap"] = r.choice(SOFTCAPS) if r.random() < 0.25 else None
    # mask
    K["window"] = r.choice((1, 2, 3, 5, 8, 40))
    K["sink"] = r.choice((1, 2, 4, 9))
    K["mask"] = None if r.random() < 0.2 else gen_mask(r, K, egen)
    K["mask_none_text"] = r.random() < 0.3
    # layout, dtypes
    K["layout"] = None if mode == "packed" else r.choice((None, "bhsd", "bshd", "bshd"))
    K["dtype"] = r.choice(("f32",) * 5 + ("f16", "bf16", "bf16")) if not cheap else "f32"
    K["kv_dtype"] = None if r.random() < 0.7 else r.choice(("f32", "f16", "bf16"))
    # cache
    if mode == "cache":
        if r.random() < 0.5:
            K["cache"] = ("contiguous", None)
        else:
            K["cache"] = ("paged", r.choice((1, 2, 3, 4, 16)))
    else:
        K["cache"] = None
    # sizes
    K["batch"] = "packed" if mode == "packed" else r.choice((None, "dynamic", 1, 2, 3))
    K["seq_q"] = K["seq_k"] = None
    if mode == "plain":
        K["seq_q"] = r.choice((None, None, "dynamic", 1, 3, 17, 33, 64))
        if K["self"]:
            K["seq_k"] = r.choice((None, "seq_q", K["seq_q"] if isinstance(K["seq_q"], int)
                                   else None))
        else:
            K["seq_k"] = r.choice((None, None, "dynamic", "seq_q", 1, 5, 17, 64, 100))
    elif mode == "cache":
        K["seq_q"] = r.choice((None, "dynamic", 1, 1, 3))
        if K["cache"][0] == "contiguous":
            K["seq_k"] = r.choice((None, "dynamic", 40, 100))
    # outputs, backward
    outs = ["out"]
    extra = []
    if mode == "plain" and r.random() < 0.4:
        extra.append("weights")
    if r.random() < 0.5:
        extra.append("lse")
    K["backward"] = mode != "cache" and r.random() < 0.25
    if K["backward"] and "lse" not in extra:
        extra.append("lse")
    r.shuffle(extra)
    K["outputs"] = outs + extra
    K["set_outputs"] = len(K["outputs"]) > 1 or r.random() < 0.2
    K["invalid"] = None
    if r.random() < invalid_rate:
        K["invalid"] = r.choice(INVALID)
    return K


def kernel_fields(K):
    """The kernel's fields as text, in the order generated (shuffled by render)."""
    f = []
    f.append("heads = %d" % K["H"])
    if K["set_kv_heads"]:
        f.append("kv_heads = %d" % K["G"])
    f.append("head_dim = %d" % K["D"])
    if K["Dk"] != K["D"]:
        f.append("key_dim = %d" % K["Dk"])
    if K["set_value_dim"]:
        f.append("value_dim = %d" % K["Dv"])
    for name in ("batch", "seq_q", "seq_k"):
        if K[name] is not None:
            f.append("%s = %s" % (name, K[name]))
    if K["score"] == "additive":
        f.append("score = additive(hidden = %d)" % K["hidden"])
    elif K["score"] == "expr":
        f.append("score = " + K["score_expr"].text())
    elif K["score"]:
        f.append("score = " + K["score"])
    if K["scale"]:
        f.append("scale = " + K["scale"][0])
    if K["softcap"]:
        f.append("softcap = " + K["softcap"][0])
    if K["bias"] == "alibi":
        f.append("bias = alibi")
    elif K["bias"] == "expr":
        f.append("bias = " + K["bias_expr"].text())
    if K["mask"] is not None:
        f.append("mask = " + K["mask"].text())
    elif K["mask_none_text"]:
        f.append("mask = none")
    if K["project"]:
        f.append("project = " + K["project"])
        f.append("model_dim = %d" % K["M"])
        if K.get("set_kv_model_dim"):
            f.append("kv_model_dim = %d" % K["Mkv"])
        if K["proj_bias"]:
            f.append("proj_bias = " + K["proj_bias"])
    if K["positional"]:
        f.append("positional = " + K["positional"])
    if K["layout"]:
        f.append("layout = " + K["layout"])
    if K["cache"]:
        f.append("cache = " + ("contiguous" if K["cache"][0] == "contiguous"
                               else "paged(block = %d)" % K["cache"][1]))
    if K["dtype"] != "f32" or K.get("say_dtype"):
        f.append("dtype = " + K["dtype"])
    if K["kv_dtype"]:
        f.append("kv_dtype = " + K["kv_dtype"])
    if K["set_outputs"]:
        f.append("outputs = " + ", ".join(K["outputs"]))
    if K["backward"]:
        f.append("backward = true")
    return f


def break_kernel(K, f, r):
    """Turns a valid kernel into one the spec refuses (K['invalid'])."""
    inv = K["invalid"]

    def drop(prefix):
        return [x for x in f if not x.startswith(prefix)]

    if inv == "cache_backward":
        f = drop("batch") + ["cache = contiguous", "backward = true", "outputs = out, lse"]
        f = [x for x in f if not x.startswith(("project", "model_dim", "kv_model", "proj_bias",
                                               "outputs = out, weights", "positional = sinus"))]
    elif inv == "packed_weights":
        f = [x for x in f if not x.startswith(("batch", "seq_", "layout", "cache", "outputs",
                                               "positional = sin", "mask"))]
        f += ["batch = packed", "outputs = out, weights"]
    elif inv == "packed_layout":
        f = [x for x in f if not x.startswith(("batch", "seq_", "layout", "cache", "mask"))]
        f += ["batch = packed", "layout = bshd"]
    elif inv == "packed_key_padding":
        f = [x for x in f if not x.startswith(("batch", "seq_", "layout", "cache", "mask"))]
        f += ["batch = packed", "mask = causal & key_padding"]
    elif inv == "cache_sinusoidal":
        f = [x for x in f if not x.startswith(("batch = packed", "cache", "backward", "project",
                                               "model_dim", "kv_model", "proj_bias",
                                               "positional", "outputs", "seq_k"))]
        f += ["cache = paged(block = 4)", "project = self_qkv", "model_dim = 8",
              "positional = sinusoidal"]
    elif inv == "rotary_general":
        f = [x for x in f if not x.startswith(("score", "positional", "key_dim"))]
        f += ["score = general", "positional = rotary"]
    elif inv == "rotary_sinusoidal":
        f = drop("positional") + ["positional = rotary, sinusoidal"]
    elif inv == "backward_no_lse":
        f = [x for x in f if not x.startswith(("outputs", "backward", "cache"))]
        f += ["backward = true"]
    elif inv == "key_dim_dot":
        f = [x for x in f if not x.startswith(("score", "key_dim"))]
        f += ["score = dot", "key_dim = %d" % (K["D"] + 1)]
    elif inv == "sinusoidal_no_project":
        f = [x for x in f if not x.startswith(("project", "model_dim", "kv_model_dim",
                                               "proj_bias", "positional"))]
        f += ["positional = sinusoidal"]
    elif inv == "kv_model_dim_self":
        f = [x for x in f if not x.startswith(("project", "model_dim", "kv_model_dim",
                                               "proj_bias", "cache"))]
        f += ["project = self_qkv", "model_dim = 8", "kv_model_dim = 6"]
    elif inv == "proj_bias_o_no_out":
        f = [x for x in f if not x.startswith(("project", "model_dim", "kv_model_dim",
                                               "proj_bias", "cache"))]
        f += ["project = qkv", "model_dim = 8", "proj_bias = q, o"]
    elif inv == "two_windows":
        f = drop("mask") + ["mask = causal & (window(3) | window(5))"]
    elif inv == "cache_weights":
        f = [x for x in f if not x.startswith(("batch = packed", "outputs", "project",
                                               "model_dim", "kv_model", "proj_bias",
                                               "backward", "positional = sin", "mask"))]
        f += ["cache = contiguous", "outputs = out, weights"] if not any(
            x.startswith("cache") for x in f) else ["outputs = out, weights"]
    elif inv == "paged_seq_k":
        f = [x for x in f if not x.startswith(("batch = packed", "cache", "project",
                                               "model_dim", "kv_model", "proj_bias",
                                               "backward", "seq_k", "positional = sin"))]
        f += ["cache = paged(block = 2)", "seq_k = 64"]
    elif inv == "rotary_odd_dims":
        f = [x for x in f if not x.startswith(("score", "positional", "key_dim", "head_dim"))]
        f += ["head_dim = 8", "positional = rotary(dims = 3)"]
    elif inv == "rotary_dims_too_big":
        f = [x for x in f if not x.startswith(("score", "positional", "key_dim", "head_dim"))]
        f += ["head_dim = 4", "positional = rotary(dims = 6)"]
    elif inv == "none_and_causal":
        f = drop("mask") + ["mask = none & causal"]
    elif inv == "kv_heads_divide":
        f = [x for x in f if not x.startswith(("heads", "kv_heads"))]
        f += ["heads = 6", "kv_heads = 4"]
    elif inv == "packed_seq_q":
        f = [x for x in f if not x.startswith(("batch", "seq_", "layout", "cache", "mask"))]
        f += ["batch = packed", "seq_q = 8"]
    elif inv == "cache_input_mask":
        f = [x for x in f if not x.startswith(("batch = packed", "cache", "project", "mask",
                                               "model_dim", "kv_model", "proj_bias",
                                               "backward", "positional = sin", "outputs"))]
        f += ["cache = contiguous", "mask = causal & input"]
    elif inv == "softcap_zero":
        f = drop("softcap") + ["softcap = %s" % r.choice(("0", "-1", "1/0"))]
    elif inv == "dropout":
        f += ["dropout = 0.1"]
    elif inv == "builtin_in_expr":
        f = drop("mask") + ["mask = causal and j > 3"]
    elif inv == "float_modulo":
        f = drop("bias") + ["bias = float(j) % 2"]
    elif inv == "duplicate_field":
        f += [f[0]]
    elif inv == "bool_as_number":
        f = drop("bias") + ["bias = j + (i < 2)"]
    elif inv == "unknown_name":
        f = drop("bias") + ["bias = 0.5 * jj"]
    elif inv == "dot_in_bias":
        f = drop("bias") + ["bias = dot(q, k)"]
    return f


def render(K, r, shuffle=True):
    f = kernel_fields(K)
    if K["invalid"]:
        f = break_kernel(K, f, r)
    if shuffle:
        r.shuffle(f)
    else:
        r = random.Random(0)
    lines = ["kernel k {"]
    for d in K["decls"]:
        lines.append("  input %s : %s%s" % (d["name"], d["type"],
                                           "[%s]" % ", ".join(d["dims"]) if d["dims"] else
                                           ("[]" if r.random() < 0.5 else "")))
    i = 0
    while i < len(f):
        n = r.choice((1, 1, 1, 2, 3)) if shuffle else 1
        lines.append("  " + "; ".join(f[i:i + n]))
        i += n
    lines.append("}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------
# Sizes and inputs
# ----------------------------------------------------------------------------------------

SEQ = (1, 1, 2, 3, 5, 8, 16, 17, 31, 33, 40, 64, 65, 70, 100, 130)


def gen_sizes(K, r):
    S = {}
    mode = K["mode"]
    big = r.random() < 0.08 and K["H"] * max(K["D"], K["Dv"]) <= 64 and \
        K["score"] != "additive"
    if mode == "plain":
        S["B"] = K["batch"] if isinstance(K["batch"], int) else r.choice((1, 1, 2, 3))
        S["Lq"] = K["seq_q"] if isinstance(K["seq_q"], int) else \
            r.choice(SEQ + ((257, 300) if big else ()))
        if K["self"] or K["seq_k"] == "seq_q":
            S["Lk"] = S["Lq"]
        elif isinstance(K["seq_k"], int):
            S["Lk"] = K["seq_k"]
        else:
            S["Lk"] = r.choice(SEQ + ((257, 700) if big else ()))
            if S["Lq"] == 1 and r.random() < 0.4 and K["score"] != "additive":
                S["Lk"] = r.choice((257, 700, 1500))  # decode: keys split across threads
        if S["Lq"] * S["Lk"] * K["H"] * S["B"] > 400000 and K["score"] == "additive":
            S["Lq"], S["Lk"] = min(S["Lq"], 40), min(S["Lk"], 40)
            if K["self"] or K["seq_k"] == "seq_q":
                S["Lk"] = S["Lq"]
    elif mode == "packed":
        n = r.choice((1, 2, 3, 4))
        S["B"] = n
        lq = [r.choice((0, 1, 2, 3, 5, 17, 33, 40, 64)) for _ in range(n)]
        lk = list(lq) if K["self"] or r.random() < 0.3 else \
            [r.choice((0, 1, 2, 3, 5, 17, 33, 40, 64, 70)) for _ in range(n)]
        if sum(lq) == 0:
            lq[0] = r.choice((1, 5))
            if K["self"]:
                lk = list(lq)
        if sum(lk) == 0:
            lk[-1] = 3
            if K["self"]:
                lq = list(lk)
        S["lq"], S["lk"] = lq, lk
    else:  # cache
        S["B"] = K["batch"] if isinstance(K["batch"], int) else r.choice((1, 2, 3))
        S["Lq"] = K["seq_q"] if isinstance(K["seq_q"], int) else r.choice((1, 1, 2, 3, 5, 17, 33))
        kind, block = K["cache"]
        cap = K["seq_k"] if isinstance(K["seq_k"], int) else None
        top = (cap - S["Lq"]) if cap else r.choice((8, 40, 80, 300 if big else 80,
                                                    1000 if S["Lq"] == 1 else 80))
        top = max(top, 0)
        S["cache_len"] = [r.choice((0, r.randint(0, top), top, r.randint(0, top)))
                          for _ in range(S["B"])]
        need = max(c + S["Lq"] for c in S["cache_len"])
        if kind == "contiguous":
            S["Lmax"] = cap if cap else need + r.choice((0, 1, 5))
        else:
            S["block"] = block
            blocks = [-(-(c + S["Lq"]) // block) for c in S["cache_len"]]
            S["max_blocks"] = max(blocks) + r.choice((0, 0, 1, 3))
            S["num_blocks"] = sum(blocks) + r.choice((0, 1, 4))
            pool = list(range(S["num_blocks"]))
            r.shuffle(pool)
            table = []
            for b in range(S["B"]):
                row = [pool.pop() for _ in range(blocks[b])]
                row += [r.choice((-1, 0, 10 ** 6, S["num_blocks"]))
                        for _ in range(S["max_blocks"] - blocks[b])]
                table.append(row)
            S["block_table"] = table
    S["threads"] = r.choice((None, None, 1, 3))
    return S


def store(values, dtype):
    """float values -> (the array a kernel takes, the exact values it holds)."""
    values = np.asarray(values, np.float32)
    if dtype == "f32":
        return values, values.astype(np.float64)
    if dtype == "f16":
        a = values.astype(np.float16)
        return a, a.astype(np.float64)
    bits = attnc.f32_to_bf16(values)
    return bits, attnc.bf16_to_f32(bits).astype(np.float64)


def seq_sizes(K, S):
    """Per sequence (Lq_b, Lk_b, position offset of query row 0, cache_len_b)."""
    if K["mode"] == "packed":
        return [(S["lq"][b], S["lk"][b], S["lk"][b] - S["lq"][b], 0) for b in range(S["B"])]
    if K["mode"] == "cache":
        return [(S["Lq"], c + S["Lq"], c, c) for c in S["cache_len"]]
    return [(S["Lq"], S["Lk"], S["Lk"] - S["Lq"], 0)] * S["B"]


def expected_arguments(K, S):
    """(name, dtype, shape) of every argument in contract order (spec 9.8), outputs last."""
    H, G, D, Dk, Dv = K["H"], K["G"], K["D"], K["Dk"], K["Dv"]
    dt = K["dtype"]
    kvt = K["kv_dtype"] or dt
    mode, bshd = K["mode"], K["layout"] == "bshd"
    packed = mode == "packed"
    B = S["B"]
    if packed:
        Tq, Tk = sum(S["lq"]), sum(S["lk"])
    Lq = S.get("Lq")
    Lk = S.get("Lk")
    if mode == "cache":
        Lk = Lq  # k and v are the new rows

    def heads(Bn, L, n, w):
        if packed:
            return (L, n, w)
        return (Bn, L, n, w) if bshd else (Bn, n, L, w)

    args = []
    if K["project"]:
        M, Mkv = K["M"], K["Mkv"]
        if K["self"]:
            args.append(("x", dt, (Tq, M) if packed else (B, Lq, M)))
        else:
            args.append(("x_q", dt, (Tq, M) if packed else (B, Lq, M)))
            args.append(("x_kv", dt, (Tk, Mkv) if packed else (B, Lk, Mkv)))
    else:
        args.append(("q", dt, heads(B, Tq if packed else Lq, H, D)))
        args.append(("k", kvt, heads(B, Tk if packed else Lk, G, Dk)))
        args.append(("v", kvt, heads(B, Tk if packed else Lk, G, Dv)))
    if mode == "cache":
        kind = K["cache"][0]
        if kind == "contiguous":
            shape = lambda w: (B, S["Lmax"], G, w) if bshd else (B, G, S["Lmax"], w)  # noqa
        else:
            shape = lambda w: ((S["num_blocks"], S["block"], G, w) if bshd  # noqa: E731
                               else (S["num_blocks"], G, S["block"], w))
        args.append(("k_cache", kvt, shape(Dk)))
        args.append(("v_cache", kvt, shape(Dv)))
        args.append(("cache_len", "i32", (B,)))
        if kind == "paged":
            args.append(("block_table", "i32", (B, S["max_blocks"])))
    if packed:
        args.append(("cu_seqlens_q", "i32", (B + 1,)))
        args.append(("cu_seqlens_k", "i32", (B + 1,)))
    if K["project"]:
        M, Mkv = K["M"], K["Mkv"]
        args += [("w_q", dt, (H * D, M)), ("w_k", dt, (G * Dk, Mkv)), ("w_v", dt, (G * Dv, Mkv))]
        out_proj = K["project"].endswith("_out")
        if out_proj:
            args.append(("w_o", dt, (M, H * Dv)))
        biases = proj_biases(K)
        sizes = {"q": (H * D,), "k": (G * Dk,), "v": (G * Dv,), "o": (M,)}
        for p in "qkvo":
            if p in biases:
                args.append(("b_" + p, dt, sizes[p]))
    if K["score"] == "general":
        args.append(("score_w", dt, (D, Dk)))
    elif K["score"] == "additive":
        N = K["hidden"]
        args += [("score_wq", dt, (N, D)), ("score_wk", dt, (N, Dk)), ("score_wv", dt, (N,))]
    terms = mask_terms(K)
    if "valid_len" in terms:
        args.append(("valid_len", "i32", (B,)))
    if "prefix" in terms:
        args.append(("prefix_len", "i32", (B,)))
    if "key_padding" in terms:
        args.append(("key_padding_mask", "u8", (B, Lk)))
    if "input" in terms:
        args.append(("mask", "u8", (B, Lq, Lk)))
    for d in K["decls"]:
        args.append((d["name"], d["type"], tuple(decl_extent(x, K, S) for x in d["dims"])))
    # outputs
    out_proj = K["project"] and K["project"].endswith("_out")
    if packed:
        oshape = (Tq, K["M"]) if out_proj else (Tq, H, Dv)
    else:
        oshape = (B, Lq, K["M"]) if out_proj else heads(B, Lq, H, Dv)
    args.append(("out", dt, oshape))
    if "weights" in K["outputs"]:
        args.append(("weights", dt, (B, H, Lq, Lk)))
    if "lse" in K["outputs"]:
        args.append(("lse", "f32", (H, Tq) if packed else (B, H, Lq)))
    return args


def proj_biases(K):
    pb = K.get("proj_bias")
    if not pb or pb == "false":
        return ""
    if pb == "true":
        return "qkvo" if K["project"].endswith("_out") else "qkv"
    return "".join(p.strip() for p in pb.split(","))


def mask_terms(K):
    if K["mask"] is None:
        return set()
    return {l.term.split("(")[0] for l in K["mask"].leaves() if l.kind == "term"}


def decl_extent(dim, K, S):
    if dim.isdigit():
        return int(dim)
    return {"H": K["H"], "G": K["G"], "B": S["B"], "Lq": S.get("Lq"), "Lk": S.get("Lk"),
            "D": K["D"], "Dk": K["Dk"], "Dv": K["Dv"], "M": K.get("M")}[dim]


def make_inputs(K, S, args, nrng):
    """Arrays for every input (in kernel types) and their exact float64 values."""
    arrays, values = {}, {}
    per = seq_sizes(K, S)
    for name, dtype, shape in args:
        if name in ("out", "weights", "lse"):
            continue
        if dtype in ("f32", "f16", "bf16"):
            x = nrng.uniform(-1, 1, shape)
            if name.startswith("w_"):
                x = x / math.sqrt(shape[1]) * 1.5
            elif name.startswith("score_w"):
                x = x * 0.7
            elif name in ("k_cache", "v_cache"):
                x = x.astype(np.float32)
            arrays[name], values[name] = store(x, dtype)
        elif name == "cache_len":
            arrays[name] = np.array(S["cache_len"], np.int32)
        elif name == "block_table":
            arrays[name] = np.array(S["block_table"], np.int32)
        elif name in ("cu_seqlens_q", "cu_seqlens_k"):
            lens = S["lq"] if name.endswith("q") else S["lk"]
            arrays[name] = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        elif name in ("valid_len", "prefix_len"):
            arrays[name] = np.array([nrng.choice([0, nrng.integers(0, lk + 1), lk, lk + 2,
                                                  nrng.integers(0, lk + 1)])
                                     for (_, lk, _, _) in per], np.int32)
        elif name == "key_padding_mask":
            m = (nrng.random(shape) < nrng.choice([0.0, 0.3, 0.7, 1.0, 0.5])).astype(np.uint8)
            arrays[name] = m * nrng.choice([1, 255, 7])
        elif name == "mask":
            arrays[name] = (nrng.random(shape) < nrng.choice([0.2, 0.5, 0.9, 1.0])).astype(
                np.uint8)
        elif dtype == "i32":
            arrays[name] = nrng.integers(-3, 40, shape).astype(np.int32)
        elif dtype == "u8":
            arrays[name] = nrng.integers(0, 3, shape).astype(np.uint8)
        else:
            raise AssertionError(name)
        if name not in values:
            values[name] = arrays[name].astype(np.int64)
    if K["mode"] == "cache":
        # Rows past each sequence's length (and blocks nobody uses) hold NaN: never read.
        kvt = K["kv_dtype"] or K["dtype"]
        for name in ("k_cache", "v_cache"):
            a, v = arrays[name], values[name]
            nan_bits = {"f32": np.float32(np.nan), "f16": np.float16(np.nan),
                        "bf16": np.uint16(0x7fc0)}[kvt]
            keep = np.zeros(a.shape, bool)
            bshd = K["layout"] == "bshd"
            for b, c in enumerate(S["cache_len"]):
                for t in range(c):
                    if K["cache"][0] == "contiguous":
                        idx = (b, t) if bshd else (b, slice(None), t)
                    else:
                        blk = S["block_table"][b][t // S["block"]]
                        idx = (blk, t % S["block"]) if bshd else (blk, slice(None),
                                                                    t % S["block"])
                    keep[idx] = True
            a[~keep] = nan_bits
            v[~keep] = np.nan
    return arrays, values


# ----------------------------------------------------------------------------------------
# The float64 reference (docs/language.md section 2 and version 2's additions)
# ----------------------------------------------------------------------------------------


def eval_mask(node, env):
    if node.kind == "expr":
        return node.expr.ev(env)
    if node.kind == "term":
        v = env["vars"]
        name = node.term.split("(")[0]
        j, ip, b = v["j"], v["ip"], env["b"]
        if name == "causal":
            return j <= ip
        if name == "window":
            return (j <= ip) & (j > ip - env["window"])
        if name == "sink":
            return j < env["sink"]
        if name == "valid_len":
            return j < int(env["valid_len"][b])
        if name == "prefix":
            return j < int(env["prefix_len"][b])
        if name == "key_padding":
            return torch.as_tensor(env["key_padding_mask"][b] == 0)[None, None, :]
        if name == "input":
            return torch.as_tensor(env["mask"][b] != 0)[None, :, :]
        raise AssertionError(name)
    parts = [eval_mask(p, env) for p in node.parts]
    out = parts[0]
    for p in parts[1:]:
        out = (out & p) if node.kind == "and" else (out | p)
    return out


class Ambiguous(Exception):
    pass


def reference(K, S, values, grad):
    """float64 outputs (and, with grad, the leaves to differentiate) of the kernel."""
    H, G, D, Dk, Dv = K["H"], K["G"], K["D"], K["Dk"], K["Dv"]
    mode, bshd = K["mode"], K["layout"] == "bshd"
    packed = mode == "packed"
    per = seq_sizes(K, S)
    B = S["B"]
    leaves = {}
    T = {}
    for name, v in values.items():
        if v.dtype == np.float64:
            t = torch.tensor(np.nan_to_num(v, nan=0.0) if name.endswith("_cache") else v,
                             dtype=F64)
            if grad:
                t.requires_grad_(True)
                leaves[name] = t
            T[name] = t
        else:
            T[name] = torch.tensor(v)
    ints = {n: values[n] for n in values if values[n].dtype != np.float64}

    # q, k, v per sequence as [heads, L, width]
    seqs = []
    if K["project"]:
        M, Mkv = K["M"], K["Mkv"]
        biases = proj_biases(K)

        def lin(x, p):
            y = x @ T["w_" + p].T
            return y + T["b_" + p] if p in biases else y

        xq = T["x"] if K["self"] else T["x_q"]
        xkv = T["x"] if K["self"] else T["x_kv"]
        if K["positional"] == "sinusoidal":
            Lq_, Lk_ = S["Lq"], S["Lk"]
            xq = xq + sinusoids(Lq_, M)
            xkv = xq if K["self"] else xkv + sinusoids(Lk_, Mkv)
        pq, pk, pv = lin(xq, "q"), lin(xkv, "k"), lin(xkv, "v")
        if packed:
            cq = np.concatenate([[0], np.cumsum(S["lq"])])
            ck = np.concatenate([[0], np.cumsum(S["lk"])])
            for b in range(B):
                seqs.append((pq[cq[b]:cq[b + 1]].reshape(-1, H, D).transpose(0, 1),
                             pk[ck[b]:ck[b + 1]].reshape(-1, G, Dk).transpose(0, 1),
                             pv[ck[b]:ck[b + 1]].reshape(-1, G, Dv).transpose(0, 1)))
        else:
            for b in range(B):
                seqs.append((pq[b].reshape(-1, H, D).transpose(0, 1),
                             pk[b].reshape(-1, G, Dk).transpose(0, 1),
                             pv[b].reshape(-1, G, Dv).transpose(0, 1)))
    else:
        q, k, v = T["q"], T["k"], T["v"]
        if packed:
            cq = np.concatenate([[0], np.cumsum(S["lq"])])
            ck = np.concatenate([[0], np.cumsum(S["lk"])])
            for b in range(B):
                seqs.append((q[cq[b]:cq[b + 1]].transpose(0, 1), k[ck[b]:ck[b + 1]].transpose(0, 1),
                             v[ck[b]:ck[b + 1]].transpose(0, 1)))
        else:
            for b in range(B):
                if bshd:
                    seqs.append((q[b].transpose(0, 1), k[b].transpose(0, 1), v[b].transpose(0, 1)))
                else:
                    seqs.append((q[b], k[b], v[b]))

    outs, weights, lses, new_rows = [], [], [], []
    slack = 0.0
    for b in range(B):
        qb, kb, vb = seqs[b]
        Lq, Lk, off, cl = per[b]
        if K["rotary"]:
            style, base, dims = K["rotary"]
            qb = rotate(qb, torch.arange(Lq) + off, style, base, dims)
            kb = rotate(kb, torch.arange(kb.shape[1]) + cl, style, base, dims)
        if mode == "cache":
            new_rows.append((kb, vb))
            # The new rows are attended as the cache holds them: rounded to its type.
            cache_type = {"bf16": torch.bfloat16, "f16": torch.float16}.get(
                K["kv_dtype"] or K["dtype"])
            if cache_type is not None:
                kb, vb = kb.to(cache_type).to(F64), vb.to(cache_type).to(F64)
            kc, vc = T["k_cache"], T["v_cache"]
            rows_k, rows_v = [], []
            for t in range(cl):
                if K["cache"][0] == "contiguous":
                    rows_k.append(kc[b, t] if bshd else kc[b, :, t])
                    rows_v.append(vc[b, t] if bshd else vc[b, :, t])
                else:
                    blk, r_ = S["block_table"][b][t // S["block"]], t % S["block"]
                    rows_k.append(kc[blk, r_] if bshd else kc[blk, :, r_])
                    rows_v.append(vc[blk, r_] if bshd else vc[blk, :, r_])
            if cl:
                kb = torch.cat([torch.stack(rows_k, 1), kb], 1)
                vb = torch.cat([torch.stack(rows_v, 1), vb], 1)
        if Lq == 0:
            outs.append(torch.zeros(H, 0, Dv, dtype=F64))
            lses.append(torch.zeros(H, 0, dtype=F64))
            continue
        if Lk == 0:
            outs.append(torch.zeros(H, Lq, Dv, dtype=F64))
            lses.append(torch.full((H, Lq), -math.inf, dtype=F64))
            weights.append(torch.zeros(H, Lq, 0, dtype=F64))
            continue
        kh = kb.repeat_interleave(H // G, 0)
        vh = vb.repeat_interleave(H // G, 0)
        sc = K["score"]
        if sc == "general":
            raw = torch.einsum("hid,de,hje->hij", qb, T["score_w"], kh)
        elif sc == "additive":
            hq = torch.einsum("nd,hid->hin", T["score_wq"], qb)
            hk = torch.einsum("nd,hjd->hjn", T["score_wk"], kh)
            raw = torch.einsum("hijn,n->hij", torch.tanh(hq[:, :, None] + hk[:, None]),
                               T["score_wv"])
        elif sc == "cosine":
            qn = qb / qb.norm(dim=-1, keepdim=True).clamp_min(1e-12)
            kn = kh / kh.norm(dim=-1, keepdim=True).clamp_min(1e-12)
            raw = torch.einsum("hid,hjd->hij", qn, kn)
        else:
            raw = torch.einsum("hid,hjd->hij", qb, kh)
        hh = torch.arange(H)[:, None, None]
        ii = torch.arange(Lq)[None, :, None]
        jj = torch.arange(Lk)[None, None, :]
        sizes = {"B": B, "H": H, "G": G, "Lq": Lq, "Lk": Lk, "D": D, "Dk": Dk, "Dv": Dv,
                 "M": K.get("M", 0)}
        env_vars = {"b": torch.tensor(b), "h": hh, "i": ii, "j": jj, "g": hh // (H // G),
                    "ip": ii + off}
        env_vars.update({n: torch.tensor(s) for n, s in sizes.items()})

        def env(fdt):
            inputs = {}
            for d in K["decls"]:
                t = T[d["name"]]
                inputs[d["name"]] = (t if fdt == F64 or not t.dtype.is_floating_point
                                     else t.detach().to(fdt),
                                     [decl_extent(x, K, S) for x in d["dims"]])
            return {"fdt": fdt, "vars": env_vars, "inputs": inputs,
                    "dot": raw if fdt == F64 else raw.detach().to(fdt), "b": b,
                    "window": K["window"], "sink": K["sink"],
                    "valid_len": ints.get("valid_len"), "prefix_len": ints.get("prefix_len"),
                    "key_padding_mask": ints.get("key_padding_mask"), "mask": ints.get("mask")}

        e64, e32 = env(F64), env(F32)
        full = (H, Lq, Lk)
        s = raw
        if sc == "expr":
            s = K["score_expr"].ev(e64).expand(full)
            s32 = K["score_expr"].ev(e32).expand(full).to(F64)
            slack = max(slack, float((s.detach() - s32).abs().max()))
            if not torch.isfinite(s).all():
                raise Ambiguous("score expression is not finite")
        if K["scale"]:
            scale = dict(SCALES)[K["scale"][0]]({"D": D, "Dk": Dk, "H": H, "G": G})
        else:
            scale = 1.0 / math.sqrt(Dk) if sc in ("scaled_dot", None) else 1.0
        s = s * scale
        if K["softcap"]:
            c = K["softcap"][1]
            s = c * torch.tanh(s / c)
        if K["bias"] == "alibi":
            slopes = torch.tensor(alibi_slopes(H), dtype=F64)[:, None, None]
            s = s - slopes * (ii + off - jj).to(F64)
        elif K["bias"] == "expr":
            bias = K["bias_expr"].ev(e64).expand(full)
            b32 = K["bias_expr"].ev(e32).expand(full).to(F64)
            if not torch.isfinite(bias).all():
                raise Ambiguous("bias expression is not finite")
            diff = (bias.detach() - b32).abs()
            if float(diff.max()) > 1e-3 * max(1.0, float(bias.detach().abs().max())):
                raise Ambiguous("bias expression rounds differently in float32 (%g)"
                                % float(diff.max()))
            slack = max(slack, float(diff.max()))
            s = s + bias
        if K["mask"] is not None:
            visible = eval_mask(K["mask"], e64).expand(full)
            v32 = eval_mask(K["mask"], e32).expand(full)
            if not torch.equal(visible, v32):
                raise Ambiguous("mask differs between float32 and float64 evaluation")
        else:
            visible = torch.ones(full, dtype=torch.bool)
        # float32 rounding of large scores: |s| * 2^-24 on each score
        slack = max(slack, float(s.detach().abs().max()) * 2 ** -22)
        any_visible = visible.any(-1, keepdim=True)
        m = s.detach().masked_fill(~visible, -math.inf).max(-1, keepdim=True).values
        m = torch.where(any_visible, m, torch.zeros_like(m))
        z = (s - m).masked_fill(~visible, -1000.0)
        e = torch.exp(z) * visible
        tot = e.sum(-1, keepdim=True)
        safe = torch.where(tot > 0, tot, torch.ones_like(tot))
        p = e / safe
        lse = torch.where(any_visible, m + torch.log(safe), torch.full_like(m, -math.inf))[..., 0]
        outs.append(p @ vh)
        weights.append(p)
        lses.append(lse)

    out_proj = K["project"] and K["project"].endswith("_out")
    if packed:
        o = torch.cat([x.transpose(0, 1) for x in outs], 0)  # [Tq, H, Dv]
        lse = torch.cat(lses, 1)  # [H, Tq]
        if out_proj:
            o = o.reshape(-1, H * Dv) @ T["w_o"].T
            if "o" in proj_biases(K):
                o = o + T["b_o"]
    else:
        o = torch.stack(outs)  # [B, H, Lq, Dv]
        lse = torch.stack(lses)
        if out_proj:
            o = o.transpose(1, 2).reshape(B, S["Lq"], H * Dv) @ T["w_o"].T
            if "o" in proj_biases(K):
                o = o + T["b_o"]
        elif bshd:
            o = o.transpose(1, 2)
    ref = {"out": o, "lse": lse, "slack": slack}
    if "weights" in K["outputs"] and not packed and mode != "cache":
        ref["weights"] = torch.stack(weights)
    if mode == "cache":
        ref["new_rows"] = new_rows
    ref["leaves"] = leaves
    return ref


# ----------------------------------------------------------------------------------------
# Running one case
# ----------------------------------------------------------------------------------------

BAD_DIAGNOSTIC = re.compile(r"internal|assert|LLVM ERROR|unreachable|Stack dump|Segmentation|"
                            r"Halide|halide|core dumped|std::|terminate|abort", re.I)
LOCATED = re.compile(r"<source>:\d+:\d+: error: ")


class Failure(Exception):
    def __init__(self, kind, message):
        super().__init__("%s: %s" % (kind, message))
        self.kind = kind


def bound_of(*dtypes):
    if "bf16" in dtypes:
        return 8e-3
    if "f16" in dtypes:
        return 2e-3
    return None


def compare(name, got, ref, bound, scale_of, slack=0.0, inf_ok=False):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        raise Failure("mismatch", "%s has shape %s, expected %s" % (name, got.shape, ref.shape))
    if got.size == 0:
        return 0.0
    if inf_ok:
        masked = np.isneginf(ref)
        if np.any(masked != np.isneginf(got)):
            where = np.argwhere(masked != np.isneginf(got))[0]
            raise Failure("mismatch", "%s%s is %g, expected %g (a fully masked row has lse "
                          "-inf and only then)" % (name, list(where), got[tuple(where)],
                                                   ref[tuple(where)]))
        got, ref = np.where(masked, 0, got), np.where(masked, 0, ref)
    if not np.all(np.isfinite(got)):
        where = np.argwhere(~np.isfinite(got))[0]
        raise Failure("mismatch", "%s%s is %g (non-finite), expected %g"
                      % (name, list(where), got[tuple(where)], ref[tuple(where)]))
    err = np.abs(got - ref)
    tol = bound * max(1.0, scale_of) + slack
    worst = float(err.max())
    if worst > tol:
        where = np.unravel_index(int(err.argmax()), err.shape)
        raise Failure("mismatch", "%s: max error %.3g > bound %.3g at %s (got %.6g, expected "
                      "%.6g; %d of %d elements off)" % (name, worst, tol, list(map(int, where)),
                                                         got[where], ref[where],
                                                         int((err > tol).sum()), err.size))
    return worst


def to_float(array, dtype):
    if dtype == "bf16":
        return attnc.bf16_to_f32(array).astype(np.float64)
    return np.asarray(array).astype(np.float64)


def check_arguments(kernel, expected, backward=False):
    got = [(a.name, a.dtype) for a in kernel.arguments]
    want = [(n, t) for n, t, _ in expected]
    if [n for n, _ in got] != [n for n, _ in want]:
        raise Failure("contract", "arguments %s, expected %s (spec 9.8 order)"
                      % ([n for n, _ in got], [n for n, _ in want]))
    for (n, t), (_, wt) in zip(got, want):
        if t != wt and not n.startswith(("x_kv", "w_k", "w_v", "b_k", "b_v")):
            raise Failure("contract", "argument '%s' is %s, expected %s" % (n, t, wt))
    for a, (n, t, shape) in zip(kernel.arguments, expected):
        if len(a.shape) != len(shape):
            raise Failure("contract", "argument '%s' has rank %d, expected %s"
                          % (n, len(a.shape), shape))
        for (dim, fixed), want_v in zip(a.shape, shape):
            if fixed is not None and fixed != want_v:
                raise Failure("contract", "argument '%s' (%s) has %s=%s fixed, expected %s"
                              % (n, a.shape_text, dim, fixed, want_v))


def gen_case(seed, cheap=False, invalid_rate=0.08):
    r = random.Random(seed)
    K = gen_kernel(r, invalid_rate=invalid_rate, cheap=cheap,
                   r2=random.Random(seed * 2654435761 % 2 ** 61))
    source = render(K, r)
    trials = [gen_sizes(K, r) for _ in range(r.choice((1, 2, 2, 3)))]
    return K, source, trials


def describe_sizes(K, S):
    keep = {k: v for k, v in S.items() if k != "block_table" or len(str(v)) < 200}
    return json.dumps(keep)


def run_case(seed, cheap=False, invalid_rate=0.08, log=None):
    """Returns (status, detail); status: ok, refused (expected), ambiguous; raises
    Failure for anything that is a finding."""
    K, source, trials = gen_case(seed, cheap, invalid_rate)
    return run_kernel(K, source, trials, seed)


# ATTNC_RANDOM_TARGET (set by --asan): the target every kernel is compiled for.
KERNEL_TARGET = os.environ.get("ATTNC_RANDOM_TARGET") or None


def run_kernel(K, source, trials, seed):
    try:
        lib = attnc.compile(source, target=KERNEL_TARGET)
    except attnc.Error as e:
        text = str(e)
        if e.status != "compile":
            raise Failure("compile-error", "status %s: %s" % (e.status, text))
        located = LOCATED.search(text) and "^" in text
        if not located or BAD_DIAGNOSTIC.search(text.split("error:", 1)[-1] if located else text):
            raise Failure("bad-diagnostic", text)
        if K["invalid"]:
            return "refused", "%s: %s" % (K["invalid"], first_error(text))
        raise Failure("refused-valid", text)
    if K["invalid"]:
        raise Failure("accepted-invalid", "%s was compiled" % K["invalid"])
    names = lib.kernels
    want = ["k", "k_backward"] if K["backward"] else ["k"]
    if names != want:
        raise Failure("contract", "kernels %s, expected %s" % (names, want))
    notes = []
    for S in trials:
        notes.append(run_trial(K, S, lib, seed))
    return "ok", "; ".join(n for n in notes if n)


def first_error(text):
    m = re.search(r"error: (.*)", text)
    return m.group(1) if m else text.splitlines()[0]


def run_trial(K, S, lib, seed):
    expected = expected_arguments(K, S)
    check_arguments(lib.k, expected)
    nrng = np.random.default_rng(seed % 2 ** 32 + 7919 * S.get("B", 1) + 17 * len(str(S)))
    arrays, values = make_inputs(K, S, expected, nrng)
    before = {n: arrays[n].copy() for n in ("k_cache", "v_cache") if n in arrays}
    kwargs = {n: arrays[n] for n, _, _ in expected if n in arrays}
    try:
        result = lib.k(**kwargs, threads=S["threads"])
    except (attnc.Error, ValueError, TypeError) as e:
        raise Failure("run-error", "%s: %s" % (type(e).__name__, e))
    result = result if isinstance(result, tuple) else (result,)
    outs = dict(zip([n for n, _, _ in expected if n in ("out", "weights", "lse")], result))
    try:
        ref = reference(K, S, values, K["backward"])
    except Ambiguous as e:
        return "ambiguous (%s)" % e
    dt = K["dtype"]
    kvt = K["kv_dtype"] or dt
    half = bound_of(dt, kvt)
    bound = half or 1e-4
    vmax = float(np.max(np.abs(np.nan_to_num(values["v"])))) if "v" in values else 1.0
    if K["mode"] == "cache":
        vmax = max(vmax, float(np.nanmax(np.abs(values["v_cache"]), initial=0.0)))
    ref_out = ref["out"].detach().numpy()
    scale_of = max(vmax, float(np.max(np.abs(ref_out), initial=0.0)))
    # A score error e moves out by at most 2 e max|v|.
    slack = 4 * ref["slack"] * max(1.0, scale_of)
    compare("out", to_float(outs["out"], dt), ref_out, bound, scale_of, slack)
    if "weights" in outs:
        compare("weights", to_float(outs["weights"], dt), ref["weights"].detach().numpy(),
                bound, 1.0, 4 * ref["slack"])
    if "lse" in outs:
        lr = ref["lse"].detach().numpy()
        finite = lr[np.isfinite(lr)]
        compare("lse", outs["lse"], lr, bound, float(np.max(np.abs(finite), initial=1.0)),
                2 * ref["slack"], inf_ok=True)
    if K["mode"] == "cache":
        check_cache(K, S, arrays, before, ref, kvt)
    if K["backward"]:
        check_backward(K, S, lib, kwargs, outs, ref, nrng, expected, half)
    return ""


def check_cache(K, S, arrays, before, ref, kvt):
    """New rows written at cache_len .. cache_len + Lq - 1 (rotated, rounded), nothing else."""
    bshd = K["layout"] == "bshd"
    for idx, name in enumerate(("k_cache", "v_cache")):
        got, old = arrays[name], before[name]
        touched = np.zeros(got.shape, bool)
        for b, c in enumerate(S["cache_len"]):
            rows = ref["new_rows"][b][idx].detach().numpy()  # [G, Lq, W]
            for t in range(S["Lq"]):
                pos = c + t
                if K["cache"][0] == "contiguous":
                    at = (b, pos) if bshd else (b, slice(None), pos)
                else:
                    blk = S["block_table"][b][pos // S["block"]]
                    at = (blk, pos % S["block"]) if bshd else (blk, slice(None), pos % S["block"])
                touched[at] = True
                row = to_float(got[at], kvt)
                want = rows[:, t]
                tol = (bound_of(kvt) or 2e-6) * np.maximum(1.0, np.abs(want))
                if not np.all(np.abs(row - want) <= tol):
                    raise Failure("mismatch", "%s row %d of sequence %d: got %s, expected %s"
                                  % (name, pos, b, row.ravel()[:6], want.ravel()[:6]))
        a = got.view(np.uint8).reshape(got.shape + (-1,))
        o = old.view(np.uint8).reshape(old.shape + (-1,))
        changed = np.any(a != o, axis=-1) & ~touched
        if np.any(changed):
            where = np.argwhere(changed)[0]
            raise Failure("mismatch", "%s%s changed, though no new row goes there"
                          % (name, list(where)))


def check_backward(K, S, lib, kwargs, outs, ref, nrng, expected, half):
    dt = K["dtype"]
    out = outs["out"]
    d_out_values = nrng.uniform(-1, 1, np.shape(out))
    d_out, d_out64 = store(d_out_values, dt)
    bargs = [a.name for a in lib.k_backward.arguments]
    fwd = [n for n, _, _ in expected if n not in ("out", "weights", "lse")]
    float_args = [n for n, t, _ in expected if n in fwd and t in ("f32", "f16", "bf16")]
    want = fwd + ["out", "lse", "d_out"] + ["d_" + n for n in float_args]
    if bargs != want:
        raise Failure("contract", "k_backward arguments %s, expected %s" % (bargs, want))
    try:
        grads = lib.k_backward(**kwargs, out=out, lse=outs["lse"], d_out=d_out,
                               threads=S["threads"])
    except (attnc.Error, ValueError, TypeError) as e:
        raise Failure("run-error", "backward %s: %s" % (type(e).__name__, e))
    grads = grads if isinstance(grads, tuple) else (grads,)
    got = dict(zip(["d_" + n for n in float_args], grads))
    # An output that depends on no input (every row fully masked) has no graph:
    # every gradient is then 0, as the zeros below say.
    if ref["out"].requires_grad:
        ref["out"].backward(torch.tensor(d_out64, dtype=F64))
    types = {n: t for n, t, _ in expected}
    for n in float_args:
        leaf = ref["leaves"].get(n)
        g = leaf.grad if leaf is not None and leaf.grad is not None else torch.zeros(
            np.shape(kwargs[n]), dtype=F64)
        g = g.numpy()
        bound = bound_of(dt, K["kv_dtype"] or dt, types[n]) or 1e-3
        compare("d_" + n, to_float(got["d_" + n], types[n]), g, bound,
                float(np.max(np.abs(g), initial=0.0)),
                8 * ref["slack"] * max(1.0, float(np.max(np.abs(g), initial=0.0))))


# ----------------------------------------------------------------------------------------
# Known compiler bugs this tester found (2026-11-26), each as a signature over the
# generated kernel: conservative (a signature may cover cases that pass). The CI cases
# avoid every signature so that CI stays green; ATTNC_RANDOM_KERNELS runs mark failures
# that match one as xfail; the campaign runs them all and tags each finding with the
# signatures it matches. Delete a signature once its bug is fixed, and the CI seeds
# will include such kernels again.
# ----------------------------------------------------------------------------------------


def known_bugs(K, trials=()):
    """The signatures of open bugs that kernel K matches (none open). BUG-4, GQA
    groups of 3 under causal with a fixed seq_q, and BUG-9, a simplifier crash, were
    Halide 14 bugs that attnc now corrects (compiler/HalideBackend/HalideFixes);
    BUG-10, a cache with in-place projections and a fixed seq_q that did not
    compile, is test_cache_projected.py::test_projected_cache_with_a_fixed_seq_q;
    BUG-12, a backward whose compile did not end (GQA, output projection,
    value_dim 16k+1), is test_regressions.py::
    test_backward_of_a_gqa_projection_layer_of_seventeen_values_compiles, and
    BUG-14, a decode of the same pattern, is
    test_decode_cache_of_thirty_three_values_compiles_in_seconds."""
    bugs = []
    return bugs


# ----------------------------------------------------------------------------------------
# pytest entry points
# ----------------------------------------------------------------------------------------

# The CI cases: seeds of a fixed stream, each a whole random kernel at small sizes.
CI_SEED, CI_CASES = 20261127, 20


def _case_seeds(seed, n):
    r = random.Random(seed)
    return [r.getrandbits(48) for _ in range(n)]


def _ci_seeds(seed, n, n_backward=3):
    """The first cases of the stream that match no known bug (known_bugs): n in all,
    n_backward of them with backward = true."""
    r = random.Random(seed)
    forward, backward = [], []
    while len(forward) + len(backward) < n:
        s = r.getrandbits(48)
        K, _, trials = gen_case(s, cheap=True)
        if known_bugs(K, trials) or K["invalid"] and K["backward"]:
            continue
        if K["backward"] and not K["invalid"]:
            if len(backward) < n_backward:
                backward.append(s)
        elif len(forward) < n - n_backward:
            forward.append(s)
    return forward + backward


def _report(seed, cheap, invalid_rate=0.08):
    K, source, trials = gen_case(seed, cheap, invalid_rate)
    return "case seed %d\n%s\nsizes: %s" % (seed, source,
                                           " | ".join(describe_sizes(K, S) for S in trials))


def _param_seeds():
    n = int(os.environ.get("ATTNC_RANDOM_KERNELS", "0") or 0)
    if n > 0:
        return _case_seeds(int(os.environ.get("ATTNC_RANDOM_SEED", "1")), n), False
    return _ci_seeds(CI_SEED, CI_CASES), True


_SEEDS, _CHEAP = _param_seeds()


def test_random_kernel(case_seed):
    if torch is None:
        import pytest
        pytest.skip("needs torch")
    K, _, trials = gen_case(case_seed, _CHEAP)
    known = known_bugs(K, trials)
    try:
        status, detail = run_case(case_seed, cheap=_CHEAP)
    except Failure as e:
        if known:
            import pytest
            pytest.xfail("%s (known: %s)" % (str(e)[:200], "; ".join(known)))
        raise AssertionError("%s\n%s" % (e, _report(case_seed, _CHEAP))) from None
    print(case_seed, status, detail)


def pytest_generate_tests(metafunc):
    if "case_seed" in metafunc.fixturenames:
        metafunc.parametrize("case_seed", _SEEDS)


# ----------------------------------------------------------------------------------------
# The campaign: workers in their own processes, so a crash or a hang is one finding.
# ----------------------------------------------------------------------------------------


def _worker():
    # Under --asan libasan is loaded in this process already; the compiler that
    # attnc.compile starts is not instrumented and must run without it.
    os.environ.pop("LD_PRELOAD", None)
    for line in sys.stdin:
        seed = int(line)
        t0 = time.time()
        try:
            status, detail = run_case(seed)
            result = {"seed": seed, "status": status, "detail": detail}
        except Failure as e:
            result = {"seed": seed, "status": e.kind, "detail": str(e)}
        except Exception as e:  # a bug of this tester, or an unexpected exception
            result = {"seed": seed, "status": "tester-exception",
                      "detail": "%s\n%s" % (e, traceback.format_exc())}
        result["seconds"] = round(time.time() - t0, 2)
        try:
            K, _, trials = gen_case(seed)
            result["known"] = known_bugs(K, trials)
        except Exception:
            pass
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def _asan_environment():
    """The workers' environment under --asan: kernels for host-asan, libasan
    preloaded into Python (which is not linked with it), leaks not reported
    (Python and torch keep theirs), the first error fatal (the worker's stderr,
    kept with the finding, holds the report)."""
    import subprocess
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    if not os.path.isabs(libasan):
        raise SystemExit("--asan: gcc does not know libasan.so (apt-get install libasan8?)")
    env = dict(os.environ, ATTNC_RANDOM_TARGET="host-asan", LD_PRELOAD=libasan)
    env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0:halt_on_error=1"
    return env


def _campaign(n, seed, jobs, timeout, log_path, minutes, avoid_known=False, asan=False):
    import subprocess
    import selectors
    env = _asan_environment() if asan else None
    seeds = _case_seeds(seed, n)
    if avoid_known:  # only cases that match no known bug's signature
        seeds = [s for s in seeds if not known_bugs(*gen_case(s)[::2])]
    todo = list(seeds)
    results = []
    log = open(log_path, "a") if log_path else None
    sel = selectors.DefaultSelector()
    workers = []
    deadline = time.time() + minutes * 60 if minutes else None

    def start():
        errf = tempfile.TemporaryFile()
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf,
                             text=True, bufsize=1, env=env)
        w = {"p": p, "seed": None, "t0": None, "err": errf}
        sel.register(p.stdout, selectors.EVENT_READ, w)
        workers.append(w)
        return w

    def feed(w):
        if todo and (deadline is None or time.time() < deadline):
            w["seed"], w["t0"] = todo.pop(0), time.time()
            w["p"].stdin.write("%d\n" % w["seed"])
            w["p"].stdin.flush()
        else:
            w["seed"] = None

    def record(res):
        results.append(res)
        line = json.dumps(res)
        if log:
            log.write(line + "\n")
            log.flush()
        if res["status"] not in ("ok", "refused"):
            print("\n=== %s (%.1fs) %s ===\n%s\n%s\n" % (res["status"], res.get("seconds", 0),
                                                        "; ".join(res.get("known", [])),
                                                     res["detail"][:3000],
                                                     _report(res["seed"], False)), flush=True)
        else:
            print(".", end="", flush=True)

    def retire(w, status, detail):
        err = ""
        try:
            w["err"].seek(0)
            err = w["err"].read().decode("utf-8", "replace")[-3000:]
        except Exception:
            pass
        sel.unregister(w["p"].stdout)
        workers.remove(w)
        if w["seed"] is not None:
            record({"seed": w["seed"], "status": status, "detail": detail + "\n" + err,
                    "seconds": round(time.time() - w["t0"], 1)})

    for _ in range(jobs):
        feed(start())
    while any(w["seed"] is not None for w in workers):
        for key, _ in sel.select(timeout=5):
            w = key.data
            line = w["p"].stdout.readline()
            if not line:
                code = w["p"].wait()
                retire(w, "crash", "worker exited with %s" % code)
                feed(start())
                continue
            try:
                record(json.loads(line))
            except ValueError:
                print("worker said:", line)
                continue
            feed(w)
        for w in list(workers):
            if w["seed"] is not None and time.time() - w["t0"] > timeout:
                w["p"].kill()  # our own worker, by its handle
                w["p"].wait()
                retire(w, "hang", "no answer after %d s" % timeout)
                feed(start())
    for w in workers:
        w["p"].stdin.close()
        w["p"].wait()
    counts = {}
    for res in results:
        counts[res["status"]] = counts.get(res["status"], 0) + 1
    print("\n%d cases: %s" % (len(results), counts))
    return results


def _main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--campaign", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--minutes", type=float, default=0)
    ap.add_argument("--log")
    ap.add_argument("--case", type=int)
    ap.add_argument("--cheap", action="store_true")
    ap.add_argument("--show", action="store_true", help="print the case, do not run it")
    ap.add_argument("--avoid-known", action="store_true",
                    help="skip the cases that match a known bug (known_bugs)")
    ap.add_argument("--asan", action="store_true",
                    help="campaign: kernels for host-asan, workers under AddressSanitizer")
    a = ap.parse_args(argv)
    if a.worker:
        _worker()
    elif a.campaign:
        _campaign(a.campaign, a.seed, a.jobs, a.timeout, a.log, a.minutes, a.avoid_known,
                  a.asan)
    elif a.case is not None:
        print(_report(a.case, a.cheap))
        if not a.show:
            try:
                print(run_case(a.case, cheap=a.cheap))
            except Failure as e:
                print("FAIL", e)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
