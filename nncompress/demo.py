"""`nncompress demo`: compress a text every Python installation has and compare with the
standard library's compressors.  No download, no arguments needed."""

from __future__ import annotations

import os
import sys
import time

from .api import compress
from .comparators import nncompress_comparator, select_comparators
from .presets import DEFAULT_LEVEL
from .cli_args import Parser as UsageParser  # usage errors exit 1, as gzip and xz

DEFAULT_BYTES = 200_000


def default_input(limit: int = DEFAULT_BYTES) -> tuple[str, bytes]:
    """English documentation text shipped with CPython (pydoc's topic help), else stdlib source."""
    try:
        from pydoc_data import topics

        text = "\n\n".join(topics.topics[key] for key in sorted(topics.topics))
        return "pydoc_data.topics (Python's built-in help text)", text.encode("utf-8")[:limit]
    except ImportError:  # some distributions strip pydoc_data
        import argparse as source_module

        with open(source_module.__file__, "rb") as f:
            return f"{os.path.basename(source_module.__file__)} (Python stdlib source)", f.read()[:limit]


def main(argv=None) -> int:
    parser = UsageParser(prog="nncompress demo", description=__doc__)
    parser.add_argument("file", nargs="?", help="compress this file instead of the default text")
    parser.add_argument("-l", "--level", type=int, default=DEFAULT_LEVEL, choices=range(1, 10))
    args = parser.parse_args(argv)
    if args.file:
        with open(args.file, "rb") as f:
            name, data = args.file, f.read()
    else:
        name, data = default_input()
    print(f"input: {name}, {len(data):,} bytes")
    compress(b"numba warm-up", args.level)  # compile (or load the cached kernels) outside the timing
    rows = []
    # the standard library's compressors only: the demo needs nothing beyond nncompress itself
    for comparator in select_comparators("gzip,bzip2,xz") + [nncompress_comparator(args.level)]:
        label, (enc, dec) = comparator.label, comparator.codec()
        t0 = time.perf_counter()
        packed = enc(data)
        t1 = time.perf_counter()
        ok = dec(packed) == data
        t2 = time.perf_counter()
        rows.append((label, len(packed), 8 * len(packed) / max(1, len(data)),
                     len(data) / 1024 / max(t1 - t0, 1e-9), len(data) / 1024 / max(t2 - t1, 1e-9), ok))
    print(f"{'compressor':<18} {'bytes':>9} {'bpc':>6} {'comp KB/s':>10} {'decomp KB/s':>12}  round trip")
    for label, size, bpc, cs, ds, ok in rows:
        print(f"{label:<18} {size:>9,} {bpc:>6.3f} {cs:>10.1f} {ds:>12.1f}  {'ok' if ok else 'FAILED'}")
    return 0 if all(row[-1] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
