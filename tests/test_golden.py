"""Golden archives: committed .nnc files must decode byte for byte, and compressing their inputs
today with the parameters they recorded must reproduce them exactly.

A failure here means the bytes nncompress writes have changed (model, presets, coder or format).
Either that is a bug, or it is deliberate: then bump format.FORMAT_VERSION (old archives must
not silently decode wrong) and regenerate with `.venv/bin/python tests/golden/make_golden.py`.
See tests/golden/README.md.
"""

import hashlib
import json
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest

import nncompress
from nncompress import format as fmt
from nncompress.model.params import ModelParams

GOLDEN = Path(__file__).resolve().parent / "golden"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
ENTRIES = MANIFEST["entries"]
STRUCTURES = GOLDEN / "structures"
STRUCTURE_ENTRIES = json.loads((STRUCTURES / "manifest.json").read_text())["entries"]
REGENERATE = "regenerate deliberately: .venv/bin/python tests/golden/make_golden.py (tests/golden/README.md)"


def compress_as_archived(data: bytes, level: int, archive: bytes, **options) -> bytes:
    """Compress at `level` with the model parameters the archive recorded (branch neural2: a preset
    may move on, since archives carry their own parameters; the bytes that a parameter set and a
    level number give may not change)."""
    from nncompress import presets

    (info,) = fmt.scan(archive)
    saved = presets.LEVELS[level]
    presets.LEVELS[level] = ModelParams.from_ints(list(info.header.params))
    try:
        return nncompress.compress(data, level, **options)
    finally:
        presets.LEVELS[level] = saved


def ident(entry):
    return f"{Path(entry['input']).stem}-L{entry['level']}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_manifest_is_complete():
    assert MANIFEST["format_version"] == fmt.FORMAT_VERSION, (
        "the format version changed: " + REGENERATE)
    levels = {e["level"] for e in ENTRIES}
    names = {Path(e["input"]).stem for e in ENTRIES}
    assert {1, 6, 9} <= levels and {"empty", "binary", "text"} <= names
    for entry in ENTRIES:
        assert sha256((GOLDEN / entry["input"]).read_bytes()) == entry["input_sha256"], ident(entry)
        assert sha256((GOLDEN / entry["archive"]).read_bytes()) == entry["archive_sha256"], ident(entry)


@pytest.mark.parametrize("entry", ENTRIES, ids=ident)
def test_golden_archive_decodes(entry):
    out = nncompress.decompress((GOLDEN / entry["archive"]).read_bytes())
    assert len(out) == entry["input_size"]
    assert sha256(out) == entry["input_sha256"]


@pytest.mark.parametrize("entry", ENTRIES, ids=ident)
def test_compressing_today_reproduces_golden_archive(entry):
    data = (GOLDEN / entry["input"]).read_bytes()
    archive = compress_as_archived(data, entry["level"], (GOLDEN / entry["archive"]).read_bytes())
    assert sha256(archive) == entry["archive_sha256"], (
        f"{ident(entry)}: compressed bytes changed; if the model changed on purpose, bump the "
        f"format version or {REGENERATE}")


# -- structure goldens: several blocks, a block over 64 KiB, custom parameters, the top level ----
# (tests/golden/structures; its script only ever adds archives, it never rewrites one)

def structure_input(entry) -> bytes:
    return lzma.decompress((STRUCTURES / entry["input"]).read_bytes())


def structure_compress(entry, data: bytes) -> bytes:
    if not entry["params"]:
        return compress_as_archived(data, entry["level"], (STRUCTURES / entry["archive"]).read_bytes(),
                                    block_size=entry["block_size"])
    return nncompress.compress(data, entry["level"] or 6, params=ModelParams.from_ints(entry["params"]),
                               block_size=entry["block_size"])


def test_structure_goldens_cover_the_container():
    assert all(e["input_sha256"] == sha256(structure_input(e)) for e in STRUCTURE_ENTRIES)
    infos = {e["name"]: fmt.scan((STRUCTURES / e["archive"]).read_bytes()) for e in STRUCTURE_ENTRIES}
    assert all(len(i) == 1 for i in infos.values())
    by_name = {e["name"]: (e, infos[e["name"]][0]) for e in STRUCTURE_ENTRIES}
    assert sum(info.blocks >= 5 for _, info in by_name.values()) >= 3  # multi-block streams
    assert any(info.blocks == 1 and info.raw_size > 65536 for _, info in by_name.values())
    assert any(info.header.level == 0 for _, info in by_name.values())  # custom parameters
    assert any(info.header.level == 9 and info.blocks > 1 for _, info in by_name.values())
    for entry, info in by_name.values():
        assert sha256((STRUCTURES / entry["archive"]).read_bytes()) == entry["archive_sha256"]
        assert info.blocks == entry["blocks"] and info.raw_size == entry["input_size"]


@pytest.mark.parametrize("entry", STRUCTURE_ENTRIES, ids=lambda e: e["name"])
def test_structure_golden_decodes(entry):
    out = nncompress.decompress((STRUCTURES / entry["archive"]).read_bytes())
    assert sha256(out) == entry["input_sha256"]


@pytest.mark.parametrize("entry", STRUCTURE_ENTRIES, ids=lambda e: e["name"])
def test_compressing_today_reproduces_structure_golden(entry):
    archive = structure_compress(entry, structure_input(entry))
    assert sha256(archive) == entry["archive_sha256"], (
        f"{entry['name']}: compressed bytes changed (never regenerate these; see tests/golden/README.md)")


CROSS_TARGET = r"""
import hashlib, json, lzma, sys
from pathlib import Path
import nncompress
from nncompress import format as fmt, presets
from nncompress.model.params import ModelParams
golden = Path(sys.argv[1])
bad = []
def compress_as_archived(data, level, archive, **options):
    (info,) = fmt.scan(archive)
    presets.LEVELS[level] = ModelParams.from_ints(list(info.header.params))
    return nncompress.compress(data, level, **options)
structures = golden / "structures"
for e in json.loads((structures / "manifest.json").read_text())["entries"]:
    data = lzma.decompress((structures / e["input"]).read_bytes())
    archive = (structures / e["archive"]).read_bytes()
    if hashlib.sha256(nncompress.decompress(archive)).hexdigest() != e["input_sha256"]:
        bad.append(("decode", e["archive"]))
    if e["params"]:
        again = nncompress.compress(data, 6, params=ModelParams.from_ints(e["params"]),
                                    block_size=e["block_size"])
    else:
        again = compress_as_archived(data, e["level"], archive, block_size=e["block_size"])
    if hashlib.sha256(again).hexdigest() != e["archive_sha256"]:
        bad.append(("encode", e["archive"]))
for e in json.loads((golden / "manifest.json").read_text())["entries"]:
    data = (golden / e["input"]).read_bytes()
    archive = (golden / e["archive"]).read_bytes()
    if hashlib.sha256(nncompress.decompress(archive)).hexdigest() != e["input_sha256"]:
        bad.append(("decode", e["archive"]))
    if hashlib.sha256(compress_as_archived(data, e["level"], archive)).hexdigest() != e["archive_sha256"]:
        bad.append(("encode", e["archive"]))
print(json.dumps(bad))
"""


def test_golden_archives_on_the_generic_cpu_target(tmp_path):
    """One subprocess compiled for NUMBA_CPU_NAME=generic handles every golden archive (levels 1,
    3, 6, 9: every distinct preset model, and the structure goldens), so the kernels are compiled
    once for the other target."""
    env = dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CACHE_DIR=str(tmp_path / "numba-generic"))
    result = subprocess.run([sys.executable, "-c", CROSS_TARGET, str(GOLDEN)], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
