"""Argument binding: every bad launch raises TypeError / ValueError naming the argument;
good ones pack the ABI slots right (scalars, symbols, out_idx, array-likes)."""
import struct

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilelang.diagnostics import codes_runtime as codes


def f32(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def raises(exc, *needles, code=None):
    """Context manager: `exc` raised with every needle in its message."""
    class _Check:
        def __enter__(self):
            self.ctx = pytest.raises(exc)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *a):
            handled = self.ctx.__exit__(*a)
            msg = str(self.info.value)
            for n in needles:
                assert n in msg, f"{n!r} not in {msg!r}"
            if code is not None:
                assert self.info.value.code == code
            return handled
    return _Check()


# -- good launches ----------------------------------------------------------------------

def test_vadd_positional_and_keywords(lib):
    a, b = f32(1000), np.ones(1000, np.float32)
    c = np.zeros(1000, np.float32)
    lib.vadd(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    c2 = np.zeros_like(c)
    lib["vadd"](a, C=c2, B=b)
    np.testing.assert_array_equal(c2, a + b)


def test_out_idx_single_and_tuple(lib):
    a, b = f32(300), np.full(300, 2, np.float32)
    c = lib.vadd(a, b, out_idx=[-1])
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.shape == (300,)
    np.testing.assert_array_equal(c, a + 2)
    np.testing.assert_array_equal(lib.vadd(a, b, out_idx=2), a + 2)
    x, bias = f32(9, 5), np.arange(5.0)
    y = lib.axpy2d(x, bias, 0.5, -3, out_idx=[4])
    np.testing.assert_allclose(y, 0.5 * x + bias - 3, rtol=1e-6)


def test_out_idx_multiple_returns_tuple_in_given_order(lib):
    a = f32(10)
    out = lib.vadd(a, out_idx=[2, 1])            # B allocated as zeros, so C == A
    assert isinstance(out, tuple) and len(out) == 2
    c, b = out
    np.testing.assert_array_equal(c, a)
    np.testing.assert_array_equal(b, np.zeros(10, np.float32))


def test_out_idx_unbound_symbol(lib):
    with raises(ValueError, "'N'", "'A'", "out_idx", code=codes.ARG_UNBOUND):
        lib.vadd(out_idx=[0, 1, 2])


def test_out_idx_bad_values(lib):
    a = f32(4)
    with raises(ValueError, "out of range"):
        lib.vadd(a, a, out_idx=[3])
    with raises(ValueError, "twice"):
        lib.vadd(a, out_idx=[-1, 2])
    with raises(ValueError, "'alpha'", "scalar"):
        lib.axpy2d(f32(2, 2), np.zeros(2), 1.0, 1, out_idx=[2])
    with raises(TypeError, "out_idx"):
        lib.vadd(a, a, out_idx=["C"])
    with raises(TypeError, "out_idx must be an int or a list of ints"):
        lib.vadd(a, a, out_idx={"C": 2})
    with raises(TypeError, "out_idx must be an int or a list of ints"):
        lib.vadd(a, a, out_idx=2.0)


def test_output_passed_by_keyword_with_out_idx(lib):
    a = f32(4)
    with raises(TypeError, "'C'", "out_idx", code=codes.ARG_COUNT):
        lib.vadd(a, a, C=a.copy(), out_idx=-1)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(0, 40), n=st.integers(1, 7), alpha=st.floats(-4, 4), k=st.integers(-9, 9))
def test_axpy2d_symbols_and_scalars(lib, m, n, alpha, k):
    x = np.random.default_rng(m * 7 + n).standard_normal((m, n)).astype(np.float32)
    bias = np.linspace(-1, 1, n)
    y = np.full((m, n), np.nan, np.float32)
    lib.axpy2d(x, bias, alpha, k, y)
    np.testing.assert_allclose(y, (alpha * x.astype(np.float64) + bias + k).astype(np.float32),
                               rtol=1e-6, atol=1e-6)


