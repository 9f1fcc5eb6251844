"""Differential testing and fuzzing of the compiler against the reference interpreter.

`differential.check` runs one program every way there is and names what disagreed;
`generate` draws well-typed random kernels (hypothesis strategies too); `malformed`
mutates them into bad input; `shrink` makes a failing program small; `campaign` runs
many of them in worker processes (`python -m tilelang.fuzz`, `make fuzz`). Imports
hypothesis only for the strategies.
"""
