"""The IR: nodes, printer, verifier and traversal helpers. Imports no other layer."""
from .nodes import *  # noqa: F401,F403
from .nodes import __all__ as _nodes_all  # noqa: F401
from .visitor import children, walk, rewrite, substitute, free_vars  # noqa: F401
