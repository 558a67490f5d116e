"""Public API, shaped like the standard library's lzma / bz2 modules."""

from __future__ import annotations

import builtins
import io
import os

from . import format as fmt
from . import segments
from .codec import StreamDecoder
from .format import NNCError
from .model.params import ModelParams
from .presets import DEFAULT_LEVEL

__all__ = ["compress", "decompress", "NNCompressor", "NNDecompressor", "NNCFile", "open", "NNCError"]


class NNCompressor:
    """Incremental compressor: compress() returns what is ready, flush() ends the stream.

    Data is coded in blocks (1 MiB by default), so output appears once a block is full; every
    segment_size bytes (16 MiB by default) a new, independent stream starts (segments.py)."""

    def __init__(self, preset: int = DEFAULT_LEVEL, *, params: ModelParams | None = None,
                 block_size: int = fmt.DEFAULT_BLOCK_SIZE,
                 segment_size: int | None = segments.DEFAULT_SEGMENT_SIZE, progress=None):
        # a fresh stream (an independent segment) every segment_size bytes; None: one stream
        self._segments = segments.SegmentedCompressor(preset, params, block_size, segment_size, progress)

    def compress(self, data) -> bytes:
        return self._segments.compress(data)

    def flush(self) -> bytes:
        return self._segments.flush()


class NNDecompressor:
    """Incremental decompressor for one stream, with lzma.LZMADecompressor's attributes.

    eof: the end of the stream was reached; unused_data: bytes after it;
    needs_input: False while decoded output is still waiting to be returned (max_length)."""

    def __init__(self, progress=None):
        self._decoder = StreamDecoder(multi_stream=False, progress=progress)
        self._ready = bytearray()

    @property
    def eof(self) -> bool:
        return self._decoder.eof and not self._ready

    @property
    def unused_data(self) -> bytes:
        return self._decoder.unused_data

    @property
    def needs_input(self) -> bool:
        return not self._ready and not self._decoder.eof

    def decompress(self, data, max_length: int = -1) -> bytes:
        if self._decoder.eof:
            if data:
                raise EOFError("already at the end of the stream")
        else:
            self._ready += self._decoder.feed(data)
        if max_length is None or max_length < 0:
            max_length = len(self._ready)
        out = bytes(self._ready[:max_length])
        del self._ready[:max_length]
        return out


def compress(data, preset: int = DEFAULT_LEVEL, *, params: ModelParams | None = None,
             block_size: int = fmt.DEFAULT_BLOCK_SIZE,
             segment_size: int | None = segments.DEFAULT_SEGMENT_SIZE, threads: int = 1,
             client=None) -> bytes:
    """threads: segments coded at once by local processes (0: all cores); client: a
    distributed.Client whose workers code them instead.  Neither changes the bytes."""
    if threads != 1 or client is not None:
        from . import parallel

        return parallel.compress_bytes(data, preset, params=params, block_size=block_size,
                                       segment_size=segment_size, threads=threads, client=client)
    compressor = NNCompressor(preset, params=params, block_size=block_size, segment_size=segment_size)
    return compressor.compress(data) + compressor.flush()


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


class NNCFile(io.BufferedIOBase):
    """A file object over a .nnc file, like lzma.LZMAFile (modes 'rb', 'wb', 'xb', 'ab')."""

    def __init__(self, filename, mode: str = "r", *, preset: int = DEFAULT_LEVEL):
        mode = mode.replace("b", "")
        if mode not in ("r", "w", "x", "a"):
            raise ValueError(f"invalid mode: {mode!r}")
        self._mode = mode
        if isinstance(filename, (str, bytes, os.PathLike)):
            self._fp = builtins.open(filename, mode + "b")
            self._close_fp = True
        elif hasattr(filename, "read" if mode == "r" else "write"):
            self._fp = filename
            self._close_fp = False
        else:
            raise TypeError("filename must be a path or a file object")
        if mode == "r":
            self._decoder = StreamDecoder(multi_stream=True)
            self._buffer = bytearray()
            self._input_done = False
        else:
            self._compressor = NNCompressor(preset)
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
        while not self._input_done and (want < 0 or len(self._buffer) < want):
            chunk = self._fp.read(1 << 16)
            if not chunk:
                self._input_done = True
                self._decoder.finish()
                break
            self._buffer += self._decoder.feed(chunk)

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
        binary = NNCFile(filename, mode.replace("t", ""), preset=preset)
        return io.TextIOWrapper(binary, encoding, errors, newline)
    if encoding is not None or errors is not None or newline is not None:
        raise ValueError("encoding, errors and newline are only for text mode")
    return NNCFile(filename, mode, preset=preset)
