"""Stream encoder and decoder: the model and the coder, joined block by block.

Both directions drive the model through the same kernel, `kernels.step` (learn the nibble just
coded, predict the next): the encoder runs it over known data inside numba and hands the
predictions to the range coder in one batch; the decoder runs it nibble by nibble, decoding each
nibble before the model may learn it (inside one numba loop with the coder, see coder.decode_run).  Nothing else touches the model, so the two cannot drift.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from . import format as fmt
from .coder import NibbleDecoder, NibbleEncoder
from .format import NNCError
from .model.kernels import SEL_ROWS
from .model.params import ModelParams
from .model.predictor import Predictor, bytes_to_nibbles, nibbles_to_bytes
from .presets import DEFAULT_LEVEL, params_for_level

# Bytes the encoder predicts per kernel call: bounds the (2n, 16) float64 probability buffer.
ENCODE_CHUNK = 1 << 16

Progress = Optional[Callable[[int], None]]

# The most memory a stream's model may need (like xz's dictionary limit).  The presets need at
# most ~470 MiB; the parameter ranges alone would allow ~27 GiB, and a header (checksum-correct,
# hostile) asking for GiBs makes even a 300-byte archive take GiBs of resident memory: numpy
# backs large tables with huge pages, so each hashed touch commits 2 MiB.  The encoder enforces
# the same bound, so it never writes an archive the decoder would refuse.
MAX_MODEL_MEMORY = 2 << 30


def model_memory(params: ModelParams) -> int:
    """Bytes the predictor's arrays take for these parameters (the large ones; within ~1 MiB)."""
    nh = max(params.rnn_hidden, 1)
    tables = len(params.contexts) << params.table_bits
    history = 1 << params.history_bits
    match = (8 << params.match_bits) if params.match_min else 8
    apms = ((1 << 16) + (256 << (8 * params.apm1_order))) * 33 * 4
    rnn = (3 * 256 * nh + 3 * nh * nh) * 8
    ninputs = len(params.contexts) * params.ctx_inputs + 4
    mixers = sum(SEL_ROWS[k] for k in params.selectors) * (ninputs + 1) * 4  # weights + counts
    return tables + history + match + apms + rnn + mixers


class StreamEncoder:
    """Turns raw blocks into one .nnc stream: header(), then block(raw) per block, then end()."""

    def __init__(self, level: int = DEFAULT_LEVEL, params: ModelParams | None = None,
                 block_size: int = fmt.DEFAULT_BLOCK_SIZE):
        if params is None:
            params = params_for_level(level)
        else:
            level = 0
        if not 1 <= block_size <= fmt.MAX_BLOCK_SIZE:
            raise ValueError(f"block_size must be in 1..{fmt.MAX_BLOCK_SIZE}")
        self.params = params.validate()
        if model_memory(self.params) > MAX_MODEL_MEMORY:
            raise ValueError(f"these model parameters need {model_memory(self.params) >> 20} MiB, "
                             f"more than the {MAX_MODEL_MEMORY >> 20} MiB a decoder accepts")
        self.block_size = block_size
        self._header = fmt.Header(fmt.FORMAT_VERSION, level, tuple(self.params.to_ints()), block_size)
        self._predictor = Predictor(self.params)
        self._total = 0
        self._crc = 0

    def header(self) -> bytes:
        return self._header.encode()

    def block(self, raw: bytes, progress: Progress = None, observe=None) -> bytes:
        """Frame and payload for one block of 1..block_size bytes.

        observe(nibbles, probabilities), if given, sees every chunk's predictions as they are
        coded (the analysis tools read the model's code lengths from here)."""
        if not 1 <= len(raw) <= self.block_size:
            raise ValueError("block length out of range")
        raw = bytes(raw)
        encoder = NibbleEncoder()
        for start in range(0, len(raw), ENCODE_CHUNK):
            chunk = raw[start : start + ENCODE_CHUNK]
            probabilities = self._predictor.predict_known(chunk)
            nibbles = bytes_to_nibbles(chunk)
            encoder.encode(nibbles, probabilities)
            if observe is not None:
                observe(nibbles, probabilities)
            if progress:
                progress(len(chunk))
        payload = encoder.finish()
        crc = fmt.crc32(raw)
        self._total += len(raw)
        self._crc = fmt.crc32(raw, self._crc)
        return fmt.encode_block_frame(len(raw), len(payload), crc) + payload

    def end(self) -> bytes:
        return fmt.encode_end(self._total, self._crc)


