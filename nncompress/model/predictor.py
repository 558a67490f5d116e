"""The predictor: owns the model's arrays and speaks the two verbs every coder needs.

`predict_next()` gives the 16-way distribution of the next nibble (high nibble of a byte, then
its low nibble) after learning the one recorded with `learn(nibble)`; `predict_known` runs the
same kernel over known data for the encoder.  A byte's probability is the product of its
two nibbles' probabilities.
"""

from __future__ import annotations

import numpy as np

from .nibble import peek_low_nibbles, predict_known_path
from .nibble import predict_known as predict_known_kernel
from .nibble import step as step_kernel
from .params import ModelParams
from .state import NODE_FIELDS, Node, allocate_packed

NIBBLE_ALPHABET = 16


# Inputs from this size on touch most of a model's pages: its buffers then take huge pages.
HUGE_PAGE_INPUT = 1 << 20


class Predictor:
    def __init__(self, params: ModelParams, input_size: int | None = None):
        """input_size: how many bytes the model will see, when known (None: unknown, large)."""
        self.params = params.validate()
        # the packed buffers the kernels take, and the same memory as named numpy views
        huge_pages = input_size is None or input_size >= HUGE_PAGE_INPUT
        self._packed, self._arrays = allocate_packed(self.params, huge_pages)
        self._out = np.zeros(NIBBLE_ALPHABET, dtype=np.float64)
        # The nibble coded last but not yet learned: learning is deferred to the next prediction
        # so one kernel call does both.
        self._pending = -1

    @property
    def memory_bytes(self) -> int:
        return sum(a.nbytes for a in self._arrays.values())

    def predict_next(self) -> np.ndarray:
        """Learn the pending nibble, then return the next nibble's 16 probabilities (unnormalised).

        The returned array is reused by the next call."""
        step_kernel(self._packed, self._pending, self._out)
        return self._out

    def learn(self, nibble: int) -> None:
        """Record the nibble that was coded with the last prediction (learned on the next call)."""
        self._pending = nibble

    def predict_known(self, data: bytes | np.ndarray) -> np.ndarray:
        """Predictions for every nibble of `data` (shape (2n, 16)), learning as it goes."""
        nibbles = bytes_to_nibbles(data)
        probs = np.empty((nibbles.shape[0], NIBBLE_ALPHABET), dtype=np.float64)
        if nibbles.shape[0]:
            predict_known_kernel(self._packed, self._pending, nibbles, probs)
            self._pending = int(nibbles[-1])
        return probs

    # ---- path coding (ModelParams.path_coding): the coder asks for the nodes of the path only ----
    @property
    def path_coding(self) -> bool:
        return bool(self.params.path_coding)

    def predict_known_path(self, data: bytes | np.ndarray) -> np.ndarray:
        """For every nibble of `data`, the probabilities (of 65536) of a 1 bit at the four nodes of
        its path, shape (2n, 4), learning as it goes.  The model runs exactly as in
        predict_known; only those nodes are mixed."""
        nibbles = bytes_to_nibbles(data)
        path_p = np.empty((nibbles.shape[0], 4), dtype=np.int64)
        if nibbles.shape[0]:
            predict_known_path(self._packed, self._pending, nibbles, path_p)
            self._pending = int(nibbles[-1])
        return path_p

    def byte_distributions(self, data: bytes | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Analysis: (code lengths in bits per byte, P(byte) for all 256 values before each byte).

        The code lengths come from the coding path itself (the same kernel calls as the
        decoder); the 256-way distributions add a side look-up (`nibble.peek_low_nibbles`)
        that changes no state, so they can be shown next to the true costs.  Slow: analysis only.
        """
        raw = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else data
        a = self._arrays
        nctx = len(self.params.contexts)
        scratch_tables = np.zeros((nctx, 16), dtype=np.uint8)
        scratch_slots = np.zeros(nctx, dtype=np.int64)
        scratch_reg = np.zeros_like(a["reg"])
        scratch_node = Node(*(np.zeros_like(a[f.name]) for f in NODE_FIELDS))
        low = np.empty((16, 16), dtype=np.float64)
        costs = np.empty(raw.shape[0], dtype=np.float64)
        dists = np.empty((raw.shape[0], 256), dtype=np.float64)
        for k, byte in enumerate(raw):
            high = self.predict_next().copy()
            peek_low_nibbles(self._packed, scratch_tables, scratch_slots, scratch_reg, scratch_node,
                             low)
            hi, lo = int(byte) >> 4, int(byte) & 15
            self.learn(hi)
            actual_low = self.predict_next()
            self.learn(lo)
            p_hi = high / high.sum()
            dists[k] = (p_hi[:, None] * (low / low.sum(axis=1, keepdims=True))).reshape(256)
            costs[k] = -np.log2(p_hi[hi] * actual_low[lo] / actual_low.sum())
        return costs, dists


def bytes_to_nibbles(data) -> np.ndarray:
    raw = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else data
    nibbles = np.empty(raw.shape[0] * 2, dtype=np.int64)
    nibbles[0::2] = raw >> 4
    nibbles[1::2] = raw & 15
    return nibbles


def nibbles_to_bytes(nibbles: np.ndarray) -> bytes:
    n = np.asarray(nibbles, dtype=np.uint8)
    return ((n[0::2] << 4) | n[1::2]).astype(np.uint8).tobytes()
