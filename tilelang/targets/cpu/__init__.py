"""The cpu target: native code through LLVM, loaded as a shared library.

`machine.py` is a leaf (standard library only): the CPU machine descriptions the passes
and the kernel library read. `target.py` holds the `CpuTarget` the driver asks,
`pipeline.py` its passes, `host.py` the host memo, `timing.py` how `tilec run` times it.
"""
