"""The RNNME expert: a byte-level recurrent network with maximum-entropy direct connections.

Mikolov's RNNME (thesis, chapter 7) for bytes:

* hidden state s(t) = tanh(U1[c1] + U2[c2] + Uw[word] + W s(t-1)) of H units, where c1 and c2 are
  the previous two bytes (U2 optional) and `word` a hash of the current partial word (Uw optional);
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
        dtype = np.float32 if p.float_bits == 32 else np.float64
        self.dtype = dtype
        h = p.hidden
        feats = p.features
        cfg = np.zeros(CONFIG_SIZE, dtype=np.int64)
        cfg[K_H] = h
        cfg[K_BPTT] = p.bptt
        cfg[K_NFEAT] = len(feats)
        cfg[K_ME_MASK] = (1 << p.me_bits) - 1 if p.me_bits else 0
        cfg[K_INPUT2] = p.input2
        cfg[K_WORD_MASK] = (1 << p.word_input_bits) - 1 if p.word_input_bits else 0
        cfg[K_LR_HALF] = p.lr_half
        cfg[K_ADAM] = p.adam
        cfg[K_FEATS : K_FEATS + len(feats)] = feats
        fp = np.zeros(FP_SIZE, dtype=dtype)
        fp[F_ONE] = 1.0
        fp[F_CLIP] = p.clip_milli / 1000.0
        fp[F_ACT_LO] = ACT_RANGE
        fp[F_ACT_STEPS] = ACT_STEPS
        fp[F_EXP_LO] = EXP_RANGE
        fp[F_EXP_STEPS] = EXP_STEPS
        fp[F_LR0] = p.lr_micro * 1e-6
        fp[F_LR] = fp[F_LR0]
        fp[F_LR_MIN] = p.lr_min_micro * 1e-6
        fp[F_OUT_SCALE] = p.out_scale_milli / 1000.0
        fp[F_ME_TOTAL] = p.me_total_milli / 1000.0
        fp[F_B1] = p.adam_b1_milli / 1000.0
        fp[F_1MB1] = (1000 - p.adam_b1_milli) / 1000.0
        fp[F_B2] = p.adam_b2_milli / 1000.0
        fp[F_1MB2] = (1000 - p.adam_b2_milli) / 1000.0
        fp[F_EPS] = ADAM_EPS
        nw = 1 << p.word_input_bits if p.word_input_bits else 1
        w_scale = 1.0 / h  # keeps |W s| ~ O(0.5) at any size
        self.arrays = dict(
            cfg=cfg,
            reg=np.zeros(REGISTER_SIZE, dtype=np.int64),
            fp=fp,
            u1=(deterministic_uniform(256 * h, 11) * 0.5).astype(dtype).reshape(256, h),
            u2=(deterministic_uniform((256 if p.input2 else 1) * h, 12) * 0.5).astype(dtype)
            .reshape(-1, h),
            uw=(deterministic_uniform(nw * h, 13) * 0.5).astype(dtype).reshape(nw, h),
            w=(deterministic_uniform(h * h, 14) * w_scale).astype(dtype).reshape(h, h),
            vh=np.zeros((h, 16), dtype=dtype),
            bh=np.zeros(16, dtype=dtype),
            vl=np.zeros((16, h, 16), dtype=dtype),
            bl=np.zeros((16, 16), dtype=dtype),
            me=np.zeros(1 << p.me_bits if p.me_bits else 16, dtype=dtype),
            me_n=np.zeros(max(1, (1 << p.me_bits) >> 4) if p.me_bits else 1, dtype=np.uint16),
            me_rate=build_me_rate_table(p, dtype),
            hs=np.zeros((p.bptt + 2, h), dtype=dtype),
            hg=np.zeros((p.bptt + 2, h), dtype=dtype),
            hx=np.zeros((p.bptt + 2, 3), dtype=np.int64),
            act=build_tanh_table(dtype),
            expt=build_exp_table(dtype),
            fh=np.zeros(MAX_FEATURES, dtype=np.int64),
            fbase_h=np.zeros(MAX_FEATURES, dtype=np.int64),
            fbase_l=np.zeros(MAX_FEATURES, dtype=np.int64),
            z=np.zeros(16, dtype=dtype),
            ph=np.zeros(16, dtype=dtype),
            pl=np.zeros(16, dtype=dtype),
        )
        a = self.arrays
        # Adam's moment estimates, one per weight (small placeholders under SGD); W's gradient
        # summed over a BPTT block
        like = (lambda x: np.zeros_like(x)) if p.adam else (lambda x: np.zeros((1,) * x.ndim, dtype))
        self.out_moments = tuple(like(a[name]) for name in ("vh", "vh", "bh", "bh", "vl", "vl",
                                                             "bl", "bl"))
        self.net_moments = tuple(like(a[name]) for name in ("u1", "u1", "u2", "u2", "uw", "uw",
                                                             "w", "w", "w"))
        self.state = tuple(a.values()) + (self.out_moments, self.net_moments)
        # the state before the first byte: the features of an empty history
        feature_hashes(cfg, self.arrays["reg"], self.arrays["fh"])
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
