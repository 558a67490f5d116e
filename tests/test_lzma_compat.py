"""NNDecompressor against lzma.LZMADecompressor, side by side on the same call sequences
(issue 14 items 5 and 6): output, eof, needs_input, unused_data and EOFError must match."""

import lzma

import pytest

import nncompress
from nncompress.api import NNDecompressor

DATA = b"".join(b"%05d the same call sequence, two decompressors\n" % k for k in range(120))
TAIL = b"XY"

# A script is a list of (input, max_length); input "all" is the whole archive plus TAIL.
SCRIPTS = {
    "all at once": [("all", -1), (b"", -1)],
    "one byte then more input": [("all", 1), (b"more", 10), (b"", -1), (b"", -1)],
    "zero limits": [("all", 0), (b"", 0), (b"", 5), (b"", len(DATA) - 5), (b"", 0)],
    "exact length": [("all", len(DATA)), (b"", -1)],
    "one short": [("all", len(DATA) - 1), (b"", 1), (b"", 1)],
    "small steps": [("all", 700)] + [(b"", 700)] * 9 + [(b"z", 700)],
    "past the end": [("all", len(DATA) + 100), (b"x", 1)],
    "zeros to the end": [("all", 0), (b"", 0), (b"", 0), (b"", -1)],
}


def archives(data):
    return {"lzma": lzma.compress(data), "nnc": nncompress.compress(data, 1, block_size=1000)}


def run(decompressor, archive, script):
    """What a caller observes after each call: output, attributes, or the exception type."""
    seen = []
    for given, max_length in script:
        data = archive + TAIL if given == "all" else given
        try:
            out = decompressor.decompress(data, max_length)
        except EOFError:
            seen.append("EOFError")
            continue
        seen.append((out, decompressor.eof, decompressor.needs_input, decompressor.unused_data))
    return seen


@pytest.mark.parametrize("name", SCRIPTS)
@pytest.mark.parametrize("data", [DATA, b"", b"q"], ids=["text", "empty", "one-byte"])
def test_same_observations_as_lzma(name, data):
    script = SCRIPTS[name]
    blobs = archives(data)
    expected = run(lzma.LZMADecompressor(), blobs["lzma"], script)
    got = run(NNDecompressor(), blobs["nnc"], script)
    assert got == expected
    assert got  # the script ran


def test_initial_state_matches():
    a, b = lzma.LZMADecompressor(), NNDecompressor()
    assert (a.eof, a.needs_input, a.unused_data) == (b.eof, b.needs_input, b.unused_data)


@pytest.mark.parametrize("piece", [1, 7, 300])
def test_piecewise_input_same_flags_and_result(piece):
    """Fed in pieces: how much output each piece releases depends on the format (a block
    decodes once its payload is complete), but the flags and the final result must agree."""
    blobs = archives(DATA)
    results = {}
    for name, make in (("lzma", lzma.LZMADecompressor), ("nnc", NNDecompressor)):
        d = make()
        stream = blobs[name]
        blob = stream + TAIL
        out = bytearray()
        flags = set()
        fed = 0
        while fed < len(blob) and not d.eof:
            out += d.decompress(blob[fed : fed + piece])
            fed += piece
            flags.add((d.eof, d.needs_input))
        # whatever of the input lay beyond the stream's end is handed back
        assert d.unused_data == blob[len(stream) : fed], name
        results[name] = (bytes(out), d.eof)
        assert flags <= {(False, True), (True, False)}, name
    assert results["nnc"] == results["lzma"] == (DATA, True)


def test_truncated_stream_needs_input_like_lzma():
    blobs = archives(DATA)
    for name, make in (("lzma", lzma.LZMADecompressor), ("nnc", NNDecompressor)):
        d = make()
        d.decompress(blobs[name][:-1])
        assert (d.eof, d.needs_input, d.unused_data) == (False, True, b""), name
        assert d.decompress(b"", 3) == b""
        assert (d.eof, d.needs_input) == (False, True), name


@pytest.mark.parametrize("cut", [3, 10, -1])
def test_zero_limits_on_an_empty_stream_in_pieces(cut):
    """max_length=0 stops where lzma stops: right after the stream header."""
    observed = {}
    for name, blob in archives(b"").items():
        d = lzma.LZMADecompressor() if name == "lzma" else NNDecompressor()
        cut_at = cut if cut > 0 else len(blob) + cut
        # (not two calls in a row that can make no progress: liblzma calls that a buffer error)
        seq = [(blob[:cut_at], 0), (blob[cut_at:] + TAIL, 0), (b"", 0), (b"", 0)]
        observed[name] = run(d, b"", [(piece, m) for piece, m in seq])
    assert observed["nnc"] == observed["lzma"]
