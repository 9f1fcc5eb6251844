"""Loading libraries: the Library API, clear errors for bad artifacts, the JIT-side
constructors, and proof that loading needs none of the compiler."""
import ctypes
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tilelang.runtime.artifact import Library, load
from tilelang.diagnostics import ArtifactError

from runtime_isolation import BLOCKER


def test_library_api(lib, libpath):
    assert lib.path == libpath
    assert set(lib.kernels) == {"vadd", "axpy2d", "rowsum", "mark", "echo"}
    assert lib["vadd"] is lib.vadd
    assert "vadd" in lib and len(lib) == 5
    assert lib.manifest["format"] == 1
    assert "specs" not in lib.manifest
    assert lib.vadd.manifest["name"] == "vadd"
    assert [p.name for p in lib.axpy2d.params] == ["X", "bias", "alpha", "k", "Y"]
    assert lib.axpy2d.symbols == ("M", "N")
    assert "axpy2d(X: float32[M, N]" in repr(lib.axpy2d)
    with pytest.raises(KeyError, match="nope"):
        lib["nope"]
    with pytest.raises(AttributeError, match="nope"):
        lib.nope


def test_kernel_outlives_library_object(libpath):
    k = load(libpath).vadd            # the Library object is dropped at once
    a = np.ones(8, np.float32)
    np.testing.assert_array_equal(k(a, a.copy(), out_idx=-1), 2 * a)


def test_default_out_idx_per_library_and_per_kernel(libpath):
    import inspect
    a = np.ones(4, np.float32)
    lib = load(libpath, out_idx={"vadd": -1})
    assert str(inspect.signature(lib.vadd)) == "(A, B, *, out_idx=None, num_threads=None)"
    np.testing.assert_array_equal(lib.vadd(a, a.copy()), 2 * a)
    c = np.zeros(4, np.float32)
    lib.vadd(a, a.copy(), c, out_idx=None)         # per-call override
    np.testing.assert_array_equal(c, 2 * a)


def test_from_cdll_and_from_symbols(libpath):
    cdll = ctypes.CDLL(libpath)
    a = np.arange(5, dtype=np.float32)
    lib = Library.from_cdll(cdll, out_idx=-1)
    np.testing.assert_array_equal(lib.vadd(a, a.copy()), 2 * a)
    with pytest.raises(ValueError, match="scalar parameter 'spin_us'"):
        lib.mark(np.zeros(2, np.int32), np.zeros(2, np.int64))   # -1 does not suit mark

    def resolve(name):
        return ctypes.cast(getattr(cdll, name), ctypes.c_void_p).value

    cdll.tilelang_manifest.restype = ctypes.c_char_p
    manifest = json.loads(cdll.tilelang_manifest())
    lib2 = Library.from_symbols(manifest, resolve, cdll, out_idx={"vadd": [-1]})
    np.testing.assert_array_equal(lib2.vadd(a, a.copy()), 2 * a)
    lib3 = Library.from_symbols(None, resolve, cdll)      # manifest read via the symbol
    assert set(lib3.kernels) == set(lib.kernels)


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="no such library"):
        load("/nonexistent/k.so")


def test_not_a_shared_library(tmp_path):
    p = tmp_path / "junk.so"
    p.write_bytes(b"not an ELF file")
    with pytest.raises(ArtifactError, match="cannot load"):
        load(p)


def test_no_manifest(tmp_path, build_lib):
    import runtime_ckernels as ck
    src = ck.HEADER + "int f(void) { return 1; }\n"
    path = ck.build(src, str(tmp_path / "plain.so"))
    with pytest.raises(ArtifactError, match="not a tilelang library"):
        load(path)


@pytest.mark.parametrize("overrides,needle", [
    ({"format": 2}, "format 2 is not supported"),
    ({"format": None}, "format None"),
    ({"kernels": "vadd"}, "'kernels' list"),
])
def test_bad_manifest_format(build_lib, overrides, needle):
    with pytest.raises(ArtifactError, match=needle):
        load(build_lib(["vadd"], manifest_overrides=overrides))


def test_bad_manifest_entries():
    from tilelang.runtime.manifest import parse
    base = {"name": "k", "params": [], "symbols": ["N"], "workspaces": []}
    cases = [
        ({**base, "params": [{"name": "A", "kind": "tensor", "dtype": "float99",
                              "shape": ["N"]}]}, "unknown dtype"),
        ({**base, "params": [{"name": "A", "kind": "tensor", "dtype": "float32",
                              "shape": ["N +"]}]}, "cannot read size expression"),
        ({**base, "params": [{"name": "A", "kind": "tensor", "dtype": "float32",
                              "shape": ["N / 2"]}]}, "unsupported size expression"),
        ({**base, "params": [{"name": "A", "kind": "tensor", "dtype": "float32",
                              "shape": [True]}]}, "shape entry"),
        ({**base, "lets": [{"name": "S"}]}, "'lets' needs a name and an expr"),
        ({**base, "params": [{"name": "A", "kind": "pointer", "dtype": "float32"}]},
         "kind must be"),
        ({**base, "params": [{"name": "A", "kind": "scalar", "dtype": "int32"},
                             {"name": "A", "kind": "scalar", "dtype": "int32"}]},
         "share a name"),
        ({**base, "params": [{"name": "A", "kind": "tensor", "dtype": "int8", "shape": [1],
                              "access": "sometimes"}]}, "access must be"),
    ]
    for entry, needle in cases:
        with pytest.raises(ArtifactError, match=needle):
            parse({"format": 1, "kernels": [entry]}, "test")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        parse(b"{", "test")


def test_missing_kernel_symbol(build_lib):
    path = build_lib(["vadd"], omit_symbols=["vadd__num_blocks"])
    with pytest.raises(ArtifactError, match="vadd__num_blocks"):
        load(path)




def test_runtime_is_compiler_free(libpath, tmp_path):
    """Load and run a library, use the cache, with the compiler unimportable."""
    script = BLOCKER + textwrap.dedent(f"""
        import numpy as np
        import tilelang
        from tilelang.runtime.artifact import load
        lib = tilelang.load({libpath!r})
        assert type(lib) is type(load({libpath!r}))
        a = np.arange(1000, dtype=np.float32)
        c = lib.vadd(a, a.copy(), out_idx=-1, num_threads=2)
        assert (c == 2 * a).all()
        from tilelang.runtime.cache import Cache
        cache = Cache({str(tmp_path / "cache")!r})
        assert cache.lookup(cache.store(Cache.key("k"), {{"x": b"1"}}).rsplit("/", 1)[1])
        try:
            import llvmlite
        except ImportError:
            pass
        else:
            raise SystemExit("llvmlite was importable: the blocker failed")
        bad = [m for m in sys.modules if m.split(".")[0] in ("llvmlite", "lark")
               or m.startswith(("tilelang.ir", "tilelang.frontend", "tilelang.passes",
                                "tilelang.codegen"))]
        assert not bad, bad
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "TILELANG_DISABLE_CACHE": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
