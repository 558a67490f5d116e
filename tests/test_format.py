import pytest

from nncompress import format as fmt
from nncompress.format import NNCError
from nncompress.presets import LEVEL_PRESET


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


HEADERS = [
    fmt.Header(1, 6, (1, 2, 300), 1 << 20),
    fmt.Header(2, 0, (1, 2, 300), 1 << 20),  # custom parameters: the full list
    fmt.Header(2, 0, (), 1 << 20, preset=6),  # a preset as it is
    fmt.Header(2, 0, (), 77, preset=9, overrides=((0, 12), (2, 10), (3, 10))),
    fmt.Header(2, 0, (), 1 << 20, preset=300, overrides=((40, 2**40),)),  # large values fit too
]


@pytest.mark.parametrize("header", HEADERS, ids=range(len(HEADERS)))
def test_header_round_trip_and_checksum(header):
    raw = header.encode()
    parsed, end = fmt.parse_header(raw)
    assert parsed == header and end == len(raw)
    for cut in range(len(raw)):
        with pytest.raises(fmt.NeedMoreData):
            fmt.parse_header(raw[:cut])
    for at in range(5, len(raw)):
        damaged = bytearray(raw)
        damaged[at] ^= 1
        with pytest.raises(NNCError, match="checksum|integer field|too many|NeedMoreData"):
            try:
                fmt.parse_header(bytes(damaged))
            except fmt.NeedMoreData:
                raise NNCError("NeedMoreData") from None


def test_format_2_header_is_short():
    """A preset and the three fitted sizes: magic, version, preset, mask, 3 values, CRC."""
    header = fmt.Header(2, 0, (), 1 << 20, preset=6, overrides=((0, 12), (2, 10), (3, 10)))
    assert len(header.encode()) == 4 + 1 + 1 + 1 + 3 + 4
    assert len(fmt.Header(2, 0, (), 1 << 20, preset=6).encode()) == 4 + 1 + 1 + 1 + 4
    # a block size other than 1 MiB is written after the parameters, flagged in the preset byte
    assert fmt.Header(2, 0, (), 300, preset=6).encode()[5] == 6 << 1 | 1


def test_format_2_override_mask_bounds():
    raw = bytearray(MAGIC_V2 + bytes([6 << 1]))
    fmt.put_varint(raw, 1 << 64)  # a 64-bit mask names parameters 0..63
    raw += bytes([1]) * 65
    raw += __import__("struct").pack("<I", fmt.crc32(raw))
    with pytest.raises(NNCError) as info:
        fmt.parse_header(bytes(raw))
    assert str(info.value) == "corrupt archive header: too many model parameters"
    with pytest.raises(ValueError):  # and the encoder never writes one
        fmt.Header(2, 0, (), 1 << 20, preset=6, overrides=((fmt.MAX_OVERRIDE_INDEX, 1),)).encode()
    last = fmt.Header(2, 0, (), 1 << 20, preset=6, overrides=((63, 1),))
    assert fmt.parse_header(last.encode())[0].overrides == ((63, 1),)
    from nncompress.model.params import ModelParams
    assert len(ModelParams.scalar_names()) <= fmt.MAX_OVERRIDE_INDEX


def test_a_partial_magic_waits_and_anything_else_is_refused():
    """At the start of the input or after a stream (pos > 0): a prefix of the magic may be a
    stream still arriving; anything else is not an archive, however short."""
    for lead in (b"", b"ab"):
        for cut in range(len(fmt.MAGIC)):
            with pytest.raises(fmt.NeedMoreData):
                fmt.parse_header(lead + fmt.MAGIC[:cut], len(lead))
        for bad in (b"X", b"NX", b"NNX", b"NNC\x1b", b"NNC\x1b" + b"\0" * 20):
            with pytest.raises(NNCError) as info:
                fmt.parse_header(lead + bad, len(lead))
            assert str(info.value) == "not an nncompress archive (bad magic)"


MAGIC_V2 = fmt.MAGIC + bytes([2])

NEWER = ("archive format version {v} is newer than this nncompress supports (version {cur}); "
         "upgrade nncompress to read it")
