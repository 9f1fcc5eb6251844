"""Arrays that end right before an unreadable page, so a stray read past them faults."""
import ctypes
import mmap

import numpy as np

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_KEEP = []


def guarded_empty(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    page = mmap.PAGESIZE
    data_pages = (nbytes + page - 1) // page or 1
    total = (data_pages + 1) * page
    base = _libc.mmap(None, total, mmap.PROT_READ | mmap.PROT_WRITE,
                      mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert base not in (None, ctypes.c_void_p(-1).value)
    assert _libc.mprotect(base + data_pages * page, page, 0) == 0   # PROT_NONE
    start = base + data_pages * page - nbytes
    buf = (ctypes.c_char * nbytes).from_address(start)
    _KEEP.append(buf)   # the mapping lives for the whole test session
    return np.frombuffer(buf, dtype=dtype).reshape(shape)
