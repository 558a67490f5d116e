"""Public API, shaped like the standard library's lzma / bz2 modules."""

from __future__ import annotations

import builtins
import codecs
import io
import os
from dataclasses import dataclass

from . import format as fmt
from . import segments
from .codec import StreamDecoder
from .errors import NNCError
from .format import FORMAT_VERSION
from .model.params import ModelParams
from .presets import DEFAULT_LEVEL, header_level, header_params

__all__ = ["compress", "decompress", "NNCompressor", "NNDecompressor", "NNCFile", "open", "NNCError",
           "iter_decompress", "verify", "list_streams", "StreamListing", "FORMAT_VERSION"]


class NNCompressor:
    """Incremental compressor: compress() returns what is ready, flush() ends the stream.

    Data is coded in blocks (1 MiB by default), so output appears once a block is full and more
    data follows it; every segment_size bytes (16 MiB by default) a new, independent stream starts
    (segments.py).  size: the total input size, when known, sizes the model to it (a small input
    then needs little memory and a short header); the data may differ from it and still round-trip.
    preset_id: a registered preset (nncompress.presets.PRESETS) instead of a level, e.g. to write
    what a level meant before it was given new parameters."""

    def __init__(self, preset: int = DEFAULT_LEVEL, *, params: ModelParams | None = None,
                 block_size: int = fmt.DEFAULT_BLOCK_SIZE,
                 segment_size: int | None = segments.DEFAULT_SEGMENT_SIZE, progress=None,
                 size: int | None = None, preset_id: int | None = None, model: str | None = None):
        params = model_params(model, params)
        # a fresh stream (an independent segment) every segment_size bytes; None: one stream
        self._segments = segments.SegmentedCompressor(preset, params, block_size, segment_size, progress,
                                                      size=size, preset_id=preset_id)

    def __reduce__(self):
        # like lzma: a copy would share the model's arrays with the original, and both would
        # then write archives that fail their own checksums
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    def compress(self, data) -> bytes:
        return self._segments.compress(data)

    def flush(self) -> bytes:
        return self._segments.flush()


class NNDecompressor:
    """Incremental decompressor for one stream, with lzma.LZMADecompressor's semantics.

    decompress(data, max_length) decodes only as far as needed for max_length bytes, so the
    work is bounded by what the caller asks for (an archive that expands to gigabytes costs
    nothing until read).  eof: the end of the stream was reached (and all output returned);
    unused_data: bytes after it; needs_input: False when the last call stopped at max_length
    (call again, with b"" if there is no more input).  As with lzma, bytes returned under a
    max_length may come from a block whose checksum is verified only when its end is decoded:
    a damaged block raises NNCError then.  Without max_length, only verified blocks are
    returned."""

    def __init__(self, progress=None):
        self._decoder = StreamDecoder(multi_stream=False, progress=progress)
        self._needs_input = True

    def __reduce__(self):
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    @property
    def eof(self) -> bool:
        return self._decoder.eof

    @property
    def unused_data(self) -> bytes:
        return self._decoder.unused_data

    @property
    def needs_input(self) -> bool:
        return self._needs_input

    def decompress(self, data, max_length: int = -1) -> bytes:
        if self._decoder.eof:
            raise EOFError("Already at end of stream")
        if max_length is None:
            max_length = -1
        out = self._decoder.feed(data, max_length)
        # as lzma: more input is needed unless the stream ended or the output limit stopped us
        self._needs_input = not self._decoder.eof and not (0 <= max_length == len(out))
        return out


def model_params(model: str | None, params: ModelParams | None) -> ModelParams | None:
    """model (branch neural2): "cm" or None (the preset level's context mixing), or "rnnme[,...]"
    (the RNNME expert alone, presets.parse_model); params, when given, overrides both."""
    if model is None:
        return params
    from .presets import parse_model

    chosen = parse_model(model)
    if chosen is not None and params is not None:
        raise ValueError("give either model or params, not both")
    return chosen if chosen is not None else params


def compress(data, preset: int = DEFAULT_LEVEL, *, params: ModelParams | None = None,
             block_size: int = fmt.DEFAULT_BLOCK_SIZE,
             segment_size: int | None = segments.DEFAULT_SEGMENT_SIZE, threads: int = 1,
             client=None, model: str | None = None) -> bytes:
    """threads: segments coded at once by local processes (0: all cores); client: a
    distributed.Client whose workers code them instead.  Neither changes the bytes.
    model: "cm" (default) or "rnnme" with options, e.g. "rnnme,hidden=32,me=22,orders=1-5"
    (the RNNME expert alone; see presets.parse_model)."""
    params = model_params(model, params)
    if threads != 1 or client is not None:
        from . import parallel

        return parallel.compress_bytes(data, preset, params=params, block_size=block_size,
                                       segment_size=segment_size, threads=threads, client=client)
    view = memoryview(data).cast("B")
    compressor = NNCompressor(preset, params=params, block_size=block_size, segment_size=segment_size,
                              size=len(view))
    return compressor.compress(view) + compressor.flush()


