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

from dataclasses import asdict, dataclass

import numpy as np
from numba import njit

from .detmath import det_exp

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
CONFIG_SIZE = 32
WORD_FEATURE = 32  # the current partial word (case-folded) + previous byte
WORD_PAIR_FEATURE = 33  # previous word + current partial word
MAX_FEATURES = CONFIG_SIZE - K_FEATS

# ---- indices into the int64 register array -----------------------------------------------------
R_POS = 0  # bytes learned
R_T = 1  # steps stored in the current BPTT block
R_C4 = 2  # last four bytes, most recent lowest
R_C8 = 3  # the four bytes before those
R_WORD = 4  # hash of the current partial word (0 between words)
R_WORD1 = 5  # hash of the previous word
R_HI = 6  # high nibble last predicted for (set by predict_low)
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
    lr_micro: int = 2000  # initial step size x 1e-6 (network and output layer)
    lr_min_micro: int = 300  # floor of the decaying rate
    lr_half: int = 100000  # the rate is lr / (1 + pos / lr_half)
    out_scale_milli: int = 1000  # output-layer rate relative to the network rate
    me_lr_milli: int = 500  # direct connections: rate me_lr / (1 + n * me_decay) for a row used n times
    me_decay_milli: int = 50
    me_min_milli: int = 50  # ... but at least this
    me_total_milli: int = 100000  # the rates of one byte's rows are scaled to sum at most this
    clip_milli: int = 15000  # hidden error clip
    float_bits: int = 32  # 32 or 64: the float type of the whole expert
    adam: int = 2  # network weights: 0 plain SGD, 1 Adam (no bias correction), 2 AdaMax
    adam_b1_milli: int = 900
    adam_b2_milli: int = 999

    def validate(self) -> "RNNMEParams":
        checks = [
            (1 <= self.hidden <= 1024, "hidden must be in 1..1024"),
            (1 <= self.bptt <= 256, "bptt must be in 1..256"),
            (self.me_bits == 0 or 8 <= self.me_bits <= 30, "me_bits must be 0 or 8..30"),
            (all(1 <= o <= 8 for o in self.orders), "orders must be in 1..8"),
            (self.word_feature in (0, 1, 2), "word_feature must be 0, 1 or 2"),
            (len(self.orders) + self.word_feature <= MAX_FEATURES, "too many features"),
            (self.input2 in (0, 1), "input2 must be 0 or 1"),
            (0 <= self.word_input_bits <= 24, "word_input_bits must be in 0..24"),
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
        return tuple(self.orders) + extra

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


def deterministic_uniform(count: int, seed: int) -> np.ndarray:
    """Uniform values in [-0.5, 0.5) from an integer hash (no platform RNG)."""
    idx = np.arange(count, dtype=np.uint64) + np.uint64(seed << 32)
    x = idx * np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(29)
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53) - 0.5


# ---- kernels ------------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def mix32(a, b):
    """32-bit hash of two values (operands masked to 32 bits so int64 never overflows)."""
    h = ((a & MASK32) * 0x2E2E7B3 + (b & MASK32) * 0x5BD1E995 + 0x3C6EF372) & MASK32
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & MASK32
    h ^= h >> 12
    h = (h * 0x297A2D39) & MASK32
    h ^= h >> 15
    return h


@njit(cache=True, inline="always")
def table_tanh(fp, act, x):
    t = (x + fp[F_ACT_LO]) * fp[F_ACT_STEPS]
    if t <= fp[F_ZERO]:
        return act[0]
    last = act.shape[0] - 2
    ti = np.floor(t)  # exact, and stays in the table's float type
    i = int(ti)
    if i >= last:
        return act[last]
    f = t - ti
    return act[i] + (act[i + 1] - act[i]) * f


@njit(cache=True, inline="always")
def table_exp(fp, expt, x):
    """exp(x) for x <= 0 (x below the table's range reads as its first entry)."""
    t = (x + fp[F_EXP_LO]) * fp[F_EXP_STEPS]
    if t <= fp[F_ZERO]:
        return expt[0]
    last = expt.shape[0] - 2
    ti = np.floor(t)
    i = int(ti)
    if i >= last:
        return expt[last]
    f = t - ti
    return expt[i] + (expt[i + 1] - expt[i]) * f


@njit(cache=True, inline="always")
def adam_row(fp, lr, w, m, v, g, mode):
    """One Adam step (ascent along g, no bias correction) for each element of a weight row;
    mode 2 is AdaMax (v tracks max |g| instead of g^2: no square root at all)."""
    b1 = fp[F_B1]
    omb1 = fp[F_1MB1]
    b2 = fp[F_B2]
    omb2 = fp[F_1MB2]
    eps = fp[F_EPS]
    for i in range(w.shape[0]):
        gi = g[i]
        mi = b1 * m[i] + omb1 * gi
        m[i] = mi
        if mode == 2:
            vi = b2 * v[i]
            ag = abs(gi)
            if ag > vi:
                vi = ag
            v[i] = vi
            w[i] += (lr * mi) / (vi + eps)
        else:
            # sqrt is an IEEE-754 basic operation (correctly rounded everywhere), not libm
            vi = b2 * v[i] + omb2 * (gi * gi)
            v[i] = vi
            w[i] += (lr * mi) / (np.sqrt(vi) + eps)


