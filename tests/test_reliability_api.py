"""Hostile and damaged data through the library: a clean NNCError (never another exception,
never wrong data) and no model built for a header that asks too much.

The codec-level guarantees (only verified blocks released, the memory bound, one block held at a
time) are in test_codec.py; systematic damage (every truncation, every bit flip, the fuzzer) in
test_fuzz.py; format versions in test_format.py; the command line's side in
test_reliability_cli.py."""

import io

import pytest

import nncompress
from nncompress import format as fmt
from nncompress.api import NNDecompressor
from nncompress.format import NNCError
from nncompress.model.params import ModelParams

DATA = b"Reliability first: every byte comes back or we say why.\n" * 8 + bytes(range(256))


@pytest.fixture(scope="module")
def archive():
    return nncompress.compress(DATA, 1, block_size=100)


@pytest.mark.parametrize("blob, message", [
    (b"", "empty"),
    (b"\0", "bad magic"),
    (b"\0" * 1000, "bad magic"),
    (b"NNC", "truncated"),
    (b"NNC\x1b" + b"\0" * 40, "bad magic"),
    (b"PK\x03\x04" + b"\0" * 40, "bad magic"),
    (b"\x1f\x8b\x08\x00" + b"\0" * 40, "bad magic"),
])
def test_not_an_archive(blob, message):
    with pytest.raises(NNCError, match=message):
        nncompress.decompress(blob)


def test_garbage_around_a_valid_archive(archive):
    for head in (b"x", b"\0" * 16, b"NNC", fmt.MAGIC):
        with pytest.raises(NNCError):
            nncompress.decompress(head + archive)
    for tail in (b"x", b"\0", b"\0" * 512, b"NN", fmt.MAGIC, archive[:-1]):
        with pytest.raises(NNCError, match="trailing|truncated"):
            nncompress.decompress(archive + tail)
    assert nncompress.decompress(archive + archive) == DATA * 2
    d = NNDecompressor()
    assert d.decompress(archive + b"garbage") == DATA
    assert d.eof and d.unused_data == b"garbage"


def _stream(header_params=None, block_size=1 << 20, frames=b"", end=b"\0" + b"\0" + b"\0" * 4):
    params = header_params if header_params is not None else tuple(ModelParams().to_ints())
    # format 1's framing (the bounds are the same code for both versions; format 2's own
    # framing errors are in tests/test_format.py)
    return fmt.Header(1, 0, params, block_size).encode() + frames + end


@pytest.mark.parametrize("frames, message", [
    (fmt.encode_block_frame((1 << 20) + 1, 4, 0), "block longer"),
    (fmt.encode_block_frame(2**62, 4, 0), "block longer"),
    (fmt.encode_block_frame(10, 2**40, 0), "payload length"),
    (fmt.encode_block_frame(10, 10 * fmt.MAX_PAYLOAD_PER_BYTE + fmt.PAYLOAD_SLACK + 4, 0), "payload length"),
    (fmt.encode_block_frame(10, 6, 0), "payload length"),  # not whole 32-bit words
    (b"\xff" * 11, "integer field too long"),  # varint overflow
    (fmt.encode_block_frame(10, 8, 0) + b"\0" * 8, "checksum"),
])
def test_giant_or_bad_frame_fields(frames, message):
    with pytest.raises(NNCError, match=message):
        nncompress.decompress(_stream(frames=frames))


def test_giant_trailer_and_param_count():
    with pytest.raises(NNCError, match="mismatch"):
        nncompress.decompress(_stream(end=fmt.encode_end(2**63, 0)))
    # a header the encoder refuses to write (ValueError), made by hand
    raw = bytearray(fmt.MAGIC + bytes([1, 0]))
    fmt.put_varint(raw, fmt.MAX_PARAMS + 1)
    raw += bytes(range(fmt.MAX_PARAMS + 1))
    fmt.put_varint(raw, 1 << 20)
    raw += fmt.crc32(raw).to_bytes(4, "little")
    with pytest.raises(NNCError, match="too many"):
        nncompress.decompress(bytes(raw) + b"\0" * 6)
    with pytest.raises(ValueError):
        _stream(header_params=tuple(range(fmt.MAX_PARAMS + 1)))
    header = bytearray(fmt.MAGIC + bytes([fmt.FORMAT_VERSION, 1]) + b"\xff" * 12)
    with pytest.raises(NNCError, match="too long"):
        nncompress.decompress(bytes(header))
    with pytest.raises(NNCError, match="block size"):
        nncompress.decompress(_stream(block_size=fmt.MAX_BLOCK_SIZE + 1))


def test_file_object_reader_reports_damage(tmp_path, archive):
    path = tmp_path / "x.nnc"
    blob = bytearray(archive)
    blob[len(blob) // 2] ^= 0x10
    path.write_bytes(bytes(blob))
    with pytest.raises(NNCError):
        with nncompress.open(path, "rb") as f:
            f.read()
    path.write_bytes(archive[:-3])
    with pytest.raises(NNCError, match="truncated"):
        with nncompress.open(path, "rb") as f:
            f.read()


class ShortWriter(io.RawIOBase):
    """Accepts at most 5 bytes per write, like a pipe under pressure."""

    def __init__(self):
        self.data = bytearray()

    def writable(self):
        return True

    def write(self, b):
        chunk = bytes(b[:5])
        self.data += chunk
        return len(chunk)


def test_file_object_writer_completes_short_writes():
    sink = ShortWriter()
    with nncompress.open(sink, "wb", preset=1) as f:
        f.write(DATA)
    assert nncompress.decompress(bytes(sink.data)) == DATA
