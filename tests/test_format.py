import pytest

from nncompress import format as fmt
from nncompress.format import NNCError


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**32, 2**63 - 1])
def test_varint_round_trip(value):
    out = bytearray()
    fmt.put_varint(out, value)
    assert fmt.get_varint(out, 0) == (value, len(out))


def test_varint_truncated_and_overlong():
    with pytest.raises(fmt.NeedMoreData):
        fmt.get_varint(b"\x80\x80", 0)
    with pytest.raises(NNCError):
        fmt.get_varint(b"\xff" * 12, 0)


def test_header_round_trip_and_checksum():
    header = fmt.Header(fmt.FORMAT_VERSION, 6, (1, 2, 300), 1 << 20)
    raw = header.encode()
    parsed, end = fmt.parse_header(raw)
    assert parsed == header and end == len(raw)
    damaged = bytearray(raw)
    damaged[7] ^= 1
    with pytest.raises(NNCError, match="checksum"):
        fmt.parse_header(bytes(damaged))


@pytest.mark.parametrize("version, message", [
    (fmt.FORMAT_VERSION + 1, "newer than this nncompress supports .*upgrade"),
    (fmt.FORMAT_VERSION + fmt.PLAUSIBLE_NEWER_VERSIONS, "newer"),
    (fmt.FORMAT_VERSION + fmt.PLAUSIBLE_NEWER_VERSIONS + 1, "corrupt archive header .unknown format version"),
    (255, "corrupt archive header .unknown format version 255"),
    (0, "no longer supported"),
])
def test_other_format_versions_are_refused_by_name(version, message):
    """The one test of version handling: whole archives reach it through parse_header."""
    import nncompress

    raw = bytearray(nncompress.compress(b"versions", 1))
    raw[4] = version
    with pytest.raises(NNCError, match=message):
        fmt.parse_header(bytes(raw))
    with pytest.raises(NNCError, match=message):
        nncompress.decompress(bytes(raw))


def test_block_frame_limits():
    frame = fmt.encode_block_frame(10, 8, 0xDEADBEEF)
    parsed, _ = fmt.parse_block_frame(frame, 0, 100)
    assert (parsed.raw_len, parsed.payload_len, parsed.crc) == (10, 8, 0xDEADBEEF)
    with pytest.raises(NNCError, match="block longer"):
        fmt.parse_block_frame(frame, 0, 5)
    with pytest.raises(NNCError, match="payload length"):
        fmt.parse_block_frame(fmt.encode_block_frame(1, 4000, 0), 0, 100)


def test_model_params_round_trip():
    from nncompress.model.params import ModelParams
    from nncompress.presets import LEVELS

    for params in LEVELS.values():
        assert ModelParams.from_ints(params.to_ints()) == params
    with pytest.raises(ValueError):
        ModelParams.from_ints([1, 2, 3])


def test_negative_varint_refused():
    with pytest.raises(ValueError, match="^varints are unsigned$"):
        fmt.put_varint(bytearray(), -1)


def _archive(data: bytes, block_size: int) -> bytes:
    import nncompress

    return nncompress.compress(data, 1, block_size=block_size)


def test_scan_lists_every_stream_without_decoding():
    one, two = _archive(b"a" * 250, 100), _archive(b"second stream", 1 << 20)
    infos = fmt.scan(one + two)
    assert [(i.compressed_size, i.raw_size, i.blocks) for i in infos] == [
        (len(one), 250, 3), (len(two), 13, 1)]
    assert infos[0].crc == fmt.crc32(b"a" * 250) and infos[1].crc == fmt.crc32(b"second stream")
    assert infos[0].header.block_size == 100 and infos[1].header.level == 1
    empty = _archive(b"", 100)
    assert [(i.raw_size, i.blocks) for i in fmt.scan(empty + one)] == [(0, 0), (250, 3)]


def test_scan_refuses_damaged_framing():
    archive = _archive(b"framing" * 30, 64)
    assert fmt.scan(bytearray(archive))[0].raw_size == 210  # any buffer type
    for cut in range(len(archive)):
        with pytest.raises(NNCError, match="truncated|bad magic|empty"):
            fmt.scan(archive[:cut])
    with pytest.raises(NNCError, match="trailing garbage"):
        fmt.scan(archive + b"garbage")
    with pytest.raises(NNCError, match="bad magic"):
        fmt.scan(b"garbage" + archive)
    # a trailer that disagrees with the blocks: length 209 instead of 210 (one varint byte)
    end = len(archive) - 4 - 2
    assert fmt.get_varint(archive, end)[0] == 210
    bad = archive[:end] + bytes([209 & 0x7F | 0x80, 209 >> 7]) + archive[end + 2 :]
    with pytest.raises(NNCError, match="trailer length does not match"):
        fmt.scan(bad)