@njit(cache=True)
def softmax16(fp, expt, z, p):
    mx = z[0]
    for c in range(1, 16):
        if z[c] > mx:
            mx = z[c]
    total = fp[F_ZERO]
    for c in range(16):
        e = table_exp(fp, expt, z[c] - mx)
        p[c] = e
        total += e
    for c in range(16):
        p[c] = p[c] / total


@njit(cache=True)
def feature_hashes(cfg, reg, fh):
    """Hash of each direct-connection feature for the byte about to be coded."""
    c4 = reg[R_C4]
    c8 = reg[R_C8]
    for f in range(cfg[K_NFEAT]):
        kind = cfg[K_FEATS + f]
        if kind <= 4:
            h = mix32(kind, c4 & ((1 << (8 * kind)) - 1))
        elif kind <= 8:
            h = mix32(mix32(kind, c4), c8 & ((1 << (8 * (kind - 4))) - 1))
        elif kind == WORD_FEATURE:
            h = mix32(mix32(WORD_FEATURE, reg[R_WORD]), c4 & 0xFF)
        else:
            h = mix32(mix32(WORD_PAIR_FEATURE, reg[R_WORD1]), reg[R_WORD])
        fh[f] = h


@njit(cache=True)
def output_logits(cfg, s, vout, bout, me, fbase, z):
    """z[c] = b[c] + sum_k V[k, c] s[k] + sum_f me[fbase[f] + c]   (k ascending, then f ascending)."""
    nh = cfg[K_H]
    for c in range(16):
        z[c] = bout[c]
    for k in range(nh):
        sk = s[k]
        for c in range(16):
            z[c] += vout[k, c] * sk
    for f in range(fbase.shape[0]):
        base = fbase[f]
        for c in range(16):
            z[c] += me[base + c]


@njit(cache=True)
def predict_high(st, out):
    """The high nibble's 16 probabilities for the next byte (normalised) into out."""
    (cfg, reg, fp, u1, u2, uw, w, vh, bh, vl, bl, me, me_n, me_rate, hs, hg, hx, act, expt,
     fh, fbase_h, fbase_l, z, ph, pl, outopt, opt) = st
    t = reg[R_T]
    mask = cfg[K_ME_MASK]
    for f in range(cfg[K_NFEAT]):
        fbase_h[f] = (fh[f] << 4) & mask
    output_logits(cfg, hs[t], vh, bh, me, fbase_h[: cfg[K_NFEAT]], z)
    softmax16(fp, expt, z, ph)
    for c in range(16):
        out[c] = ph[c]


@njit(cache=True)
def predict_low(st, hi, out):
    """The low nibble's 16 probabilities given the high nibble hi (normalised) into out."""
    (cfg, reg, fp, u1, u2, uw, w, vh, bh, vl, bl, me, me_n, me_rate, hs, hg, hx, act, expt,
     fh, fbase_h, fbase_l, z, ph, pl, outopt, opt) = st
    t = reg[R_T]
    mask = cfg[K_ME_MASK]
    for f in range(cfg[K_NFEAT]):
        fbase_l[f] = (mix32(fh[f], hi + 1) << 4) & mask
    reg[R_HI] = hi
    output_logits(cfg, hs[t], vl[hi], bl[hi], me, fbase_l[: cfg[K_NFEAT]], z)
    softmax16(fp, expt, z, pl)
    for c in range(16):
        out[c] = pl[c]


