"""Numba kernels of the RNNME predictor.

The model predicts a byte as two 16-way symbols (high nibble, then low nibble): Mikolov's
class-factorised output, where each 16-way distribution is itself a binary tree of 15 logistic
nodes (hierarchical softmax).  Every node's logit mixes:

* hashed maximum-entropy "direct connections": one hashed slot per context and nibble holds the
  node's bit-history state, mapped to a probability by a per-context adaptive table;
* an order-0 node probability and a match model that follows the longest recent repeat;
* the recurrent part: V[node] . s(t), with s(t) = sigmoid(U[byte] + W s(t-1)), trained online by
  truncated back-propagation through time;

in a gated linear mixer (weights chosen by the node) whose output two adaptive probability maps
refine.  All integer arithmetic except the recurrent layer, which uses float64 with a fixed
operation order and no fastmath, so results are identical on every target.

All state lives in flat arrays owned by `nncompress.model.predictor.Predictor`; `step` is the only
entry point from Python: it learns the nibble just coded and predicts the next one.  Encoder and
decoder both go through it.
"""

import numpy as np
from numba import njit

# ---- indices into the int64 config array (read-only) ------------------------------------------
C_NCTX = 0
C_TBITS = 1
C_MATCH_MIN = 2
C_MATCH_BITS = 3
C_HIST_BITS = 4
C_RNN_H = 5
C_RNN_BPTT = 6
C_MIXER_LR = 7
C_MIXER_SETS = 8
C_APM_RATE = 9
C_NINPUTS = 10
C_CTX_INPUTS = 11  # mixer inputs per context (1..3)
C_NSEL = 12  # number of first-layer mixers (weight-set selectors)
C_LR_BOOST = 13  # extra mixer step size for fresh weight sets
C_LR_DECAY = 14  # weight-set updates over which the boost halves
C_FINAL_LR = 15  # step size of the final mixer
C_KINDS = 16  # C_KINDS + i: kind of context i
C_SEL_KIND = 48  # C_SEL_KIND + k: selector kind of first-layer mixer k
C_SEL_BASE = 56  # C_SEL_BASE + k: first weight row of mixer k
C_APM_W = 64  # C_APM_W + 0..2: final weights of mixer, APM1, APM2 (sum 16)
C_SM_LIMIT = 67  # count limit of the bit-history probability tables
CONFIG_SIZE = 72

# selector kinds (bit numbers of ModelParams.mixer_select); rows each needs
SEL_C0 = 0  # partial byte
SEL_MATCH = 1  # match length bucket x expected bit
SEL_C1 = 2  # previous byte x partial byte
SEL_SEEN = 3  # how many contexts have seen this node x node
SEL_RNN = 4  # sign pattern of four recurrent units x partial byte
SEL_C2 = 5  # byte two back x partial byte
SEL_CLS = 6  # character classes of the last three bytes x partial byte
SEL_RUNS = 7  # classes of the last three same-class runs x partial byte
SEL_ROWS = (256, 96, 65536, 1056, 4096, 65536, 1 << 17, 1 << 17)  # SEL_SEEN: (32 + 1) x 32
MAX_SEL = 8
WEIGHT_LIMIT = 1 << 22

# ---- indices into the int64 register array (mutable scalars) -----------------------------------
R_POS = 0  # bytes seen
R_C4 = 1  # last four bytes, most recent in the low byte
R_C8 = 2  # the four bytes before those
R_NIBBLE = 3  # 0: the high nibble is predicted next, 1: the low nibble
R_HI = 4  # high nibble of the byte being coded
R_WORD = 5  # hash of the current partial word (0 between words)
R_WORD1 = 6  # hash of the previous word
R_MATCH_PTR = 7  # position in history of the predicted next byte
R_MATCH_LEN = 8  # length of the current repeat (0: none)
R_RNN_T = 9  # steps stored in the current BPTT block
R_COLUMN = 10  # bytes since the last newline
R_LINE_START = 11  # position of the start of the current line
R_PREV_LINE_START = 12  # position of the start of the previous line
R_WORD_PREFIX = 13  # byte before the current word began
R_MATCH_BYTE = 14  # the byte the match model predicts (valid when R_MATCH_LEN > 0)
R_WORD2 = 15  # hash of the word before the previous one
R_CLASSES = 16  # character classes of the last eight bytes, 3 bits each, most recent lowest
R_CLASS_RUNS = 17  # the class of each of the last ten runs of same-class bytes, 3 bits each
REGISTER_SIZE = 18

MASK32 = 0xFFFFFFFF


