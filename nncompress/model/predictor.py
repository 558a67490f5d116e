"""The predictor: owns the model's arrays and speaks the two verbs every coder needs.

`predict_next()` gives the 16-way distribution of the next nibble (high nibble of a byte, then
its low nibble) after learning the one recorded with `learn(nibble)`; `predict_known` runs the
same kernel over known data for the encoder.  A byte's probability is the product of its
two nibbles' probabilities.
"""

from __future__ import annotations

import numpy as np

from . import detmath, kernels
from .params import ModelParams
from .statetable import StateTable

NIBBLE_ALPHABET = 16


def _deterministic_uniform(count: int, seed: int) -> np.ndarray:
    """Uniform values in [-0.5, 0.5) from an integer hash: no platform-dependent RNG involved."""
    idx = np.arange(count, dtype=np.uint64) + np.uint64(seed << 32)
    x = idx * np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(29)
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53) - 0.5


class Predictor:
    def __init__(self, params: ModelParams):
        self.params = params.validate()
        p = self.params
        nctx = len(p.contexts)
        ninputs = nctx * p.ctx_inputs + 1 + (1 if p.match_min else 0) + (1 if p.rnn_hidden else 0) + 1
        cfg = np.zeros(kernels.CONFIG_SIZE, dtype=np.int64)
        cfg[kernels.C_NCTX] = nctx
        cfg[kernels.C_TBITS] = p.table_bits
        cfg[kernels.C_MATCH_MIN] = p.match_min
        cfg[kernels.C_MATCH_BITS] = p.match_bits
        cfg[kernels.C_HIST_BITS] = p.history_bits
        cfg[kernels.C_RNN_H] = p.rnn_hidden
        cfg[kernels.C_RNN_BPTT] = p.rnn_bptt
        cfg[kernels.C_MIXER_LR] = p.mixer_lr
        cfg[kernels.C_MIXER_SETS] = p.mixer_sets
        cfg[kernels.C_APM_RATE] = p.apm_rate
        cfg[kernels.C_NINPUTS] = ninputs
        cfg[kernels.C_CTX_INPUTS] = p.ctx_inputs
        sels = p.selectors
        cfg[kernels.C_NSEL] = len(sels)
        cfg[kernels.C_LR_BOOST] = p.mixer_lr_boost
        cfg[kernels.C_LR_DECAY] = p.mixer_lr_decay
        cfg[kernels.C_FINAL_LR] = p.final_lr
        rows = 0
        for k, kind in enumerate(sels):
            cfg[kernels.C_SEL_KIND + k] = kind
            cfg[kernels.C_SEL_BASE + k] = rows
            rows += kernels.SEL_ROWS[kind]
        cfg[kernels.C_APM_W] = 16 - p.apm1_weight - p.apm2_weight
        cfg[kernels.C_APM_W + 1] = p.apm1_weight
        cfg[kernels.C_APM_W + 2] = p.apm2_weight
        cfg[kernels.C_SM_LIMIT] = p.sm_limit
        cfg[kernels.C_KINDS : kernels.C_KINDS + nctx] = p.contexts

        states = StateTable(p.state_table)
        state_p = states.initial_p
        mixw = np.zeros((rows, ninputs), dtype=np.int32)
        mixw[:, : nctx * p.ctx_inputs : p.ctx_inputs] = (1 << 16) // 4
        mixw[:, nctx * p.ctx_inputs :] = (1 << 16) // 4
        nh = max(p.rnn_hidden, 1)
        apm_init = np.array(
            [detmath.SQUASH[min(4095, max(0, (b - 16) * 128 + 2048))] * 16 for b in range(33)],
            dtype=np.int32,
        )
        self._arrays = dict(
            cfg=cfg,
            reg=np.zeros(kernels.REGISTER_SIZE, dtype=np.int64),
            tables=np.zeros((nctx, 1 << p.table_bits), dtype=np.uint8),
            slots=np.zeros(nctx, dtype=np.int64),
            ctx_hash=np.zeros(nctx, dtype=np.int64),
            sm_p=np.tile(state_p, (nctx, 1)),
            sm_n=np.zeros((nctx, 256), dtype=np.int32),
            mixw=mixw,
            mixn=np.zeros(rows, dtype=np.int32),
            fmixw=np.full((256, kernels.MAX_SEL), (1 << 16) // len(sels), dtype=np.int32),
            o0_p=np.full(256, 1 << 21, dtype=np.int32),
            o0_n=np.zeros(256, dtype=np.int32),
            msm_p=np.full(64, 1 << 21, dtype=np.int32),
            msm_n=np.zeros(64, dtype=np.int32),
            apm1=np.tile(apm_init, (256 << (8 * p.apm1_order), 1)),
            apm2=np.tile(apm_init, (1 << 16, 1)),
            hist=np.zeros(1 << p.history_bits, dtype=np.uint8),
            match_table=np.zeros(1 << p.match_bits if p.match_min else 1, dtype=np.int64),
            rnn_u=_deterministic_uniform(256 * nh, 1).reshape(256, nh) * 0.2,
            rnn_w=_deterministic_uniform(nh * nh, 2).reshape(nh, nh) * 0.2,
            rnn_v=np.zeros((256, nh), dtype=np.float64),
            rnn_b=np.zeros(256, dtype=np.float64),
            rnn_s=np.full((p.rnn_bptt + 2, nh), 0.1, dtype=np.float64),
            rnn_x=np.zeros(p.rnn_bptt + 2, dtype=np.int64),
            rnn_g=np.zeros((p.rnn_bptt + 2, nh), dtype=np.float64),
            rnn_lr=np.array([p.rnn_lr_micro * 1e-6], dtype=np.float64),
            squash=detmath.SQUASH,
            stretch=detmath.STRETCH,
            sig=detmath.SIGMOID,
            recip=detmath.RECIPROCAL,
            next_state=states.next_state,
            priority=states.priority,
            state_det=states.deterministic,
            inputs=np.zeros((16, ninputs), dtype=np.int32),
            node_row=np.zeros((16, kernels.MAX_SEL), dtype=np.int64),
            node_sx=np.zeros((16, kernels.MAX_SEL), dtype=np.int32),
            node_sp=np.zeros((16, kernels.MAX_SEL), dtype=np.int32),
            node_pmix=np.zeros(16, dtype=np.int32),
            node_apm=np.zeros((16, 6), dtype=np.int64),
            node_p=np.zeros(16, dtype=np.int32),
            node_z=np.zeros(16, dtype=np.float64),
            ind=np.zeros(256 + 65536, dtype=np.int64),
        )
        self._packed = self._pack()
        self._out = np.zeros(NIBBLE_ALPHABET, dtype=np.float64)
        # The nibble coded last but not yet learned: learning is deferred to the next prediction
        # so one kernel call does both.
        self._pending = -1

    def _pack(self) -> tuple:
        """Copy the arrays into one flat buffer per dtype (see kernels.STATE_FIELDS) and keep
        views of them under their names, so Python and the kernels share the same memory."""
        if list(self._arrays) != [name for name, _, _ in kernels.STATE_FIELDS]:
            raise AssertionError("Predictor arrays and kernels.STATE_FIELDS disagree")
        sizes = dict.fromkeys(kernels.DTYPE_GROUPS, 0)
        layout = np.zeros((len(kernels.STATE_FIELDS), 3), dtype=np.int64)
        for k, (name, dtype, ndim) in enumerate(kernels.STATE_FIELDS):
            array = self._arrays[name]
            if array.dtype != np.dtype(dtype) or array.ndim != ndim:
                raise AssertionError(f"state field {name}: expected {dtype} rank {ndim}")
            layout[k, 0] = sizes[dtype]
            layout[k, 1 : 1 + ndim] = array.shape
            sizes[dtype] += array.size
        buffers = {dtype: np.zeros(max(size, 1), dtype=dtype) for dtype, size in sizes.items()}
        for k, (name, dtype, ndim) in enumerate(kernels.STATE_FIELDS):
            array = self._arrays[name]
            view = buffers[dtype][layout[k, 0] : layout[k, 0] + array.size].reshape(array.shape)
            if array.any():  # the big tables start at zero: skip touching their pages
                view[...] = array
            self._arrays[name] = view
        return tuple(buffers[dtype] for dtype in kernels.DTYPE_GROUPS) + (layout,)

    @property
    def memory_bytes(self) -> int:
        return sum(a.nbytes for a in self._arrays.values())

    def predict_next(self) -> np.ndarray:
        """Learn the pending nibble, then return the next nibble's 16 probabilities (unnormalised).

        The returned array is reused by the next call."""
        kernels.step(self._packed, self._pending, self._out)
        return self._out

    def learn(self, nibble: int) -> None:
        """Record the nibble that was coded with the last prediction (learned on the next call)."""
        self._pending = nibble

    def predict_known(self, data: bytes | np.ndarray) -> np.ndarray:
        """Predictions for every nibble of `data` (shape (2n, 16)), learning as it goes."""
        nibbles = bytes_to_nibbles(data)
        probs = np.empty((nibbles.shape[0], NIBBLE_ALPHABET), dtype=np.float64)
        if nibbles.shape[0]:
            kernels.predict_known(self._packed, self._pending, nibbles, probs)
            self._pending = int(nibbles[-1])
        return probs


    def byte_distributions(self, data: bytes | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Analysis: (code lengths in bits per byte, P(byte) for all 256 values before each byte).

        The code lengths come from the coding path itself (the same kernel calls as the
        decoder); the 256-way distributions add a side look-up (`kernels.peek_low_nibbles`)
        that changes no state, so they can be shown next to the true costs.  Slow: analysis only.
        """
        raw = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else data
        a = self._arrays
        nctx = len(self.params.contexts)
        scratch_tables = np.zeros((nctx, 16), dtype=np.uint8)
        scratch_slots = np.zeros(nctx, dtype=np.int64)
        scratch_reg = np.zeros_like(a["reg"])
        scratch = tuple(np.zeros_like(a[k]) for k in
                        ("inputs", "node_row", "node_sx", "node_sp", "node_pmix", "node_apm",
                                  "node_p", "node_z"))
        low = np.empty((16, 16), dtype=np.float64)
        costs = np.empty(raw.shape[0], dtype=np.float64)
        dists = np.empty((raw.shape[0], 256), dtype=np.float64)
        for k, byte in enumerate(raw):
            high = self.predict_next().copy()
            kernels.peek_low_nibbles(self._packed, scratch_tables, scratch_slots, scratch_reg,
                                     scratch, low)
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
