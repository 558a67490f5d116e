"""What the command line shows while it works: whether the model's kernels still have to be
compiled (the first run sits ~20 s in numba), and a progress bar on a terminal."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager


def kernels_cached() -> bool:
    """Whether numba has compiled kernels cached for the model (without importing it)."""
    from importlib.util import find_spec

    places = [os.environ["NUMBA_CACHE_DIR"]] if os.environ.get("NUMBA_CACHE_DIR") else []
    spec = find_spec("nncompress.model")
    if spec is not None and spec.submodule_search_locations:
        places += list(spec.submodule_search_locations)
    for place in places:
        for _, _, names in os.walk(place):
            if any(name.endswith(".nbi") for name in names):
                return True
    return False


@contextmanager
def progress_bar(total, name: str, show: bool):
    """Yields a tqdm bar's update (bytes done) when shown and the input is over 64 KiB or of
    unknown size; else None, so the caller passes no progress callback."""
    if not (show and (total is None or total > 1 << 16)):
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=name,
              file=sys.stderr, leave=False) as bar:
        yield bar.update