def decompress(data, *, threads: int = 1, client=None) -> bytes:
    """Decompress one or more concatenated streams.  Raises NNCError if anything is wrong.

    threads / client: decode that many segments at once, locally or on a Dask cluster."""
    if threads != 1 or client is not None:
        from . import parallel

        return parallel.decompress_bytes(data, threads=threads, client=client)
    decoder = StreamDecoder(multi_stream=True)
    out = decoder.feed(data)
    decoder.finish()
    return out


def iter_decompress(source, *, chunk_size: int = 1 << 16, progress=None):
    """Decompress the concatenated streams read from a binary file object, yielding each piece
    of output once its block's checksum matched.  Raises NNCError for damaged or truncated
    input.  Memory stays at one block however long the input."""
    decoder = StreamDecoder(multi_stream=True, progress=progress)
    while chunk := source.read(chunk_size):
        out = decoder.feed(chunk)
        if out:
            yield out
    decoder.finish()


def verify(archive, original) -> bool:
    """True when the binary file `archive` holds one or more complete streams (one per segment),
    with nothing after them, that decode to exactly the content of the binary file `original`
    (compared by length and CRC-32); False for a truncated archive.  Raises NNCError if the
    archive is damaged."""
    crc = length = 0
    while chunk := original.read(1 << 20):
        crc = fmt.crc32(chunk, crc)
        length += len(chunk)
    decoder = StreamDecoder(multi_stream=True)
    decoded_crc = decoded_length = 0
    while chunk := archive.read(1 << 16):
        out = decoder.feed(chunk)
        decoded_crc = fmt.crc32(out, decoded_crc)
        decoded_length += len(out)
    try:
        decoder.finish()
    except NNCError:  # the archive stops inside a stream: incomplete, so not a match
        return False
    return decoded_length == length and decoded_crc == crc


@dataclass(frozen=True)
class StreamListing:
    """One stream of an archive, as `nncompress -l` shows it (read without decoding)."""
    compressed_size: int
    uncompressed_size: int
    level: int | None  # None: custom parameters
    format_version: int
    blocks: int
    crc32: int
    params: ModelParams
    preset: int | None = None  # format 2: the registered preset the header names (None: custom or format 1)

    @property
    def ratio(self) -> float | None:
        """Compressed / uncompressed, as xz -l shows it."""
        return self.compressed_size / self.uncompressed_size if self.uncompressed_size else None


def list_streams(source):
    """Yield a StreamListing per stream of the binary file object `source`, reading only the
    headers and block frames (payloads are seeked over, or read and dropped on a pipe).
    Checks the framing, not the data; raises NNCError for anything malformed."""
    for info in fmt.scan_stream(source):
        try:
            params = header_params(info.header)
        except (ValueError, TypeError) as exc:
            raise NNCError(f"corrupt archive header: {exc}") from None
        yield StreamListing(info.compressed_size, info.raw_size, header_level(info.header),
                            info.header.version, info.blocks, info.crc, params,
                            info.header.preset or None)


