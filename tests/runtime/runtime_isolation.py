"""Python source that, run first in a subprocess, makes the compiler unimportable: a
`sys.meta_path` finder raising ImportError for llvmlite, lark and the compiler packages.
Tests prepend it to a script to prove the runtime never needs them."""
import textwrap

BLOCKER = textwrap.dedent("""
    import sys
    BLOCKED = ("llvmlite", "lark", "tilelang.ir", "tilelang.frontend", "tilelang.passes",
               "tilelang.codegen", "tilelang.driver", "tilelang.decorators")

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                raise ImportError(f"blocked in this test: {name}")
            return None

    sys.meta_path.insert(0, Blocker())
""")