DAMAGED = "corrupt archive header (unknown format version {v})"
OLDER = "archive format version {v} is no longer supported (this nncompress reads versions 1 to {cur})"


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
    assert infos[0].header.block_size == 100 and infos[1].header.preset == LEVEL_PRESET[1]
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
    assert fmt.parse_block_frame(b"\0", 0, 100) == (fmt.BlockFrame(0, 0, 0, True), 1)
    # format 2: the last block says so; an empty last frame ends a stream whose blocks were written
    assert fmt.parse_block_frame(b"\1", 0, 100, 2) == (fmt.BlockFrame(0, 0, 0, True), 1)
    frame = fmt.encode_block_frame(10, 8, 7, version=2, last=True)
    assert fmt.parse_block_frame(frame, 0, 100, 2) == (fmt.BlockFrame(10, 8, 7, True), len(frame))
    frame = fmt.encode_block_frame(10, 8, 7, version=2)
    assert fmt.parse_block_frame(frame, 0, 100, 2) == (fmt.BlockFrame(10, 8, 7, False), len(frame))
    with pytest.raises(NNCError, match="^corrupt archive: empty block$"):
        fmt.parse_block_frame(b"\0", 0, 100, 2)


def test_format_2_one_block_then_an_empty_last_frame_is_complete():
    blob = _v2() + _frame2(10, 4) + b"\0" * 4 + b"\1"  # StreamEncoder.block() without last, then end()
    (info,) = fmt.scan(blob)
    assert (info.blocks, info.raw_size, info.compressed_size) == (1, 10, len(blob))


def test_format_2_trailer_only_after_several_blocks():
    assert fmt.encode_end(0, 0, version=2, blocks=0) == b"\1"
    assert fmt.encode_trailer(5, 9, version=2, blocks=1) == b""
    assert fmt.parse_trailer(b"", 0, 2, 1) == (None, None, 0)
    trailer = fmt.encode_trailer(300, 9, version=2, blocks=2)
    assert fmt.parse_trailer(trailer, 0, 2, 2) == (300, 9, len(trailer))
    assert fmt.encode_trailer(300, 9, version=1, blocks=1) == trailer  # format 1: always
    # without a version, these mean format 1 (what the tests' hand-made version-1 archives use)
    assert fmt.encode_end(300, 9, blocks=1) == b"\0" + trailer
    assert fmt.parse_trailer(trailer, 0, blocks=1) == (300, 9, len(trailer))
    assert fmt.encode_trailer(300, 9, blocks=1) == trailer


def _header(**change) -> bytes:
    fields = dict(version=1, level=1, params=(1, 2), block_size=100)
    fields.update(change)
    return fmt.Header(**fields).encode()


def _varint(value: int) -> bytes:
    out = bytearray()
    fmt.put_varint(out, value)
    return bytes(out)


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
    (_reseal(_header()[:6] + _varint(fmt.MAX_PARAMS + 1) + b"\0" * (fmt.MAX_PARAMS + 8) + b"\0\0\0\0"),
     "corrupt archive header: too many model parameters"),
    (_header()[:-1] + b"\0", "corrupt archive header (checksum mismatch)"),
    (_header(block_size=0) + _END, "corrupt archive header: invalid block size"),
    (_header(block_size=fmt.MAX_BLOCK_SIZE + 1) + _END, "corrupt archive header: invalid block size"),
    (_header() + fmt.encode_block_frame(101, 4, 0), "corrupt archive: block longer than the stream's block size"),
    (_header() + fmt.encode_block_frame(10, 6, 0), "corrupt archive: invalid block payload length"),
    (_header() + fmt.encode_end(1, 0), "corrupt archive: trailer length does not match the blocks"),
    (_header() + _END + b"garbage", "trailing garbage after the compressed stream"),
]



def _v2(**change) -> bytes:
    return _header(version=2, **change)


def _frame2(raw_len, payload_len, crc=0, last=False):
    return fmt.encode_block_frame(raw_len, payload_len, crc, version=2, last=last)