class NNCFile(io.BufferedIOBase):
    """A file object over a .nnc file, like lzma.LZMAFile (modes 'rb', 'wb', 'xb', 'ab').

    read(size) decodes only as far as size needs; like LZMAFile, such a read may return the
    first bytes of a block before the block's checksum is checked (a damaged block raises
    NNCError from the read that reaches its end).  read() with no size returns verified data."""

    def __init__(self, filename, mode: str = "r", *, preset: int = DEFAULT_LEVEL):
        self._closed = True  # until fully open: IOBase.__del__ calls close() even on a failed init
        mode = mode.replace("b", "")
        if mode not in ("r", "w", "x", "a"):
            raise ValueError(f"invalid mode: {mode!r}")
        self._mode = mode
        # everything that can be refused is refused before the file is touched (as lzma.open):
        # opening "wb" first would empty an existing file for a request that then fails
        if mode == "r":
            self._decoder = StreamDecoder(multi_stream=True)
            self._buffer = bytearray()
            self._input_done = False
        else:
            self._compressor = NNCompressor(preset)
        if isinstance(filename, (str, bytes, os.PathLike)):
            self._fp = builtins.open(filename, mode + "b")
            self._close_fp = True
        elif hasattr(filename, "read" if mode == "r" else "write"):
            self._fp = filename
            self._close_fp = False
        else:
            raise TypeError("filename must be a path or a file object")
        self._position = 0  # uncompressed bytes read or written so far (tell)
        self._segment_table = None  # random access: segments.index_segments, built on first seek
        self._closed = False

    # -- reading --
    def readable(self) -> bool:
        self._check_open()
        return self._mode == "r"

    def writable(self) -> bool:
        self._check_open()
        return self._mode != "r"

    def seekable(self) -> bool:
        """Reading a seekable file: seek() decodes from the start of the segment it lands in."""
        self._check_open()
        return self._mode == "r" and self._fp.seekable()

    def tell(self) -> int:
        self._check_open()
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_mode("r")
        if not self._fp.seekable():
            raise io.UnsupportedOperation("the underlying file is not seekable")
        if self._segment_table is None:
            self._segment_table = segments.index_segments(self._fp)
        table = self._segment_table
        end = table[-1].raw_end
        if whence == io.SEEK_SET:
            target = offset
        elif whence == io.SEEK_CUR:
            target = self._position + offset
        elif whence == io.SEEK_END:
            target = end + offset
        else:
            raise ValueError(f"invalid whence ({whence!r})")
        if target < 0:
            raise ValueError(f"negative seek position {target}")
        target = min(target, end)
        segment = segments.find_segment(table, target)
        if segment is None:  # the end: nothing left to decode
            self._restart_at(table[-1].offset + table[-1].compressed_size, end, input_done=True)
        elif not segment.raw_start <= self._position <= target:
            # only reading on from here, or from the target's segment start, gets there
            self._restart_at(segment.offset, segment.raw_start)
        while self._position < target:
            if not self.read(min(target - self._position, 1 << 20)):
                break
        return self._position

    def _restart_at(self, archive_offset: int, position: int, input_done: bool = False) -> None:
        self._fp.seek(archive_offset)
        self._decoder = StreamDecoder(multi_stream=True)
        self._buffer = bytearray()
        self._input_done = input_done
        self._position = position

    def _fill(self, want: int) -> None:
        """Decode until the buffer holds want bytes (-1: everything), reading input as needed;
        decoding stops where the request is met, so read(1) costs a byte's work, not a block's."""
        chunk = b""
        while True:
            room = -1 if want < 0 else want - len(self._buffer)
            if room == 0 or self._decoder.eof:
                return
            out = self._decoder.feed(chunk, room)
            self._buffer += out
            if 0 <= room == len(out) or self._input_done:
                return
            chunk = self._fp.read(1 << 16)
            if not chunk:
                self._input_done = True
                self._decoder.finish()
                return

    def read(self, size: int = -1) -> bytes:
        self._check_mode("r")
        if size is None or size < 0:
            self._fill(-1)
            size = len(self._buffer)
        else:
            self._fill(size)
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        self._position += len(out)
        return out

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    # -- writing --
    def write(self, data) -> int:
        self._check_mode("w")
        view = memoryview(data).cast("B")
        self._write_out(self._compressor.compress(view))
        self._position += len(view)
        return len(view)

    def _write_out(self, data: bytes) -> None:
        # raw (unbuffered) files and pipes may take part of a write; insist on all of it
        view = memoryview(data)
        while view:
            count = self._fp.write(view)
            if count is None:  # duck-typed writers often return None: take it as all written
                return
            if not count:
                raise OSError("write to the underlying file made no progress")
            view = view[count:]

    def close(self) -> None:
        if self._closed:
            return
        try:
            if self._mode != "r":
                self._write_out(self._compressor.flush())
        finally:
            try:
                if self._close_fp:
                    self._fp.close()
            finally:
                self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("I/O operation on closed file")

    def _check_mode(self, want: str) -> None:
        self._check_open()
        if (want == "r") != (self._mode == "r"):
            raise io.UnsupportedOperation(f"file not open for {'reading' if want == 'r' else 'writing'}")


def open(filename, mode: str = "rb", *, preset: int = DEFAULT_LEVEL, encoding=None, errors=None,
         newline=None):
    """Open a .nnc file in binary ('rb', 'wb', 'xb', 'ab') or text ('rt', 'wt', ...) mode."""
    if "t" in mode:
        if "b" in mode:
            raise ValueError(f"invalid mode: {mode!r}")
        if encoding is not None:
            codecs.lookup(encoding)  # an unknown encoding is refused before the file is opened
        binary = NNCFile(filename, mode.replace("t", ""), preset=preset)
        try:
            return io.TextIOWrapper(binary, encoding, errors, newline)
        except BaseException:
            binary.close()
            raise
    if encoding is not None or errors is not None or newline is not None:
        raise ValueError("encoding, errors and newline are only for text mode")
    return NNCFile(filename, mode, preset=preset)
