"""TL06xx: runtime and launch errors (argument binding, artifacts, the thread pool).

The runtime raises these as `TypeError` / `ValueError` subclasses carrying `.code`
(see `tilelang/runtime/errors.py`), so `tilec explain TL06xx` can say more than the message.
"""
from .codes import register

ARG_COUNT = register("TL0601", "wrong number of kernel arguments", """
A kernel was called with too few or too many arguments, an unknown keyword argument, or
the same argument both by position and by keyword. Outputs listed in `out_idx` are
allocated by the kernel and must not be passed.""")

ARG_NOT_TENSOR = register("TL0602", "argument is not a tensor", """
A tensor parameter received something that is not an array. Pass a numpy array (bfloat16
and float8 through ml_dtypes) or an object implementing `__dlpack__` or
`__array_interface__`.""")

ARG_DTYPE = register("TL0603", "argument has the wrong dtype", """
The dtype of an array argument differs from the parameter's declared dtype. The runtime
never converts silently: convert with `arr.astype(...)` (ml_dtypes for bfloat16 / float8).""")

ARG_RANK = register("TL0604", "argument has the wrong rank", """
An array argument has a different number of dimensions than its parameter declares.""")

ARG_SHAPE = register("TL0605", "argument has the wrong shape", """
A dimension declared as a constant in the kernel signature differs from the array's, or
a dimension that gives a symbolic size (`T.dynamic`) exceeds 2**31 - 1: symbols are
32-bit integers inside the kernel, so such a tensor has to be split.""")

ARG_SYMBOL = register("TL0606", "inconsistent symbolic size", """
A symbolic size (`T.dynamic`) is bound from the first tensor dimension that names it;
every other dimension naming it must have the same extent.""")

ARG_LAYOUT = register("TL0607", "argument is not a C-contiguous, aligned array", """
Kernels address tensors as dense row-major (C-contiguous) arrays whose elements sit at
addresses that are multiples of their size. Pass `np.ascontiguousarray(x)` for a
transposed or sliced view, and `x.copy()` for an array at an odd byte offset.""")

ARG_READONLY = register("TL0608", "argument is read-only", """
The kernel may write to this tensor but the array is not writeable.""")

ARG_ALIAS = register("TL0609", "arguments overlap in memory", """
Tensor arguments are compiled as non-aliasing (noalias): two arguments whose memory
overlaps would give wrong results. Pass a copy of one of them.""")

ARG_UNBOUND = register("TL0610", "symbolic size cannot be bound", """
A symbolic size appears only in the shapes of outputs allocated through `out_idx` (or
only in workspaces), so no input tells its value. Pass that output explicitly.""")

ARG_SCALAR = register("TL0611", "bad scalar argument", """
A scalar parameter received a value of the wrong kind (a float for an integer parameter,
a bool for a number) or a value outside the range of its dtype.""")

BAD_ARTIFACT = register("TL0612", "not a loadable tilelang library", """
The shared library has no `tilelang_manifest`, its manifest is malformed, was written by
an incompatible version, or a kernel symbol it names is missing. Rebuild it with
`tilec compile --emit so`.""")

BAD_OPTION = register("TL0613", "bad launch option", """
`out_idx` must list valid, distinct parameter indices of tensor parameters (negative
indices count from the end); `num_threads` and `TILELANG_NUM_THREADS` must be positive
integers.""")