def test_scalar_and_symbol_packing(lib):
    out = np.zeros(8, np.int64)
    t = np.array([[1.5, 2], [3, 4], [5, 6]], dtype=ml_dtypes.bfloat16)
    lib.echo(out, -5, 200, True, 1.25, np.float32(-2.5), 2**40, t)
    bits = lambda v: struct.unpack("<q", struct.pack("<d", v))[0]
    assert out[0] == -5                      # sign-extended
    assert out[1] == 200
    assert out[2] == 1
    assert out[3] == bits(1.25)              # float scalars travel as float64 bits
    assert out[4] == bits(-2.5)
    assert out[5] == 2**40
    assert out[6] == 3                       # the symbol M, after the params
    assert out[7] == t.view(np.uint16)[0, 0]


def test_scalar_numpy_and_zero_d_values(lib):
    out = np.zeros(8, np.int64)
    t = np.zeros((1, 2), ml_dtypes.bfloat16)
    lib.echo(out, np.int8(-1), np.uint8(7), np.bool_(False), 3, np.array(0.5), np.int64(9), t)
    assert list(out[:3]) == [-1, 7, 0]
    assert out[3] == struct.unpack("<q", struct.pack("<d", 3.0))[0]   # int accepted for float


# -- bad launches: each names the argument -----------------------------------------------

@pytest.fixture
def echo_args():
    return dict(out=np.zeros(8, np.int64), i8=1, u8=1, flag=False, x=1.0, y=1.0, n=1,
                t=np.zeros((2, 2), ml_dtypes.bfloat16))


@pytest.mark.parametrize("name,value,exc,needle", [
    ("i8", 1.5, TypeError, "expects an integer"),
    ("i8", True, TypeError, "got bool"),
    ("i8", 128, ValueError, "out of range"),
    ("u8", -1, ValueError, "out of range"),
    ("n", "3", TypeError, "expects an integer"),
    ("x", True, TypeError, "got bool"),
    ("x", "1.0", TypeError, "expects a number"),
    ("y", None, TypeError, "expects a number"),
    ("flag", 1, TypeError, "expects a bool"),
    ("x", np.ones(300, np.float32), TypeError, "got ndarray of shape (300,) (float32)"),
    ("x", list(range(100)), TypeError, "got list [0, 1, 2"),
])
def test_bad_scalars(lib, echo_args, name, value, exc, needle):
    echo_args[name] = value
    with raises(exc, f"'{name}'", needle, code=codes.ARG_SCALAR):
        lib.echo(**echo_args)


def test_wrong_dtype(lib):
    a = f32(16)
    with raises(TypeError, "argument 'B' expects float32 (numpy float32), got float64",
                code=codes.ARG_DTYPE):
        lib.vadd(a, a.astype(np.float64), a.copy())
    with raises(TypeError, "'t'", "bfloat16 (ml_dtypes.bfloat16)", "got float16"):
        lib.echo(np.zeros(8, np.int64), 1, 1, False, 1.0, 1.0, 1, np.zeros((2, 2), np.float16))
    with raises(TypeError, "'t'", "got float8_e4m3fn"):
        lib.echo(np.zeros(8, np.int64), 1, 1, False, 1.0, 1.0, 1,
                 np.zeros((2, 2), ml_dtypes.float8_e4m3fn))
    with raises(TypeError, "'out'", "expects int64", "got bool"):
        lib.echo(np.zeros(8, bool), 1, 1, False, 1.0, 1.0, 1, np.zeros((2, 2), ml_dtypes.bfloat16))


def test_wrong_byte_order_is_a_dtype_error(lib):
    a = f32(16)
    with raises(TypeError, "'A'", "expects float32"):
        lib.vadd(a.astype(">f4"), a, a.copy())


