import json
import subprocess
import sys

import pytest

import nncompress
from nncompress.cli import main
from nncompress.presets import LEVEL_PRESET


@pytest.fixture
def text_file(tmp_path, sample_text):
    path = tmp_path / "doc.txt"
    path.write_bytes(sample_text[:5000])
    return path


def test_compress_keeps_input_and_round_trips(text_file, tmp_path):
    original = text_file.read_bytes()
    assert main([str(text_file)]) == 0
    archive = tmp_path / "doc.txt.nnc"
    assert text_file.read_bytes() == original and archive.exists()
    text_file.unlink()
    assert main(["-d", str(archive)]) == 0
    assert text_file.read_bytes() == original and archive.exists()


def test_rm_deletes_input_only_after_success(text_file, tmp_path):
    original = text_file.read_bytes()
    assert main(["--rm", str(text_file)]) == 0
    assert not text_file.exists()
    assert main(["-d", "--rm", str(tmp_path / "doc.txt.nnc")]) == 0
    assert text_file.read_bytes() == original and not (tmp_path / "doc.txt.nnc").exists()


def test_output_option_and_levels(text_file, tmp_path):
    out = tmp_path / "custom.bin"
    assert main(["-9", "-o", str(out), str(text_file)]) == 0
    from nncompress.format import parse_header

    assert parse_header(out.read_bytes())[0].preset == LEVEL_PRESET[9]


def test_alias_subcommands(text_file, tmp_path):
    assert main(["compress", "-3", str(text_file)]) == 0
    assert main(["test", str(tmp_path / "doc.txt.nnc")]) == 0
    assert main(["list", str(tmp_path / "doc.txt.nnc")]) == 0


def test_test_and_list(text_file, tmp_path, capsys):
    main([str(text_file)])
    archive = tmp_path / "doc.txt.nnc"
    capsys.readouterr()
    assert main(["-l", "--json", str(archive)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["uncompressed"] == 5000 and rows[0]["compressed"] == archive.stat().st_size
    assert rows[0]["level"] == 6 and rows[0]["format_version"] == nncompress.FORMAT_VERSION
    assert main(["-t", str(archive)]) == 0
    damaged = bytearray(archive.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    archive.write_bytes(bytes(damaged))
    assert main(["-t", str(archive)]) == 1


def test_unknown_suffix_is_a_warning(text_file):
    assert main(["-d", str(text_file)]) == 2


def test_stdin_to_stdout_subprocess(sample_text):
    data = sample_text[:3000]
    cmd = [sys.executable, "-m", "nncompress"]
    packed = subprocess.run(cmd + ["-c"], input=data, capture_output=True, check=True).stdout
    assert nncompress.decompress(packed) == data
    out = subprocess.run(cmd + ["-d"], input=packed, capture_output=True, check=True).stdout
    assert out == data
    bad = subprocess.run(cmd + ["-d"], input=b"garbage!", capture_output=True)
    assert bad.returncode == 1 and b"bad magic" in bad.stderr and b"Traceback" not in bad.stderr


def test_large_file_round_trip_at_level_1(tmp_path, large_text, large_archive):
    """> 200 KB in one default-size block through the command line: the same bytes as the API,
    and back."""
    src = tmp_path / "large.txt"
    src.write_bytes(large_text)
    assert main(["-1", str(src)]) == 0
    archive = tmp_path / "large.txt.nnc"
    assert archive.read_bytes() == large_archive
    src.unlink()
    assert main(["-d", str(archive)]) == 0
    assert src.read_bytes() == large_text
