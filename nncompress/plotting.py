"""matplotlib, optional: found (or refused with a clear message) before any work is done."""

from __future__ import annotations

import importlib

MISSING = ("matplotlib is not installed, so no plot can be drawn: install it "
           "(pip install matplotlib, or pip install 'nncompress[bench]') or leave out --plot")


class PlotUnavailable(RuntimeError):
    """matplotlib cannot be imported."""


def require_matplotlib() -> None:
    """Raise PlotUnavailable now if a plot could not be drawn later."""
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        raise PlotUnavailable(MISSING) from None


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend (no display needed)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