def test_launch_error_shows_no_binder_frames(lib):
    """The message names the argument; the traceback stops at the call."""
    import traceback
    a = f32(16)
    with pytest.raises(TypeError) as info:
        lib.vadd(a, a.astype(np.float64), a.copy())
    files = [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    assert not any(f.endswith("runtime/binding.py") for f in files), files


def test_wrong_rank(lib):
    with raises(ValueError, "argument 'X' expects a 2-D tensor of shape (M, N)", "1-D",
                code=codes.ARG_RANK):
        lib.axpy2d(f32(6), np.zeros(6), 1.0, 0, f32(6))


def test_constant_dim_mismatch(lib):
    with raises(ValueError, "'X'", "dimension 1 must be 4", "got 5", code=codes.ARG_SHAPE):
        lib.rowsum(f32(3, 5), np.zeros(3, np.float32))
    with raises(ValueError, "'out'", "dimension 0 must be 8"):
        lib.echo(np.zeros(7, np.int64), 1, 1, False, 1.0, 1.0, 1,
                 np.zeros((2, 2), ml_dtypes.bfloat16))


def test_inconsistent_symbols(lib):
    with raises(ValueError, "M is 100 from X.shape[0] but 120 from Y.shape[0]",
                code=codes.ARG_SYMBOL):
        lib.axpy2d(f32(100, 3), np.zeros(3), 1.0, 0, f32(120, 3))
    with raises(ValueError, "N is 3 from X.shape[1] but 4 from bias.shape[0]", "'bias'"):
        lib.axpy2d(f32(100, 3), np.zeros(4), 1.0, 0, f32(100, 3))


def test_dimension_beyond_32_bit_indexing(lib):
    # a zero-stride view has the shape without the memory; the size check comes first
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2 ** 31, 3), (0, 0))
    with raises(ValueError, "argument 'X': dimension 0 is 2147483648 (M)", "32-bit",
                code=codes.ARG_SHAPE):
        lib.axpy2d(huge, np.zeros(3), 1.0, 0, f32(4, 3))
    edge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2 ** 31 - 1, 3), (0, 0))
    with raises(ValueError, "must be C-contiguous"):       # the largest size passes it
        lib.axpy2d(edge, np.zeros(3), 1.0, 0, f32(4, 3))


def test_non_contiguous(lib):
    x = f32(4, 6)
    with raises(ValueError, "argument 'X' must be C-contiguous; pass np.ascontiguousarray(X)",
                code=codes.ARG_LAYOUT):
        lib.axpy2d(x[:, ::2], np.zeros(3), 1.0, 0, f32(4, 3))
    with raises(ValueError, "'Y'", "C-contiguous"):
        lib.axpy2d(f32(3, 3), np.zeros(3), 1.0, 0, f32(3, 3).T)


def test_unaligned_array(lib):
    raw = np.frombuffer(bytearray(4 * 16 + 1), dtype=np.float32, offset=1, count=16)
    assert not raw.flags.aligned
    with raises(ValueError, "argument 'B' is not aligned", code=codes.ARG_LAYOUT):
        lib.vadd(f32(16), raw, np.zeros(16, np.float32))


def test_read_only_output(lib):
    a = f32(16)
    c = np.zeros(16, np.float32)
    c.flags.writeable = False
    with raises(ValueError, "argument 'C' is read-only", code=codes.ARG_READONLY):
        lib.vadd(a, a.copy(), c)
    ro = a.copy()
    ro.flags.writeable = False                   # inputs declared "read" may be read-only
    out = lib.vadd(ro, ro.copy(), out_idx=-1)
    np.testing.assert_array_equal(out, 2 * a)


def test_read_only_without_access_info_is_rejected(lib):
    # axpy2d's manifest says nothing about access, so any tensor might be written.
    x = f32(2, 2)
    x.flags.writeable = False
    with raises(ValueError, "'X'", "read-only"):
        lib.axpy2d(x, np.zeros(2), 1.0, 0, f32(2, 2))


def test_overlapping_tensors(lib):
    buf = f32(32)
    with raises(ValueError, "'A'", "'C'", "overlap", code=codes.ARG_ALIAS):
        lib.vadd(buf[:16], np.ones(16, np.float32), buf[8:24])
    with raises(ValueError, "overlap"):
        lib.vadd(buf[:16], np.ones(16, np.float32), buf[:16])
    # Two read-only inputs may share memory: nothing is written through either.
    c = np.zeros(16, np.float32)
    lib.vadd(buf[:16], buf[:16], c)
    np.testing.assert_array_equal(c, 2 * buf[:16])
    # Adjacent but disjoint is fine.
    lib.vadd(buf[:16], np.ones(16, np.float32), buf[16:])


