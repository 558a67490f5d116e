#!/usr/bin/env python3
"""How the format-1 golden archives that tests/test_golden.py checks were generated.

FROZEN: they are format 1 (nncompress 0.1) and are never regenerated; the script refuses to run
while manifest.json exists.  New golden archives are format 2 and are added by v2/make_v2.py.

    .venv/bin/python tests/golden/make_golden.py

Writes inputs/*.bin (small fixed inputs, defined below), archives/<input>-L<level>.nnc (each
input compressed at levels 1, 3, 6 and 9: every distinct preset model) and manifest.json
(sizes and sha256 of every input and archive, the format version and the package version).
Run it deliberately, after a change to the model or the format, and commit the result; see
README.md here for when that is (and is not) the right thing to do.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

import nncompress  # noqa: E402
from nncompress.segments import compress_segment  # noqa: E402

LEVELS = (1, 3, 6, 9)

TEXT = b"""The golden archives pin the exact bytes nncompress writes.  If a change to the model,
the presets, the coder or the container makes these bytes differ, archives written before the
change would no longer decode with the new code -- unless the format version is bumped, or the
old behaviour is kept for old headers.

    def round_trip(data: bytes, level: int) -> bool:
        return nncompress.decompress(nncompress.compress(data, level)) == data

Column 1 | Column 2 | Column 3
-------- | -------- | --------
   alpha |     beta |    gamma
      42 |     3.14 |   -0.001

"Quoted text", (parentheses), [brackets], {braces}; UTF-8: na\xc3\xafve caf\xc3\xa9 \xe2\x80\x94 \xe2\x82\xac5.
"""


def binary_input() -> bytes:
    """1280 bytes: every byte value, then a SHA-256 chain (incompressible, deterministic)."""
    out = bytearray(range(256))
    block = b"nncompress golden"
    while len(out) < 1280:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:1280])


INPUTS = {
    "empty": b"",
    "byte": b"\n",
    "hello": b"hello, world\n",
    "text": TEXT,
    "binary": binary_input(),
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> int:
    if (HERE / "manifest.json").exists():
        raise SystemExit("the format-1 golden archives are frozen (README.md): add format-2 "
                         "archives with v2/make_v2.py instead")
    inputs_dir, archives_dir = HERE / "inputs", HERE / "archives"
    inputs_dir.mkdir(exist_ok=True)
    archives_dir.mkdir(exist_ok=True)
    for old in list(inputs_dir.glob("*.bin")) + list(archives_dir.glob("*.nnc")):
        old.unlink()
    entries = []
    for name, data in INPUTS.items():
        (inputs_dir / f"{name}.bin").write_bytes(data)
        for level in LEVELS:
            archive = compress_segment(data, level, format_version=1, preset_id=level)
            if nncompress.decompress(archive) != data:
                raise SystemExit(f"round trip failed for {name} at level {level}")
            path = archives_dir / f"{name}-L{level}.nnc"
            path.write_bytes(archive)
            entries.append({
                "input": f"inputs/{name}.bin",
                "input_size": len(data),
                "input_sha256": sha256(data),
                "level": level,
                "archive": f"archives/{path.name}",
                "archive_size": len(archive),
                "archive_sha256": sha256(archive),
            })
    manifest = {
        "format_version": 1,
        "nncompress_version": nncompress.__version__,
        "regenerate": ".venv/bin/python tests/golden/make_golden.py",
        "entries": entries,
    }
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    total = sum(e["archive_size"] for e in entries)
    print(f"wrote {len(entries)} golden archives ({total} bytes) for format version 1 to {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
