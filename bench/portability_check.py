"""What must agree bit for bit across machines: archives, model probabilities, decoded bytes.

    python bench/portability_check.py --text FILE --out results.json [--reference other.json
                                      --archives DIR]

For each input (a text file and a fixed pseudo-random binary) and level 1, 6, 9: the sha256 of
the archive, of the probabilities the model hands to the coder (float64 bytes of
Predictor.predict_known), and whether the archive decodes back.  With --reference (the JSON of
another machine) it compares every hash and decodes that machine's archives (--archives, written
by its --save-archives) here; exit status 1 on any difference.  bench/aarch64.sh runs this on
x86-64 and under emulated aarch64.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np

import nncompress
from nncompress import coder
from nncompress.model.predictor import Predictor
from nncompress.presets import params_for_level

LEVELS = (1, 6, 9)


def binary_input(size: int = 6000) -> bytes:
    """Structured pseudo-random bytes from integer arithmetic only (same on every machine)."""
    x = np.arange(size, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(29)
    noise = (x >> np.uint64(40)).astype(np.uint8)
    data = bytearray(noise.tobytes())
    for start in range(0, size - 64, 512):  # repeats for the match model
        data[start + 256 : start + 320] = data[start : start + 64]
    return bytes(data)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def measure(inputs: dict[str, bytes], save: Path | None) -> dict:
    results = {"machine": platform.machine(), "python": platform.python_version(),
               "numpy": np.__version__, "coder": coder.coder_description(), "runs": {}}
    import numba

    results["numba"] = numba.__version__
    for name, data in inputs.items():
        for level in LEVELS:
            archive = nncompress.compress(data, level)
            probabilities = Predictor(params_for_level(level)).predict_known(data)
            key = f"{name}-L{level}"
            results["runs"][key] = {
                "input": sha(data), "archive": sha(archive), "archive_bytes": len(archive),
                "probabilities": sha(np.ascontiguousarray(probabilities, dtype="<f8").tobytes()),
                "round_trip": nncompress.decompress(archive) == data,
            }
            if save:
                save.mkdir(parents=True, exist_ok=True)
                (save / f"{key}.nnc").write_bytes(archive)
            print(key, results["runs"][key], flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", required=True, help="the text input (same file everywhere)")
    parser.add_argument("--text-bytes", type=int, default=16384, help="use its first N bytes")
    parser.add_argument("--out", required=True)
    parser.add_argument("--save-archives", help="write the archives into this folder")
    parser.add_argument("--reference", help="JSON written here by another machine")
    parser.add_argument("--archives", help="that machine's archives, to decode here")
    args = parser.parse_args()
    inputs = {"text": Path(args.text).read_bytes()[: args.text_bytes], "binary": binary_input()}
    results = measure(inputs, Path(args.save_archives) if args.save_archives else None)
    failures = [k for k, run in results["runs"].items() if not run["round_trip"]]
    if args.reference:
        reference = json.loads(Path(args.reference).read_text())
        results["reference_machine"] = reference["machine"]
        for key, run in results["runs"].items():
            other = reference["runs"][key]
            for field in ("input", "archive", "probabilities"):
                if run[field] != other[field]:
                    failures.append(f"{key}: {field} differs from {reference['machine']}")
            if args.archives:
                archive = (Path(args.archives) / f"{key}.nnc").read_bytes()
                name = key.rsplit("-L", 1)[0]
                ok = nncompress.decompress(archive) == inputs[name]
                run["decodes_reference_archive"] = ok
                if not ok:
                    failures.append(f"{key}: {reference['machine']} archive does not decode here")
    results["failures"] = failures
    Path(args.out).write_text(json.dumps(results, indent=1))
    print("FAILURES:" if failures else "all identical", *failures, sep="\n  ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