@njit(cache=True)
def train_softmax(cfg, fp, s, g, vout, bout, mv, vv, mb, vb, me, me_n, me_rate, fbase, p, target,
                  lr_out):
    """One softmax's cross-entropy step: error e = onehot(target) - p.  Adds V e to the hidden
    error g (with V before its update), then updates V, the bias and the direct connections."""
    nh = cfg[K_H]
    e = np.empty(16, dtype=p.dtype)
    el = np.empty(16, dtype=p.dtype)
    for c in range(16):
        e[c] = -p[c]
    e[target] = fp[F_ONE] - p[target]
    for c in range(16):
        el[c] = lr_out * e[c]
    for k in range(nh):
        acc = g[k]
        for c in range(16):
            acc += vout[k, c] * e[c]
        g[k] = acc
    adam = cfg[K_ADAM]
    if adam:
        grow = np.empty(16, dtype=p.dtype)
        for k in range(nh):
            sk = s[k]
            for c in range(16):
                grow[c] = e[c] * sk
            adam_row(fp, lr_out, vout[k], mv[k], vv[k], grow, adam)
        adam_row(fp, lr_out, bout, mb, vb, e, adam)
    else:
        for k in range(nh):
            sk = s[k]
            for c in range(16):
                vout[k, c] += el[c] * sk
        for c in range(16):
            bout[c] += el[c]
    # direct connections: each row's rate decays with its use count; when the rows' rates sum
    # to more than F_ME_TOTAL they are scaled down to that sum, so a byte whose contexts are all
    # fresh moves its logits by at most F_ME_TOTAL * e (no overshoot), and the step goes mostly to
    # the rows that know least
    nf = fbase.shape[0]
    rates = np.empty(max(nf, 1), dtype=p.dtype)
    total = fp[F_ZERO]
    for f in range(nf):
        row = fbase[f] >> 4
        n = me_n[row]
        rates[f] = me_rate[n]
        total += rates[f]
        if n < me_rate.shape[0] - 1:
            me_n[row] = n + 1
    scale = fp[F_ONE]
    if total > fp[F_ME_TOTAL]:
        scale = fp[F_ME_TOTAL] / total
    for f in range(nf):
        base = fbase[f]
        rate = rates[f] * scale
        for c in range(16):
            me[base + c] += rate * e[c]


@njit(cache=True)
def bptt_block(cfg, reg, fp, u1, u2, uw, w, hs, hg, hx, opt):
    """Back-propagate the stored hidden errors through the block (newest step first), updating
    W and the input rows; then start a new block from the last state.  SGD updates W at each
    step (after propagating through it); Adam sums W's gradient over the block and steps once,
    and steps each input row at each step."""
    (mu1, vu1, mu2, vu2, muw, vuw, mw, vw, gw) = opt
    adam = cfg[K_ADAM]
    nh = cfg[K_H]
    steps = reg[R_T]
    lr = fp[F_LR]
    one = fp[F_ONE]
    clip = fp[F_CLIP]
    dn = np.zeros(nh, dtype=hs.dtype)  # error reaching step t from step t + 1
    d = np.empty(nh, dtype=hs.dtype)
    dl = np.empty(nh, dtype=hs.dtype)
    for t in range(steps, 0, -1):
        for k in range(nh):
            sk = hs[t, k]
            dk = (hg[t, k] + dn[k]) * (one - sk * sk)
            if dk > clip:
                dk = clip
            elif dk < -clip:
                dk = -clip
            d[k] = dk
        # the error for step t - 1 goes through W before this step's update
        for m in range(nh):
            acc = fp[F_ZERO]
            for k in range(nh):
                acc += w[m, k] * d[k]
            dn[m] = acc
        if adam:
            for m in range(nh):
                sm = hs[t - 1, m]
                for k in range(nh):
                    gw[m, k] += d[k] * sm
            c1 = hx[t, 0]
            adam_row(fp, lr, u1[c1], mu1[c1], vu1[c1], d, adam)
            if cfg[K_INPUT2]:
                c2 = hx[t, 1]
                adam_row(fp, lr, u2[c2], mu2[c2], vu2[c2], d, adam)
            if cfg[K_WORD_MASK]:
                wr = hx[t, 2]
                adam_row(fp, lr, uw[wr], muw[wr], vuw[wr], d, adam)
            continue
        for k in range(nh):
            dl[k] = lr * d[k]
        for m in range(nh):
            sm = hs[t - 1, m]
            for k in range(nh):
                w[m, k] += dl[k] * sm
        row = u1[hx[t, 0]]
        for k in range(nh):
            row[k] += dl[k]
        if cfg[K_INPUT2]:
            row = u2[hx[t, 1]]
            for k in range(nh):
                row[k] += dl[k]
        if cfg[K_WORD_MASK]:
            row = uw[hx[t, 2]]
            for k in range(nh):
                row[k] += dl[k]
    if adam:
        for m in range(nh):
            adam_row(fp, lr, w[m], mw[m], vw[m], gw[m], adam)
            for k in range(nh):
                gw[m, k] = fp[F_ZERO]
    for k in range(nh):
        hs[0, k] = hs[steps, k]
    for t in range(steps + 1):
        for k in range(nh):
            hg[t, k] = fp[F_ZERO]
    reg[R_T] = 0


