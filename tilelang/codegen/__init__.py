"""Code generators: `llvm` (CPU, native code) and `tcsim` (simulated accelerator).

Imported on first use so that `import tilelang` does not load llvmlite.
"""