class BlockDecoder:
    """Decodes the blocks of one stream, in order, with the model its header describes."""

    def __init__(self, header: fmt.Header):
        try:
            self.params = ModelParams.from_ints(list(header.params))
        except (ValueError, TypeError) as exc:
            raise NNCError(f"corrupt archive header: {exc}") from None
        need = model_memory(self.params)
        if need > MAX_MODEL_MEMORY:
            raise NNCError(f"archive header asks for a {need >> 20} MiB model, more than the "
                           f"{MAX_MODEL_MEMORY >> 20} MiB limit (corrupt or hostile archive)")
        self.header = header
        try:
            self._predictor = Predictor(self.params)
        except MemoryError:
            raise NNCError(f"not enough memory for this archive's model ({need >> 20} MiB)") from None
        self.total = 0
        self.crc = 0

    def block(self, frame: fmt.BlockFrame, payload: bytes, progress: Progress = None) -> bytes:
        decoder = NibbleDecoder(payload)
        count = 2 * frame.raw_len
        nibbles = np.empty(count, dtype=np.uint8)
        report_every = 1 << 15
        for start in range(0, count, report_every):
            piece = min(report_every, count - start)
            decoder.decode_run(self._predictor, nibbles, start, piece)
            if progress:
                progress(piece // 2)
        raw = nibbles_to_bytes(nibbles)
        if fmt.crc32(raw) != frame.crc:
            raise NNCError("corrupt archive: block checksum mismatch (data damaged)")
        self.total += len(raw)
        self.crc = fmt.crc32(raw, self.crc)
        return raw

    def check_trailer(self, total_len: int, total_crc: int) -> None:
        if total_len != self.total or total_crc != self.crc:
            raise NNCError("corrupt archive: stream length or checksum mismatch")


class StreamDecoder:
    """Push parser for concatenated streams: feed bytes, get verified raw bytes back.

    Only data whose block checksum matched is ever returned.  `eof` is set after a complete
    stream when `multi_stream` is False; otherwise the parser waits for the next stream.
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

    def feed(self, data) -> bytes:
        if self.eof:
            raise EOFError("already at the end of the stream")
        self._buf += data
        out = bytearray()
        pos = 0
        buf = self._buf
        try:
            while pos < len(buf) and not self.eof:
                if self._blocks is None:
                    try:
                        header, pos = fmt.parse_header(buf, pos)
                    except NNCError:
                        if self.streams:
                            raise NNCError("trailing garbage after the compressed stream") from None
                        raise
                    self._blocks = BlockDecoder(header)
                    self.in_stream = True
                    continue
                if self._frame is None:
                    frame, new_pos = fmt.parse_block_frame(buf, pos, self._blocks.header.block_size)
                    if frame.raw_len == 0:
                        total_len, total_crc, new_pos = fmt.parse_trailer(buf, new_pos)
                        self._blocks.check_trailer(total_len, total_crc)
                        self.last_stream_crc = total_crc
                        pos = new_pos
                        self._blocks = None
                        self.in_stream = False
                        self.streams += 1
                        if not self._multi:
                            self.eof = True
                        continue
                    self._frame = frame
                    pos = new_pos
                if len(buf) - pos < self._frame.payload_len:
                    break
                payload = bytes(buf[pos : pos + self._frame.payload_len])
                out += self._blocks.block(self._frame, payload, self._progress)
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