@njit(cache=True, inline="always")
def hash2(a, b):
    """32-bit mix of two 32-bit values (operands kept below 2^63 so int64 never overflows)."""
    h = ((a & MASK32) * 0x2E2E7B3 + (b & MASK32) * 0x5BD1E995 + 0x3C6EF372) & MASK32
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & MASK32
    h ^= h >> 12
    h = (h * 0x297A2D39) & MASK32
    h ^= h >> 15
    return h


@njit(cache=True, inline="always")
def squash_lookup(squash, x):
    if x > 2047:
        x = 2047
    if x < -2047:
        x = -2047
    return squash[x + 2048]


@njit(cache=True, inline="always")
def node_c0(nibble, hi, j):
    """The partial byte (with a leading 1 bit) at node j (1..15) of the given nibble."""
    d = 0
    while (j >> (d + 1)) != 0:
        d += 1
    root = 1 if nibble == 0 else 16 + hi
    return (root << d) | (j - (1 << d))


@njit(cache=True, inline="always")
def counter_update(p, n, k, bit, recip, limit):
    """Adaptive-rate probability counter: step 1/(n+1.5), n capped at `limit`."""
    target = bit << 22
    v = p[k] + (((target - p[k]) >> 6) * recip[n[k]] >> 10)
    # the floored shift can overshoot below 0 for small limits (fast rates): clamp, or the
    # stretch lookup of a near-certain 0 would read as a near-certain 1
    p[k] = v if v > 0 else 0
    if n[k] < limit:
        n[k] += 1


@njit(cache=True)
def lookup_slot(table, h):
    """Find or claim the 16-byte slot for hash h: 4-way bucket, 8-bit check, evict least seen."""
    nslots = table.shape[0] >> 4
    check = (h >> 24) & 255
    base = (h & (nslots - 1)) & ~3
    for k in range(4):
        off = (base + k) << 4
        if table[off] == check:
            return off
    return -1


@njit(cache=True)
def claim_slot(table, h, priority):
    off = lookup_slot(table, h)
    if off >= 0:
        return off
    nslots = table.shape[0] >> 4
    check = (h >> 24) & 255
    base = (h & (nslots - 1)) & ~3
    best = base << 4
    best_pri = 1 << 30
    for k in range(4):
        off = (base + k) << 4
        pri = priority[table[off + 1]]
        if pri < best_pri:
            best_pri = pri
            best = off
    for k in range(16):
        table[best + k] = 0
    table[best] = check
    return best


@njit(cache=True)
def byte_context_hashes(cfg, reg, hist, ctx_hash, ind):
    """Hash of each context for the byte about to be coded."""
    nctx = cfg[C_NCTX]
    c4 = reg[R_C4]
    c8 = reg[R_C8]
    pos = reg[R_POS]
    hmask = (1 << cfg[C_HIST_BITS]) - 1
    for i in range(nctx):
        kind = cfg[C_KINDS + i]
        if kind <= 4:
            h = hash2(kind, c4 & ((1 << (8 * kind)) - 1))
        elif kind <= 8:
            h = hash2(hash2(kind, c4), c8 & ((1 << (8 * (kind - 4))) - 1))
        elif kind <= 16:
            h = hash2(hash2(kind, c4), c8)
            for k in range(8, kind):
                b = hist[(pos - 1 - k) & hmask] if pos - 1 - k >= 0 else 0
                h = hash2(h, b)
        elif kind == 32:
            w = reg[R_WORD]
            h = hash2(32, w) if w != 0 else hash2(320, c4 & 0xFF)
        elif kind == 33:
            h = hash2(hash2(33, reg[R_WORD1]), reg[R_WORD])
        elif kind == 34:
            h = hash2(34, c4 & 0xFFFF00)
        elif kind == 35:
            h = hash2(35, c4 & 0xFF00FF)
        elif kind == 36:
            col = reg[R_COLUMN]
            above = 0
            if reg[R_PREV_LINE_START] + col < reg[R_LINE_START]:
                above = hist[(reg[R_PREV_LINE_START] + col) & hmask]
            h = hash2(hash2(36, min(col, 255)), above | ((c4 & 0xFF) << 8))
        elif kind == 37:
            h = hash2(hash2(37, reg[R_WORD]), reg[R_WORD_PREFIX] | ((c4 & 0xFF) << 8))
        elif kind == 38:
            h = hash2(hash2(hash2(38, reg[R_WORD2]), reg[R_WORD1]), reg[R_WORD])
        elif kind == 39:
            h = hash2(hash2(39, reg[R_WORD2]), reg[R_WORD])
        elif kind == 40:  # indirect: previous byte + the two bytes that followed it last
            h = hash2(hash2(40, c4 & 0xFF), ind[c4 & 0xFF])
        elif kind == 41:  # indirect: last two bytes + the two bytes that followed them last
            h = hash2(hash2(41, c4 & 0xFFFF), ind[256 + (c4 & 0xFFFF)])
        elif kind == 42:  # classes of the last six bytes + previous byte
            h = hash2(hash2(42, reg[R_CLASSES] & 0x3FFFF), c4 & 0xFF)
        elif kind == 44:  # current word + classes of the last four bytes
            h = hash2(hash2(44, reg[R_WORD]), reg[R_CLASSES] & 0xFFF)
        elif kind == 46:  # classes of the last eight bytes
            h = hash2(46, reg[R_CLASSES])
        elif kind == 49:  # classes of the last ten same-class runs
            h = hash2(49, reg[R_CLASS_RUNS])
        elif kind == 50:  # classes of the last six same-class runs + previous byte
            h = hash2(hash2(50, reg[R_CLASS_RUNS] & 0x3FFFF), c4 & 0xFF)
        else:  # 51 current word + classes of the last four runs
            h = hash2(hash2(51, reg[R_CLASS_RUNS] & 0xFFF), reg[R_WORD])
        ctx_hash[i] = h


