"""The RNNME expert: a byte-level recurrent network with maximum-entropy direct connections.

Mikolov's RNNME (thesis, chapter 7) for bytes:

* hidden state s(t) = tanh(U1[c1] + U2[c2] + Uw[word] + W s(t-1)) of H units, where c1 and c2 are
  the previous two bytes (U2 optional) and `word` a hash of the current partial word (Uw optional);
  or (RNNMEParams.cell = 1) an LSTM cell over the same inputs (rnnme_lstm.py);
* a class-factorised softmax over all 256 bytes: P(byte) = P(high nibble | s) * P(low nibble |
  high nibble, s).  The high nibble is the class (16 classes by high nibble), so each byte costs
  32 x H output weights instead of 256 x H, and every byte trains the outputs once;
* maximum-entropy direct connections: every hashed n-gram feature (byte orders, the current word)
  owns one row of 16 weights per softmax (the high-nibble softmax; the low-nibble softmax given
  the high nibble) in one hash table of 2^me_bits weights; the rows are added to the logits and
  trained by SGD on the same cross-entropy as the network, with a per-row rate that decays with
  the row's use count (a fresh context learns fast, a well-known one slowly);
* online training while coding (dynamic evaluation): output layer and direct connections every
  byte, the recurrent weights by truncated back-propagation through time in blocks of `bptt`
  bytes, with the hidden error clipped and a learning rate that decays with position; the
  network's weights step by AdaMax (default), Adam or plain SGD, the direct connections by SGD.

Measured (bench/NEURAL.md): alone it beats bzip2 -9 on every English file and matches PPMd order
16; nearly all of that comes from the direct connections, and beside the context-mixing model it
is worth about 0.004 bpc.

Determinism: everything is plain IEEE +, -, *, / in a fixed order, no fastmath (no FMA contraction,
no re-association), no BLAS, no libm: tanh and exp are interpolated tables built once from
`detmath.det_exp`.  Loops that vectorise run across output units (each lane accumulates one
unit's sum in source order), so scalar and SIMD builds give the same bits.  The kernels are generic
in the float type: every float constant they use comes from the model's own `fp` array, so a
float32 model computes in float32 throughout (and a float64 model in float64) without silent
promotion.  `tests/test_rnnme.py` checks them against a pure-Python twin, bit for bit.

The expert reports per byte two 16-way distributions: the high nibble's, then the low nibble's
given the actual high nibble; a pure-RNNME coder codes nibbles with them directly, a binary-node
mixer sums them over the leaves under each node.
"""

from __future__ import annotations

import numpy as np

# the settings and kernels live in two modules of their own; their names stay importable from here
from .rnnme_config import *  # noqa: F401,F403
from .rnnme_kernels import (
    mix32,
    table_tanh,
    table_exp,
    adam_row,
    softmax16,
    feature_hashes,
    output_logits,
    predict_high,
    predict_low,
    train_softmax,
    bptt_block,
    forward,
    learn_byte,
    run_known,
    node_probabilities,
)  # noqa: F401


# ---- the owner of the arrays ----------------------------------------------------------------------

class RNNME:
    """Owns the expert's arrays; two verbs per nibble (predict, then learn the byte once both
    nibbles are known).  Encoder and decoder drive it identically:

        p_hi = m.predict_high(); ... hi ...; p_lo = m.predict_low(hi); ... lo ...; m.learn((hi << 4) | lo)
    """

    def __init__(self, params: RNNMEParams):
        self.params = p = params.validate()
        self.dtype = np.float32 if p.float_bits == 32 else np.float64
        a = initial_arrays(p)
        self.arrays = {name: a[name] for name in ARRAY_NAMES}
        self.out_moments = tuple(a[name] for name in OUT_MOMENT_NAMES)
        self.net_moments = tuple(a[name] for name in NET_MOMENT_NAMES)
        self.state = tuple(self.arrays.values()) + (self.out_moments, self.net_moments)
        # the state before the first byte: the features of an empty history
        feature_hashes(self.arrays["cfg"], self.arrays["reg"], self.arrays["fh"])
        self._out = np.zeros(16, dtype=np.float64)

    @property
    def memory_bytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values()) + sum(
            a.nbytes for a in self.out_moments + self.net_moments)

    def predict_high(self) -> np.ndarray:
        """P(high nibble) for the next byte (16 values summing to 1; the array is reused)."""
        predict_high(self.state, self._out)
        return self._out

    def predict_low(self, hi: int) -> np.ndarray:
        """P(low nibble | high nibble hi) (16 values summing to 1; the array is reused)."""
        predict_low(self.state, hi, self._out)
        return self._out

    def learn(self, byte: int) -> None:
        learn_byte(self.state, byte)

    def run(self, data: bytes | np.ndarray, keep_dists: bool = False):
        """P(byte) for every byte of data (and, with keep_dists, the per-byte 32 nibble
        probabilities, float32), learning as it goes."""
        raw = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else data
        raw = raw.astype(np.int64)
        probs = np.empty(raw.shape[0], dtype=np.float64)
        dists = np.empty((raw.shape[0] if keep_dists else 0, 32), dtype=np.float32)
        if raw.shape[0]:
            run_known(self.state, raw, probs, dists)
        return (probs, dists) if keep_dists else probs
