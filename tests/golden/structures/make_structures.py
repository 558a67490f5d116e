#!/usr/bin/env python3
"""Add golden archives that pin the container's structure (see ../README.md):

  records-L1-bs300   several blocks (block size 300): the stream checksum chains blocks
  long-L1            one block of ~70 KB: the range coder's stream spans the encoder's 64 KiB chunks
  custom-bs500       custom model parameters (header level 0), several blocks
  records-L9-bs400   the top level, several blocks

    .venv/bin/python tests/golden/structures/make_structures.py

Unlike ../make_golden.py this script never rewrites an existing file: it only adds entries that
are missing, so archives written by older code stay as they were (they must keep decoding).
These are format 1 (written with the format-1 writer kept for the golden tests); format-2
structure archives are added by ../v2/make_v2.py.
Inputs are stored xz-compressed (stdlib lzma) to keep the repository small.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

import nncompress  # noqa: E402
from nncompress import format as fmt  # noqa: E402
from nncompress.segments import compress_segment  # noqa: E402
from nncompress.model.params import COLUMN, WORD, WORD_BIGRAM, ModelParams  # noqa: E402

PASSAGE = (b"Entry %(n)d. The golden archives pin the bytes nncompress writes; this one pins the "
           b"container's structure as well: blocks, checksums, %(word)s parameters.\n"
           b"    value[%(n)d] = %(value)d  # %(word)s\n")
WORDS = [b"model", b"range coder", b"header", b"trailer", b"mixer", b"context"]


def records(count: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return b"".join(PASSAGE % {b"n": n, b"word": rng.choice(WORDS), b"value": rng.randrange(1000)}
                    for n in range(count))


def long_text() -> bytes:
    """~70 KB: a 2 KB passage repeated with small numbered changes (compressible, not trivial)."""
    base = records(12, 1)
    rng = random.Random(2)
    out = bytearray()
    copy = 0
    while len(out) < 70_000:
        copy += 1
        piece = bytearray(base)
        for _ in range(3):
            at = rng.randrange(len(piece))
            piece[at : at + 1] = b"%d" % rng.randrange(100)
        out += b"[copy %d]\n" % copy + piece
    return bytes(out)


CUSTOM = ModelParams(contexts=(1, 2, 3, 5, WORD, WORD_BIGRAM, COLUMN, 40, 46), table_bits=14,
                     match_min=5, match_bits=12, history_bits=16, rnn_hidden=6, rnn_bptt=5,
                     mixer_sets=2, ctx_inputs=2, mixer_select=0b1000101, apm1_order=1,
                     apm1_weight=5, apm2_weight=5, state_table=3, sm_limit=255, final_lr=6)

# name: (input name, input bytes, level or None, custom params or None, block size)
ENTRIES = {
    "records-L1-bs300": ("records", records(14, 7), 1, None, 300),
    "long-L1": ("long", long_text(), 1, None, fmt.DEFAULT_BLOCK_SIZE),
    "custom-bs500": ("records", records(14, 7), None, CUSTOM, 500),
    "records-L9-bs400": ("records", records(14, 7), 9, None, 400),
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> int:
    manifest_path = HERE / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"entries": []}
    have = {e["name"] for e in manifest["entries"]}
    added = 0
    for name, (input_name, data, level, params, block_size) in ENTRIES.items():
        if name in have:
            continue
        input_path = HERE / f"{input_name}.bin.xz"
        if input_path.exists():
            if lzma.decompress(input_path.read_bytes()) != data:
                raise SystemExit(f"{input_path.name} exists with different content: pick a new name")
        else:
            input_path.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
        archive_path = HERE / f"{name}.nnc"
        if archive_path.exists():
            raise SystemExit(f"{archive_path.name} exists without a manifest entry: not overwriting")
        archive = compress_segment(data, level or 6, params, block_size, format_version=1,
                                   preset_id=level)
        if nncompress.decompress(archive) != data:
            raise SystemExit(f"round trip failed for {name}")
        archive_path.write_bytes(archive)
        info = fmt.scan(archive)[0]
        manifest["entries"].append({
            "name": name,
            "input": input_path.name,
            "input_size": len(data),
            "input_sha256": sha256(data),
            "level": level,
            "params": params.to_ints() if params else None,
            "block_size": block_size,
            "blocks": info.blocks,
            "archive": archive_path.name,
            "archive_size": len(archive),
            "archive_sha256": sha256(archive),
        })
        added += 1
        print(f"added {name}: {len(data)} -> {len(archive)} bytes, {info.blocks} blocks")
    manifest["format_version"] = 1
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{added} added, {len(have)} kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
