"""The compiler's version: a leaf (no imports), so every layer reads it without importing
the package root's re-exports. pyproject.toml states the same number."""
__version__ = "0.1.0"