FORMAT_ERRORS += [
    (_v2()[:6] + b"\xff" * 10, "corrupt archive: integer field too long"),
    (_v2()[:-1] + b"\0", "corrupt archive header (checksum mismatch)"),
    (_v2(block_size=0) + b"\1", "corrupt archive header: invalid block size"),
    (_v2() + b"\0", "corrupt archive: empty block"),
    (_v2() + _frame2(101, 4), "corrupt archive: block longer than the stream's block size"),
    (_v2() + _frame2(10, 6), "corrupt archive: invalid block payload length"),
    (_v2() + _frame2(10, 4) + b"\0" * 4 + _frame2(10, 4, last=True) + b"\0" * 4
     + fmt.encode_trailer(21, 0, version=2, blocks=2),
     "corrupt archive: trailer length does not match the blocks"),
    (_v2() + (_frame2(10, 4) + b"\0" * 4) * 2 + b"\1",
     "compressed data ended before the end of the stream (truncated)"),  # 2 blocks: a trailer is due
    (_v2() + _frame2(10, 4) + b"\0" * 4, "compressed data ended before the end of the stream (truncated)"),
    (_v2() + _frame2(10, 4, last=True) + b"\0" * 4 + b"garbage", "trailing garbage after the compressed stream"),
    (_v2() + b"\1garbage", "trailing garbage after the compressed stream"),
    # no payload can hold 32,001 bytes: the bound of MAX_RAW_PER_PAYLOAD_BIT (500 per bit) over
    # the 64 bits of slack (tests/test_safety_api.py::test_the_bound_is_what_format_states)
    (_v2(block_size=1 << 16) + _frame2(32001, 0), "corrupt archive: block payload too short for its length"),
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
    with pytest.raises(ValueError, match="at most"):  # the encoder keeps to the same bound
        _header(params=params + (0,))


def test_every_model_fits_a_header():
    """The largest parameter list a ModelParams can have (every scalar, MAX_CONTEXTS contexts) fits
    under MAX_PARAMS; it did not once (a custom model of 24 contexts wrote a header its own decoder
    refused), so a new field that pushes it over fails here, not in a user's archive."""
    from nncompress.model.kinds import MAX_CONTEXTS
    from nncompress.model.params import ModelParams

    last = ModelParams.extension_names()[-1]  # every extension is then written
    widest = ModelParams(contexts=tuple(range(1, MAX_CONTEXTS + 1)), **{last: 1})
    assert len(widest.to_ints()) == len(ModelParams.scalar_names()) + 1 + MAX_CONTEXTS
    assert len(widest.to_ints()) <= fmt.MAX_PARAMS


def test_one_block_stream_lists_its_block_checksum():
    """Format 2 writes no trailer after a single block: the listing takes the block's CRC."""
    import nncompress

    archive = nncompress.compress(b"one block", 1)
    (info,) = fmt.scan(archive)
    assert (info.blocks, info.raw_size, info.crc) == (1, 9, fmt.crc32(b"one block"))
    assert info.header.version == 2 and info.header.preset == LEVEL_PRESET[1]


# ---------------------------------------------------------------------------------------------
# scan_stream's reader: payloads larger than what it reads ahead, sources that cannot seek, and
# sources that hand over a few bytes at a time (a pipe).  scan() never decodes, so the payloads
# here are random bytes: a reader that loses its place parses them as frames and fails.


def _big_streams():
    """Two format-2 streams: 3 blocks whose payloads straddle the 4 KiB read-ahead (with a
    trailer), then one block that ends the input (no trailer); and what scan must list."""
    import numpy as np

    rng = np.random.default_rng(9)
    header = fmt.Header(2, 0, (), 1 << 20, preset=1).encode()
    out, infos = bytearray(), []
    for sizes in ((20000, 12, 30000), (16000,)):
        start = len(out)
        out += header
        crc = 0
        for number, size in enumerate(sizes):
            payload = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
            last = number == len(sizes) - 1
            out += fmt.encode_block_frame(size + 1, size, 1000 + size, version=2, last=last)
            out += payload
            crc = 1000 + size
        total = sum(size + 1 for size in sizes)
        if len(sizes) > 1:
            crc = 77
            out += fmt.encode_trailer(total, crc, version=2, blocks=len(sizes))
        infos.append((len(out) - start, total, len(sizes), crc))
    return bytes(out), infos


class _Source:
    """A file object that records every read; `most` caps what one read returns (a pipe),
    `seekable` None leaves the method out, an exception class makes it raise."""

    def __init__(self, data, *, seekable=True, most=None):
        import io

        self._file = io.BytesIO(data)
        self._most = most
        self.asked = []
        self.returned = 0
        if seekable is None:
            return
        if isinstance(seekable, type):
            def refuse():
                raise seekable("no")
            self.seekable = refuse
        else:
            self.seekable = lambda: seekable
            if seekable:
                self.seek, self.tell = self._file.seek, self._file.tell

    def read(self, size=-1):
        self.asked.append(size)
        if self._most is not None:
            size = self._most if size is None or size < 0 else min(size, self._most)
        data = self._file.read(size)
        self.returned += len(data)
        return data


def _listed(source):
    return [(i.compressed_size, i.raw_size, i.blocks, i.crc) for i in fmt.scan_stream(source)]


@pytest.mark.parametrize("kind", ["seekable", "not seekable", "no seekable method",
                                  "seekable raises OSError", "seekable raises ValueError",
                                  "pipe, 1000 bytes a read", "pipe, 7 bytes a read"])
def test_scan_stream_keeps_its_place_over_large_payloads(kind):
    data, expected = _big_streams()
    source = {
        "seekable": lambda: _Source(data),
        "not seekable": lambda: _Source(data, seekable=False),
        "no seekable method": lambda: _Source(data, seekable=None),
        "seekable raises OSError": lambda: _Source(data, seekable=OSError),
        "seekable raises ValueError": lambda: _Source(data, seekable=ValueError),
        "pipe, 1000 bytes a read": lambda: _Source(data, seekable=False, most=1000),
        "pipe, 7 bytes a read": lambda: _Source(data, seekable=False, most=7),
    }[kind]()
    assert _listed(source) == expected
    assert sum(size for size, *_ in expected) == len(data)
    assert all(size is not None and 0 < size <= 1 << 16 for size in source.asked)


def test_scan_stream_seeks_over_payloads_and_reads_ahead_at_most_4_kib():
    data, expected = _big_streams()
    source = _Source(data)
    assert _listed(source) == expected
    assert all(0 < size <= 4096 for size in source.asked)
    # the payloads (66,012 of 66,076 bytes) are seeked over, not read: only the read-ahead
    # after the 2 headers and 4 frames comes in
    assert source.returned <= 6 * 4096


@pytest.mark.parametrize("seekable", [True, False])
def test_scan_stream_finds_a_payload_cut_short(seekable):
    """The last stream is one block and ends the input, so no trailer follows its payload:
    only the payload's own length tells that bytes are missing."""
    data, expected = _big_streams()
    assert _listed(_Source(data, seekable=seekable)) == expected
    for cut in (1, 2, 4095, 4096, 4097, 15999):
        with pytest.raises(NNCError) as info:
            _listed(_Source(data[:-cut], seekable=seekable))
        assert str(info.value) == "compressed data ended before the end of the stream (truncated)"


def test_parse_size_takes_binary_multiples():
    cases = {"65536": 65536, "0": 0, "512k": 512 << 10, "4M": 4 << 20, "16MiB": 16 << 20,
             " 2 gb ": 2 << 30, "1T": 1 << 40, "3KIB": 3 << 10, "7b": 7}
    assert {text: fmt.parse_size(text) for text in cases} == cases
    assert fmt.parse_size(4096) == 4096  # an int from the API is a size too
    for bad in ("lots", "", "4X", "-1M", "1.5M", "4 M B i"):
        with pytest.raises(ValueError) as info:
            fmt.parse_size(bad)
        assert str(info.value) == f"not a size: {bad!r} (e.g. 4M, 16MiB, 65536)"
