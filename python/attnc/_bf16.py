"""bfloat16 for NumPy users: NumPy has no bfloat16 type, so attnc passes bf16
arrays as numpy uint16 holding the raw bits (the upper half of a float32).
These two functions convert, with the same rounding as attnc-run and the
kernels: round to nearest even, overflow to infinity, NaN kept NaN.
"""
import numpy as np


def f32_to_bf16(a):
    """float32 values -> uint16 bf16 bits of the same shape, rounded to nearest
    even. Other float inputs are converted to float32 first."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    # Adding 0x7fff plus the kept lowest bit rounds ties to even; the carry
    # into the exponent is the correct rounding up. Only NaNs can wrap.
    with np.errstate(over="ignore"):
        bits = ((u + np.uint32(0x7fff) + ((u >> np.uint32(16)) & np.uint32(1)))
                >> np.uint32(16)).astype(np.uint16)
    nan = (u & np.uint32(0x7fffffff)) > np.uint32(0x7f800000)
    # Quiet NaN, sign and upper payload kept: rounding could make it infinity.
    bits[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return bits


def bf16_to_f32(a):
    """uint16 bf16 bits -> float32 values of the same shape (exact)."""
    a = np.asarray(a)
    if a.dtype != np.uint16:
        raise ValueError("bf16_to_f32 takes uint16 bf16 bits, not %s" % a.dtype)
    return (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
