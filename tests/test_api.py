import io

import numpy as np
import pytest

import nncompress
from nncompress.presets import LEVEL_PRESET
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

    from nncompress.model.params import fit_to_input
    from nncompress.presets import header_level, header_params, params_for_level

    seen = set()
    for level in (1, 3, 6, 9):
        header, _ = parse_header(nncompress.compress(sample_text[:500], preset=level))
        assert header_level(header) == level
        assert header_params(header) == fit_to_input(params_for_level(level), 500)
        seen.add(header_params(header))
    assert len(seen) == 4


def test_small_blocks_round_trip(sample_text):
    data = sample_text[:5000]
    packed = nncompress.compress(data, block_size=777)
    assert nncompress.decompress(packed) == data


def test_incremental_compressor_matches_one_shot(sample_text):
    data = sample_text[:4000]
    comp = NNCompressor(block_size=1000, size=len(data))  # the size compress() declares
    pieces = [comp.compress(data[i:i + 333]) for i in range(0, len(data), 333)]
    packed = b"".join(pieces) + comp.flush()
    assert packed == nncompress.compress(data, block_size=1000)
    assert nncompress.decompress(packed) == data
    with pytest.raises(ValueError):
        comp.flush()


def test_input_of_unknown_size_keeps_the_full_model(sample_text):
    """Streaming without a size: a segment longer than a block is coded with the preset's full
    tables (its length is unknown when its header is written); one that fits in a block is
    entirely in hand before its header, so it is fitted like a declared input."""
    from nncompress.format import parse_header
    from nncompress.presets import header_params, params_for_level

    data = sample_text[:4000]
    comp = NNCompressor(1, block_size=1000)
    packed = b"".join(comp.compress(data[i:i + 333]) for i in range(0, len(data), 333)) + comp.flush()
    assert nncompress.decompress(packed) == data
    assert header_params(parse_header(packed)[0]) == params_for_level(1)
    comp = NNCompressor(1, block_size=1000)
    small = comp.compress(data[:999]) + comp.flush()
    assert small == nncompress.compress(data[:999], 1, block_size=1000)
    assert parse_header(small)[0].overrides  # fitted


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


# -- NNCFile / open: the file-object surface, like lzma.LZMAFile ---------------------------------

@pytest.mark.parametrize("mode", ["r", "rb", "w", "wb", "x", "xb", "a", "ab"])
def test_file_modes(tmp_path, mode):
    path = tmp_path / "m.nnc"
    if mode.startswith("r"):
        path.write_bytes(nncompress.compress(b"existing", 1))
    with nncompress.open(path, mode, preset=1) as f:
        assert f.readable() == mode.startswith("r") and f.writable() != mode.startswith("r")
        # random access (segments.py): a file opened for reading seeks, one for writing does not
        assert f.seekable() == mode.startswith("r") and f.closed is False
        if mode.startswith("r"):
            assert f.read() == b"existing"
        else:
            assert f.write(b"new") == 3
    assert f.closed
    if not mode.startswith("r"):
        assert nncompress.decompress(path.read_bytes()) == b"new"
        from nncompress.format import parse_header

        assert parse_header(path.read_bytes())[0].preset == LEVEL_PRESET[1]  # the preset reached the file
        with nncompress.open(path) as f:  # the default mode reads
            assert f.read() == b"new"
        with nncompress.open(path, "ab", preset=1) as f:
            f.write(b" and appended")  # a second stream after the first
        assert nncompress.decompress(path.read_bytes()) == b"new and appended"
        with pytest.raises(FileExistsError):
            nncompress.open(path, "xb")


@pytest.mark.parametrize("mode", ["", "rw", "b", "r+", "wbt", "q"])
def test_invalid_modes(tmp_path, mode):
    with pytest.raises(ValueError) as info:
        nncompress.open(tmp_path / "m.nnc", mode)
    shown = mode if "t" in mode else mode.replace("b", "")
    assert str(info.value) == f"invalid mode: {shown!r}"
    assert not (tmp_path / "m.nnc").exists()


