"""Adaptive probability maps (APM/SSE): refine the mixer's probability.

Per row, 33 points over the stretch domain (16-bit probabilities), interpolated; the two points
around the input learn.  APM1's rows are the partial byte (or, apm1_order=1, the partial byte and
the previous byte), APM2's a hash of the partial byte and the last two bytes.  The final
probability is a fixed-weight average (cfg[C_APM_W + 0..2], sum 16) of mixer, APM1 and APM2.

The maps start as zeros and a row receives the identity map (`apm_identity`) when it is first
read (`apm1_ready`/`apm2_ready`, and since round 18 `apm_chain_ready` for the SSE chain, mark
the rows that have it): a small input touches few rows, and untouched rows cost no memory.
Predictions are those of maps initialised in full.
"""

from __future__ import annotations

from .contexts import hash2
from .jit import kernel
from .state import C_APM_RATE, C_APM_W, R_C4
from .state import C_FINE_SHIFT  # round 21 (issue 12)
from .match import match_bucket  # strength (issue 12)
from .state import (C_APM_CHAIN, C_APM_CHAIN_W, CHAIN_MATCH, CHAIN_ORDER3, CHAIN_ORDER4,  # strength
                    CHAIN_WORD, R_MATCH_BYTE, R_MATCH_LEN, R_NIBBLE, R_HI, R_WORD)
from .tree import expected_bit_of  # strength (issue 12)
from .tree import path_node


@kernel(inline=True)
def apm_row(table, ready, row, identity):
    """Make sure the row holds its starting points (the identity map) before its first use."""
    if ready[row] == 0:
        for k in range(identity.shape[0]):
            table[row, k] = identity[k]
        ready[row] = 1


@kernel(inline=True)
def apm_predict_fine(table, row, st, shift):
    """Interpolate a 33-point adaptive map at stretch value st; returns (probability of 12 +
    shift bits, low index, weight).  The points hold 16 bits, so shift 4 (round 21,
    ModelParams.probability_bits) loses nothing."""
    s = st + 2048
    lo = s >> 7
    w = s & 127
    p = (table[row, lo] * (128 - w) + table[row, lo + 1] * w) >> (11 - shift)
    top = (4096 << shift) - 1
    if p < 1:
        p = 1
    elif p > top:
        p = top
    return p, lo, w


@kernel(inline=True)
def apm_update(table, row, lo, w, bit, rate):
    target = bit << 16
    table[row, lo] += ((target - table[row, lo]) * (128 - w)) >> (7 + rate)
    table[row, lo + 1] += ((target - table[row, lo + 1]) * w) >> (7 + rate)


@kernel(inline=True)
def refine_node(st, reg, node, j):
    """Node j's final probability (node_p[j], 12 bits or ModelParams.probability_bits) from the
    mixer's (node_pmix[j], or node_pm16[j] at 16 bits); records the
    points for learning in node_apm[j] = (APM1 low point, weight, APM2 row, low point, weight,
    APM1 row)."""
    cfg = st.cfg
    c1 = reg[R_C4] & 0xFF
    c2 = (reg[R_C4] >> 8) & 0xFF
    apm1, apm2, stretch, node_apm = st.apm1, st.apm2, st.stretch, node.node_apm
    c0 = node.node_c0[j]
    pm = node.node_pmix[j]
    sx = stretch[pm]
    row1 = c0 if apm1.shape[0] == 256 else (c1 << 8) | c0
    apm_row(apm1, st.apm1_ready, row1, st.apm_identity)
    shift = cfg[C_FINE_SHIFT]
    p1, lo1, w1 = apm_predict_fine(apm1, row1, sx, shift)
    row2 = hash2(c0, c1 | (c2 << 8)) & (apm2.shape[0] - 1)
    apm_row(apm2, st.apm2_ready, row2, st.apm_identity)
    p2, lo2, w2 = apm_predict_fine(apm2, row2, sx, shift)
    node_apm[j, 0] = lo1
    node_apm[j, 1] = w1
    node_apm[j, 5] = row1
    node_apm[j, 2] = row2
    node_apm[j, 3] = lo2
    node_apm[j, 4] = w2
    if shift != 0:  # round 21: the mixer's output at 16 bits
        pm = node.node_pm16[j]
    top = (4096 << shift) - 1
    p = (pm * cfg[C_APM_W] + p1 * cfg[C_APM_W + 1] + p2 * cfg[C_APM_W + 2] + 8) >> 4
    if p < 1:
        p = 1
    elif p > top:
        p = top
    if cfg[C_APM_CHAIN] != 0:  # strength (issue 12)
        p = chain_refine(st, reg, node, j, c0, sx, p)
    node.node_p[j] = p


