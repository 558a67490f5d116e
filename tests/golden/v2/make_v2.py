#!/usr/bin/env python3
"""Add format-2 golden archives (see ../README.md):

  empty-L6, hello-L6, byte-L9, text-L1/L6/L9, binary-L3   small inputs: a preset named by id and
                          the table sizes fitted to the input (header overrides), one block, no trailer
  records-L1-bs300, records-L9-bs400   several blocks: the trailer after 2+ blocks
  custom-bs500            custom parameters: preset 0 and the full parameter list
  long-L1                 one ~70 KB block: only history_bits is fitted at level 1
  long-L1-stream          input of unknown size (streamed): the full preset, no overrides, 32 KiB blocks
  long-L1-seg16k          five segments (five streams), each fitted to its own length
  records-pN-bs400        one per preset registered after format 1 (rounds 3-5: run inputs,
                          mixer start, match recovery, the RNNME expert and its features), several
                          blocks: every model a level has used since pins its bytes here too

    .venv/bin/python tests/golden/v2/make_v2.py

Like ../structures/make_structures.py it never rewrites an existing file: it only adds entries
that are missing.  Inputs are read from ../inputs and ../structures (xz-compressed there).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import lzma
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parent
sys.path.insert(0, str(HERE.parents[2]))

import nncompress  # noqa: E402
from nncompress import format as fmt  # noqa: E402
from nncompress.model.params import ModelParams  # noqa: E402
from nncompress.presets import LEVEL_PRESET, PRESETS  # noqa: E402

_spec = importlib.util.spec_from_file_location("make_structures", GOLDEN / "structures" / "make_structures.py")
structures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(structures)

# name: (input path relative to tests/golden, level or None, custom params or None, block size,
#        segment size or None, whether the input's size is declared as compress() declares it)
ENTRIES = {
    "empty-L6": ("inputs/empty.bin", 6, None, fmt.DEFAULT_BLOCK_SIZE, fmt.DEFAULT_SEGMENT_SIZE, True),
    "hello-L6": ("v2/hello6.bin", 6, None, fmt.DEFAULT_BLOCK_SIZE, fmt.DEFAULT_SEGMENT_SIZE, True),
    "byte-L9": ("inputs/byte.bin", 9, None, fmt.DEFAULT_BLOCK_SIZE, fmt.DEFAULT_SEGMENT_SIZE, True),
    "text-L1": ("inputs/text.bin", 1, None, fmt.DEFAULT_BLOCK_SIZE, fmt.DEFAULT_SEGMENT_SIZE, True),
    "text-L6": ("inputs/text.bin", 6, None, fmt.DEFAULT_BLOCK_SIZE, fmt.DEFAULT_SEGMENT_SIZE, True),
    "text-L9": ("inputs/text.bin", 9, None, fmt.DEFAULT_BLOCK_SIZE, fmt.DEFAULT_SEGMENT_SIZE, True),
    "binary-L3": ("inputs/binary.bin", 3, None, fmt.DEFAULT_BLOCK_SIZE, fmt.DEFAULT_SEGMENT_SIZE, True),
    "records-L1-bs300": ("structures/records.bin.xz", 1, None, 300, fmt.DEFAULT_SEGMENT_SIZE, True),
    "records-L9-bs400": ("structures/records.bin.xz", 9, None, 400, fmt.DEFAULT_SEGMENT_SIZE, True),
    "custom-bs500": ("structures/records.bin.xz", None, structures.CUSTOM, 500, fmt.DEFAULT_SEGMENT_SIZE, True),
    "long-L1": ("structures/long.bin.xz", 1, None, fmt.DEFAULT_BLOCK_SIZE, fmt.DEFAULT_SEGMENT_SIZE, True),
    "long-L1-stream": ("structures/long.bin.xz", 1, None, 32768, fmt.DEFAULT_SEGMENT_SIZE, False),
    "long-L1-seg16k": ("structures/long.bin.xz", 1, None, fmt.DEFAULT_BLOCK_SIZE, 16384, True),
}
# Presets registered after the entries above were written (presets.py): name: (input, preset id,
# block size).  The level recorded is the one the preset was made for.
PRESET_ENTRIES = {
    f"records-p{preset}-bs400": ("structures/records.bin.xz", preset, 400)
    for preset in (10, 13, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 28, 31, 32, 34, 35, 36, 37, 38,
                   39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51)
}
INPUTS_HERE = {"v2/hello6.bin": b"hello\n"}  # made by this script (the 6-byte file of issue 15)


def read_input(relative: str) -> bytes:
    data = (GOLDEN / relative).read_bytes()
    return lzma.decompress(data) if relative.endswith(".xz") else data


def compress_entry(entry: dict, data: bytes) -> bytes:
    """What nncompress writes for this entry (tests/test_golden.py calls this too).  A level's
    entry names its registered preset by id, so it reproduces after the level is given new
    parameters (a new preset id)."""
    params = ModelParams.from_ints(entry["params"]) if entry["params"] else None
    compressor = nncompress.NNCompressor(entry["level"] or 6, params=params,
                                         block_size=entry["block_size"],
                                         segment_size=entry["segment_size"],
                                         size=len(data) if entry["declared_size"] else None,
                                         preset_id=entry.get("preset"))
    return b"".join(compressor.compress(data[k : k + 4096]) for k in range(0, len(data), 4096)) \
        + compressor.flush()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> int:
    manifest_path = HERE / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"entries": []}
    have = {e["name"] for e in manifest["entries"]}
    added = 0
    for relative, content in INPUTS_HERE.items():
        path = GOLDEN / relative
        if path.exists() and path.read_bytes() != content:
            raise SystemExit(f"{relative} exists with different content: pick a new name")
        path.write_bytes(content)
    wanted = dict(ENTRIES)
    for name, (relative, preset, block_size) in PRESET_ENTRIES.items():
        wanted[name] = (relative, PRESETS[preset].level, None, block_size, fmt.DEFAULT_SEGMENT_SIZE,
                        True, preset)
    for name, (relative, level, params, block_size, segment_size, declared, *preset) in wanted.items():
        if name in have:
            continue
        data = read_input(relative)
        archive_path = HERE / f"{name}.nnc"
        if archive_path.exists():
            raise SystemExit(f"{archive_path.name} exists without a manifest entry: not overwriting")
        entry = {
            "name": name,
            "input": relative,
            "input_size": len(data),
            "input_sha256": sha256(data),
            "level": level,
            "preset": preset[0] if preset else LEVEL_PRESET[level] if level else None,
            "params": params.to_ints() if params else None,
            "block_size": block_size,
            "segment_size": segment_size,
            "declared_size": declared,
        }
        archive = compress_entry(entry, data)
        if nncompress.decompress(archive) != data:
            raise SystemExit(f"round trip failed for {name}")
        infos = fmt.scan(archive)
        if any(info.header.version != 2 for info in infos):
            raise SystemExit(f"{name}: not a format-2 archive")
        archive_path.write_bytes(archive)
        entry.update({
            "streams": len(infos),
            "blocks": sum(info.blocks for info in infos),
            "archive": f"v2/{archive_path.name}",
            "archive_size": len(archive),
            "archive_sha256": sha256(archive),
        })
        manifest["entries"].append(entry)
        added += 1
        print(f"added {name}: {len(data)} -> {len(archive)} bytes, {len(infos)} streams, "
              f"{entry['blocks']} blocks")
    manifest["format_version"] = 2
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{added} added, {len(have)} kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
