"""The .nnc container: header, framed blocks, trailer.  Pure byte layout; no model, no coder.

Version 2 (what nncompress writes; issue 15: a 6-byte file had 66 bytes of overhead in version 1):

    stream  := header block* last-block trailer?
    header  := MAGIC(4) version=2(1) varint(preset << 1 | custom_block_size) params
               [varint(block_size) if custom_block_size, else 1 MiB] crc32(header so far)(4)
    params  := preset 0:  varint(n) varint*n      every parameter (ModelParams.to_ints, as in v1)
               preset > 0: varint(mask) varint*k  the registered preset (presets.PRESETS, frozen
                          forever), with scalar field i (ModelParams.scalar_names) replaced by the
                          next value for each bit i set in mask, lowest first (fit_to_input's
                          table sizes: table_bits, match_bits, history_bits -> mask 0b1101)
    block   := varint(raw_len << 1 | 0) varint(payload_len) crc32(raw block)(4) payload   raw_len >= 1
    last-block := varint(raw_len << 1 | 1) [varint(payload_len) crc32(raw block)(4) payload if raw_len]
    trailer := varint(total raw length) crc32(all raw data)(4)   only after 2 or more non-empty blocks

    The stream's last block says so, which replaces version 1's end marker; a stream of one block
    has no trailer, because its block checksum already is the checksum of all its data (and its
    length the total): every block is still verified before its data is released, and the
    trailer still checks that no block of a longer stream went missing.

Version 1 (still read; tests/golden holds such archives):

    stream  := header block* end trailer
    header  := MAGIC(4) version=1(1) level(1) varint(n) varint*n (model parameters)
               varint(block_size) crc32(header so far)(4)
    block   := varint(raw_len >= 1) varint(payload_len) crc32(raw block)(4) payload
    end     := varint(0)
    trailer := varint(total raw length) crc32(all raw data)(4)

Integers are unsigned LEB128 varints; CRCs are little-endian CRC-32 (zlib).  Each block's payload
is one range-coder stream; the model's state carries over from block to block, so a block is a
unit of framing and verification, not an independent restart point.  Blocks let a stream be
written and read without holding the whole input, and let the reader release only verified data.
Streams may be concatenated, of either version; they decode in sequence.
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from dataclasses import dataclass

from .errors import NNCError  # noqa: F401  (re-exported: nncompress.format.NNCError)

MAGIC = b"NNC\x1a"
FORMAT_VERSION = 2  # what this nncompress writes
READABLE_VERSIONS = (1, 2)
MAX_BLOCK_SIZE = 1 << 24
DEFAULT_BLOCK_SIZE = 1 << 20
# A nibble costs at most 24 bits under constriction's smallest representable probability.
MAX_PAYLOAD_PER_BYTE = 6
PAYLOAD_SLACK = 64
# Lower bound on a block's payload (the hostile-header bound, bench/RELIABILITY.md): the model
# never gives a binary decision more than 4095/4096 (the kernels clamp p to 1..4095 of 4096),
# so a nibble costs at least 4*log2(4096/4095) = 0.00141 bits and a byte at least 0.00282 bits;
# the range coder emits one 32-bit word per 32 bits of information, within two words.  A payload
# of P bytes therefore holds at most (8P + 64) / 0.00282 raw bytes; allowing 500 per bit (a
# margin of 1.4x) refuses a block that claims more before any of it is decoded, so a damaged or
# hostile archive costs decoding work in proportion to its size.  A model component that lets a
# probability closer to 1 through must lower this (tests/test_safety_api.py checks the clamp).
MAX_RAW_PER_PAYLOAD_BIT = 500
# Round 21: a model with 16-bit probabilities (ModelParams.probability_bits) clamps at
# 65535/65536, a byte costing at least 8*log2(65536/65535) = 0.000176 bits, so its blocks may
# hold 16 times as much: 8000 per bit, the same margin.  Whoever parses a frame passes the bound
# of its stream's model (presets.header_raw_per_bit).
MAX_RAW_PER_PAYLOAD_BIT_FINE = 8000
PAYLOAD_BITS_SLACK = 64
# A header's parameter list (format 1, and format 2's custom parameters): ModelParams' scalars,
# then the context count and kinds (51 + 1 + up to 40 today; up to 32 until round 17).  Until
# preset 22 this was 64, and a custom model with 24 contexts or more wrote a header its own
# decoder refused; the encoder now checks the same bound, and tests/test_format.py that the
# largest ModelParams fits.
MAX_PARAMS = 128
# A format-2 override names a scalar by its number (ModelParams.scalar_names(): 51 today) in a
# varint bit mask, which holds 64 bits.
MAX_OVERRIDE_INDEX = 64

# bench/SCALE.md: a segment's cold start costs a roughly fixed ~9 KB (level 1) to ~12 KB
# (level 6) of output, so 16 MiB segments cost ~0.2% (level 1) to ~0.45% (level 6) against one
# segment; 4 MiB measured 1.24% at level 6, above the 1% the issue allows.
DEFAULT_SEGMENT_SIZE = 16 << 20
MIN_SEGMENT_SIZE = 1 << 12

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """'4M', '16MiB', '512k', '1048576' -> bytes (binary multiples, as xz and zstd take them)."""
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"not a size: {text!r} (e.g. 4M, 16MiB, 65536)")
    number, unit = int(match.group(1)), match.group(2).lower()
    return number << (10 * " kmgt".index(unit or " ")) if unit else number


# Versions up to this far ahead are reported as "newer: upgrade"; beyond, as damage.
PLAUSIBLE_NEWER_VERSIONS = 15


class NeedMoreData(Exception):
    """Internal: the buffer ends inside a field; wait for more input (or report truncation)."""


def crc32(data, value: int = 0) -> int:
    return zlib.crc32(data, value) & 0xFFFFFFFF


def put_varint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError("varints are unsigned")
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def get_varint(buf, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise NeedMoreData
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise NNCError("corrupt archive: integer field too long")


def _get_u32(buf, pos: int) -> tuple[int, int]:
    if pos + 4 > len(buf):
        raise NeedMoreData
    return struct.unpack_from("<I", buf, pos)[0], pos + 4


@dataclass(frozen=True)
class Header:
    version: int
    level: int  # version 1: the level the stream was made with (0: custom parameters); informational
    params: tuple  # every model parameter (ModelParams.to_ints()); version 2 only with preset 0
    block_size: int
    preset: int = 0  # version 2: the registered preset (presets.PRESETS) named instead of params
    overrides: tuple = ()  # version 2 with a preset: ((scalar field index, value), ...), ascending

    def encode(self) -> bytes:
        out = bytearray(MAGIC)
        out.append(self.version)
        if self.version == 1:
            out.append(self.level)
            _put_list(out, self.params)
            put_varint(out, self.block_size)
        else:
            custom_block = self.block_size != DEFAULT_BLOCK_SIZE
            put_varint(out, self.preset << 1 | custom_block)
            if self.preset:
                mask = 0
                for index, _ in self.overrides:
                    if not 0 <= index < MAX_OVERRIDE_INDEX:
                        raise ValueError(f"override of parameter {index}: a header names 0..{MAX_OVERRIDE_INDEX - 1}")
                    mask |= 1 << index
                put_varint(out, mask)
                for _, value in sorted(self.overrides):
                    put_varint(out, value)
            else:
                _put_list(out, self.params)
            if custom_block:
                put_varint(out, self.block_size)
        out += struct.pack("<I", crc32(out))
        return bytes(out)


def _put_list(out: bytearray, values) -> None:
    if len(values) > MAX_PARAMS:  # never write a header parse_header refuses
        raise ValueError(f"{len(values)} model parameters: a header holds at most {MAX_PARAMS}")
    put_varint(out, len(values))
    for value in values:
        put_varint(out, value)


def _get_list(buf, pos: int) -> tuple[tuple, int]:
    count, pos = get_varint(buf, pos)
    if count > MAX_PARAMS:
        raise NNCError("corrupt archive header: too many model parameters")
    values = []
    for _ in range(count):
        value, pos = get_varint(buf, pos)
        values.append(value)
    return tuple(values), pos


def _check_version(version: int) -> None:
    if version in READABLE_VERSIONS:
        return
    if version > FORMAT_VERSION + PLAUSIBLE_NEWER_VERSIONS:
        # a version this far ahead is far likelier a damaged byte than a real future format
        raise NNCError(f"corrupt archive header (unknown format version {version})")
    if version > FORMAT_VERSION:
        raise NNCError(
            f"archive format version {version} is newer than this nncompress supports "
            f"(version {FORMAT_VERSION}); upgrade nncompress to read it"
        )
    raise NNCError(f"archive format version {version} is no longer supported "
                   f"(this nncompress reads versions {READABLE_VERSIONS[0]} to {FORMAT_VERSION})")


def parse_header(buf, pos: int = 0) -> tuple[Header, int]:
    """Parse a header at buf[pos:].  Raises NeedMoreData if it is incomplete, NNCError if bad."""
    start = pos
    have = len(buf) - pos
    if have < len(MAGIC) and bytes(buf[pos:]) == MAGIC[:have]:
        raise NeedMoreData
    if bytes(buf[pos : pos + len(MAGIC)]) != MAGIC:
        raise NNCError("not an nncompress archive (bad magic)")
    pos += len(MAGIC)
    if pos >= len(buf):
        raise NeedMoreData
    version = buf[pos]
    _check_version(version)
    pos += 1
    level = preset = 0
    params = overrides = ()
    block_size = DEFAULT_BLOCK_SIZE
    if version == 1:
        if pos >= len(buf):
            raise NeedMoreData
        level = buf[pos]
        pos += 1
        params, pos = _get_list(buf, pos)
        block_size, pos = get_varint(buf, pos)
    else:
        code, pos = get_varint(buf, pos)
        preset = code >> 1
        if preset:
            mask, pos = get_varint(buf, pos)
            if mask >> MAX_OVERRIDE_INDEX:
                raise NNCError("corrupt archive header: too many model parameters")
            found = []
            for index in range(mask.bit_length()):
                if mask >> index & 1:
                    value, pos = get_varint(buf, pos)
                    found.append((index, value))
            overrides = tuple(found)
        else:
            params, pos = _get_list(buf, pos)
        if code & 1:
            block_size, pos = get_varint(buf, pos)
    stored_crc, end = _get_u32(buf, pos)
    if crc32(buf[start:pos]) != stored_crc:
        raise NNCError("corrupt archive header (checksum mismatch)")
    if not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise NNCError("corrupt archive header: invalid block size")
    return Header(version, level, params, block_size, preset, overrides), end


@dataclass(frozen=True)
class BlockFrame:
    raw_len: int  # 0: no block (version 1's end marker, or version 2's empty last frame)
    payload_len: int
    crc: int
    last: bool = False  # no block follows in this stream (the end marker is last too)


def encode_block_frame(raw_len: int, payload_len: int, crc: int, *, version: int = 1,
                       last: bool = False) -> bytes:
    out = bytearray()
    put_varint(out, raw_len if version == 1 else raw_len << 1 | last)
    put_varint(out, payload_len)
    out += struct.pack("<I", crc)
    return bytes(out)


def raw_per_payload_bit(probability_bits: int) -> int:
    """The most raw bytes a payload bit may carry under a model with these probabilities."""
    return MAX_RAW_PER_PAYLOAD_BIT if probability_bits <= 12 else MAX_RAW_PER_PAYLOAD_BIT_FINE


def parse_block_frame(buf, pos: int, block_size: int, version: int = 1,
                      raw_per_bit: int = MAX_RAW_PER_PAYLOAD_BIT) -> tuple[BlockFrame, int]:
    """A block's frame; raw_per_bit: the bound on raw bytes per payload bit of the stream's
    model (raw_per_payload_bit)."""
    code, pos = get_varint(buf, pos)
    if version == 1:
        raw_len, last = code, code == 0
    else:
        raw_len, last = code >> 1, bool(code & 1)
    if raw_len == 0:
        if not last:
            raise NNCError("corrupt archive: empty block")
        return BlockFrame(0, 0, 0, True), pos
    if raw_len > block_size:
        raise NNCError("corrupt archive: block longer than the stream's block size")
    payload_len, pos = get_varint(buf, pos)
    if payload_len > raw_len * MAX_PAYLOAD_PER_BYTE + PAYLOAD_SLACK or payload_len % 4:
        raise NNCError("corrupt archive: invalid block payload length")
    if raw_len > (8 * payload_len + PAYLOAD_BITS_SLACK) * raw_per_bit:
        raise NNCError("corrupt archive: block payload too short for its length")
    crc, pos = _get_u32(buf, pos)
    return BlockFrame(raw_len, payload_len, crc, last and version != 1), pos


def encode_end(total_len: int, total_crc: int, *, version: int = 1, blocks: int = 2) -> bytes:
    """What ends a stream whose blocks are all written: version 1's end marker and trailer, or
    version 2's empty last frame and (after 2 or more blocks) trailer."""
    out = bytearray()
    put_varint(out, 0 if version == 1 else 1)
    return bytes(out) + encode_trailer(total_len, total_crc, version=version, blocks=blocks)