def test_argument_counts(lib):
    a = f32(4)
    with raises(TypeError, "missing", "'C'", code=codes.ARG_COUNT):
        lib.vadd(a, a)
    with raises(TypeError, "takes 3", "4 were given"):
        lib.vadd(a, a, a.copy(), a.copy())
    with raises(TypeError, "unexpected keyword argument 'D'"):
        lib.vadd(a, a, a.copy(), D=a)
    with raises(TypeError, "multiple values for argument 'A'"):
        lib.vadd(a, a, A=a)
    with raises(TypeError, "missing", "'B'"):
        lib.vadd(a, C=a.copy())


def test_not_a_tensor(lib):
    with raises(TypeError, "argument 'A' expects a tensor", "got list",
                code=codes.ARG_NOT_TENSOR):
        lib.vadd([1.0, 2.0], f32(2), f32(2))
    with raises(TypeError, "'B'", "expects a tensor"):
        lib.vadd(f32(2), 3.0, f32(2))


# -- array-likes ---------------------------------------------------------------------------

class ArrayInterfaceOnly:
    """Exposes memory only through __array_interface__ (like many C extensions)."""

    def __init__(self, arr):
        self._arr = arr
        self.__array_interface__ = arr.__array_interface__


class DLPackOnly:
    def __init__(self, arr):
        self._arr = arr

    def __dlpack__(self, **kw):
        return self._arr.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._arr.__dlpack_device__()


@pytest.mark.parametrize("wrap", [ArrayInterfaceOnly, DLPackOnly])
def test_array_likes_are_used_without_copy(lib, wrap):
    a, b = f32(50), np.ones(50, np.float32)
    c = np.zeros(50, np.float32)
    lib.vadd(wrap(a), wrap(b), wrap(c))          # writes land in c: no copy was made
    np.testing.assert_array_equal(c, a + 1)


def test_array_like_with_wrong_dtype_names_argument(lib):
    with raises(TypeError, "'B'", "expects float32"):
        lib.vadd(f32(4), ArrayInterfaceOnly(np.zeros(4, np.int32)), f32(4))


def test_empty_tensors(lib):
    e = np.zeros(0, np.float32)
    lib.vadd(e, e.copy(), e.copy())              # zero blocks: nothing runs, no error
    assert lib.vadd(e, e.copy(), out_idx=-1).shape == (0,)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 64), st.integers(0, 24), st.booleans()),
                min_size=2, max_size=6))
def test_overlap_sweep_matches_brute_force(raw):
    from tilelang.runtime.binding import _check_overlap
    spans = [(start, size, f"T{i}", writes) for i, (start, size, writes) in enumerate(raw)]
    expect = any(a[1] and b[1] and a[0] < b[0] + b[1] and b[0] < a[0] + a[1] and (a[3] or b[3])
                 for i, a in enumerate(spans) for b in spans[i + 1:])
    try:
        _check_overlap(spans)
        got = False
    except ValueError:
        got = True
    assert got == expect


def test_overlap_with_many_tensors_uses_the_sweep():
    from tilelang.runtime.binding import BindingPlan
    from tilelang.runtime.manifest import parse
    entry = {"name": "many", "symbols": ["N"], "workspaces": [],
             "params": [{"name": f"T{i}", "kind": "tensor", "dtype": "float32",
                         "shape": ["N"]} for i in range(5)]}
    plan = BindingPlan(parse({"format": 1, "kernels": [entry]}, "test")["specs"][0])
    assert plan._pairs is None                       # 10 pairs: sorted sweep instead
    arrays = [np.zeros(8, np.float32) for _ in range(5)]
    slots, _, _ = plan.bind(tuple(arrays))
    assert slots[5] == 8                             # the symbol N after the 5 params
    buf = np.zeros(12, np.float32)
    with raises(ValueError, "'T1'", "'T4'", "overlap"):
        plan.bind((arrays[0], buf[:8], arrays[2], arrays[3], buf[4:]))