@njit(cache=True)
def claim_nibble_slots(cfg, reg, tables, ctx_hash, slots, priority):
    nibble = reg[R_NIBBLE]
    salt = 0 if nibble == 0 else 1 + reg[R_HI]
    for i in range(cfg[C_NCTX]):
        slots[i] = claim_slot(tables[i], hash2(ctx_hash[i], salt), priority)


@njit(cache=True)
def rnn_sigmoid(sig, x):
    # table over [-16, 16), 128 steps per unit, linear interpolation
    t = (x + 16.0) * 128.0
    if t <= 0.0:
        return sig[0]
    if t >= sig.shape[0] - 2:
        return sig[sig.shape[0] - 2]
    i = int(t)
    f = t - i
    return sig[i] + (sig[i + 1] - sig[i]) * f


@njit(cache=True)
def rnn_forward(cfg, reg, rnn_u, rnn_w, rnn_s, rnn_x, sig, byte):
    """s(t) = sigmoid(U[byte] + W s(t-1)) into the next row of the block buffer."""
    nh = cfg[C_RNN_H]
    t = reg[R_RNN_T]
    for k in range(nh):
        acc = rnn_u[byte, k]
        for m in range(nh):
            acc += rnn_w[k, m] * rnn_s[t, m]
        rnn_s[t + 1, k] = rnn_sigmoid(sig, acc)
    rnn_x[t + 1] = byte
    reg[R_RNN_T] = t + 1


@njit(cache=True)
def rnn_bptt(cfg, reg, rnn_u, rnn_w, rnn_s, rnn_x, rnn_g, lr):
    """Block back-propagation through time over the stored steps, then start a new block."""
    nh = cfg[C_RNN_H]
    steps = reg[R_RNN_T]
    delta_next = np.zeros(nh)
    delta = np.zeros(nh)
    for t in range(steps, 0, -1):
        for k in range(nh):
            g = rnn_g[t, k]
            for m in range(nh):
                g += rnn_w[m, k] * delta_next[m]
            s = rnn_s[t, k]
            d = g * s * (1.0 - s)
            if d > 15.0:
                d = 15.0
            elif d < -15.0:
                d = -15.0
            delta[k] = d
        # weight updates use the pre-update W for the propagated error above (computed first)
        for k in range(nh):
            dk = lr * delta[k]
            rnn_u[rnn_x[t], k] += dk
            for m in range(nh):
                rnn_w[k, m] += dk * rnn_s[t - 1, m]
        for k in range(nh):
            delta_next[k] = delta[k]
    for k in range(nh):
        rnn_s[0, k] = rnn_s[steps, k]
    for t in range(steps + 1):
        for k in range(nh):
            rnn_g[t, k] = 0.0
    reg[R_RNN_T] = 0


@njit(cache=True)
def apm_predict(table, row, st):
    """Interpolate a 33-point adaptive map at stretch value st; returns (p12, low index, weight)."""
    s = st + 2048
    lo = s >> 7
    w = s & 127
    p = (table[row, lo] * (128 - w) + table[row, lo + 1] * w) >> 11
    if p < 1:
        p = 1
    elif p > 4095:
        p = 4095
    return p, lo, w


@njit(cache=True)
def apm_update(table, row, lo, w, bit, rate):
    target = bit << 16
    table[row, lo] += ((target - table[row, lo]) * (128 - w)) >> (7 + rate)
    table[row, lo + 1] += ((target - table[row, lo + 1]) * w) >> (7 + rate)