@njit(cache=True)
def forward(cfg, reg, fp, u1, u2, uw, w, hs, hx, act):
    """s(t+1) = tanh(U1[c1] + U2[c2] + Uw[word] + sum_m W[m, .] s(t)[m]) into the block buffer."""
    nh = cfg[K_H]
    t = reg[R_T]
    c1 = reg[R_C4] & 0xFF
    c2 = (reg[R_C4] >> 8) & 0xFF
    wrow = reg[R_WORD] & cfg[K_WORD_MASK]
    a = np.empty(nh, dtype=hs.dtype)
    for k in range(nh):
        a[k] = u1[c1, k]
    if cfg[K_INPUT2]:
        for k in range(nh):
            a[k] += u2[c2, k]
    if cfg[K_WORD_MASK]:
        for k in range(nh):
            a[k] += uw[wrow, k]
    for m in range(nh):
        sm = hs[t, m]
        for k in range(nh):
            a[k] += w[m, k] * sm
    for k in range(nh):
        hs[t + 1, k] = table_tanh(fp, act, a[k])
    hx[t + 1, 0] = c1
    hx[t + 1, 1] = c2
    hx[t + 1, 2] = wrow
    reg[R_T] = t + 1


@njit(cache=True)
def learn_byte(st, byte):
    """Train on the byte just coded (after predict_high and predict_low(byte >> 4)), then advance
    the network and the features to the next byte."""
    (cfg, reg, fp, u1, u2, uw, w, vh, bh, vl, bl, me, me_n, me_rate, hs, hg, hx, act, expt,
     fh, fbase_h, fbase_l, z, ph, pl, outopt, opt) = st
    nf = cfg[K_NFEAT]
    t = reg[R_T]
    hi = byte >> 4
    lr_out = fp[F_LR] * fp[F_OUT_SCALE]
    (mvh, vvh, mbh, vbh, mvl, vvl, mbl, vbl) = outopt
    train_softmax(cfg, fp, hs[t], hg[t], vh, bh, mvh, vvh, mbh, vbh, me, me_n, me_rate,
                  fbase_h[:nf], ph, hi, lr_out)
    oh = hi if cfg[K_ADAM] else 0  # (the moments are 1-element placeholders under SGD)
    train_softmax(cfg, fp, hs[t], hg[t], vl[hi], bl[hi], mvl[oh], vvl[oh], mbl[oh], vbl[oh], me,
                  me_n, me_rate, fbase_l[:nf], pl, byte & 15, lr_out)
    # byte-level registers
    pos = reg[R_POS] + 1
    reg[R_POS] = pos
    reg[R_C8] = ((reg[R_C8] << 8) | (reg[R_C4] >> 24)) & MASK32
    reg[R_C4] = ((reg[R_C4] << 8) | byte) & MASK32
    c = byte
    if 65 <= c <= 90:
        c += 32
    if (97 <= c <= 122) or c >= 128:
        reg[R_WORD] = mix32(reg[R_WORD] + 1, c)
    elif reg[R_WORD] != 0:
        reg[R_WORD1] = reg[R_WORD]
        reg[R_WORD] = 0
    # learning-rate schedule: lr0 / (1 + pos / half), floored (float64, then stored in the
    # model's float type)
    lr = fp[F_LR0] * cfg[K_LR_HALF] / (cfg[K_LR_HALF] + pos)
    if lr < fp[F_LR_MIN]:
        lr = fp[F_LR_MIN]
    fp[F_LR] = lr
    if t >= cfg[K_BPTT]:
        bptt_block(cfg, reg, fp, u1, u2, uw, w, hs, hg, hx, opt)
    forward(cfg, reg, fp, u1, u2, uw, w, hs, hx, act)
    feature_hashes(cfg, reg, fh)


@njit(cache=True)
def run_known(st, data, probs, dists):
    """Code `data` without a coder: probs[i] = P(data[i]); dists[i] (if dists has rows) = the
    high nibble's 16 probabilities followed by the low nibble's given the actual high nibble."""
    ph = np.empty(16)
    pl = np.empty(16)
    keep = dists.shape[0] > 0
    for i in range(data.shape[0]):
        byte = data[i]
        predict_high(st, ph)
        predict_low(st, byte >> 4, pl)
        probs[i] = ph[byte >> 4] * pl[byte & 15]
        if keep:
            for c in range(16):
                dists[i, c] = ph[c]
                dists[i, 16 + c] = pl[c]
        learn_byte(st, byte)


@njit(cache=True)
def node_probabilities(p16, out):
    """For a binary-node mixer: out[j] = P(bit 1 at heap node j) for the nodes 1..15 of a nibble
    tree (node j's children are 2j for bit 0 and 2j + 1 for bit 1; leaf 16 + v is nibble v),
    i.e. the mass under the 1-child over the mass under j (out[0] is unused).  Float64 sums in a
    fixed order: deterministic."""
    tree = np.empty(32)
    for v in range(16):
        tree[16 + v] = p16[v]
    for j in range(15, 0, -1):
        tree[j] = tree[2 * j] + tree[2 * j + 1]
    out[0] = 0.0
    for j in range(1, 16):
        out[j] = tree[2 * j + 1] / tree[j]


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
