"""Entropy coding: each nibble is one symbol of a 16-way categorical built from the model's
probabilities, range-coded with constriction's queue coder (32-bit words, 24-bit precision).
With path coding (ModelParams.path_coding) a nibble's interval is instead cut down the nibble
tree in integers, each node splitting its share by its probability (rangecoder.tree_split): still
one symbol per nibble in the same coder, but the model need only compute the 4 nodes on the path.
constriction's Python API takes float rows only, so path-coded streams are always coded by the
twin (which is constriction's coder, byte for byte).

Two implementations write and read the same bytes:
- constriction (Rust; wheels for x86-64 Linux, macOS and Windows only), `Categorical(perfect=
  False)`: its quantisation is cheap and, given bit-identical inputs, identical in encoder and
  decoder;
- its numba twin, nncompress.rangecoder, proven byte-identical by tests/test_coder_twin.py on
  every test run.  It is the encoder wherever constriction does not install, and the decoder
  everywhere: inside one compiled loop with the model (nncompress.fused), decoding runs at
  about the encoder's speed.

NNC_CODER=twin or NNC_CODER=constriction forces one implementation for both directions.  The
range coder cannot tell where its stream ends, so the container records each block's length.
"""

from __future__ import annotations

import numpy as np

from . import fused, rangecoder
from .coder_backend import BACKEND, BACKENDS, DECODER, coder_description, constriction  # noqa: F401
from .errors import NNCError


def _check_backend(backend: str | None, default: str) -> str:
    backend = backend or default
    if backend not in BACKENDS:
        raise ValueError(f"coder backend {backend!r} is not available here (have {BACKENDS})")
    return backend


if constriction is not None:
    _queue = constriction.stream.queue
    _Categorical = constriction.stream.model.Categorical
    # The encoder codes a whole chunk with one model family; the decoder builds one concrete
    # model per nibble, which constriction does faster than a one-row family call.  With
    # perfect=False both quantise identically (constriction documents lazy/eager as a speed
    # choice only).
    _CATEGORICAL = _Categorical(perfect=False)


class NibbleEncoder:
    def __init__(self, backend: str | None = None):
        self.backend = _check_backend(backend, BACKEND)
        if self.backend == "constriction":
            self._encoder = _queue.RangeEncoder()
        else:
            self._state = rangecoder.new_encoder_state()
            self._words = np.zeros(1 << 10, dtype=np.uint32)
            self._cdf = np.zeros(rangecoder.ALPHABET + 1, dtype=np.uint64)
            self._symbols = 0

    def encode(self, nibbles: np.ndarray, probabilities: np.ndarray) -> None:
        """Code nibbles[k] with distribution probabilities[k] (rows need not be normalised)."""
        if not nibbles.shape[0]:
            return
        if self.backend == "constriction":
            self._encoder.encode(nibbles.astype(np.int32, copy=False), _CATEGORICAL, probabilities)
            return
        symbols = np.ascontiguousarray(nibbles, dtype=np.int64)
        rows = np.ascontiguousarray(probabilities, dtype=np.float64)
        if rows.shape != (symbols.shape[0], rangecoder.ALPHABET):
            raise ValueError("probabilities must have one row of 16 per nibble")
        if symbols.min() < 0 or symbols.max() >= rangecoder.ALPHABET:
            raise ValueError("nibbles must lie in 0..15")
        self._reserve(symbols.shape[0])
        refused = rangecoder.encode_rows(self._state, self._words, symbols, rows, self._cdf)
        if refused >= 0:
            raise ValueError(f"probability row {refused} is not normalizable "
                             "(all zero, negative, NaN or infinite)")
        self._symbols += symbols.shape[0]

    def encode_paths(self, nibbles: np.ndarray, path_p: np.ndarray) -> None:
        """Path coding: code nibbles[k], the probabilities (of 65536) of a 1 bit at the four nodes
        of its path being path_p[k] (Predictor.predict_known_path).  Twin backend only."""
        if self.backend != "twin":
            raise ValueError("path coding is coded by the twin coder (backend='twin')")
        if not nibbles.shape[0]:
            return
        symbols = np.ascontiguousarray(nibbles, dtype=np.int64)
        path_p = np.ascontiguousarray(path_p, dtype=np.int64)
        if path_p.shape != (symbols.shape[0], 4):
            raise ValueError("path probabilities must have one row of 4 per nibble")
        if symbols.min() < 0 or symbols.max() >= rangecoder.ALPHABET:
            raise ValueError("nibbles must lie in 0..15")
        if path_p.min() < 1 or path_p.max() > 65535:
            raise ValueError("path probabilities must lie in 1..65535")
        self._reserve(symbols.shape[0])
        rangecoder.encode_paths(self._state, self._words, symbols, path_p)
        self._symbols += symbols.shape[0]

    def _reserve(self, count: int) -> None:
        """Room for count more symbols: each writes at most one word, and the seal at most two."""
        need = self._symbols + count + 2
        if need > self._words.shape[0]:
            grown = np.zeros(max(need, 2 * self._words.shape[0]), dtype=np.uint32)
            grown[: self._words.shape[0]] = self._words
            self._words = grown

    def finish(self) -> bytes:
        if self.backend == "constriction":
            return self._encoder.get_compressed().astype("<u4").tobytes()
        state = self._state.copy()
        rangecoder.encode_seal(state, self._words)
        return self._words[: int(state[rangecoder.ENC_WORDS])].astype("<u4").tobytes()


