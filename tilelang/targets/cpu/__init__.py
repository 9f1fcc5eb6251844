"""The cpu target: native code through LLVM. `machine.py` (a leaf) describes CPUs."""