@njit(cache=True)
def match_expected_bit(reg, nibble, hi, j):
    """Expected bit at node j if the match model's predicted byte agrees with the path so far."""
    if reg[R_MATCH_LEN] == 0:
        return -1
    mb = reg[R_MATCH_BYTE]
    if nibble == 1 and (mb >> 4) != hi:
        return -1
    d = 0
    while (j >> (d + 1)) != 0:
        d += 1
    half = mb & 15 if nibble == 1 else mb >> 4
    if (half >> (4 - d)) != j - (1 << d):
        return -1
    return (half >> (3 - d)) & 1



@njit(cache=True, inline="always")
def match_bucket(length):
    if length < 16:
        return length
    b = 16 + ((length - 16) >> 2)
    return b if b < 31 else 31


@njit(cache=True)
def predict_nibble(cfg, reg, tables, slots, sm_p, mixw, mixn, fmixw, o0_p, msm_p, apm1, apm2,
                   rnn_v, rnn_b, rnn_s, squash, stretch, state_det, inputs, node_row, node_sx,
                   node_sp, node_pmix, node_apm, node_p, node_z, out):
    nctx = cfg[C_NCTX]
    ninputs = cfg[C_NINPUTS]
    nh = cfg[C_RNN_H]
    ci = cfg[C_CTX_INPUTS]
    nsel = cfg[C_NSEL]
    nibble = reg[R_NIBBLE]
    hi = reg[R_HI]
    c1 = reg[R_C4] & 0xFF
    c2 = (reg[R_C4] >> 8) & 0xFF
    t = reg[R_RNN_T]
    mlen = reg[R_MATCH_LEN]
    rnn_pat = 0
    for k in range(min(nh, 4)):
        if rnn_s[t, k] > 0.5:
            rnn_pat |= 1 << k
    for j in range(1, 16):
        c0 = node_c0(nibble, hi, j)
        n = 0
        seen = 0
        for i in range(nctx):
            s = tables[i, slots[i] + j]
            p12 = sm_p[i, s] >> 10
            st = stretch[p12]
            inputs[j, n] = st
            n += 1
            if ci >= 2:
                inputs[j, n] = st * state_det[s]
                n += 1
            if ci >= 3:
                inputs[j, n] = (p12 - 2048) >> 2
                n += 1
            if s != 0:
                seen += 1
        inputs[j, n] = stretch[o0_p[c0] >> 10]
        n += 1
        eb = -1
        if cfg[C_MATCH_MIN] > 0:
            eb = match_expected_bit(reg, nibble, hi, j)
            if eb >= 0:
                inputs[j, n] = stretch[msm_p[match_bucket(mlen) * 2 + eb] >> 10]
            else:
                inputs[j, n] = 0
            n += 1
        if nh > 0:
            z = rnn_b[c0]
            for k in range(nh):
                z += rnn_v[c0, k] * rnn_s[t, k]
            node_z[j] = z
            zi = z * 256.0
            if zi > 2047.0:
                zi = 2047.0
            elif zi < -2047.0:
                zi = -2047.0
            inputs[j, n] = int(zi)
            n += 1
        inputs[j, n] = 256  # bias
        fdot = 0
        for m in range(nsel):
            kind = cfg[C_SEL_KIND + m]
            if kind == SEL_C0:
                row = c0
            elif kind == SEL_MATCH:
                row = (match_bucket(mlen) if mlen > 0 else 0) * 3 + eb + 1
            elif kind == SEL_C1:
                row = (c1 << 8) | c0
            elif kind == SEL_SEEN:
                row = (seen << 5) | (nibble << 4) | j
            elif kind == SEL_RNN:
                row = (rnn_pat << 8) | c0
            elif kind == SEL_C2:
                row = (c2 << 8) | c0
            elif kind == SEL_CLS:
                row = ((reg[R_CLASSES] & 0x1FF) << 8) | c0
            else:
                row = ((reg[R_CLASS_RUNS] & 0x1FF) << 8) | c0
            row += cfg[C_SEL_BASE + m]
            node_row[j, m] = row
            dot = 0
            for i in range(ninputs):
                dot += mixw[row, i] * inputs[j, i]
            dot >>= 16
            if dot > 2047:
                dot = 2047
            elif dot < -2047:
                dot = -2047
            node_sx[j, m] = dot
            node_sp[j, m] = squash[dot + 2048]
            fdot += fmixw[c0, m] * dot
        if nsel > 1:
            pm = squash_lookup(squash, fdot >> 16)
        else:
            pm = node_sp[j, 0]
        node_pmix[j] = pm
        st = stretch[pm]
        row1 = c0 if apm1.shape[0] == 256 else (c1 << 8) | c0
        p1, lo1, w1 = apm_predict(apm1, row1, st)
        row2 = hash2(c0, c1 | (c2 << 8)) & (apm2.shape[0] - 1)
        p2, lo2, w2 = apm_predict(apm2, row2, st)
        node_apm[j, 0] = lo1
        node_apm[j, 1] = w1
        node_apm[j, 5] = row1
        node_apm[j, 2] = row2
        node_apm[j, 3] = lo2
        node_apm[j, 4] = w2
        p = (pm * cfg[C_APM_W] + p1 * cfg[C_APM_W + 1] + p2 * cfg[C_APM_W + 2] + 8) >> 4
        if p < 1:
            p = 1
        elif p > 4095:
            p = 4095
        node_p[j] = p
    for v in range(16):
        j = 1
        prob = 1.0
        for d in range(4):
            bit = (v >> (3 - d)) & 1
            pj = node_p[j]
            prob *= pj if bit == 1 else 4096 - pj
            j = 2 * j + bit
        out[v] = prob