# What constriction may raise while decoding damaged data.  Deliberately not Exception: signal
# handlers (the CLI's SIGTERM -> Interrupted) can fire inside decode() and must pass through.
_CODER_ERRORS = (AssertionError, ValueError, RuntimeError, OverflowError, TypeError, IndexError)


def _undecodable(detail: str = "") -> NNCError:
    return NNCError("corrupt archive: undecodable block payload" + (f" ({detail})" if detail else ""))


class NibbleDecoder:
    def __init__(self, payload: bytes, backend: str | None = None):
        if len(payload) % 4:
            raise NNCError("corrupt archive: range-coder payload is not a whole number of words")
        self.backend = _check_backend(backend, DECODER)
        words = np.frombuffer(payload, dtype="<u4").astype(np.uint32)
        if self.backend == "constriction":
            self._decoder = _queue.RangeDecoder(words)
        else:
            self._words = words
            self._state = np.zeros(rangecoder.DEC_SIZE, dtype=np.uint64)
            rangecoder.decoder_start(self._state, words)
            self._scratch = (np.zeros(rangecoder.ALPHABET, dtype=np.float64),
                             np.zeros(rangecoder.ALPHABET + 1, dtype=np.uint64))

    def decode(self, probabilities: np.ndarray) -> int:
        """Decode one nibble coded with this distribution."""
        if self.backend == "twin":
            row = np.ascontiguousarray(probabilities, dtype=np.float64)
            if row.shape != (rangecoder.ALPHABET,):
                raise ValueError("probabilities must be one row of 16")
            symbol = rangecoder.decode_row(self._state, self._words, row, self._scratch[1])
            if symbol < 0:
                raise _undecodable(_TWIN_ERRORS[symbol])
            return int(symbol)
        try:
            return int(self._decoder.decode(_Categorical(probabilities, perfect=False)))
        except _CODER_ERRORS as exc:
            # constriction raises AssertionError ("compressed data that is invalid for the
            # employed entropy model") on some damaged payloads
            raise _undecodable(str(exc)) from None
        except BaseException as exc:
            # a Rust panic surfaces as pyo3's PanicException, a BaseException subclass
            if type(exc).__name__ == "PanicException":
                raise _undecodable() from None
            raise

    def decode_run(self, predictor, out: np.ndarray, start: int, count: int) -> None:
        """Decode out[start : start + count], letting `predictor` (a model Predictor) predict each
        nibble and learn the one before.  Resumable: call again for the next piece."""
        if self.backend == "twin":
            status = fused.decode_run(predictor, self._state, self._words, out, start, count,
                                      self._scratch)
            if status:
                raise _undecodable(_TWIN_ERRORS[status])
            return
        if getattr(predictor, "path_coding", False):  # a Predictor with path coding
            raise ValueError("path-coded streams are decoded by the twin coder (backend='twin')")
        predict_next, learn, decode = predictor.predict_next, predictor.learn, self.decode
        for k in range(start, start + count):
            value = decode(predict_next())
            learn(value)
            out[k] = value


_TWIN_ERRORS = {
    rangecoder.INVALID_DATA: "compressed data invalid for the entropy model",
    rangecoder.BAD_DISTRIBUTION: "model probabilities not normalizable",
}
