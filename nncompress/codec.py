"""Stream encoder and decoder: the model and the coder, joined block by block.

Both directions drive the model through the same kernel, `kernels.step` (learn the nibble just
coded, predict the next): the encoder runs it over known data inside numba and hands the
predictions to the range coder in one batch; the decoder runs it nibble by nibble, decoding each
nibble before the model may learn it.  Nothing else touches the model, so the two cannot drift.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from . import format as fmt
from .coder import NibbleDecoder, NibbleEncoder
from .errors import NNCError
from .model import rnnme_config
from .model.params import ModelParams, fit_to_input
from .model.predictor import Predictor, bytes_to_nibbles, nibbles_to_bytes
from .model.state import model_memory
from .presets import (DEFAULT_LEVEL, LEVEL_PRESET, PRESETS, header_fields, header_params,
                      params_for_level)

# Bytes the encoder predicts per kernel call: bounds the (2n, 16) float64 probability buffer.
ENCODE_CHUNK = 1 << 16

# Nibbles decoded between progress reports (and the most a read() decodes in one model call).
DECODE_PIECE = 1 << 15

Progress = Optional[Callable[[int], None]]

# The most memory a stream's model may need (like xz's dictionary limit).  The presets need at
# most ~2,020 MiB (level 9 since round 28; tests/test_codec.py holds every level under it); the parameter ranges alone would allow ~27 GiB, and a header (checksum-correct,
# hostile) asking for GiBs makes even a 300-byte archive take GiBs of resident memory: numpy
# backs large tables with huge pages, so each hashed touch commits 2 MiB.  The encoder enforces
# the same bound, so it never writes an archive the decoder would refuse.
MAX_MODEL_MEMORY = 2 << 30


class StreamEncoder:
    """Turns raw blocks into one .nnc stream: header(), then block(raw) per block (last=True on the
    stream's final one when known), then end().

    size: the stream's input size when known: the model is then sized to it (fit_to_input), and
    the header records the fitted sizes.  format_version 1 writes exactly what nncompress 0.1
    wrote, the preset's full-size model whatever the size (the golden tests use it to pin the
    model).  preset_id: a registered preset by id instead of a level (to reproduce archives made
    when a level meant an older preset)."""

    def __init__(self, level: int = DEFAULT_LEVEL, params: ModelParams | None = None,
                 block_size: int = fmt.DEFAULT_BLOCK_SIZE, *, size: int | None = None,
                 format_version: int = fmt.FORMAT_VERSION, preset_id: int | None = None):
        if preset_id is not None:  # a registered preset by id, whatever its level means now
            if params is not None:
                raise ValueError("give params or preset_id, not both")
            if preset_id not in PRESETS:
                raise ValueError(f"no registered preset {preset_id}")
            params, level = PRESETS[preset_id].params, PRESETS[preset_id].level
        elif params is None:
            params, preset_id = params_for_level(level), LEVEL_PRESET[level]
        else:
            level = 0
        if not 1 <= block_size <= fmt.MAX_BLOCK_SIZE:
            raise ValueError(f"block_size must be in 1..{fmt.MAX_BLOCK_SIZE}")
        if format_version not in fmt.READABLE_VERSIONS:
            raise ValueError(f"format_version must be one of {fmt.READABLE_VERSIONS}")
        self._size = size if format_version >= 2 else None
        params = params.validate()
        if params.rnnme_context_features >> rnnme_config.MAX_CONTEXT_FEATURES:
            # The expert reads only the first contexts as features; a decoder must keep accepting
            # headers that set the others (they always meant "ignored"), but nothing new says so.
            raise ValueError(f"rnnme_context_features: the expert takes only the first "
                             f"{rnnme_config.MAX_CONTEXT_FEATURES} contexts as features")
        self.params = fit_to_input(params, self._size)
        if model_memory(self.params) > MAX_MODEL_MEMORY:
            raise ValueError(f"these model parameters need {model_memory(self.params) >> 20} MiB, "
                             f"more than the {MAX_MODEL_MEMORY >> 20} MiB a decoder accepts")
        self.block_size = block_size
        self.version = format_version
        if format_version == 1:
            self._header = fmt.Header(1, level, tuple(self.params.to_ints()), block_size)
        else:
            preset, overrides, full = header_fields(self.params, preset_id)
            self._header = fmt.Header(format_version, 0, full, block_size, preset, overrides)
        self._predictor: Predictor | None = None  # allocated with the first block
        self._total = 0
        self._crc = 0
        self._blocks = 0
        self._last_written = False

    def header(self) -> bytes:
        return self._header.encode()

    def block(self, raw: bytes, progress: Progress = None, observe=None, *, last: bool = False) -> bytes:
        """Frame and payload for one block of 1..block_size bytes; last: no block follows (format
        2 then needs no end frame).

        observe(nibbles, costs), if given, sees every chunk's nibbles as they are coded, with the
        model's cost of each in bits (the analysis tools read the code lengths from here)."""
        if not 1 <= len(raw) <= self.block_size:
            raise ValueError("block length out of range")
        if self._last_written:
            raise ValueError("the stream's last block was already written")
        if self._predictor is None:
            self._predictor = Predictor(self.params, self._size)
        raw = bytes(raw)
        # path coding: the twin codes (constriction's Python API takes float rows only)
        encoder = NibbleEncoder("twin" if self.params.path_coding else None)
        for start in range(0, len(raw), ENCODE_CHUNK):
            chunk = raw[start : start + ENCODE_CHUNK]
            nibbles = bytes_to_nibbles(chunk)
            if self.params.path_coding:
                path_p = self._predictor.predict_known_path(chunk)
                encoder.encode_paths(nibbles, path_p)
                if observe is not None:
                    observe(nibbles, path_costs(nibbles, path_p))
            else:
                probabilities = self._predictor.predict_known(chunk)
                encoder.encode(nibbles, probabilities)
                if observe is not None:
                    observe(nibbles, nibble_costs(nibbles, probabilities))
            if progress:
                progress(len(chunk))
        payload = encoder.finish()
        crc = fmt.crc32(raw)
        self._total += len(raw)
        self._crc = fmt.crc32(raw, self._crc)
        self._blocks += 1
        last = last and self.version >= 2
        self._last_written = last
        return fmt.encode_block_frame(len(raw), len(payload), crc, version=self.version,
                                      last=last) + payload

    def end(self) -> bytes:
        """What ends the stream: the trailer, after an end frame unless the last block said so."""
        if self._last_written:
            return fmt.encode_trailer(self._total, self._crc, version=self.version, blocks=self._blocks)
        return fmt.encode_end(self._total, self._crc, version=self.version, blocks=self._blocks)


