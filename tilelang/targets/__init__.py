"""The targets tilelang compiles for, one package each (`cpu`, `tcsim`).

Each target package has leaf modules that import only the standard library (and the
shared leaves `tilelang.dtypes` / `tilelang.diagnostics`): the CPU machine descriptions,
the tcsim ISA and machine configs. Passes, codegen, the kernel library and the runtime
may all import them. This package and the targets' `__init__` modules stay light for the
same reason.
"""
