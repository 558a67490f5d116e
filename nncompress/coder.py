"""Entropy coding with constriction's range coder: the only module that imports constriction.

Each nibble is one symbol of a 16-way categorical built from the model's probabilities.
`perfect=False` on both sides: its quantisation is cheap and, given bit-identical inputs, identical
in encoder and decoder.  The range coder cannot tell where its stream ends, so the container
records how many bytes each block holds.
"""

from __future__ import annotations

import numpy as np
import constriction

from .errors import NNCError

_queue = constriction.stream.queue
_Categorical = constriction.stream.model.Categorical
# The encoder codes a whole chunk with one model family; the decoder builds one concrete model
# per nibble, which constriction does faster than a one-row family call.  With perfect=False both
# quantise identically (constriction documents lazy/eager as a speed choice only).
_CATEGORICAL = _Categorical(perfect=False)


class NibbleEncoder:
    def __init__(self):
        self._encoder = _queue.RangeEncoder()

    def encode(self, nibbles: np.ndarray, probabilities: np.ndarray) -> None:
        """Code nibbles[k] with distribution probabilities[k] (rows need not be normalised)."""
        if nibbles.shape[0]:
            self._encoder.encode(nibbles.astype(np.int32, copy=False), _CATEGORICAL, probabilities)

    def finish(self) -> bytes:
        return self._encoder.get_compressed().astype("<u4").tobytes()


# What constriction may raise while decoding damaged data.  Deliberately not Exception: signal
# handlers (the CLI's SIGTERM -> Interrupted) can fire inside decode() and must pass through.
_CODER_ERRORS = (AssertionError, ValueError, RuntimeError, OverflowError, TypeError, IndexError)


class NibbleDecoder:
    def __init__(self, payload: bytes):
        if len(payload) % 4:
            raise NNCError("corrupt archive: range-coder payload is not a whole number of words")
        words = np.frombuffer(payload, dtype="<u4").astype(np.uint32)
        self._decoder = _queue.RangeDecoder(words)

    def decode(self, probabilities: np.ndarray) -> int:
        try:
            return int(self._decoder.decode(_Categorical(probabilities, perfect=False)))
        except _CODER_ERRORS as exc:
            # constriction raises AssertionError ("compressed data that is invalid for the
            # employed entropy model") on some damaged payloads
            raise NNCError(f"corrupt archive: undecodable block payload ({exc})") from None
        except BaseException as exc:
            # a Rust panic surfaces as pyo3's PanicException, a BaseException subclass
            if type(exc).__name__ == "PanicException":
                raise NNCError("corrupt archive: undecodable block payload") from None
            raise
