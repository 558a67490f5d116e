"""Independent segments: the unit of parallel work and of random access.

A segment is one complete stream (header, blocks, trailer; a fresh model) over at most
`segment_size` bytes of input, and a multi-segment archive is just the segments' streams written
one after another.  Nothing new is stored:

* every nncompress release decodes such an archive already (the format has always decoded
  concatenated streams in sequence), so segments needed no new format version;
* an input no larger than one segment gives exactly the bytes of one stream;
* the framing is the index.  A header carries its own checksum and every block frame gives its
  compressed and raw length, so a reader finds each segment's start (in the archive and in the
  output) by hopping from frame to frame, reading ~20 bytes per block (1 MiB of input) and
  decoding nothing.  An index written after the last segment (zstd's seekable format) would save
  those hops but would be garbage to today's decoder, could not be written when streaming to a
  pipe without buffering, and would be one more thing that can be damaged.

The cut points depend only on the input and `segment_size`, never on how many processes or
machines do the work, so the archive bytes do not either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from . import format as fmt
from .codec import StreamDecoder, StreamEncoder
from .presets import header_raw_per_bit
from .format import DEFAULT_SEGMENT_SIZE, MIN_SEGMENT_SIZE, NeedMoreData, NNCError, parse_size  # noqa: F401

# the segment sizes and their parsing live with the container's other sizes (format.py), which
# the command line can import without loading the model
READ_CHUNK = 1 << 20


def check_segment_size(size: int | None) -> int | None:
    if size is not None and size < MIN_SEGMENT_SIZE:
        raise ValueError(f"segment size must be at least {MIN_SEGMENT_SIZE} bytes")
    return size


def fitted_size(length: int | None, start: int, declared: int | None, block_size: int,
                segment_size: int | None) -> int | None:
    """The input size that the model of the segment starting at input offset `start` is sized to
    (model.params.fit_to_input), or None (unknown: full-size tables).

    Known when the caller declared the whole input's size (a buffer, a regular file), or when the
    segment's `length` is at most one block: the compressor holds a block until it knows whether
    another follows, so such a segment is entirely in hand when its header is written.  Every
    engine (one process, -T, a cluster) asks this one function, so the archive bytes do not
    depend on the engine."""
    if declared is not None:
        rest = declared - start
        if rest < 0:  # the input grew past what was declared: the rest is of unknown size
            return None
        return min(rest, segment_size) if segment_size else rest
    if length is not None and length <= block_size:
        return length
    return None


class SegmentedCompressor:
    """compress()/flush() like NNCompressor, starting a fresh stream every segment_size bytes.

    segment_size None: one stream however long the input (the behaviour before segments).
    size: the whole input's size when known (sizes each segment's model, fitted_size).
    A block is written once it is known whether another block follows it in its stream (so the
    stream's last block can say so): output lags the input by up to one block."""

    def __init__(self, level, params=None, block_size: int = fmt.DEFAULT_BLOCK_SIZE,
                 segment_size: int | None = DEFAULT_SEGMENT_SIZE, progress=None, *,
                 size: int | None = None, format_version: int = fmt.FORMAT_VERSION,
                 preset_id: int | None = None):
        # made now so that bad parameters fail at once (it allocates no model)
        StreamEncoder(level, params, block_size, format_version=format_version, preset_id=preset_id)
        self._level, self._params, self._preset_id = level, params, preset_id
        self._block_size = block_size
        self._segment_size = check_segment_size(segment_size)
        self._declared = size
        self._format_version = format_version
        self._progress = progress
        self._encoder: StreamEncoder | None = None  # the current segment's, from its first block
        self._segment_start = 0  # input offset of the current segment
        self._in_segment = 0
        self._pending = bytearray()
        self._finished = False
        self.segments = 0  # completed segments

    def _write_block(self, raw, last: bool, whole_length: int | None) -> bytes:
        """A block of the current segment (with the segment's header before its first);
        whole_length: the segment's length when all of it is in hand."""
        out = b""
        if self._encoder is None:
            size = fitted_size(whole_length, self._segment_start, self._declared, self._block_size,
                               self._segment_size)
            self._encoder = StreamEncoder(self._level, self._params, self._block_size, size=size,
                                          format_version=self._format_version, preset_id=self._preset_id)
            out = self._encoder.header()
        self._in_segment += len(raw)
        return out + self._encoder.block(raw, self._progress, last=last)

    def _end_segment(self) -> bytes:
        end = self._encoder.end()
        self.segments += 1
        self._encoder = None  # let the finished model go before the next one is allocated
        self._segment_start += self._in_segment
        self._in_segment = 0
        return end

    def compress(self, data) -> bytes:
        if self._finished:
            raise ValueError("compressor has been flushed")
        self._pending += memoryview(data).cast("B")
        out = bytearray()
        start = 0
        while True:
            available = len(self._pending) - start
            if self._segment_size and self._in_segment == self._segment_size:
                if not available:
                    break  # the next segment starts only if more input comes
                out += self._end_segment()
            room = self._segment_size - self._in_segment if self._segment_size else None
            take = min(self._block_size, room) if room else self._block_size
            ends_segment = take == room
            # wait until it is known whether another block follows this one in its stream
            if available < take or (available == take and not ends_segment):
                break
            whole = take if ends_segment and not self._in_segment else None
            out += self._write_block(self._pending[start : start + take], ends_segment, whole)
            start += take
        del self._pending[:start]
        return bytes(out)

    def flush(self) -> bytes:
        if self._finished:
            raise ValueError("repeated call to flush()")
        out = bytearray()
        if self._pending:
            whole = len(self._pending) if not self._in_segment else None
            out += self._write_block(self._pending, True, whole)
            self._pending.clear()
        elif self._encoder is None:  # no input at all: an empty stream
            self._encoder = StreamEncoder(self._level, self._params, self._block_size,
                                          size=fitted_size(0, 0, self._declared, self._block_size,
                                                           self._segment_size),
                                          format_version=self._format_version, preset_id=self._preset_id)
            out += self._encoder.header()
        out += self._end_segment()
        self._finished = True
        return bytes(out)


def compress_segment(data: bytes, level, params=None, block_size: int = fmt.DEFAULT_BLOCK_SIZE, *,
                     size: int | None = None, format_version: int = fmt.FORMAT_VERSION,
                     preset_id: int | None = None) -> bytes:
    """One segment's stream: what SegmentedCompressor writes for these bytes of input, with the
    model sized to `size` (fitted_size; None: full size)."""
    compressor = SegmentedCompressor(level, params, block_size, segment_size=None,
                                     size=size, format_version=format_version, preset_id=preset_id)
    return compressor.compress(data) + compressor.flush()


def decompress_segment(stream: bytes) -> bytes:
    """The raw bytes of exactly one stream (anything before its end, or after it, is an error)."""
    decoder = StreamDecoder(multi_stream=False)
    out = decoder.feed(stream)
    if not decoder.eof:
        raise NNCError("compressed data ended before the end of the stream (truncated)")
    if decoder.unused_data:
        raise NNCError("trailing data after the end of the compressed stream")
    return out


def read_segments(source, segment_size: int, chunk: int = READ_CHUNK) -> Iterator[bytes]:
    """Cut a binary file object into segment_size pieces (the last may be shorter).

    Empty input yields one empty piece: an empty file still becomes a (tiny) archive."""
    first = True
    while True:
        piece = bytearray()
        while len(piece) < segment_size:
            data = source.read(min(chunk, segment_size - len(piece)))
            if not data:
                break
            piece += data
        if piece or first:
            yield bytes(piece)
        if len(piece) < segment_size:
            return
        first = False


@dataclass
class StreamPiece:
    """One segment's compressed bytes as cut from an archive; data is None if its framing is bad."""
    index: int
    offset: int  # where it starts in the archive
    data: bytes | None
    error: str | None = None


def _walk_stream(buf, pos: int) -> int:
    """End of the stream that starts at buf[pos]; raises NeedMoreData or NNCError."""
    header, pos = fmt.parse_header(buf, pos)
    raw = blocks = 0
    while True:
        frame, pos = fmt.parse_block_frame(buf, pos, header.block_size, header.version,
                                           header_raw_per_bit(header))
        if frame.raw_len:
            if pos + frame.payload_len > len(buf):
                raise NeedMoreData
            pos += frame.payload_len
            raw += frame.raw_len
            blocks += 1
        if frame.last:
            break
    total_len, _crc, pos = fmt.parse_trailer(buf, pos, header.version, blocks)
    if total_len is not None and total_len != raw:
        raise NNCError("corrupt archive: trailer length does not match the blocks")
    return pos


def _find_header(buf, start: int) -> int | None:
    """Next position >= start where a checksum-correct header begins (None: not in buf yet)."""
    pos = start
    while True:
        pos = buf.find(fmt.MAGIC, pos)
        if pos < 0:
            return None
        try:
            fmt.parse_header(buf, pos)
            return pos
        except NeedMoreData:
            return pos  # can't tell yet; the caller reads more and tries again
        except NNCError:
            pos += 1


def split_streams(source, *, recover: bool = False, chunk: int = READ_CHUNK) -> Iterator[StreamPiece]:
    """Cut the archive read from a binary file object into its streams without decoding them.

    Holds one stream's compressed bytes at a time.  Bad framing raises NNCError naming the
    segment, unless recover is set: then a StreamPiece with data None and the error is yielded,
    and the search goes on at the next checksum-correct header (so `-t` can still check the
    segments after a damaged one)."""
    buf = bytearray()
    base = 0  # archive offset of buf[0]
    at_eof = False
    index = 0

    def more() -> bool:
        nonlocal at_eof
        if at_eof:
            return False
        data = source.read(chunk)
        if not data:
            at_eof = True
            return False
        buf.extend(data)
        return True

    while buf or more():
        try:
            end = _walk_stream(buf, 0)
        except NeedMoreData:
            if more():
                continue
            problem = "compressed data ended before the end of the stream (truncated)"
        except NNCError as exc:
            problem = str(exc)
            if index and not buf.startswith(fmt.MAGIC):
                problem = "trailing garbage after the compressed stream"
        else:
            yield StreamPiece(index, base, bytes(buf[:end]))
            del buf[:end]
            base += end
            index += 1
            continue
        if not recover:
            raise NNCError(f"segment {index} (at byte {base} of the archive): {problem}")
        # skip to the next header that checks out; the bytes before it are the damaged segment
        while True:
            found = _find_header(buf, 1)
            if found is not None:
                try:
                    fmt.parse_header(buf, found)
                except NeedMoreData:
                    if more():
                        continue
                    found = None
            if found is not None or not more():
                break
        yield StreamPiece(index, base, None, problem)
        index += 1
        cut = len(buf) if found is None else found
        del buf[:cut]
        base += cut
    if not index:
        raise NNCError("no compressed data (empty input)")


@dataclass(frozen=True)
class SegmentEntry:
    """Where one segment lies in the archive (offset, compressed_size) and in the output."""
    index: int
    offset: int
    compressed_size: int
    raw_start: int
    raw_size: int
    blocks: int
    header: fmt.Header

    @property
    def raw_end(self) -> int:
        return self.raw_start + self.raw_size


def _read_at(fp, offset: int, size: int) -> bytes:
    fp.seek(offset)
    return fp.read(size)


def index_segments(fp) -> list[SegmentEntry]:
    """The segment table of a seekable archive, from its framing alone (payloads are skipped).

    Reads a few dozen bytes per block; the file position is left undefined."""
    fp.seek(0, 2)
    length = fp.tell()
    entries = []
    offset = raw_start = 0
    while offset < length:
        want = 1024
        while True:
            head = _read_at(fp, offset, want)
            try:
                header, pos = fmt.parse_header(head, 0)
                break
            except NeedMoreData:
                if len(head) < want:
                    raise NNCError(f"segment {len(entries)}: compressed data ended inside the header "
                                   "(truncated)") from None
                want *= 2
            except NNCError as exc:
                if entries:
                    raise NNCError("trailing garbage after the compressed stream") from None
                raise NNCError(f"segment 0: {exc}") from None
        pos += offset
        raw = blocks = 0
        last = False
        raw_per_bit = header_raw_per_bit(header)
        while True:
            frame_bytes = _read_at(fp, pos, 32)
            try:
                if last:
                    total, _crc, used = fmt.parse_trailer(frame_bytes, 0, header.version, blocks)
                else:
                    frame, used = fmt.parse_block_frame(frame_bytes, 0, header.block_size, header.version,
                                                        raw_per_bit)
                    if frame.raw_len == 0:
                        total, _crc, used = fmt.parse_trailer(frame_bytes, used, header.version, blocks)
            except NeedMoreData:
                raise NNCError(f"segment {len(entries)}: compressed data ended before the end of the "
                               "stream (truncated)") from None
            except NNCError as exc:
                raise NNCError(f"segment {len(entries)}: {exc}") from None
            pos += used
            if last or frame.raw_len == 0:
                break
            pos += frame.payload_len
            if pos > length:
                raise NNCError(f"segment {len(entries)}: compressed data ended before the end of "
                               "the stream (truncated)")
            raw += frame.raw_len
            blocks += 1
            last = frame.last
        if total is not None and total != raw:
            raise NNCError(f"segment {len(entries)}: corrupt archive: trailer length does not match "
                           "the blocks")
        entries.append(SegmentEntry(len(entries), offset, pos - offset, raw_start, raw, blocks, header))
        raw_start += raw
        offset = pos
    if not entries:
        raise NNCError("no compressed data (empty input)")
    return entries


def find_segment(entries: list[SegmentEntry], position: int) -> SegmentEntry | None:
    """The segment holding output byte `position` (None: at or past the end)."""
    low, high = 0, len(entries)
    while low < high:
        middle = (low + high) // 2
        if entries[middle].raw_end <= position:
            low = middle + 1
        else:
            high = middle
    return entries[low] if low < len(entries) else None