@njit(cache=True)
def learn_nibble(cfg, reg, tables, slots, sm_p, sm_n, mixw, mixn, fmixw, o0_p, o0_n, msm_p,
                 msm_n, apm1, apm2, rnn_v, rnn_b, rnn_s, rnn_g, rnn_lr, next_state, recip, sig,
                 inputs, node_row, node_sx, node_sp, node_pmix, node_apm, node_z, value):
    nctx = cfg[C_NCTX]
    ninputs = cfg[C_NINPUTS]
    nh = cfg[C_RNN_H]
    nsel = cfg[C_NSEL]
    nibble = reg[R_NIBBLE]
    hi = reg[R_HI]
    lr16 = cfg[C_MIXER_LR] * 16
    boost16 = cfg[C_LR_BOOST] * 16
    decay = cfg[C_LR_DECAY]
    flr = cfg[C_FINAL_LR]
    rate = cfg[C_APM_RATE]
    smlim = cfg[C_SM_LIMIT]
    mlen = reg[R_MATCH_LEN]
    t = reg[R_RNN_T]
    j = 1
    for d in range(4):
        bit = (value >> (3 - d)) & 1
        c0 = node_c0(nibble, hi, j)
        for i in range(nctx):
            off = slots[i] + j
            s = tables[i, off]
            counter_update(sm_p[i], sm_n[i], s, bit, recip, smlim)
            tables[i, off] = next_state[s, bit]
        counter_update(o0_p, o0_n, c0, bit, recip, 255)
        if cfg[C_MATCH_MIN] > 0:
            eb = match_expected_bit(reg, nibble, hi, j)
            if eb >= 0:
                counter_update(msm_p, msm_n, match_bucket(mlen) * 2 + eb, bit, recip, 1023)
        for m in range(nsel):
            row = node_row[j, m]
            cnt = mixn[row]
            r = lr16
            if boost16 > 0:
                r += boost16 * decay // (decay + cnt)
            if cnt < 65535:
                mixn[row] = cnt + 1
            err = ((bit << 12) - node_sp[j, m]) * r
            for i in range(ninputs):
                w = mixw[row, i] + ((inputs[j, i] * err + (1 << 17)) >> 18)
                if w > WEIGHT_LIMIT:
                    w = WEIGHT_LIMIT
                elif w < -WEIGHT_LIMIT:
                    w = -WEIGHT_LIMIT
                mixw[row, i] = w
        if nsel > 1:
            ferr = ((bit << 12) - node_pmix[j]) * flr
            for m in range(nsel):
                w = fmixw[c0, m] + ((node_sx[j, m] * ferr + 32768) >> 16)
                if w > WEIGHT_LIMIT:
                    w = WEIGHT_LIMIT
                elif w < -WEIGHT_LIMIT:
                    w = -WEIGHT_LIMIT
                fmixw[c0, m] = w
        apm_update(apm1, node_apm[j, 5], node_apm[j, 0], node_apm[j, 1], bit, rate)
        apm_update(apm2, node_apm[j, 2], node_apm[j, 3], node_apm[j, 4], bit, rate)
        if nh > 0:
            e = bit - rnn_sigmoid(sig, node_z[j])
            for k in range(nh):
                rnn_g[t, k] += e * rnn_v[c0, k]
                rnn_v[c0, k] += rnn_lr * e * rnn_s[t, k]
            rnn_b[c0] += rnn_lr * e
        j = 2 * j + bit


