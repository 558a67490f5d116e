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


NEWER = ("archive format version {v} is newer than this nncompress supports (version {cur}); "
         "upgrade nncompress to read it")
DAMAGED = "corrupt archive header (unknown format version {v})"
OLDER = "archive format version {v} is no longer supported (this nncompress reads version {cur})"


@pytest.mark.parametrize("version, message", [
    (fmt.FORMAT_VERSION + 1, NEWER),
    (fmt.FORMAT_VERSION + fmt.PLAUSIBLE_NEWER_VERSIONS, NEWER),
    (fmt.FORMAT_VERSION + fmt.PLAUSIBLE_NEWER_VERSIONS + 1, DAMAGED),
    (255, DAMAGED),
    (0, OLDER),
])
def test_other_format_versions_are_refused_by_name(version, message):
    """The one test of version handling: whole archives reach it through parse_header."""
    import nncompress

    raw = bytearray(nncompress.compress(b"versions", 1))
    raw[4] = version
    expected = message.format(v=version, cur=fmt.FORMAT_VERSION)
    with pytest.raises(NNCError) as info:
        fmt.parse_header(bytes(raw))
    assert str(info.value) == expected
    with pytest.raises(NNCError) as info:
        nncompress.decompress(bytes(raw))
    assert str(info.value) == expected


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


def test_extension_parameters_are_off_in_older_headers():
    """A parameter added later reads as its "off" value from a header that lacks it, and an archive
    that leaves every extension off writes exactly the integers an older nncompress wrote."""
    from dataclasses import dataclass

    from nncompress.model.params import ModelParams, extension

    @dataclass(frozen=True)
    class Later(ModelParams):
        first_new: int = extension(0)
        second_new: int = extension(5)

    old = ModelParams().to_ints()
    # the extensions ModelParams already has, at their "off" values (Later's come after them)
    offs = [getattr(ModelParams(), name) for name in ModelParams.extension_names()]
    assert Later().to_ints() == old
    assert Later.from_ints(old) == Later()
    assert Later(first_new=3).to_ints() == old + offs + [3]
    assert Later(second_new=7).to_ints() == old + offs + [0, 7]
    assert Later.from_ints(old + offs + [0, 7]) == Later(second_new=7)
    with pytest.raises(ValueError, match="too long"):
        Later.from_ints(old + offs + [0, 7, 1])
    with pytest.raises(ValueError, match="too long"):
        ModelParams.from_ints(old + offs + [1])
    with pytest.raises(ValueError, match="context count"):
        count_at = len(ModelParams.base_names())
        ModelParams.from_ints(old[:count_at] + [old[count_at] + 5] + old[count_at + 1 :])


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


def test_end_marker_frame():
    assert fmt.parse_block_frame(b"\0", 0, 100) == (fmt.BlockFrame(0, 0, 0), 1)


def _header(**change) -> bytes:
    fields = dict(version=fmt.FORMAT_VERSION, level=1, params=(1, 2), block_size=100)
    fields.update(change)
    return fmt.Header(**fields).encode()


def _reseal(raw: bytes) -> bytes:
    """Recompute a header's trailing CRC after editing it."""
    import struct

    return raw[:-4] + struct.pack("<I", fmt.crc32(raw[:-4]))


_END = fmt.encode_end(0, 0)
# Every message the container layer can give, word for word (the CLI prints them as they are).
FORMAT_ERRORS = [
    (b"", "no compressed data (empty input)"),
    (b"NNC\x1a", "compressed data ended before the end of the stream (truncated)"),
    (b"NNC\x1b" + b"\0" * 20, "not an nncompress archive (bad magic)"),
    (_header()[:6] + b"\xff" * 10, "corrupt archive: integer field too long"),
    (_reseal(_header()[:6] + bytes([fmt.MAX_PARAMS + 1]) + b"\0" * 70 + b"\0\0\0\0"),
     "corrupt archive header: too many model parameters"),
    (_header()[:-1] + b"\0", "corrupt archive header (checksum mismatch)"),
    (_header(block_size=0) + _END, "corrupt archive header: invalid block size"),
    (_header(block_size=fmt.MAX_BLOCK_SIZE + 1) + _END, "corrupt archive header: invalid block size"),
    (_header() + fmt.encode_block_frame(101, 4, 0), "corrupt archive: block longer than the stream's block size"),
    (_header() + fmt.encode_block_frame(10, 6, 0), "corrupt archive: invalid block payload length"),
    (_header() + fmt.encode_end(1, 0), "corrupt archive: trailer length does not match the blocks"),
    (_header() + _END + b"garbage", "trailing garbage after the compressed stream"),
]


@pytest.mark.parametrize("blob, message", FORMAT_ERRORS, ids=[m for _, m in FORMAT_ERRORS])
def test_every_framing_error_message_exactly(blob, message):
    with pytest.raises(NNCError) as info:
        fmt.scan(blob)
    assert str(info.value) == message


def test_block_size_bounds_are_inclusive():
    for size in (1, fmt.MAX_BLOCK_SIZE):
        assert fmt.parse_header(_header(block_size=size))[0].block_size == size
    assert fmt.parse_block_frame(fmt.encode_block_frame(100, 4, 7), 0, 100)[0].raw_len == 100
    limit = 100 * fmt.MAX_PAYLOAD_PER_BYTE + fmt.PAYLOAD_SLACK
    assert fmt.parse_block_frame(fmt.encode_block_frame(100, limit, 7), 0, 100)[0].payload_len == limit
    with pytest.raises(NNCError):
        fmt.parse_block_frame(fmt.encode_block_frame(100, limit + 4, 7), 0, 100)


def test_parameter_count_limit_is_inclusive():
    params = tuple(range(fmt.MAX_PARAMS))
    raw = _header(params=params)
    assert fmt.parse_header(raw)[0].params == params
