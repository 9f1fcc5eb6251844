"""exp, exp2 and tanh for float32 as inline, branch-free code.

LLVM lowers `llvm.exp.f32` to a scalar `expf` call, which keeps softmax and attention
loops from vectorising. This version vectorises: Cody-Waite range reduction
x = n*ln2 + r (|r| <= ln2/2), a degree-7 Taylor polynomial for e^r (truncation error
< 6e-9, so results are within ~2 ulp), and a scale by 2^n done as two multiplications
so that overflow gives inf and gradual underflow gives subnormals. tanh is built on the
same reduction as an expm1, which stays accurate near zero where 1 - e^x cancels.
"""
from __future__ import annotations

import math

from llvmlite import ir

from .convert import intrinsic
from .types import F32, I32

_LOG2E = 1.4426950408889634
_LN2_HI = 0.693145751953125            # ln 2 with trailing zero bits: n * hi is exact
_LN2_LO = 1.4286068203094172321e-06    # ln 2 - _LN2_HI
_COEFFS = [1.0 / math.factorial(k) for k in range(8)]   # e^r = sum r^k / k!


def _f(v: float) -> ir.Constant:
    return ir.Constant(F32, v)


def _fma(b: ir.IRBuilder, x, y, z):
    fn = intrinsic(b.module, "llvm.fmuladd.f32", F32, [F32, F32, F32])
    return b.call(fn, [x, y, z])


def _clamp(b: ir.IRBuilder, x, lo: float, hi: float):
    x = b.select(b.fcmp_ordered("<", x, _f(lo)), _f(lo), x)
    return b.select(b.fcmp_ordered(">", x, _f(hi)), _f(hi), x)


def _scale_pow2(b: ir.IRBuilder, p, n_float):
    """p * 2^n for integral n in [-152, 130], without overflowing the exponent field."""
    n = b.fptosi(n_float, I32)
    n1 = b.ashr(n, ir.Constant(I32, 1))
    n2 = b.sub(n, n1)

    def pow2(k):
        return b.bitcast(b.shl(b.add(k, ir.Constant(I32, 127)), ir.Constant(I32, 23)), F32)

    return b.fmul(b.fmul(p, pow2(n1)), pow2(n2))


def _exp_poly(b: ir.IRBuilder, r):
    acc = _f(_COEFFS[-1])
    for c in reversed(_COEFFS[:-1]):
        acc = _fma(b, acc, r, _f(c))
    return acc


def _rint(b: ir.IRBuilder, x):
    return b.call(intrinsic(b.module, "llvm.rint.f32", F32, [F32]), [x])


def _keep_nan(b: ir.IRBuilder, x, result):
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


def exp_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    xc = _clamp(b, x, -104.0, 89.0)          # beyond these the result is 0 / inf anyway
    n = _rint(b, b.fmul(xc, _f(_LOG2E)))
    r = _fma(b, b.fneg(n), _f(_LN2_HI), xc)
    r = _fma(b, b.fneg(n), _f(_LN2_LO), r)
    return _keep_nan(b, x, _scale_pow2(b, _exp_poly(b, r), n))


def exp2_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    xc = _clamp(b, x, -152.0, 129.0)
    n = _rint(b, xc)
    r = b.fmul(b.fsub(xc, n), _f(math.log(2.0)))   # x - n is exact
    return _keep_nan(b, x, _scale_pow2(b, _exp_poly(b, r), n))


def _expm1_nonpositive(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e^x - 1 for x <= 0: 2^n * (e^r - 1) + (2^n - 1), the bracket a polynomial with no
    constant term, so for |x| < ln2/2 (n = 0) the result keeps full relative accuracy."""
    xc = _clamp(b, x, -30.0, 0.0)             # e^-30 - 1 is -1 in float32
    n = _rint(b, b.fmul(xc, _f(_LOG2E)))
    r = _fma(b, b.fneg(n), _f(_LN2_HI), xc)
    r = _fma(b, b.fneg(n), _f(_LN2_LO), r)
    acc = _f(1.0 / math.factorial(9))
    for k in range(8, 0, -1):
        acc = _fma(b, acc, r, _f(1.0 / math.factorial(k)))
    q = b.fmul(acc, r)                        # e^r - 1
    s = b.bitcast(b.shl(b.add(b.fptosi(n, I32), ir.Constant(I32, 127)),
                        ir.Constant(I32, 23)), F32)   # 2^n, n in [-44, 0]
    return _fma(b, s, q, b.fsub(s, _f(1.0)))


def tanh_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """tanh|x| = -e / (2 + e) with e = expm1(-2|x|), then the sign of x."""
    ax = b.call(intrinsic(b.module, "llvm.fabs.f32", F32, [F32]), [x])
    e = _expm1_nonpositive(b, b.fmul(ax, _f(-2.0)))
    t = b.fdiv(b.fneg(e), b.fadd(e, _f(2.0)))
    t = b.call(intrinsic(b.module, "llvm.copysign.f32", F32, [F32, F32]), [t, x])
    return _keep_nan(b, x, t)