@njit(cache=True, inline="always")
def byte_class(c):
    if c == 32:
        return 0
    if c < 32:
        return 1
    if 97 <= c <= 122:
        return 2
    if 65 <= c <= 90:
        return 3
    if 48 <= c <= 57:
        return 4
    if c == 46 or c == 44 or c == 33 or c == 63 or c == 59 or c == 58:
        return 5
    if c < 128:
        return 6
    return 7


@njit(cache=True)
def learn_byte(cfg, reg, hist, match_table, byte):
    """Byte-level state: history, order registers, words, lines, match model."""
    pos = reg[R_POS]
    hbits = cfg[C_HIST_BITS]
    hmask = (1 << hbits) - 1
    hist[pos & hmask] = byte
    # match model: extend the current repeat or look a new one up
    mmin = cfg[C_MATCH_MIN]
    if mmin > 0:
        if reg[R_MATCH_LEN] > 0:
            if reg[R_MATCH_BYTE] == byte:
                reg[R_MATCH_LEN] += 1 if reg[R_MATCH_LEN] < 65535 else 0
                reg[R_MATCH_PTR] += 1
            else:
                reg[R_MATCH_LEN] = 0
    reg[R_C8] = ((reg[R_C8] << 8) | (reg[R_C4] >> 24)) & MASK32
    reg[R_C4] = ((reg[R_C4] << 8) | byte) & MASK32
    pos += 1
    reg[R_POS] = pos
    if mmin > 0 and pos >= mmin:
        h = 0
        for k in range(mmin):
            h = hash2(h, hist[(pos - 1 - k) & hmask])
        h &= (1 << cfg[C_MATCH_BITS]) - 1
        if reg[R_MATCH_LEN] == 0:
            cand = match_table[h]
            if cand > 0 and pos - cand < hmask:
                length = 0
                while length < 32 and cand - 1 - length >= 0 and \
                        hist[(cand - 1 - length) & hmask] == hist[(pos - 1 - length) & hmask]:
                    length += 1
                if length >= mmin:
                    reg[R_MATCH_LEN] = length
                    reg[R_MATCH_PTR] = cand
        match_table[h] = pos
        if reg[R_MATCH_LEN] > 0:
            reg[R_MATCH_BYTE] = hist[reg[R_MATCH_PTR] & hmask]
    # words: letters (case-folded) and UTF-8 bytes continue a word
    c = byte
    if 65 <= c <= 90:
        c += 32
    if (97 <= c <= 122) or c >= 128:
        if reg[R_WORD] == 0:
            reg[R_WORD_PREFIX] = (reg[R_C4] >> 8) & 0xFF
        reg[R_WORD] = hash2(reg[R_WORD] + 1, c)
    elif reg[R_WORD] != 0:
        reg[R_WORD2] = reg[R_WORD1]
        reg[R_WORD1] = reg[R_WORD]
        reg[R_WORD] = 0
    cls = byte_class(byte)
    if (reg[R_CLASSES] & 7) != cls or pos == 1:
        reg[R_CLASS_RUNS] = ((reg[R_CLASS_RUNS] << 3) | cls) & 0x3FFFFFFF
    reg[R_CLASSES] = ((reg[R_CLASSES] << 3) | cls) & 0xFFFFFF
    if byte == 10:
        reg[R_PREV_LINE_START] = reg[R_LINE_START]
        reg[R_LINE_START] = pos
        reg[R_COLUMN] = 0
    else:
        reg[R_COLUMN] += 1


# ---- the state tuple, packed into one flat buffer per dtype ------------------------------------
# A numba call unboxes every array argument (~0.1 us each); the decoder calls `step` twice per
# byte, so Predictor packs the model's ~40 arrays into four flat buffers plus a layout table and
# the kernels re-slice them (free: views, no copies).  Field order = STATE_FIELDS.
STATE_FIELDS = (
    ("cfg", "int64", 1),
    ("reg", "int64", 1),
    ("tables", "uint8", 2),
    ("slots", "int64", 1),
    ("ctx_hash", "int64", 1),
    ("sm_p", "int32", 2),
    ("sm_n", "int32", 2),
    ("mixw", "int32", 2),
    ("mixn", "int32", 1),
    ("fmixw", "int32", 2),
    ("o0_p", "int32", 1),
    ("o0_n", "int32", 1),
    ("msm_p", "int32", 1),
    ("msm_n", "int32", 1),
    ("apm1", "int32", 2),
    ("apm2", "int32", 2),
    ("hist", "uint8", 1),
    ("match_table", "int64", 1),
    ("rnn_u", "float64", 2),
    ("rnn_w", "float64", 2),
    ("rnn_v", "float64", 2),
    ("rnn_b", "float64", 1),
    ("rnn_s", "float64", 2),
    ("rnn_x", "int64", 1),
    ("rnn_g", "float64", 2),
    ("rnn_lr", "float64", 1),
    ("squash", "int32", 1),
    ("stretch", "int32", 1),
    ("sig", "float64", 1),
    ("recip", "int32", 1),
    ("next_state", "uint8", 2),
    ("priority", "int32", 1),
    ("state_det", "int32", 1),
    ("inputs", "int32", 2),
    ("node_row", "int64", 2),
    ("node_sx", "int32", 2),
    ("node_sp", "int32", 2),
    ("node_pmix", "int32", 1),
    ("node_apm", "int64", 2),
    ("node_p", "int32", 1),
    ("node_z", "float64", 1),
    ("ind", "int64", 1),
)
DTYPE_GROUPS = ("uint8", "int32", "int64", "float64")


