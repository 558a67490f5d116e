"""Which range coder is active: constriction where it is installed, else its numba twin.

Kept apart from nncompress.coder so that `nncompress --version` can name the coder without
loading numba.  NNC_CODER=twin or NNC_CODER=constriction forces one for both directions.
"""

from __future__ import annotations

import importlib.metadata
import os

try:
    import constriction
except ImportError:  # no wheel for this platform: the twin codes alone
    constriction = None

_FORCED = os.environ.get("NNC_CODER", "").strip().lower()
if _FORCED not in ("", "twin", "constriction"):
    raise ImportError(f"NNC_CODER must be 'twin' or 'constriction', not {_FORCED!r}")
if _FORCED == "constriction" and constriction is None:
    raise ImportError("NNC_CODER=constriction, but constriction is not installed here")

# Which implementation encodes, and which decodes, unless a caller asks for one.
BACKEND = "twin" if _FORCED == "twin" or constriction is None else "constriction"
DECODER = "constriction" if _FORCED == "constriction" else "twin"
BACKENDS = ("constriction", "twin") if constriction is not None else ("twin",)


def coder_description() -> str:
    """One line for `nncompress --version`: which coder encodes and which decodes."""
    def name(backend):
        if backend == "constriction":
            try:
                return f"constriction {importlib.metadata.version('constriction')}"
            except importlib.metadata.PackageNotFoundError:
                return "constriction"
        return "numba twin of constriction's coder"
    if BACKEND == DECODER:
        return f"coder: {name(BACKEND)}"
    return f"coder: {name(BACKEND)} encodes, {name(DECODER)} decodes"