def test_compressor_and_decompressor_refuse_use_after_the_end():
    comp = NNCompressor(1)
    comp.flush()
    for call, message in ((lambda: comp.compress(b"x"), "compressor has been flushed"),
                          (comp.flush, "repeated call to flush()")):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == message
    dec = NNDecompressor()
    dec.decompress(nncompress.compress(b"x", 1))
    for more in (b"", b"more"):  # as lzma: any call after the end, even with no data
        with pytest.raises(EOFError) as info:
            dec.decompress(more)
        assert str(info.value) == "Already at end of stream"


def test_open_argument_checks(tmp_path):
    with pytest.raises(TypeError) as info:
        nncompress.NNCFile(42)
    assert str(info.value) == "filename must be a path or a file object"
    with pytest.raises(TypeError, match="path or a file object"):
        nncompress.NNCFile(object(), "w")
    with pytest.raises(ValueError, match="^encoding, errors and newline are only for text mode$"):
        nncompress.open(tmp_path / "x.nnc", "wb", encoding="utf-8")
    # a reader needs read(), a writer write()
    class WriteOnly:
        def write(self, b):
            return len(b)

    with pytest.raises(TypeError):
        nncompress.NNCFile(WriteOnly(), "r")
    nncompress.NNCFile(WriteOnly(), "w").close()


def test_file_object_is_not_closed_path_is(tmp_path):
    buf = io.BytesIO()
    with nncompress.open(buf, "wb", preset=1) as f:
        f.write(b"data")
    assert not buf.closed  # the caller's file object stays open
    path = tmp_path / "p.nnc"
    f = nncompress.open(path, "wb", preset=1)
    handle = f._fp
    f.close()
    f.close()  # closing twice is harmless
    assert handle.closed


def test_reading_api(tmp_path):
    data = bytes(range(256)) * 40
    path = tmp_path / "r.nnc"
    path.write_bytes(nncompress.compress(data, 1, block_size=1000) + nncompress.compress(b"!", 1))
    with nncompress.open(path, "rb") as f:
        assert f.read(0) == b""
        assert f.read(10) == data[:10]
        assert f.read1(5) == data[10:15]
        buf = bytearray(7)
        assert f.readinto(buf) == 7 and bytes(buf) == data[15:22]
        assert f.read(None) == data[22:] + b"!"
        assert f.read() == b"" and f.read(5) == b""
        assert f.readinto(bytearray(3)) == 0
    with nncompress.open(path, "rb") as f:
        assert f.read(-1) == data + b"!"
    with nncompress.open(path, "rb") as f:  # small reads never pull the whole input in
        assert f.read(1) == data[:1]
        assert not f._input_done


def test_wrong_direction_and_closed(tmp_path):
    path = tmp_path / "d.nnc"
    with nncompress.open(path, "wb", preset=1) as f:
        with pytest.raises(io.UnsupportedOperation, match="^file not open for reading$"):
            f.read()
    with nncompress.open(path, "rb") as f:
        with pytest.raises(io.UnsupportedOperation, match="^file not open for writing$"):
            f.write(b"x")
    for call in (f.read, lambda: f.write(b"x"), f.readable, f.writable):
        with pytest.raises(ValueError, match="^I/O operation on closed file$"):
            call()