def nibble_costs(nibbles: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """Bits the model spends on each nibble, from its 16-way rows."""
    p = probabilities[np.arange(nibbles.shape[0]), nibbles] / probabilities.sum(axis=1)
    return -np.log2(p)


def path_costs(nibbles: np.ndarray, path_p: np.ndarray) -> np.ndarray:
    """Bits the model spends on each nibble, from its path's node probabilities (path coding)."""
    bits = (nibbles[:, None] >> np.arange(3, -1, -1)) & 1
    p = np.where(bits == 1, path_p, 65536 - path_p) / 65536.0
    return -np.log2(p).sum(axis=1)


class BlockDecoder:
    """Decodes the blocks of one stream, in order, with the model its header describes.

    A block is decoded in pieces, as far as the caller asks: begin(frame, payload), then read()
    until `in_block` is False.  The block's checksum is verified when its last byte is decoded,
    so bytes from a partial read() are not yet verified (the caller decides whether to hold
    them back until the block ends)."""

    def __init__(self, header: fmt.Header):
        try:
            self.params = header_params(header)
        except (ValueError, TypeError) as exc:
            raise NNCError(f"corrupt archive header: {exc}") from None
        need = model_memory(self.params)
        if need > MAX_MODEL_MEMORY:
            raise NNCError(f"archive header asks for a {need >> 20} MiB model, more than the "
                           f"{MAX_MODEL_MEMORY >> 20} MiB limit (corrupt or hostile archive)")
        self.header = header
        self.raw_per_bit = fmt.raw_per_payload_bit(self.params.probability_bits)
        # built when the first block's frame has passed its checks: a header followed by a
        # frame that lies costs no model
        self._predictor: Predictor | None = None
        self.total = 0
        self.crc = 0
        self.blocks = 0  # begun so far
        self.last_seen = False  # the stream's last block has been framed (format 2)
        self._coder: NibbleDecoder | None = None
        self._frame: fmt.BlockFrame | None = None
        self._nibbles_left = 0
        self._block_crc = 0

    @property
    def in_block(self) -> bool:
        return self._coder is not None

    def begin(self, frame: fmt.BlockFrame, payload: bytes) -> None:
        if self._predictor is None:
            # a stream whose first block is its last is known to be that long
            size = frame.raw_len if frame.last else None
            try:
                self._predictor = Predictor(self.params, size)
            except MemoryError:
                raise NNCError("not enough memory for this archive's model "
                               f"({model_memory(self.params) >> 20} MiB)") from None
        self._coder = NibbleDecoder(payload, "twin" if self.params.path_coding else None)
        self._frame = frame
        self.blocks += 1
        self._nibbles_left = 2 * frame.raw_len
        self._block_crc = 0

    def decode(self, max_nibbles: int) -> np.ndarray:
        """The model/coder loop: decode up to max_nibbles more nibbles of the current block.

        Resumable: the predictor and the range decoder keep their state between calls."""
        count = min(max_nibbles, self._nibbles_left)
        nibbles = np.empty(count, dtype=np.uint8)
        self._coder.decode_run(self._predictor, nibbles, 0, count)
        self._nibbles_left -= count
        return nibbles

    def read(self, max_bytes: int | None = None, progress: Progress = None) -> bytes:
        """Up to max_bytes (None: all) more bytes of the current block; verifies it at its end."""
        want = self._nibbles_left if max_bytes is None else min(2 * max_bytes, self._nibbles_left)
        pieces = []
        while want:
            nibbles = self.decode(min(want, DECODE_PIECE))
            want -= nibbles.shape[0]
            pieces.append(nibbles_to_bytes(nibbles))
            if progress:
                progress(nibbles.shape[0] // 2)
        raw = b"".join(pieces)
        self._block_crc = fmt.crc32(raw, self._block_crc)
        self.total += len(raw)
        self.crc = fmt.crc32(raw, self.crc)
        if not self._nibbles_left:
            self._coder = None
            if self._block_crc != self._frame.crc:
                raise NNCError("corrupt archive: block checksum mismatch (data damaged)")
        return raw

    def check_trailer(self, total_len: int | None, total_crc: int | None) -> None:
        if total_len is None:  # a format-2 stream of one block: its block checksum was the check
            return
        if total_len != self.total or total_crc != self.crc:
            raise NNCError("corrupt archive: stream length or checksum mismatch")


class StreamDecoder:
    """Push parser for concatenated streams: feed bytes, get raw bytes back.

    feed(data) with no max_length returns only whole blocks whose checksum matched.  With
    max_length it decodes only as far as asked (a decompression bomb costs what the caller
    allows) and may return the first bytes of a block before that block's checksum is checked,
    as liblzma does; the checksum error then comes from the call that reaches the block's end.
    `eof` is set after a complete stream when `multi_stream` is False; otherwise the parser
    waits for the next stream.
    """

    def __init__(self, multi_stream: bool = True, progress: Progress = None):
        self._buf = bytearray()
        self._multi = multi_stream
        self._progress = progress
        self._blocks: BlockDecoder | None = None
        self._frame: fmt.BlockFrame | None = None
        self.streams = 0
        self.last_stream_crc = None
        self.eof = False
        self.in_stream = False  # inside a stream (header seen, trailer not yet)

    def feed(self, data=b"", max_length: int | None = -1) -> bytes:
        if self.eof:
            raise EOFError("already at the end of the stream")
        self._buf += data
        limit = None if max_length is None or max_length < 0 else max_length
        out = bytearray()
        pos = 0
        buf = self._buf
        try:
            # What produces no output (frames, trailers) is parsed even when the output limit
            # is reached, so that eof comes with the last byte, as in lzma.
            while not self.eof:
                blocks = self._blocks
                if blocks is not None and blocks.in_block:
                    room = None if limit is None else limit - len(out)
                    if room == 0:
                        break
                    out += blocks.read(room, self._progress)
                    continue
                if blocks is None:
                    if pos >= len(buf):
                        break
                    try:
                        header, pos = fmt.parse_header(buf, pos)
                    except NNCError:
                        if self.streams:
                            raise NNCError("trailing garbage after the compressed stream") from None
                        raise
                    self._blocks = BlockDecoder(header)
                    self.in_stream = True
                    if limit is not None and len(out) >= limit:
                        # liblzma returns right after a stream header (it reports the check
                        # type), and lzma then stops if its output is full: do the same, so
                        # max_length=0 calls observe what they observe with lzma
                        break
                    continue
                if self._frame is None:
                    header = blocks.header
                    new_pos = pos
                    if not blocks.last_seen:
                        frame, new_pos = fmt.parse_block_frame(buf, pos, header.block_size, header.version,
                                                               blocks.raw_per_bit)
                        if frame.raw_len:
                            self._frame = frame
                            blocks.last_seen = frame.last
                            pos = new_pos
                    if self._frame is None:  # the end: the trailer (all parsed before pos moves)
                        total_len, total_crc, new_pos = fmt.parse_trailer(
                            buf, new_pos, header.version, blocks.blocks)
                        blocks.check_trailer(total_len, total_crc)
                        self.last_stream_crc = blocks.crc
                        pos = new_pos
                        self._blocks = None
                        self.in_stream = False
                        self.streams += 1
                        if not self._multi:
                            self.eof = True
                        continue
                if len(buf) - pos < self._frame.payload_len:
                    break
                blocks.begin(self._frame, bytes(buf[pos : pos + self._frame.payload_len]))
                pos += self._frame.payload_len
                self._frame = None
        except fmt.NeedMoreData:
            pass
        del buf[:pos]
        return bytes(out)

    @property
    def unused_data(self) -> bytes:
        return bytes(self._buf) if self.eof else b""

    def finish(self) -> None:
        """Call at the end of input: raises if the input stopped inside a stream."""
        if self.in_stream or self._buf and not self.eof:
            if self._buf and not self.in_stream and self.streams:
                raise NNCError("trailing data after the end of the compressed stream")
            raise NNCError("compressed data ended before the end of the stream (truncated)")
        if not self.streams:
            raise NNCError("no compressed data (empty input)")