@njit(cache=True, inline="always")
def _view1(buf, layout, k):
    return buf[layout[k, 0] : layout[k, 0] + layout[k, 1]]


@njit(cache=True, inline="always")
def _view2(buf, layout, k):
    start = layout[k, 0]
    return buf[start : start + layout[k, 1] * layout[k, 2]].reshape((layout[k, 1], layout[k, 2]))


@njit(cache=True)
def unpack(packed):
    """The state tuple (field order STATE_FIELDS) as views into the packed buffers."""
    u8, i32, i64, f64, lay = packed
    return (
        _view1(i64, lay, 0),  # cfg
        _view1(i64, lay, 1),  # reg
        _view2(u8, lay, 2),  # tables
        _view1(i64, lay, 3),  # slots
        _view1(i64, lay, 4),  # ctx_hash
        _view2(i32, lay, 5),  # sm_p
        _view2(i32, lay, 6),  # sm_n
        _view2(i32, lay, 7),  # mixw
        _view1(i32, lay, 8),  # mixn
        _view2(i32, lay, 9),  # fmixw
        _view1(i32, lay, 10),  # o0_p
        _view1(i32, lay, 11),  # o0_n
        _view1(i32, lay, 12),  # msm_p
        _view1(i32, lay, 13),  # msm_n
        _view2(i32, lay, 14),  # apm1
        _view2(i32, lay, 15),  # apm2
        _view1(u8, lay, 16),  # hist
        _view1(i64, lay, 17),  # match_table
        _view2(f64, lay, 18),  # rnn_u
        _view2(f64, lay, 19),  # rnn_w
        _view2(f64, lay, 20),  # rnn_v
        _view1(f64, lay, 21),  # rnn_b
        _view2(f64, lay, 22),  # rnn_s
        _view1(i64, lay, 23),  # rnn_x
        _view2(f64, lay, 24),  # rnn_g
        _view1(f64, lay, 25),  # rnn_lr
        _view1(i32, lay, 26),  # squash
        _view1(i32, lay, 27),  # stretch
        _view1(f64, lay, 28),  # sig
        _view1(i32, lay, 29),  # recip
        _view2(u8, lay, 30),  # next_state
        _view1(i32, lay, 31),  # priority
        _view1(i32, lay, 32),  # state_det
        _view2(i32, lay, 33),  # inputs
        _view2(i64, lay, 34),  # node_row
        _view2(i32, lay, 35),  # node_sx
        _view2(i32, lay, 36),  # node_sp
        _view1(i32, lay, 37),  # node_pmix
        _view2(i64, lay, 38),  # node_apm
        _view1(i32, lay, 39),  # node_p
        _view1(f64, lay, 40),  # node_z
        _view1(i64, lay, 41),  # ind
    )


@njit(cache=True)
def step(packed, value, out):
    """Learn the nibble just coded (value >= 0), then predict the next nibble into out[16].

    value < 0 starts the stream: nothing has been coded yet, only predict."""
    step_state(unpack(packed), value, out)


