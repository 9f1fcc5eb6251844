"""The kernels of one compile, by name: the container both the CPU `Library` and the
tcsim `SimLibrary` are, so they index, iterate and report a missing name alike. A library
of one kernel is also that kernel: `tilelang.load("vadd.so")(a, b, c)`, as a TileLang user
calls a compiled kernel."""
from __future__ import annotations


class KernelMap:
    """`lib["name"]`, `lib.name`, `"name" in lib`, iteration over the kernels, `len(lib)`,
    and `lib(*args, **kwargs)` when it holds one kernel. Subclasses fill `self._kernels`
    and may set `self.path` (named in errors)."""

    _kernels: dict
    path: str | None = None

    @property
    def kernels(self) -> dict:
        return dict(self._kernels)

    def _missing(self, name: str, kernels: dict) -> str:
        return f"no kernel {name!r} in {self.path or 'this library'}; it has {sorted(kernels)}"

    def __getitem__(self, name: str):
        try:
            return self._kernels[name]
        except KeyError:
            raise KeyError(self._missing(name, self._kernels)) from None

    def __getattr__(self, name: str):
        # reached only for names that are not real attributes; `_kernels` may not exist
        # yet while the object is being built or unpickled
        kernels = self.__dict__.get("_kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(name if name.startswith("_") else self._missing(name, kernels))

    def __contains__(self, name: str) -> bool:
        return name in self._kernels

    def __iter__(self):
        return iter(self._kernels.values())

    def __len__(self) -> int:
        return len(self._kernels)

    def __call__(self, *args, **kwargs):
        """Call the library's one kernel; with several, say which there are."""
        if len(self._kernels) != 1:
            names = sorted(self._kernels)
            raise TypeError(f"{self.path or 'this library'} holds {len(names)} kernels "
                            f"({', '.join(names)}): call one of them, e.g. "
                            f"lib[{names[0]!r}](...)" if names else
                            f"{self.path or 'this library'} holds no kernel")
        return next(iter(self._kernels.values()))(*args, **kwargs)
