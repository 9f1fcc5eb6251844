"""The tcsim target: the simulated tensor-core accelerator of docs/tcsim.md.

Leaf modules (the standard library and the shared leaves only, so the compiler and the
simulator share them): `isa.py` (instructions and programs), `asm.py` (the `.tcasm` text
form), `encoding.py` (the binary form), `validate.py` and `artifact.py` (the artifact file
and the checks a loader makes), `config.py` (the machine configs). `target.py` holds the
`TcsimTarget` the driver asks, `pipeline.py` its passes.
"""