def has_trailer(version: int, blocks: int) -> bool:
    """Whether a stream of this many non-empty blocks ends with a trailer (see the layout above)."""
    return version == 1 or blocks >= 2


def encode_trailer(total_len: int, total_crc: int, *, version: int = 1, blocks: int = 2) -> bytes:
    if not has_trailer(version, blocks):
        return b""
    out = bytearray()
    put_varint(out, total_len)
    out += struct.pack("<I", total_crc)
    return bytes(out)


def parse_trailer(buf, pos: int, version: int = 1, blocks: int = 2) -> tuple:
    """After the last frame: (total length, total crc, new pos); (None, None, pos) when the
    stream has no trailer (version 2 with fewer than 2 blocks)."""
    if not has_trailer(version, blocks):
        return None, None, pos
    total_len, pos = get_varint(buf, pos)
    total_crc, pos = _get_u32(buf, pos)
    return total_len, total_crc, pos


@dataclass(frozen=True)
class StreamInfo:
    header: Header
    compressed_size: int
    raw_size: int
    blocks: int
    crc: int


class _Reader:
    """Buffered reader for the framing walk: parses fields with the functions above, reading
    more input whenever they run out (NeedMoreData), and skips payloads without keeping them."""

    def __init__(self, source, chunk: int = 1 << 16):
        self._source = source
        self._chunk = chunk
        self._buf = bytearray()
        self._pos = 0
        self.offset = 0  # absolute position of _buf[_pos] in the input
        try:
            self._seekable = source.seekable()
        except (AttributeError, OSError, ValueError):
            self._seekable = False
        if self._seekable:
            # what is read ahead of a frame is wasted when the payload after it is seeked over
            self._chunk = min(chunk, 4096)

    def _more(self) -> bool:
        del self._buf[: self._pos]
        self._pos = 0
        data = self._source.read(self._chunk)
        self._buf += data
        return bool(data)

    def at_end(self) -> bool:
        return self._pos >= len(self._buf) and not self._more()

    def parse(self, parser, *args):
        while True:
            try:
                value, *rest = parser(self._buf, self._pos, *args)
            except NeedMoreData:
                if not self._more():
                    raise
                continue
            new_pos = rest[-1]
            self.offset += new_pos - self._pos
            self._pos = new_pos
            return (value, *rest[:-1])

    def skip(self, count: int) -> None:
        buffered = min(count, len(self._buf) - self._pos)
        self._pos += buffered
        self.offset += buffered
        count -= buffered
        if not count:
            return
        if self._seekable:
            here = self._source.tell()
            end = self._source.seek(0, 2)
            if end - here < count:
                raise NeedMoreData
            self._source.seek(here + count)
            self.offset += count
            return
        while count:
            data = self._source.read(min(count, self._chunk))
            if not data:
                raise NeedMoreData
            count -= len(data)
            self.offset += len(data)


