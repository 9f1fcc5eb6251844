"""tcsim: a simulated tensor-core accelerator — ISA, assembler, binary encoding,
artifacts, machine configs and the discrete-event simulator.

Part of the runtime: imports nothing of the compiler. Names load on first use.
"""
__all__ = ["run", "Report", "assemble", "disassemble", "encode", "decode", "Artifact",
           "load", "from_bytes", "MachineConfig", "get_config", "CONFIGS", "Program",
           "RaceError", "DeadlockError", "SimError", "ArtifactError", "SimKernel", "SimLibrary"]

_HOME = {"run": "sim", "Report": "report", "assemble": "asm", "disassemble": "asm",
         "encode": "encoding", "decode": "encoding", "Artifact": "artifact",
         "load": "artifact", "from_bytes": "artifact", "ArtifactError": "artifact",
         "MachineConfig": "config", "get_config": "config", "CONFIGS": "config",
         "Program": "isa", "RaceError": "errors", "DeadlockError": "errors",
         "SimError": "errors", "SimKernel": "kernel", "SimLibrary": "kernel"}


def __getattr__(name):
    if name in _HOME:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
