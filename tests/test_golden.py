"""Golden archives: committed .nnc files must decode byte for byte, and compressing their inputs
today with the parameters they recorded must reproduce them exactly.

A failure here means the bytes nncompress writes have changed (model, presets, coder or format).
Either that is a bug, or it is deliberate: then the change needs a new format version or a new
preset id (old archives must never silently decode wrong).  See tests/golden/README.md.

Format 1 (archives/, structures/): written by nncompress 0.1, frozen; the format-1 writer that the
golden tests keep (segments.compress_segment(format_version=1)) must still reproduce them, which
pins every model component the presets use.  Format 2 (v2/): what nncompress writes now.
"""

import hashlib
import importlib.util
import json
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest

import nncompress
from nncompress import format as fmt
from nncompress import segments
from nncompress.model.params import ModelParams

GOLDEN = Path(__file__).resolve().parent / "golden"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
ENTRIES = MANIFEST["entries"]
STRUCTURES = GOLDEN / "structures"
STRUCTURE_ENTRIES = json.loads((STRUCTURES / "manifest.json").read_text())["entries"]
V2 = GOLDEN / "v2"
V2_MANIFEST = json.loads((V2 / "manifest.json").read_text())
V2_ENTRIES = V2_MANIFEST["entries"]
NEVER = "never regenerate golden archives (tests/golden/README.md)"

_spec = importlib.util.spec_from_file_location("make_v2", V2 / "make_v2.py")
make_v2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_v2)


def compress_v1(data: bytes, level: int, params=None, block_size: int = fmt.DEFAULT_BLOCK_SIZE) -> bytes:
    """What nncompress 0.1 wrote: one format-1 stream, the preset's full-size model.  Registered
    presets 1..9 are the parameters levels 1..9 had then (frozen), whatever the levels mean now."""
    return segments.compress_segment(data, level, params, block_size, format_version=1,
                                     preset_id=None if params else level)


def ident(entry):
    return f"{Path(entry['input']).stem}-L{entry['level']}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_manifest_is_complete():
    assert MANIFEST["format_version"] == 1 and V2_MANIFEST["format_version"] == 2
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
    archive = compress_v1(data, entry["level"])
    assert sha256(archive) == entry["archive_sha256"], (
        f"{ident(entry)}: the model's bytes changed for a format-1 header; {NEVER}")


# -- structure goldens: several blocks, a block over 64 KiB, custom parameters, the top level ----
# (tests/golden/structures; its script only ever adds archives, it never rewrites one)

def structure_input(entry) -> bytes:
    return lzma.decompress((STRUCTURES / entry["input"]).read_bytes())


def structure_compress(entry, data: bytes) -> bytes:
    params = ModelParams.from_ints(entry["params"]) if entry["params"] else None
    return compress_v1(data, entry["level"] or 6, params, entry["block_size"])


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
import hashlib, importlib.util, json, lzma, sys
from pathlib import Path
import nncompress
from nncompress.segments import compress_segment
from nncompress.model.params import ModelParams
golden = Path(sys.argv[1])
bad = []
structures = golden / "structures"
for e in json.loads((structures / "manifest.json").read_text())["entries"]:
    data = lzma.decompress((structures / e["input"]).read_bytes())
    archive = (structures / e["archive"]).read_bytes()
    if hashlib.sha256(nncompress.decompress(archive)).hexdigest() != e["input_sha256"]:
        bad.append(("decode", e["archive"]))
    params = ModelParams.from_ints(e["params"]) if e["params"] else None
    again = compress_segment(data, e["level"] or 6, params, e["block_size"], format_version=1,
                             preset_id=None if params else e["level"])
    if hashlib.sha256(again).hexdigest() != e["archive_sha256"]:
        bad.append(("encode", e["archive"]))
for e in json.loads((golden / "manifest.json").read_text())["entries"]:
    data = (golden / e["input"]).read_bytes()
    archive = (golden / e["archive"]).read_bytes()
    if hashlib.sha256(nncompress.decompress(archive)).hexdigest() != e["input_sha256"]:
        bad.append(("decode", e["archive"]))
    again = compress_segment(data, e["level"], format_version=1, preset_id=e["level"])
    if hashlib.sha256(again).hexdigest() != e["archive_sha256"]:
        bad.append(("encode", e["archive"]))
spec = importlib.util.spec_from_file_location("make_v2", golden / "v2" / "make_v2.py")
make_v2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_v2)
for e in json.loads((golden / "v2" / "manifest.json").read_text())["entries"]:
    data = make_v2.read_input(e["input"])
    archive = (golden / e["archive"]).read_bytes()
    if hashlib.sha256(nncompress.decompress(archive)).hexdigest() != e["input_sha256"]:
        bad.append(("decode", e["archive"]))
    if hashlib.sha256(make_v2.compress_entry(e, data)).hexdigest() != e["archive_sha256"]:
        bad.append(("encode", e["archive"]))
