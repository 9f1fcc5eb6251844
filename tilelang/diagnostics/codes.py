"""The registry of diagnostic codes: TLxxxx -> (title, explanation).

Ranges: TL00xx syntax (parser), TL01xx names and scopes, TL02xx types, dtypes and shapes,
TL03xx tile ops / kernel structure, TL04xx passes and verifier, TL05xx codegen / target,
TL06xx runtime and launch, TL07xx driver / CLI / cache, TL08xx the tcsim target.
Each range lives in its own module (codes_*.py) so layers add codes without colliding.
"""
from __future__ import annotations

import importlib
import pkgutil

CODES: dict[str, tuple[str, str]] = {}


def register(code: str, title: str, explanation: str) -> str:
    if code in CODES and CODES[code][0] != title:
        raise ValueError(f"diagnostic code {code} registered twice")
    CODES[code] = (title, explanation.strip())
    return code


def _load_all() -> None:
    from . import __path__ as pkg_path
    for mod in pkgutil.iter_modules(pkg_path):
        if mod.name.startswith("codes_"):
            importlib.import_module(f"{__package__}.{mod.name}")


def explain(code: str) -> str | None:
    _load_all()
    code = code.upper()
    if not code.startswith("TL"):
        code = "TL" + code
    if code not in CODES:
        return None
    title, text = CODES[code]
    return f"{code}: {title}\n\n{text}\n"


def all_codes() -> dict[str, tuple[str, str]]:
    _load_all()
    return dict(CODES)