def scan_stream(source):
    """Walk every stream of a binary file object without decoding: yields a StreamInfo per
    stream, reading only headers and block frames (payloads are seeked over, or read and dropped
    when the input cannot seek), so listing costs no memory however large the archive.

    Checks the framing (header checksum, block lengths, trailer) but not the data itself."""
    reader = _Reader(source)
    streams = 0
    try:
        while not reader.at_end():
            start = reader.offset
            try:
                (header,) = reader.parse(parse_header)
            except NNCError:
                if streams:
                    raise NNCError("trailing garbage after the compressed stream") from None
                raise
            blocks = 0
            raw = crc = 0
            while True:
                (frame,) = reader.parse(parse_block_frame, header.block_size, header.version,
                                        _header_raw_per_bit(header))
                if frame.raw_len:
                    reader.skip(frame.payload_len)
                    blocks += 1
                    raw += frame.raw_len
                    crc = frame.crc  # a stream of one block: its checksum is the stream's
                if frame.last:
                    break
            total_len, total_crc = reader.parse(parse_trailer, header.version, blocks)
            if total_len is not None:
                crc = total_crc
                if total_len != raw:
                    raise NNCError("corrupt archive: trailer length does not match the blocks")
            streams += 1
            yield StreamInfo(header, reader.offset - start, raw, blocks, crc)
    except NeedMoreData:
        raise NNCError("compressed data ended before the end of the stream (truncated)") from None
    if not streams:
        raise NNCError("no compressed data (empty input)")


def scan(buf) -> list[StreamInfo]:
    """scan_stream over bytes in memory."""
    return list(scan_stream(io.BytesIO(bytes(buf))))


def _header_raw_per_bit(header: Header) -> int:
    # the model's precision is in its parameters, which only the preset registry resolves
    from .presets import header_raw_per_bit
    return header_raw_per_bit(header)
