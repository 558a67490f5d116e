"""Decoding speed: the in-kernel twin decoder against the per-nibble constriction loop.

    NNC_CORPORA=... python bench/decode_speed.py [--file enwik8_1M] [--prefix 300000] [--levels 1 6 9]

For each level: compress once (constriction encodes unless NNC_CODER=twin), then decompress with
the twin (model and coder in one numba loop, the default decoder) and with constriction (one
kernel call and one constriction model per nibble, the decoder before issue 16).  Each figure
is the fastest of --repeat runs, as wall-clock and as process CPU time (CPU time is the steadier
one on a shared machine; note the load average printed beside it).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import nncompress
from nncompress import coder


def timed(fn, repeat):
    best_wall = best_cpu = float("inf")
    result = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return result, best_wall, best_cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default="enwik8_1M", help="file under $NNC_CORPORA (or a path)")
    parser.add_argument("--prefix", type=int, default=0, help="use only the first N bytes")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 6, 9])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    path = Path(args.file)
    if not path.exists():
        path = Path(os.environ.get("NNC_CORPORA", ".")) / args.file
    data = path.read_bytes()
    if args.prefix:
        data = data[: args.prefix]
    kb = len(data) / 1024
    print(f"{path.name}: {len(data):,} bytes; {coder.coder_description()}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    nncompress.decompress(nncompress.compress(b"warm up the kernels", 1))
    print("| level | compress KB/s (wall / cpu) | decompress twin KB/s | decompress constriction "
          "KB/s | twin / compress (cpu) | load |")
    print("|---:|---:|---:|---:|---:|---:|")
    for level in args.levels:
        archive, cw, cc = timed(lambda: nncompress.compress(data, level), args.repeat)
        rows = {}
        for backend in ("twin", "constriction"):
            if backend not in coder.BACKENDS:
                continue
            coder.DECODER = backend
            out, dw, dc = timed(lambda: nncompress.decompress(archive), args.repeat)
            assert out == data, f"level {level}: {backend} decoder round trip failed"
            rows[backend] = (dw, dc)
        coder.DECODER = "twin"

        def speed(wall, cpu):
            return f"{kb / wall:.1f} / {kb / cpu:.1f}"

        twin = speed(*rows["twin"])
        oracle = speed(*rows["constriction"]) if "constriction" in rows else "n/a"
        ratio = cc / rows["twin"][1]
        print(f"| {level} | {speed(cw, cc)} | {twin} | {oracle} | {ratio:.2f} | "
              f"{os.getloadavg()[0]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
