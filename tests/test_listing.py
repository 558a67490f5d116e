"""`nncompress -l` (nncompress.listing), in process: the table and the JSON rows exactly, the
totals line, standard input, and every file or output that cannot be listed named."""

import errno
import io
import json
import sys
import zlib

import pytest

import nncompress
from nncompress import listing
from nncompress.cli import main
from nncompress.presets import LEVEL_PRESET, params_for_level

DATA = b"".join(b"row %d of the listing test\n" % k for k in range(60))


@pytest.fixture(scope="module")
def archives():
    one = nncompress.compress(DATA, 1, block_size=500)
    custom = nncompress.compress(DATA[:100], params=params_for_level(2))
    return one, custom


def json_rows(argv, capsys):
    assert main(["-l", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_row_of_each_stream(archives, tmp_path, capsys):
    one, custom = archives
    path = tmp_path / "a.nnc"
    path.write_bytes(one + custom)
    rows = json_rows([str(path)], capsys)
    [first, second] = rows
    assert first == {
        "file": str(path), "compressed": len(one), "uncompressed": len(DATA),
        "ratio": round(len(one) / len(DATA), 4), "bpc": round(8 * len(one) / len(DATA), 4),
        "level": 1, "model": "cm", "format_version": nncompress.FORMAT_VERSION, "preset": LEVEL_PRESET[1],
        "blocks": 4, "crc32": f"{zlib.crc32(DATA):08x}", "params": first["params"]}
    assert first["params"]["contexts"] == list(params_for_level(1).contexts)
    assert second == {
        "file": str(path), "compressed": len(custom), "uncompressed": 100,
        "ratio": round(len(custom) / 100, 4), "bpc": round(8 * len(custom) / 100, 4),
        "level": None, "model": "cm", "format_version": nncompress.FORMAT_VERSION,
        "preset": None, "blocks": 1, "crc32": f"{zlib.crc32(DATA[:100]):08x}",
        "params": second["params"]}
    assert second["params"]["contexts"] == list(params_for_level(2).contexts)
    assert set(second["params"]) == set(params_for_level(2).describe())


def test_an_empty_stream_has_no_ratio_and_no_bpc(tmp_path, capsys):
    path = tmp_path / "empty.nnc"
    path.write_bytes(nncompress.compress(b"", 1))
    [row] = json_rows([str(path)], capsys)
    assert (row["uncompressed"], row["ratio"], row["bpc"], row["blocks"]) == (0, None, None, 0)
    assert row["crc32"] == "00000000"
    assert main(["-l", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[2:4] == ["-", "-"]


def test_table_exactly():
    rows = [
        dict(file="a.nnc", compressed=120, uncompressed=1000, level=1, model="cm", format_version=2),
        dict(file="b.nnc", compressed=30, uncompressed=0, level=None, model="cm", format_version=1),
        dict(file="b.nnc", compressed=1234567, uncompressed=9876543, level=None, model="rnnme",
             format_version=2),
    ]
    assert listing.format_listing(rows, False) == (
        "  compressed uncompressed  ratio     bpc  level version  name\n"
        "         120         1000  0.120   0.960      1       2  a.nnc\n"
        "          30            0      -       - custom       1  b.nnc\n"
        "     1234567      9876543  0.125   1.000  rnnme       2  b.nnc\n"
        "     1234717      9877543  0.125   1.000                 (totals: 3 streams in 2 files)\n")
    # one stream: no totals; one file with two streams: "file", not "files"
    assert listing.format_listing(rows[:1], False).count("\n") == 2
    assert listing.format_listing([rows[0], dict(rows[0])], False).splitlines()[-1].endswith(
        "(totals: 2 streams in 1 file)")
    # a row without a model key (rows from before --model) is a custom one
    old = {k: v for k, v in rows[1].items() if k != "model"}
    assert " custom " in listing.format_listing([old], False)
    assert listing.format_listing([], False) == ""
    assert listing.format_listing([], True) == "[]\n"
    assert listing.format_listing(rows[:1], True) == json.dumps(rows[:1], indent=2) + "\n"


def test_two_files_table_through_the_command_line(archives, tmp_path, capsys):
    one, custom = archives
    a, b = tmp_path / "a.nnc", tmp_path / "b.nnc"
    a.write_bytes(one)
    b.write_bytes(custom)
    assert main(["-l", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == [str(len(one)), str(len(DATA)), f"{len(one) / len(DATA):.3f}",
                                f"{8 * len(one) / len(DATA):.3f}", "1", "2", str(a)]
    assert lines[2].split()[4:] == ["custom", "2", str(b)]
    assert lines[3].split()[-6:] == ["(totals:", "2", "streams", "in", "2", "files)"]


def test_standard_input_is_listed_as_a_stream(archives, monkeypatch, capsys):
    one, _ = archives
    monkeypatch.setattr(sys, "stdin", io.BytesIO(one + one))
    rows = json_rows(["-"], capsys)
    assert [row["file"] for row in rows] == ["-", "-"]
    assert rows[0]["uncompressed"] == len(DATA)
    assert not sys.stdin.closed  # standard input is not closed after listing
    monkeypatch.setattr(sys, "stdin", io.BytesIO(b"not an archive"))
    assert main(["-l"]) == 1
    assert capsys.readouterr().err == "nncompress: (stdin): not an nncompress archive (bad magic)\n"


def test_files_that_cannot_be_listed_are_named_and_the_rest_listed(archives, tmp_path, capsys):
    one, _ = archives
    good, junk, truncated = tmp_path / "good.nnc", tmp_path / "junk.nnc", tmp_path / "cut.nnc"
    good.write_bytes(one)
    junk.write_bytes(b"XYZW" * 10)
    truncated.write_bytes(one[:-3])
    missing = tmp_path / "missing.nnc"
    assert main(["-l", "--json", str(missing), str(tmp_path), str(junk), str(truncated),
                 str(good)]) == 1
    captured = capsys.readouterr()
    assert [row["file"] for row in json.loads(captured.out)] == [str(good)]
    assert captured.err.splitlines() == [
        f"nncompress: {missing}: no such file or directory",
        f"nncompress: {tmp_path}: is a directory -- ignored",
        f"nncompress: {junk}: not an nncompress archive (bad magic)",
        f"nncompress: {truncated}: compressed data ended before the end of the stream (truncated)",
    ]
    # a warning alone is exit status 2, and -q silences it
    assert main(["-l", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"nncompress: {tmp_path}: is a directory -- ignored\n"
    assert main(["-l", "-q", str(tmp_path), str(good)]) == 2
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("error, message", [
    (PermissionError(errno.EACCES, "Permission denied"), "Permission denied"),
    (OSError("no strerror here"), "no strerror here"),
])
def test_an_unreadable_file_is_named_with_the_reason(archives, tmp_path, monkeypatch, capsys,
                                                      error, message):
    one, _ = archives
    path = tmp_path / "a.nnc"
    path.write_bytes(one)
    real_open = open

    def refusing_open(name, *args, **kwargs):
        if str(name) == str(path):
            raise error
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing_open)
    assert main(["-l", str(path)]) == 1
    assert capsys.readouterr().err == f"nncompress: {path}: {message}\n"


def test_set_user_id_archives_are_listed(archives, tmp_path, capsys):
    """Listing writes to standard output, so the special bits that make compression or
    decompression skip a file (the output could not get them) do not matter here."""
    path = tmp_path / "a.nnc"
    path.write_bytes(archives[0])
    path.chmod(0o4644)
    [row] = json_rows([str(path)], capsys)
    assert row["uncompressed"] == len(DATA)
    assert capsys.readouterr().err == ""


def test_a_pure_rnnme_stream_is_shown_as_rnnme(monkeypatch, tmp_path, capsys):
    """The header's parameters decide the model column (a stand-in listing: no RNNME kernels
    are compiled for this)."""
    import dataclasses

    from nncompress import api

    pure = dataclasses.replace(params_for_level(1), rnnme_pure=1)
    listed = [api.StreamListing(40, 100, None, 2, 1, 0, pure, None),
              api.StreamListing(40, 100, 1, 2, 1, 0, params_for_level(1), 1)]
    monkeypatch.setattr(api, "list_streams", lambda source: iter(listed))
    path = tmp_path / "a.nnc"
    path.write_bytes(b"")
    rows = json_rows([str(path)], capsys)
    assert [row["model"] for row in rows] == ["rnnme", "cm"]
    assert main(["-l", str(path)]) == 0
    assert [line.split()[4] for line in capsys.readouterr().out.splitlines()[1:3]] == ["rnnme", "1"]


def test_the_file_is_closed_after_listing(archives, tmp_path, monkeypatch, capsys):
    one, _ = archives
    path = tmp_path / "a.nnc"
    path.write_bytes(one + b"junk")
    opened = []
    real_open = open

    def recording_open(name, *args, **kwargs):
        handle = real_open(name, *args, **kwargs)
        opened.append(handle)
        return handle

    monkeypatch.setattr("builtins.open", recording_open)
    assert main(["-l", str(path)]) == 1  # listed up to the junk, then refused
    assert opened and all(handle.closed for handle in opened)


class _FailingOutput:
    def __init__(self, error):
        self.error, self.written = error, b""

    def write(self, data):
        raise self.error

    def flush(self):
        pass


@pytest.mark.parametrize("error, message", [
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
    (OSError("no strerror here"), "no strerror here"),
])
def test_a_failing_standard_output_is_named(archives, tmp_path, monkeypatch, capsys, error,
                                             message):
    path = tmp_path / "a.nnc"
    path.write_bytes(archives[0])
    monkeypatch.setattr(sys, "stdout", _FailingOutput(error))
    assert main(["-l", str(path)]) == 1
    assert capsys.readouterr().err == f"nncompress: (stdout): {message}\n"


def test_a_closed_pipe_on_standard_output_is_not_an_error_message(archives, tmp_path, monkeypatch,
                                                                   capsys):
    path = tmp_path / "a.nnc"
    path.write_bytes(archives[0])
    monkeypatch.setattr(sys, "stdout", _FailingOutput(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    assert main(["-l", str(path)]) == 1
    assert capsys.readouterr().err == "nncompress: broken pipe\n"


def test_standard_output_is_flushed(archives, tmp_path, monkeypatch):
    path = tmp_path / "a.nnc"
    path.write_bytes(archives[0])
    out = io.BufferedWriter(io.BytesIO(), buffer_size=1 << 16)
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["-l", str(path)]) == 0
    assert out.raw.getvalue().startswith(b"  compressed uncompressed")