print(json.dumps(bad))
"""


def test_golden_archives_on_the_generic_cpu_target(tmp_path):
    """One subprocess compiled for NUMBA_CPU_NAME=generic handles every golden archive (levels 1,
    3, 6, 9: every distinct preset model, the structure goldens and format 2), so the kernels are
    compiled once for the other target."""
    env = dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CACHE_DIR=str(tmp_path / "numba-generic"))
    result = subprocess.run([sys.executable, "-c", CROSS_TARGET, str(GOLDEN)], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


# -- format 2 (tests/golden/v2; its script only ever adds archives) ------------------------------

def v2_ident(entry):
    return entry["name"]


def test_v2_goldens_cover_the_format():
    """Presets with fitted sizes, a preset as it is (unknown size), custom parameters, one block
    (no trailer) and several (a trailer), several segments, levels 1, 3, 6 and 9."""
    infos = {e["name"]: fmt.scan((GOLDEN / e["archive"]).read_bytes()) for e in V2_ENTRIES}
    headers = [i.header for stream in infos.values() for i in stream]
    assert all(h.version == 2 for h in headers)
    assert any(h.preset and h.overrides for h in headers)
    assert any(h.preset and not h.overrides for h in headers)
    assert any(h.preset == 0 and h.params for h in headers)
    assert any(h.block_size != fmt.DEFAULT_BLOCK_SIZE for h in headers)
    assert {1, 3, 6, 9} <= {h.preset for h in headers}
    blocks = [i.blocks for stream in infos.values() for i in stream]
    assert 0 in blocks and 1 in blocks and max(blocks) >= 5
    assert max(len(stream) for stream in infos.values()) >= 5
    for entry in V2_ENTRIES:
        data = make_v2.read_input(entry["input"])
        assert sha256(data) == entry["input_sha256"]
        assert sha256((GOLDEN / entry["archive"]).read_bytes()) == entry["archive_sha256"]
        assert (len(infos[entry["name"]]), sum(i.blocks for i in infos[entry["name"]])) == (
            entry["streams"], entry["blocks"])


def test_every_registered_model_is_pinned_by_a_golden_archive():
    """A preset appended to nncompress/presets.py (a level's new model) needs a golden archive
    here (v2/make_v2.py, PRESET_ENTRIES): otherwise a later change to a component only that preset
    uses would pass every golden test, and the archives it wrote would decode wrong."""
    from nncompress.presets import PRESETS

    pinned = {PRESETS[e["level"]].params for e in ENTRIES + STRUCTURE_ENTRIES if e.get("level")}
    pinned |= {PRESETS[h.preset].params for e in V2_ENTRIES
               for h in [fmt.scan((GOLDEN / e["archive"]).read_bytes())[0].header] if h.preset}
    unpinned = sorted(id_ for id_, preset in PRESETS.items() if preset.params not in pinned)
    assert not unpinned, f"presets without a golden archive: {unpinned} (tests/golden/v2/make_v2.py)"


@pytest.mark.parametrize("entry", V2_ENTRIES, ids=v2_ident)
def test_v2_golden_decodes(entry):
    out = nncompress.decompress((GOLDEN / entry["archive"]).read_bytes())
    assert sha256(out) == entry["input_sha256"]


@pytest.mark.parametrize("entry", V2_ENTRIES, ids=v2_ident)
def test_compressing_today_reproduces_v2_golden(entry):
    archive = make_v2.compress_entry(entry, make_v2.read_input(entry["input"]))
    assert sha256(archive) == entry["archive_sha256"], f"{entry['name']}: compressed bytes changed; {NEVER}"


def test_format_1_and_format_2_streams_concatenate():
    """Archives of either version, one after the other, decode in sequence (cat a.nnc b.nnc)."""
    old = (GOLDEN / "archives" / "text-L1.nnc").read_bytes()
    new = (V2 / "records-L1-bs300.nnc").read_bytes()
    segmented = (V2 / "long-L1-seg16k.nnc").read_bytes()
    text = (GOLDEN / "inputs" / "text.bin").read_bytes()
    records = make_v2.read_input("structures/records.bin.xz")
    long = make_v2.read_input("structures/long.bin.xz")
    blob = old + new + old + segmented
    assert nncompress.decompress(blob) == text + records + text + long
    import io

    listed = list(nncompress.api.list_streams(io.BytesIO(blob)))
    assert [s.format_version for s in listed] == [1, 2, 1] + [2] * 5
    assert [s.level for s in listed[:3]] == [1, 1, 1]
    assert [s.uncompressed_size for s in listed[:3]] == [len(text), len(records), len(text)]
    table = segments.index_segments(io.BytesIO(blob))
    assert [e.raw_start for e in table][:4] == [0, len(text), len(text) + len(records),
                                                2 * len(text) + len(records)]