def test_writer_accepts_any_buffer_and_insists_on_progress():
    buf = io.BytesIO()
    with nncompress.open(buf, "wb", preset=1) as f:
        assert f.write(memoryview(b"abcd").cast("b")) == 4  # signed bytes are bytes too
        assert f.write(bytearray(b"ef")) == 2
        assert f.write(__import__("array").array("h", [1, 2])) == 4  # counted in bytes
    assert nncompress.decompress(buf.getvalue()) == b"abcdef\x01\x00\x02\x00"

    class Stuck(io.RawIOBase):
        def writable(self):
            return True

        def write(self, b):
            return 0

    with pytest.raises(OSError, match="^write to the underlying file made no progress$"):
        with nncompress.open(Stuck(), "wb", preset=1) as f:
            f.write(b"x")

    class Silent:  # duck-typed writers often return None: taken as all written
        data = bytearray()

        def write(self, b):
            self.data += b

    sink = Silent()
    with nncompress.open(sink, "wb", preset=1) as f:
        f.write(b"quiet")
    assert nncompress.decompress(bytes(sink.data)) == b"quiet"


def test_text_mode(tmp_path):
    path = tmp_path / "t.nnc"
    with nncompress.open(path, "wt", preset=1, encoding="utf-8", newline="") as f:
        f.write("caf\u00e9\r\n")
    assert nncompress.decompress(path.read_bytes()) == "caf\u00e9\r\n".encode()
    from nncompress.format import parse_header

    assert parse_header(path.read_bytes())[0].preset == LEVEL_PRESET[1]  # the preset reaches the binary file
    with nncompress.open(path, "rt", encoding="latin-1") as f:
        assert f.read() == "caf\u00e9\n".encode().decode("latin-1")
    for mode in ("rbt", "wtb"):
        with pytest.raises(ValueError, match="invalid mode"):
            nncompress.open(path, mode)


def test_reader_pulls_input_in_bounded_chunks_and_only_when_needed():
    data = np.random.default_rng(3).integers(0, 256, 100_000, dtype=np.uint8).tobytes()
    source = io.BytesIO(nncompress.compress(data, 1, block_size=1000))
    assert len(source.getvalue()) > 1 << 16
    with nncompress.open(source, "rb") as f:  # a file object, not a path
        assert f.read(0) == b"" and source.tell() == 0  # nothing asked, nothing read
        assert f.read(1) == data[:1]
        assert 0 < source.tell() <= 1 << 16  # one chunk, not the whole input
        assert f.read() == data[1:]


def test_text_mode_passes_newline_and_errors_through(tmp_path):
    path = tmp_path / "t.nnc"
    with nncompress.open(path, "wt", preset=1, encoding="ascii", errors="replace", newline="") as f:
        f.write("caf\u00e9\r\n")
    assert nncompress.decompress(path.read_bytes()) == b"caf?\r\n"
    with nncompress.open(path, "rt", encoding="ascii", newline="") as f:
        assert f.read() == "caf?\r\n"  # newline="" keeps the \r\n
    with nncompress.open(path, "rt", encoding="ascii") as f:
        assert f.read() == "caf?\n"
    for option in ("encoding", "errors", "newline"):
        with pytest.raises(ValueError, match="^encoding, errors and newline are only for text mode$"):
            nncompress.open(path, "rb", **{option: "strict" if option != "newline" else ""})


def test_custom_model_with_every_context_slot_round_trips():
    """A custom model of 32 contexts: its header lists every parameter (73 integers).  Up to
    preset 22 the decoder refused lists over 64, so a custom model of 24 contexts or more wrote an
    archive its own decoder rejected ("too many model parameters")."""
    import dataclasses

    from nncompress.model.params import KNOWN_KINDS
    from nncompress.presets import params_for_level

    kinds = tuple(sorted(KNOWN_KINDS))[:32]
    # case_fold is a mask over the context list: level 9's (37 contexts) is too wide for 32, so
    # fold all 32 (a 32-bit value in the header)
    params = dataclasses.replace(params_for_level(9), contexts=kinds, table_bits=12,
                                 history_bits=12, match_bits=10, rnnme_me_bits=12,
                                 case_fold=(1 << 32) - 1)
    data = b"Twenty-four contexts and more, in a custom model. Capitals, ALL CAPS. " * 20
    archive = nncompress.compress(data, params=params)
    assert nncompress.decompress(archive) == data
