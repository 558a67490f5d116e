"""Golden archives: committed .nnc files must decode byte for byte, and compressing their inputs
today must reproduce them exactly.

A failure here means the bytes nncompress writes have changed (model, presets, coder or format).
Either that is a bug, or it is deliberate: then bump format.FORMAT_VERSION (old archives must
not silently decode wrong) and regenerate with `.venv/bin/python tests/golden/make_golden.py`.
See tests/golden/README.md.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import nncompress
from nncompress import format as fmt

GOLDEN = Path(__file__).resolve().parent / "golden"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
ENTRIES = MANIFEST["entries"]
REGENERATE = "regenerate deliberately: .venv/bin/python tests/golden/make_golden.py (tests/golden/README.md)"


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
    archive = nncompress.compress(data, entry["level"])
    assert sha256(archive) == entry["archive_sha256"], (
        f"{ident(entry)}: compressed bytes changed; if the model changed on purpose, bump the "
        f"format version or {REGENERATE}")


CROSS_TARGET = r"""
import hashlib, json, sys
from pathlib import Path
import nncompress
golden = Path(sys.argv[1])
bad = []
for e in json.loads((golden / "manifest.json").read_text())["entries"]:
    data = (golden / e["input"]).read_bytes()
    archive = (golden / e["archive"]).read_bytes()
    if hashlib.sha256(nncompress.decompress(archive)).hexdigest() != e["input_sha256"]:
        bad.append(("decode", e["archive"]))
    if hashlib.sha256(nncompress.compress(data, e["level"])).hexdigest() != e["archive_sha256"]:
        bad.append(("encode", e["archive"]))
print(json.dumps(bad))
"""


def test_golden_archives_on_the_generic_cpu_target(tmp_path):
    """One subprocess compiled for NUMBA_CPU_NAME=generic handles every golden level (1, 3, 6, 9:
    every distinct preset model), so the kernels are compiled once for the other target."""
    env = dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CACHE_DIR=str(tmp_path / "numba-generic"))
    result = subprocess.run([sys.executable, "-c", CROSS_TARGET, str(GOLDEN)], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