@njit(cache=True)
def step_state(st, value, out):
    """`step` on the unpacked state tuple (field order: STATE_FIELDS)."""
    (cfg, reg, tables, slots, ctx_hash, sm_p, sm_n, mixw, mixn, fmixw, o0_p, o0_n, msm_p, msm_n,
     apm1, apm2, hist, match_table, rnn_u, rnn_w, rnn_v, rnn_b, rnn_s, rnn_x, rnn_g, rnn_lr,
     squash, stretch, sig, recip, next_state, priority, state_det, inputs, node_row, node_sx,
     node_sp, node_pmix, node_apm, node_p, node_z, ind) = st
    if value >= 0:
        learn_nibble(cfg, reg, tables, slots, sm_p, sm_n, mixw, mixn, fmixw, o0_p, o0_n, msm_p,
                     msm_n, apm1, apm2, rnn_v, rnn_b, rnn_s, rnn_g, rnn_lr[0], next_state, recip,
                     sig, inputs, node_row, node_sx, node_sp, node_pmix, node_apm, node_z, value)
        if reg[R_NIBBLE] == 0:
            reg[R_HI] = value
            reg[R_NIBBLE] = 1
        else:
            byte = (reg[R_HI] << 4) | value
            # indirect contexts: what followed the previous byte / the last two bytes
            c4 = reg[R_C4]
            ind[c4 & 0xFF] = ((ind[c4 & 0xFF] << 8) | byte) & 0xFFFF
            ind[256 + (c4 & 0xFFFF)] = ((ind[256 + (c4 & 0xFFFF)] << 8) | byte) & 0xFFFF
            learn_byte(cfg, reg, hist, match_table, byte)
            if cfg[C_RNN_H] > 0:
                if reg[R_RNN_T] >= cfg[C_RNN_BPTT]:
                    rnn_bptt(cfg, reg, rnn_u, rnn_w, rnn_s, rnn_x, rnn_g, rnn_lr[0])
                rnn_forward(cfg, reg, rnn_u, rnn_w, rnn_s, rnn_x, sig, byte)
            reg[R_NIBBLE] = 0
            reg[R_HI] = 0
            byte_context_hashes(cfg, reg, hist, ctx_hash, ind)
    else:
        byte_context_hashes(cfg, reg, hist, ctx_hash, ind)
    claim_nibble_slots(cfg, reg, tables, ctx_hash, slots, priority)
    predict_nibble(cfg, reg, tables, slots, sm_p, mixw, mixn, fmixw, o0_p, msm_p, apm1, apm2,
                   rnn_v, rnn_b, rnn_s, squash, stretch, state_det, inputs, node_row, node_sx,
                   node_sp, node_pmix, node_apm, node_p, node_z, out)


@njit(cache=True)
def predict_known(packed, first_value, nibbles, probs):
    """Encoder side: run `step` over known nibbles, storing each prediction (probs[k] is the
    distribution nibbles[k] is coded with).  first_value is the nibble still to be learned from
    the previous call (-1 at the start of the stream)."""
    st = unpack(packed)
    value = first_value
    for k in range(nibbles.shape[0]):
        step_state(st, value, probs[k])
        value = nibbles[k]


@njit(cache=True)
def peek_low_nibbles(packed, scratch_tables, scratch_slots, scratch_reg, scratch, out):
    """Analysis only: the low-nibble distribution for each of the 16 possible high nibbles.

    Call right after the high nibble of a byte was predicted (before it is learned).  Changes
    no model state: slots are looked up without being claimed (a missing slot reads as fresh
    zeros, exactly what claiming would create) and the per-node scratch is separate.
    out has shape (16, 16): out[hi, lo] ~ P(lo | hi)."""
    (cfg, reg, tables, slots, ctx_hash, sm_p, sm_n, mixw, mixn, fmixw, o0_p, o0_n, msm_p, msm_n,
     apm1, apm2, hist, match_table, rnn_u, rnn_w, rnn_v, rnn_b, rnn_s, rnn_x, rnn_g, rnn_lr,
     squash, stretch, sig, recip, next_state, priority, state_det, inputs, node_row, node_sx,
     node_sp, node_pmix, node_apm, node_p, node_z, ind) = unpack(packed)
    (s_inputs, s_node_row, s_node_sx, s_node_sp, s_node_pmix, s_node_apm, s_node_p,
     s_node_z) = scratch
    for k in range(reg.shape[0]):
        scratch_reg[k] = reg[k]
    scratch_reg[R_NIBBLE] = 1
    for hi in range(16):
        scratch_reg[R_HI] = hi
        for i in range(cfg[C_NCTX]):
            off = lookup_slot(tables[i], hash2(ctx_hash[i], 1 + hi))
            for k in range(16):
                scratch_tables[i, k] = tables[i, off + k] if off >= 0 else 0
            scratch_slots[i] = 0
        predict_nibble(cfg, scratch_reg, scratch_tables, scratch_slots, sm_p, mixw, mixn, fmixw,
                       o0_p, msm_p, apm1, apm2, rnn_v, rnn_b, rnn_s, squash, stretch, state_det,
                       s_inputs, s_node_row, s_node_sx, s_node_sp, s_node_pmix, s_node_apm,
                       s_node_p, s_node_z, out[hi])
