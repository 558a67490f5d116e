"""Match model: follows the most recent earlier occurrence of the last `match_min` bytes and
predicts the byte that followed it; its confidence is an adaptive map by (length bucket,
expected bit)."""

from __future__ import annotations

from .contexts import hash2
from .jit import kernel
from .histories import counter_update
from .state import (C_HIST_BITS, C_MATCH_BITS, C_MATCH_MIN, R_HI, R_MATCH_BYTE, R_MATCH_LEN,
                    R_MATCH_PTR, R_NIBBLE, R_POS)
from .state import C_MATCH_RECOVER  # strength (issue 12)
from .state import R_MATCH_EXPECT  # round 19 (issue 12)
from .tree import expected_bit_of, path_node

CONFIDENCE_LIMIT = 1023  # count limit of the confidence map
VERIFY_LIMIT = 32  # bytes compared backwards to verify a candidate (the hash may collide)


@kernel(inline=True)
def match_bucket(length):
    if length < 16:
        return length
    b = 16 + ((length - 16) >> 2)
    return b if b < 31 else 31


@kernel(inline=True)
def expected_bit(reg, nibble, hi, j):
    """Expected bit at node j if the match model's predicted byte agrees with the path so far,
    else -1."""
    if reg[R_MATCH_LEN] == 0:
        return -1
    return expected_bit_of(reg[R_MATCH_BYTE], nibble, hi, j)


@kernel(inline=True)
def node_inputs(st, reg, node, j, col):
    """Node j's expected bit (node_eb[j], -1: none) and mixer input in column col:
    stretch(confidence) when a bit is expected, else 0."""
    eb = expected_bit(reg, reg[R_NIBBLE], reg[R_HI], j)
    node.node_eb[j] = eb
    if eb >= 0:
        node.inputs[j, col] = st.stretch[st.msm_p[match_bucket(reg[R_MATCH_LEN]) * 2 + eb] >> 10]
    else:
        node.inputs[j, col] = 0


@kernel
def learn(st, value):
    """The coded nibble's path: the confidence of each expected bit learns."""
    bucket = match_bucket(st.reg[R_MATCH_LEN])
    for d in range(4):
        j, bit = path_node(value, d)
        eb = st.node.node_eb[j]
        if eb >= 0:
            counter_update(st.msm_p, st.msm_n, bucket * 2 + eb, bit, st.recip, CONFIDENCE_LIMIT)


@kernel
def update(st, byte):
    """After `byte` was appended to the history: extend the current repeat or look one up.

    With match_recover (strength, issue 12) a repeat of at least that length survives a
    mismatch: it goes on at length 1, below match_min, so the lengths under match_min (which a
    fresh repeat never has) mean "recovering" and get their own confidences; a verified fresh
    candidate replaces a recovering repeat."""
    cfg, reg, hist = st.cfg, st.reg, st.hist
    mmin = cfg[C_MATCH_MIN]
    recover = cfg[C_MATCH_RECOVER]
    if reg[R_MATCH_LEN] > 0:
        if reg[R_MATCH_BYTE] == byte:
            reg[R_MATCH_LEN] += 1 if reg[R_MATCH_LEN] < 65535 else 0
            reg[R_MATCH_PTR] += 1
        elif recover > 0 and reg[R_MATCH_LEN] >= recover:
            reg[R_MATCH_LEN] = 1
            reg[R_MATCH_PTR] += 1
        else:
            reg[R_MATCH_LEN] = 0
    pos = reg[R_POS]
    if pos < mmin:
        return
    hmask = (1 << cfg[C_HIST_BITS]) - 1
    h = 0
    for k in range(mmin):
        h = hash2(h, hist[(pos - 1 - k) & hmask])
    h &= (1 << cfg[C_MATCH_BITS]) - 1
    if reg[R_MATCH_LEN] < mmin:  # none, or recovering (only with match_recover)
        cand = st.match_table[h]
        if cand > 0 and pos - cand < hmask:
            length = 0
            while length < VERIFY_LIMIT and cand - 1 - length >= 0 and \
                    hist[(cand - 1 - length) & hmask] == hist[(pos - 1 - length) & hmask]:
                length += 1
            if length >= mmin:
                reg[R_MATCH_LEN] = length
                reg[R_MATCH_PTR] = cand
    st.match_table[h] = pos
    if reg[R_MATCH_LEN] > 0:
        reg[R_MATCH_BYTE] = hist[reg[R_MATCH_PTR] & hmask]
        reg[R_MATCH_EXPECT] = (reg[R_MATCH_BYTE] + 1) | (match_bucket(reg[R_MATCH_LEN]) << 9)
    else:
        reg[R_MATCH_EXPECT] = 0