# ---- strength (issue 12): the SSE chain -------------------------------------------------------
# Up to four more APMs on the mixer's output (rows: a hash of order 3 / the match state / the
# current word / a hash of order 4, each with the partial byte); their average takes
# apm_chain_weight/16 of the final probability.

@kernel(inline=True)
def chain_table(st, which):
    """The map of one member of the chain (a CHAIN_* bit); a view of the state, nothing copied."""
    if which == CHAIN_ORDER3:
        return st.apm_o3
    if which == CHAIN_MATCH:
        return st.apm_match
    if which == CHAIN_WORD:
        return st.apm_word
    return st.apm_o4  # CHAIN_ORDER4


@kernel(inline=True)
def chain_row(st, reg, which, j, c0):
    c4 = reg[R_C4]
    if which == CHAIN_ORDER3:
        return hash2(c0 + 0x300, c4 & 0xFFFFFF) & (st.apm_o3.shape[0] - 1)
    if which == CHAIN_MATCH:
        mlen = reg[R_MATCH_LEN]
        eb = -1
        if mlen > 0:
            eb = expected_bit_of(reg[R_MATCH_BYTE], reg[R_NIBBLE], reg[R_HI], j)
        return ((match_bucket(mlen) * 3 + eb + 1) << 8) | c0
    if which == CHAIN_WORD:
        return hash2(c0 + 0x500, reg[R_WORD] + (c4 & 0xFF) * 0x10000 + 1) & (st.apm_word.shape[0] - 1)
    return hash2(c0 + 0x400, c4) & (st.apm_o4.shape[0] - 1)  # CHAIN_ORDER4


@kernel
def chain_refine(st, reg, node, j, c0, sx, p):
    chain = st.cfg[C_APM_CHAIN]
    total = 0
    count = 0
    for k in range(4):
        which = 1 << k
        if chain & which:
            row = chain_row(st, reg, which, j, c0)
            table = chain_table(st, which)
            apm_row(table, st.apm_chain_ready[k], row, st.apm_identity)
            pk, lo, w = apm_predict_fine(table, row, sx, st.cfg[C_FINE_SHIFT])
            node.node_chain[j, 3 * k] = row
            node.node_chain[j, 3 * k + 1] = lo
            node.node_chain[j, 3 * k + 2] = w
            total += pk
            count += 1
    cw = st.cfg[C_APM_CHAIN_W]
    q = (p * (16 - cw) + (total // count) * cw + 8) >> 4
    top = (4096 << st.cfg[C_FINE_SHIFT]) - 1
    if q < 1:
        q = 1
    elif q > top:
        q = top
    return q


@kernel
def chain_learn(st, value):
    chain = st.cfg[C_APM_CHAIN]
    a = st.node.node_chain
    rate = st.cfg[C_APM_RATE]
    for d in range(4):
        j, bit = path_node(value, d)
        for k in range(4):
            which = 1 << k
            if chain & which:
                apm_update(chain_table(st, which), a[j, 3 * k], a[j, 3 * k + 1], a[j, 3 * k + 2],
                           bit, rate)


@kernel
def learn(st, value):
    """The coded nibble's path: the two points around each node's input learn, in both maps."""
    a = st.node.node_apm
    rate = st.cfg[C_APM_RATE]
    for d in range(4):
        j, bit = path_node(value, d)
        apm_update(st.apm1, a[j, 5], a[j, 0], a[j, 1], bit, rate)
        apm_update(st.apm2, a[j, 2], a[j, 3], a[j, 4], bit, rate)
    if st.cfg[C_APM_CHAIN] != 0:  # strength (issue 12)
        chain_learn(st, value)
