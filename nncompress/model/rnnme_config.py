"""Settings and constant tables of the RNNME expert (nncompress.model.rnnme): the config,
register and float-constant slots its kernels read, the parameter record, and the tables built
once from detmath (tanh, exp, direct-connection rates)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .detmath import det_exp, deterministic_uniform  # noqa: F401  (re-exported for rnnme)

# ---- indices into the int64 config array -------------------------------------------------------
K_H = 0  # hidden units
K_BPTT = 1  # truncated BPTT block length (bytes)
K_NFEAT = 2  # number of ME features
K_ME_MASK = 3  # 2^me_bits - 1 (0: no direct connections)
K_INPUT2 = 4  # 1: the byte two back is an input too
K_WORD_MASK = 5  # word-embedding rows - 1 (0: no word input)
K_LR_HALF = 6  # learning rate halves after this many bytes (then thirds, ...)
K_ADAM = 7  # 1: Adam steps for the network's weights, 0: plain SGD
K_FEATS = 8  # K_FEATS + f: kind of ME feature f (1..8 byte order, WORD_FEATURE)
K_CELL = 32  # round 7: 0 the tanh cell of Mikolov's RNNME, 1 an LSTM cell (rnnme_lstm)
K_WORD_PREV = 33  # round 25: 1: the previous word's row of the word-input table is an input too
K_CTX_FIRST = 34  # round 28: index of the first of the mix's context features (they come last)
CONFIG_SIZE = 40
WORD_FEATURE = 32  # the current partial word (case-folded) + previous byte
WORD_PAIR_FEATURE = 33  # previous word + current partial word
WORD_PREV_INPUT = 36  # round 25: the salt of the previous word's input row (not a feature)
# branch expert4: features from the predictor's match model (R_MATCH; 0 in the standalone expert)
MATCH_FEATURE = 34  # the match model's expected byte and length bucket
MATCH_ORDER1_FEATURE = 35  # its expected byte (or none) and the previous byte
CONTEXT_FEATURE = 64  # CONTEXT_FEATURE + i: the predictor's context i (its hash, st.ctx_hash[i])
MAX_FEATURES = 24  # slots K_FEATS .. K_FEATS + 23
MAX_CONTEXT_FEATURES = MAX_FEATURES - 2  # context_features bits above these are ignored

# ---- indices into the int64 register array -----------------------------------------------------
R_POS = 0  # bytes learned
R_T = 1  # steps stored in the current BPTT block
R_C4 = 2  # last four bytes, most recent lowest
R_C8 = 3  # the four bytes before those
R_WORD = 4  # hash of the current partial word (0 between words)
R_WORD1 = 5  # hash of the previous word
R_HI = 6  # high nibble last predicted for (set by predict_low)
R_MATCH = 7  # branch expert4: the predictor's match model for the next byte, set before the
#             features are hashed: 0 none, else (expected byte + 1) << 5 | length bucket
REGISTER_SIZE = 8

# ---- indices into the float array of constants/rates (model float type) ------------------------
F_ONE = 0
F_ZERO = 1
F_CLIP = 2  # hidden error clip
F_ACT_LO = 3  # tanh table covers [-F_ACT_LO, F_ACT_LO)
F_ACT_STEPS = 4  # table entries per unit
F_EXP_LO = 5  # exp table covers [-F_EXP_LO, 0]
F_EXP_STEPS = 6
F_LR = 7  # current recurrent/output learning rate (set each byte)
F_LR0 = 8  # initial learning rate
F_LR_MIN = 9  # floor of the decaying learning rate
F_OUT_SCALE = 10  # output-layer rate = F_LR * F_OUT_SCALE
F_ME_TOTAL = 11  # cap on the sum of the direct-connection rates of one byte
F_B1 = 12  # Adam: first-moment decay
F_1MB1 = 13  # 1 - F_B1
F_B2 = 14  # second-moment decay
F_1MB2 = 15
F_EPS = 16
F_HALF = 17  # 0.5: sigmoid(x) = 1/2 + tanh(x/2)/2 (rnnme_lstm)
F_ME_CTX_TOTAL = 18  # round 28: cap on the summed rates of the context features' rows
FP_SIZE = 20
ADAM_EPS = 1e-5

ACT_RANGE = 8.0
ACT_STEPS = 256
EXP_RANGE = 24.0
EXP_STEPS = 64
ME_COUNT_LIMIT = 1023

MASK32 = 0xFFFFFFFF


@dataclass(frozen=True)
class RNNMEParams:
    """Everything that changes the expert's predictions (all ints, ready for a header)."""

    hidden: int = 64  # H
    bptt: int = 8  # truncated BPTT block length, bytes
    me_bits: int = 24  # direct-connection hash table: 2^me_bits weights (0: none)
    orders: tuple = (1, 2, 3, 4, 5, 6)  # byte orders with a direct-connection feature
    word_feature: int = 1  # 1: the current word (+ previous byte) is a feature; 2: + word pair
    input2: int = 0  # 1: the byte two back is a network input too
    word_input_bits: int = 0  # > 0: an embedding row per hashed current word (2^bits rows)
    word_prev: int = 0  # round 25: 1: the previous word's row (same table) is an input too
    word_rows_zero: int = 0  # round 25: 1: the word rows start at 0, not at small random values
    lr_micro: int = 2000  # initial step size x 1e-6 (network and output layer)
    lr_min_micro: int = 300  # floor of the decaying rate
    lr_half: int = 100000  # the rate is lr / (1 + pos / lr_half)
    out_scale_milli: int = 1000  # output-layer rate relative to the network rate
    me_lr_milli: int = 500  # direct connections: rate me_lr / (1 + n * me_decay) for a row used n times
    me_decay_milli: int = 50
    me_min_milli: int = 50  # ... but at least this
    me_total_milli: int = 100000  # the rates of one byte's rows are scaled to sum at most this
    me_ctx_total_milli: int = 100000  # round 28: ... and those of the mix's context features to this
    clip_milli: int = 15000  # hidden error clip
    float_bits: int = 32  # 32 or 64: the float type of the whole expert
    adam: int = 2  # network weights: 0 plain SGD, 1 Adam (no bias correction), 2 AdaMax
    adam_b1_milli: int = 900
    adam_b2_milli: int = 999
    match_feature: int = 0  # branch expert4, bit mask: 1 MATCH_FEATURE, 2 MATCH_ORDER1_FEATURE
    context_features: int = 0  # branch expert4, bit mask: the predictor's contexts i as features
    cell: int = 0  # round 7: 0 the tanh cell s = tanh(U x + W s), 1 an LSTM cell (rnnme_lstm)

    def validate(self) -> "RNNMEParams":
        checks = [
            (1 <= self.hidden <= 1024, "hidden must be in 1..1024"),
            (1 <= self.bptt <= 256, "bptt must be in 1..256"),
            (self.me_bits == 0 or 8 <= self.me_bits <= 30, "me_bits must be 0 or 8..30"),
            (all(1 <= o <= 8 for o in self.orders), "orders must be in 1..8"),
            (self.word_feature in (0, 1, 2), "word_feature must be 0, 1 or 2"),
            (self.match_feature in (0, 1, 2, 3), "match_feature must be in 0..3"),
            (0 <= self.context_features < 1 << MAX_CONTEXT_FEATURES, "context_features out of range"),
            (len(self.orders) + self.word_feature + bin(self.match_feature).count("1")
             + bin(self.context_features).count("1") <= MAX_FEATURES, "too many features"),
            (self.input2 in (0, 1), "input2 must be 0 or 1"),
            (self.cell in (0, 1), "cell must be 0 (tanh) or 1 (LSTM)"),
            (0 <= self.word_input_bits <= 24, "word_input_bits must be in 0..24"),
            (self.word_prev in (0, 1) and not (self.word_prev and not self.word_input_bits),
             "word_prev must be 0 or 1 (and 0 without word_input_bits)"),
            (self.word_rows_zero in (0, 1), "word_rows_zero must be 0 or 1"),
            (self.float_bits in (32, 64), "float_bits must be 32 or 64"),
            (self.lr_half >= 1, "lr_half must be >= 1"),
            (self.adam in (0, 1, 2), "adam must be 0 (SGD), 1 (Adam) or 2 (AdaMax)"),
            (0 <= self.adam_b1_milli < 1000 and 0 <= self.adam_b2_milli < 1000,
             "Adam decays must be in 0..999 (thousandths)"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        return self

    @property
    def features(self) -> tuple:
        if self.me_bits == 0:
            return ()
        extra = (WORD_FEATURE, WORD_PAIR_FEATURE)[: self.word_feature]
        match = tuple(kind for bit, kind in ((1, MATCH_FEATURE), (2, MATCH_ORDER1_FEATURE))
                      if self.match_feature & bit)
        contexts = tuple(CONTEXT_FEATURE + i for i in range(MAX_CONTEXT_FEATURES)
                         if self.context_features >> i & 1)
        return tuple(self.orders) + extra + match + contexts

    @property
    def context_feature_start(self) -> int:
        """Index of the first of the mix's context features: they come last in `features`."""
        return sum(1 for kind in self.features if kind < CONTEXT_FEATURE)

    def describe(self) -> dict:
        return asdict(self)


# ---- deterministic tables -------------------------------------------------------------------------

def build_tanh_table(dtype) -> np.ndarray:
    """tanh(x) at x = i / ACT_STEPS - ACT_RANGE (one spare entry for interpolation)."""
    n = int(2 * ACT_RANGE * ACT_STEPS) + 2
    table = np.empty(n, dtype=np.float64)
    for i in range(n):
        x = i / ACT_STEPS - ACT_RANGE
        table[i] = 1.0 - 2.0 / (1.0 + det_exp(2.0 * x))
    return table.astype(dtype)


def build_exp_table(dtype) -> np.ndarray:
    """exp(x) at x = i / EXP_STEPS - EXP_RANGE for x in [-EXP_RANGE, 0] (+ one spare entry)."""
    n = int(EXP_RANGE * EXP_STEPS) + 2
    table = np.empty(n, dtype=np.float64)
    for i in range(n):
        table[i] = det_exp(i / EXP_STEPS - EXP_RANGE)
    return table.astype(dtype)


def build_me_rate_table(p: RNNMEParams, dtype) -> np.ndarray:
    """Direct-connection step size of a row used n times: max(min, lr / (1 + n * decay))."""
    lr = p.me_lr_milli / 1000.0
    decay = p.me_decay_milli / 1000.0
    floor = p.me_min_milli / 1000.0
    rates = [max(floor, lr / (1.0 + n * decay)) for n in range(ME_COUNT_LIMIT + 1)]
    return np.array(rates, dtype=np.float64).astype(dtype)


# ---- the expert inside the predictor (ModelParams' rnnme_* fields) ------------------------------

# ModelParams.rnnme_features: bit k - 1 turns on byte order k (1..8); bits 8-9 hold word_feature
FEATURE_WORD_SHIFT = 8
DEFAULT_FEATURES = 0b111111 | (1 << FEATURE_WORD_SHIFT)  # orders 1-6 and the current word


def features_mask(orders: tuple, word_feature: int) -> int:
    mask = 0
    for order in orders:
        mask |= 1 << (order - 1)
    return mask | (word_feature << FEATURE_WORD_SHIFT)


def from_model(p) -> RNNMEParams:
    """The expert's settings from a ModelParams (its rnnme_* fields); the fields not in the header
    keep RNNMEParams' defaults.  With the expert off (rnnme_hidden = 0), a one-unit placeholder
    without direct connections: the predictor's arrays keep a minimal shape."""
    if not p.rnnme_hidden:
        return RNNMEParams(hidden=1, bptt=1, me_bits=0, orders=(), word_feature=0)
    mask = p.rnnme_features
    return RNNMEParams(
        hidden=p.rnnme_hidden, bptt=p.rnnme_bptt, me_bits=p.rnnme_me_bits,
        orders=tuple(k + 1 for k in range(8) if mask >> k & 1),
        word_feature=(mask >> FEATURE_WORD_SHIFT) & 3,
        lr_micro=p.rnnme_lr_micro, lr_min_micro=p.rnnme_lr_min_micro, lr_half=p.rnnme_lr_half,
        # branch expert4: the direct-connection rate schedule (0: RNNMEParams' default)
        me_lr_milli=p.rnnme_me_lr_milli or RNNMEParams.me_lr_milli,
        me_decay_milli=p.rnnme_me_decay_milli or RNNMEParams.me_decay_milli,
        me_min_milli=p.rnnme_me_min_milli or RNNMEParams.me_min_milli,
        match_feature=p.rnnme_match_feature, context_features=p.rnnme_context_features,
        cell=p.rnnme_cell, adam=1 if p.rnnme_adam else 2, input2=p.rnnme_input2,
        word_input_bits=p.rnnme_word_input_bits, word_prev=p.rnnme_word_input_prev,
        word_rows_zero=p.rnnme_word_rows_zero,
        me_ctx_total_milli=p.rnnme_me_ctx_total_milli or RNNMEParams.me_ctx_total_milli)


_TABLES = {}


def _shared_table(name, build, dtype):
    """The tanh/exp tables, built once per float type (det_exp in Python is slow-ish)."""
    key = (name, np.dtype(dtype).name)
    if key not in _TABLES:
        _TABLES[key] = build(dtype)
    return _TABLES[key].copy()


ARRAY_NAMES = ("cfg", "reg", "fp", "u1", "u2", "uw", "w", "vh", "bh", "vl", "bl", "me", "me_n",
               "me_rate", "hs", "hg", "hx", "act", "expt", "fh", "fbase_h", "fbase_l", "z", "ph",
               "pl", "scr", "scr64")
# the optimiser's moments: output layer (outopt), then the network (opt, with W's block gradient)
OUT_MOMENT_NAMES = ("mvh", "vvh", "mbh", "vbh", "mvl", "vvl", "mbl", "vbl")
NET_MOMENT_NAMES = ("mu1", "vu1", "mu2", "vu2", "muw", "vuw", "mw", "vw", "gw")
_MOMENT_OF = dict(zip(OUT_MOMENT_NAMES, ("vh", "vh", "bh", "bh", "vl", "vl", "bl", "bl")))
_MOMENT_OF.update(zip(NET_MOMENT_NAMES, ("u1", "u1", "u2", "u2", "uw", "uw", "w", "w", "w")))


def initial_arrays(p: RNNMEParams, me_count_dtype=np.uint16) -> dict:
    """The expert's starting arrays by name (ARRAY_NAMES, then the moment names), before the
    first byte's features are hashed.  me_count_dtype: the predictor keeps the use counts in
    int32 (its packed state has no 16-bit buffer); the values are the same."""
    dtype = np.float32 if p.float_bits == 32 else np.float64
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
    cfg[K_CELL] = p.cell
    cfg[K_WORD_PREV] = p.word_prev
    cfg[K_CTX_FIRST] = p.context_feature_start
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
    fp[F_ME_CTX_TOTAL] = p.me_ctx_total_milli / 1000.0
    fp[F_B1] = p.adam_b1_milli / 1000.0
    fp[F_1MB1] = (1000 - p.adam_b1_milli) / 1000.0
    fp[F_B2] = p.adam_b2_milli / 1000.0
    fp[F_1MB2] = (1000 - p.adam_b2_milli) / 1000.0
    fp[F_EPS] = ADAM_EPS
    fp[F_HALF] = 0.5
    nw = 1 << p.word_input_bits if p.word_input_bits else 1
    w_scale = 1.0 / h  # keeps |W s| ~ O(0.5) at any size
    # an LSTM's input and recurrent weights feed its four gates (input, forget, output, candidate:
    # 4H columns); its block buffer keeps per step h, c, tanh(c) and the gates (rnnme_lstm)
    gates = 4 * h if p.cell else h
    state_width = 7 * h if p.cell else h
    u1 = (deterministic_uniform(256 * gates, 11) * 0.5).astype(dtype).reshape(256, gates)
    if p.cell:
        u1[:, h : 2 * h] += 1  # forget gates start open (sigmoid(1) ~ 0.73), as usual for LSTMs
    a = dict(
        cfg=cfg,
        reg=np.zeros(REGISTER_SIZE, dtype=np.int64),
        fp=fp,
        u1=u1,
        u2=(deterministic_uniform((256 if p.input2 else 1) * gates, 12) * 0.5).astype(dtype)
        .reshape(-1, gates),
        uw=(np.zeros((nw, gates), dtype=dtype) if p.word_rows_zero else
            (deterministic_uniform(nw * gates, 13) * 0.5).astype(dtype).reshape(nw, gates)),
        w=(deterministic_uniform(h * gates, 14) * w_scale).astype(dtype).reshape(h, gates),
        vh=np.zeros((h, 16), dtype=dtype),
        bh=np.zeros(16, dtype=dtype),
        vl=np.zeros((16, h, 16), dtype=dtype),
        bl=np.zeros((16, 16), dtype=dtype),
        me=np.zeros(1 << p.me_bits if p.me_bits else 16, dtype=dtype),
        me_n=np.zeros(max(1, (1 << p.me_bits) >> 4) if p.me_bits else 1, dtype=me_count_dtype),
        me_rate=build_me_rate_table(p, dtype),
        hs=np.zeros((p.bptt + 2, state_width), dtype=dtype),
        hg=np.zeros((p.bptt + 2, h), dtype=dtype),
        hx=np.zeros((p.bptt + 2, 4), dtype=np.int64),  # a step's input rows: c1, c2, word, previous word
        act=_shared_table("tanh", build_tanh_table, dtype),
        expt=_shared_table("exp", build_exp_table, dtype),
        fh=np.zeros(MAX_FEATURES, dtype=np.int64),
        fbase_h=np.zeros(MAX_FEATURES, dtype=np.int64),
        fbase_l=np.zeros(MAX_FEATURES, dtype=np.int64),
        z=np.zeros(16, dtype=dtype),
        ph=np.zeros(16, dtype=dtype),
        pl=np.zeros(16, dtype=dtype),
        # scratch rows for the kernels (they allocate nothing: see jit.OPTIONS)
        scr=np.zeros((8, max(32, gates, MAX_FEATURES)), dtype=dtype),
        scr64=np.zeros((2, 32), dtype=np.float64),
    )
    # Adam's moment estimates, one per weight (1-element placeholders under SGD); W's gradient
    # summed over a BPTT block
    for name, of in _MOMENT_OF.items():
        # (np.zeros, not zeros_like, which writes its zeros: these pages stay untouched until used)
        a[name] = np.zeros(a[of].shape, dtype) if p.adam else np.zeros((1,) * a[of].ndim, dtype)
    return a
