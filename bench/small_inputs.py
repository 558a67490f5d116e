#!/usr/bin/env python3
"""Small inputs (issue 15, items 7 and 8): container overhead, the cost of fitting the model to the
input, and peak memory.  Results: bench/SMALL.md.

    NNC_CORPORA=... .venv/bin/python bench/small_inputs.py [--levels 1,6,9] [--files grammar.lsp,xargs.1,paper1]

1. overhead (archive bytes - input bytes) of a 6-byte file and an empty one, format 2 as written
   now, format 1 (nncompress 0.1), gzip -9, xz -9 and zstd -19 (Python's modules);
2. bytes with the model fitted to the input (what nncompress writes) and with the preset's full
   model (an input of unknown size), and the payloads (blocks without the header) compared;
3. peak resident memory (VmHWM) of a fresh interpreter compressing, then decompressing, a 4 KB
   file, fitted and full.
"""

from __future__ import annotations

import argparse
import gzip
import lzma
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nncompress  # noqa: E402
from nncompress import format as fmt  # noqa: E402
from nncompress.codec import StreamEncoder  # noqa: E402
from nncompress.segments import compress_segment  # noqa: E402


def one_stream(data: bytes, level: int, fitted: bool) -> bytes:
    encoder = StreamEncoder(level, size=len(data) if fitted else None)
    out = encoder.header() + (encoder.block(data, last=True) if data else b"")
    return out + encoder.end()


def overhead_table(levels) -> list[str]:
    rows = ["| input | " + " | ".join(f"-{lv}" for lv in levels) + " | gzip -9 | xz -9 | zstd -19 |",
            "|---|" + "---|" * (len(levels) + 3)]
    try:
        import zstandard
        zstd = zstandard.ZstdCompressor(level=19).compress
    except ImportError:
        zstd = None
    for label, data in (("`hello\\n` (6 B), format 2", b"hello\n"), ("6 random bytes, format 2", bytes.fromhex("9f0c7a11e23b")),
                        ("empty, format 2", b""), ("`hello\\n`, format 1 (0.1)", None)):
        if data is None:
            cells = [str(len(compress_segment(b"hello\n", lv, format_version=1)) - 6) for lv in levels]
            rows.append(f"| {label} | " + " | ".join(cells) + " | | | |")
            continue
        cells = [str(len(nncompress.compress(data, lv)) - len(data)) for lv in levels]
        others = [len(gzip.compress(data, 9)), len(lzma.compress(data, preset=9)),
                  len(zstd(data)) if zstd else None]
        rows.append(f"| {label} | " + " | ".join(cells) + " | "
                    + " | ".join("-" if n is None else str(n - len(data)) for n in others) + " |")
    return rows


def fitting_table(files, levels, corpora: Path) -> list[str]:
    rows = ["| file | bytes | level | fitted: archive | bpc | full model: archive | bpc | payload difference |",
            "|---|---|---|---|---|---|---|---|"]
    for name in files:
        data = (corpora / name).read_bytes()
        for level in levels:
            fitted, full = one_stream(data, level, True), one_stream(data, level, False)
            assert nncompress.decompress(fitted) == data and nncompress.decompress(full) == data
            payload = (len(fitted) - fmt.parse_header(fitted)[1]) - (len(full) - fmt.parse_header(full)[1])
            rows.append(f"| {name} | {len(data)} | {level} | {len(fitted)} | {8 * len(fitted) / len(data):.4f} | "
                        f"{len(full)} | {8 * len(full) / len(data):.4f} | {payload:+d} |")
    return rows


PEAK = r"""
import sys
from nncompress.codec import StreamDecoder, StreamEncoder
level, fitted, path = int(sys.argv[1]), sys.argv[2] == "fitted", sys.argv[3]
data = open(path, "rb").read()
encoder = StreamEncoder(level, size=len(data) if fitted else None)
archive = encoder.header() + encoder.block(data, last=True) + encoder.end()
del encoder
decoder = StreamDecoder()
assert decoder.feed(archive) == data
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def memory_table(levels, sample: Path) -> list[str]:
    def peak(level, how):
        out = subprocess.run([sys.executable, "-c", PEAK, str(level), how, str(sample)], check=True,
                             capture_output=True, text=True, env=dict(os.environ)).stdout
        return int(out.split()[-1]) >> 10

    peak(1, "fitted")  # kernels into the cache
    rows = ["| level | fitted (what nncompress does) | full model |", "|---|---|---|"]
    for level in levels:
        rows.append(f"| {level} | {peak(level, 'fitted')} MiB | {peak(level, 'full')} MiB |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,6,9")
    parser.add_argument("--memory-levels", default="1,2,3,4,5,6,7,8,9")
    parser.add_argument("--files", default="grammar.lsp,xargs.1,paper1")
    args = parser.parse_args()
    corpora = Path(os.environ.get("NNC_CORPORA", ""))
    levels = [int(v) for v in args.levels.split(",")]
    print(f"load: {os.getloadavg()}")
    print("\n".join(overhead_table(range(1, 10))))
    print("\n".join(fitting_table(args.files.split(","), levels, corpora)))
    sample = Path("/tmp") / f"nnc-small-{os.getpid()}"
    sample.write_bytes((corpora / "xargs.1").read_bytes()[:4096])
    try:
        print("\n".join(memory_table([int(v) for v in args.memory_levels.split(",")], sample)))
    finally:
        sample.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
