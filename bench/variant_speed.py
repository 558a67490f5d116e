"""bpc and compression speed (KB per CPU second) of one preset with parameter overrides.

    NNC_CORPORA=DIR python bench/variant_speed.py NAME PRESET_ID "dict(field=value, ...)" FILE[:BYTES] ...

Prints one line: NAME, then per file its bpc (container included) and KB/CPU-s.  CPU time of
this process only, so two variants run side by side on two cores can be compared; the figures
of different runs only as ratios within a pair.  Used for bench/TUNING.md (round 3, landing).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import nncompress
from nncompress import presets


def main(argv: list[str]) -> int:
    name, preset_id, overrides = argv[0], int(argv[1]), eval(argv[2], {"dict": dict})
    params = dataclasses.replace(presets.PRESETS[preset_id].params, **overrides)
    nncompress.compress(b"warm up " * 300, params=params)  # compile / load the kernels first
    cells = []
    for spec in argv[3:]:
        path, _, count = spec.partition(":")
        with open(os.path.join(os.environ.get("NNC_CORPORA", "."), path), "rb") as f:
            data = f.read()
        data = data[: int(count)] if count else data
        began = time.process_time()
        archive = nncompress.compress(data, params=params)
        seconds = time.process_time() - began
        cells.append(f"{spec} {8 * len(archive) / len(data):.4f} {len(data) / 1e3 / seconds:.1f}")
    print(name, " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
