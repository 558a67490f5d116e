"""The .nnc container: header, framed blocks, trailer.  Pure byte layout; no model, no coder.

    stream  := header block* end trailer
    header  := MAGIC(4) version(1) level(1) varint(n) varint*n (model parameters)
               varint(block_size) crc32(header so far)(4)
    block   := varint(raw_len >= 1) varint(payload_len) crc32(raw block)(4) payload
    end     := varint(0)
    trailer := varint(total raw length) crc32(all raw data)(4)

Integers are unsigned LEB128 varints; CRCs are little-endian CRC-32 (zlib).  Each block's payload
is one range-coder stream; the model's state carries over from block to block, so a block is a
unit of framing and verification, not an independent restart point.  Blocks let a stream be
written and read without holding the whole input, and let the reader release only verified data.
Streams may be concatenated; they decode in sequence.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

MAGIC = b"NNC\x1a"
FORMAT_VERSION = 1
MAX_BLOCK_SIZE = 1 << 24
DEFAULT_BLOCK_SIZE = 1 << 20
# A nibble costs at most 24 bits under constriction's smallest representable probability.
MAX_PAYLOAD_PER_BYTE = 6
PAYLOAD_SLACK = 64
MAX_PARAMS = 64
# Versions up to this far ahead are reported as "newer: upgrade"; beyond, as damage.
PLAUSIBLE_NEWER_VERSIONS = 15


class NNCError(Exception):
    """Raised for anything wrong with compressed data (or with a request the library can't do)."""


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
    level: int  # the preset the stream was made with (0: custom parameters); informational
    params: tuple  # ModelParams.to_ints()
    block_size: int

    def encode(self) -> bytes:
        out = bytearray(MAGIC)
        out.append(self.version)
        out.append(self.level)
        put_varint(out, len(self.params))
        for value in self.params:
            put_varint(out, value)
        put_varint(out, self.block_size)
        out += struct.pack("<I", crc32(out))
        return bytes(out)


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
    if version != FORMAT_VERSION:
        if version > FORMAT_VERSION + PLAUSIBLE_NEWER_VERSIONS:
            # a version this far ahead is far likelier a damaged byte than a real future format
            raise NNCError(f"corrupt archive header (unknown format version {version})")
        if version > FORMAT_VERSION:
            raise NNCError(
                f"archive format version {version} is newer than this nncompress supports "
                f"(version {FORMAT_VERSION}); upgrade nncompress to read it"
            )
        raise NNCError(f"archive format version {version} is no longer supported "
                       f"(this nncompress reads version {FORMAT_VERSION})")
    pos += 1
    if pos >= len(buf):
        raise NeedMoreData
    level = buf[pos]
    pos += 1
    count, pos = get_varint(buf, pos)
    if count > MAX_PARAMS:
        raise NNCError("corrupt archive header: too many model parameters")
    params = []
    for _ in range(count):
        value, pos = get_varint(buf, pos)
        params.append(value)
    block_size, pos = get_varint(buf, pos)
    stored_crc, end = _get_u32(buf, pos)
    if crc32(buf[start:pos]) != stored_crc:
        raise NNCError("corrupt archive header (checksum mismatch)")
    if not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise NNCError("corrupt archive header: invalid block size")
    return Header(version, level, tuple(params), block_size), end


@dataclass(frozen=True)
class BlockFrame:
    raw_len: int  # 0 marks the end of the blocks
    payload_len: int
    crc: int


def encode_block_frame(raw_len: int, payload_len: int, crc: int) -> bytes:
    out = bytearray()
    put_varint(out, raw_len)
    put_varint(out, payload_len)
    out += struct.pack("<I", crc)
    return bytes(out)


def parse_block_frame(buf, pos: int, block_size: int) -> tuple[BlockFrame, int]:
    raw_len, pos = get_varint(buf, pos)
    if raw_len == 0:
        return BlockFrame(0, 0, 0), pos
    if raw_len > block_size:
        raise NNCError("corrupt archive: block longer than the stream's block size")
    payload_len, pos = get_varint(buf, pos)
    if payload_len > raw_len * MAX_PAYLOAD_PER_BYTE + PAYLOAD_SLACK or payload_len % 4:
        raise NNCError("corrupt archive: invalid block payload length")
    crc, pos = _get_u32(buf, pos)
    return BlockFrame(raw_len, payload_len, crc), pos


def encode_end(total_len: int, total_crc: int) -> bytes:
    out = bytearray()
    put_varint(out, 0)
    put_varint(out, total_len)
    out += struct.pack("<I", total_crc)
    return bytes(out)


def parse_trailer(buf, pos: int) -> tuple[int, int, int]:
    """After the end marker: (total length, total crc, new pos)."""
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


def scan(buf) -> list[StreamInfo]:
    """Walk every stream in buf without decoding: sizes and parameters for listing.

    Checks the framing (header checksum, block lengths, trailer) but not the data itself."""
    infos = []
    pos = 0
    try:
        while pos < len(buf):
            start = pos
            try:
                header, pos = parse_header(buf, pos)
            except NNCError:
                if infos:
                    raise NNCError("trailing garbage after the compressed stream") from None
                raise
            blocks = 0
            raw = 0
            while True:
                frame, pos = parse_block_frame(buf, pos, header.block_size)
                if frame.raw_len == 0:
                    break
                if pos + frame.payload_len > len(buf):
                    raise NeedMoreData
                pos += frame.payload_len
                blocks += 1
                raw += frame.raw_len
            total_len, total_crc, pos = parse_trailer(buf, pos)
            if total_len != raw:
                raise NNCError("corrupt archive: trailer length does not match the blocks")
            infos.append(StreamInfo(header, pos - start, raw, blocks, total_crc))
    except NeedMoreData:
        raise NNCError("compressed data ended before the end of the stream (truncated)") from None
    if not infos:
        raise NNCError("no compressed data (empty input)")
    return infos
