import io

import numpy as np
import pytest

import nncompress
from nncompress import NNCompressor, NNDecompressor


@pytest.mark.parametrize("data", [b"", b"a", b"\x00", bytes(range(256)), bytes(range(256)) * 3,
                                  b"ab" * 5000])
def test_round_trip_edge_cases(data):
    assert nncompress.decompress(nncompress.compress(data)) == data


def test_round_trip_random_bytes():
    data = np.random.default_rng(1).integers(0, 256, 30_000, dtype=np.uint8).tobytes()
    packed = nncompress.compress(data)
    assert nncompress.decompress(packed) == data
    # incompressible data must not blow up: a few percent at most
    assert len(packed) < len(data) * 1.03 + 100


@pytest.mark.parametrize("level", [1, 3, 6, 9])
def test_round_trip_levels(level, sample_text):
    packed = nncompress.compress(sample_text[:6000], preset=level)
    assert nncompress.decompress(packed) == sample_text[:6000]


def test_levels_are_recorded_and_differ(sample_text):
    from nncompress.format import parse_header

    from nncompress.presets import params_for_level

    seen = set()
    for level in (1, 3, 6, 9):
        header, _ = parse_header(nncompress.compress(sample_text[:500], preset=level))
        assert header.level == level
        assert header.params == tuple(params_for_level(level).to_ints())
        seen.add(header.params)
    assert len(seen) == 4


def test_small_blocks_round_trip(sample_text):
    data = sample_text[:5000]
    packed = nncompress.compress(data, block_size=777)
    assert nncompress.decompress(packed) == data


def test_incremental_compressor_matches_one_shot(sample_text):
    data = sample_text[:4000]
    comp = NNCompressor(block_size=1000)
    pieces = [comp.compress(data[i:i + 333]) for i in range(0, len(data), 333)]
    packed = b"".join(pieces) + comp.flush()
    assert packed == nncompress.compress(data, block_size=1000)
    assert nncompress.decompress(packed) == data
    with pytest.raises(ValueError):
        comp.flush()


def test_decompressor_attributes(sample_text):
    data = sample_text[:3000]
    packed = nncompress.compress(data, block_size=1000)
    dec = NNDecompressor()
    out = bytearray()
    for i in range(0, len(packed), 100):
        assert not dec.eof
        out += dec.decompress(packed[i:i + 100])
    assert dec.eof and bytes(out) == data and dec.unused_data == b""
    dec2 = NNDecompressor()
    assert dec2.decompress(packed + b"extra") == data
    assert dec2.eof and dec2.unused_data == b"extra"
    with pytest.raises(EOFError):
        dec2.decompress(b"more")


def test_decompressor_max_length(sample_text):
    data = sample_text[:3000]
    dec = NNDecompressor()
    first = dec.decompress(nncompress.compress(data), max_length=100)
    assert first == data[:100] and not dec.needs_input and not dec.eof
    rest = dec.decompress(b"")
    assert first + rest == data and dec.eof


def test_concatenated_streams():
    a, b = b"first stream " * 50, b"second" * 70
    assert nncompress.decompress(nncompress.compress(a) + nncompress.compress(b)) == a + b


def test_open_binary_and_text(tmp_path, sample_text):
    path = tmp_path / "x.nnc"
    with nncompress.open(path, "wb") as f:
        f.write(sample_text[:2000])
        f.write(b"tail")
    with nncompress.open(path, "rb") as f:
        assert f.read() == sample_text[:2000] + b"tail"
    with nncompress.open(path, "wt", encoding="utf-8") as f:
        f.write("h\u00e9llo\nw\u00f6rld\n")
    with nncompress.open(path, "rt", encoding="utf-8") as f:
        assert f.readlines() == ["h\u00e9llo\n", "w\u00f6rld\n"]
    buf = io.BytesIO()
    with nncompress.open(buf, "wb") as f:
        f.write(b"to a file object")
    assert nncompress.decompress(buf.getvalue()) == b"to a file object"


def test_corpus_round_trip_small_files(corpora):
    for name in ("grammar.lsp", "xargs.1", "fields.c", "cp.html"):
        data = (corpora / name).read_bytes()
        assert nncompress.decompress(nncompress.compress(data)) == data, name


def test_large_single_block_round_trip(large_text, large_archive):
    """One default-size block (1 MiB) of > 200 KB: the encoder predicts it in several 64 KiB
    chunks that must form one range-coder stream the decoder reads nibble by nibble."""
    from nncompress.format import scan

    assert len(large_text) >= 200_000
    assert scan(large_archive)[0].blocks == 1
    assert nncompress.decompress(large_archive) == large_text
    assert len(large_archive) < len(large_text) // 3  # it is text: a broken model cannot get here
