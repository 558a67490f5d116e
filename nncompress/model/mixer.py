"""Mixers: gated linear mixing in the stretch domain.

Each first-layer mixer chooses a weight row by its selector (`kinds.Selector`); the rows of all
selectors in use are stacked in one table (`st.mixw`, mixer k's rows from cfg[C_SEL_BASE + k]).
With more than one first-layer mixer, a final mixer with weights chosen by the partial byte
combines their outputs.  Fresh weight rows learn faster (boost, halved after `mixer_lr_decay`
updates).
"""

from __future__ import annotations

from .jit import kernel
from .kinds import Selector
from .match import match_bucket
from .state import (C_FINAL_LR, C_LR_BOOST, C_LR_DECAY, C_MIXER_LR, C_NINPUTS, C_NSEL,
                    C_SEL_BASE, C_SEL_KIND, R_C4, R_CLASS_RUNS, R_CLASSES, R_MATCH_LEN)

WEIGHT_LIMIT = 1 << 22


@kernel(inline=True)
def squash_lookup(squash, x):
    if x > 2047:
        x = 2047
    if x < -2047:
        x = -2047
    return squash[x + 2048]


@kernel(inline=True)
def selector_row(kind, reg, nibble, j, c0, seen, eb, rnn_pattern):
    """The weight row (within its selector's block) that selector `kind` picks at node j."""
    if kind == Selector.PARTIAL_BYTE:
        return c0
    if kind == Selector.MATCH:
        mlen = reg[R_MATCH_LEN]
        return (match_bucket(mlen) if mlen > 0 else 0) * 3 + eb + 1
    if kind == Selector.PREV_BYTE:
        return ((reg[R_C4] & 0xFF) << 8) | c0
    if kind == Selector.SEEN:
        return (seen << 5) | (nibble << 4) | j
    if kind == Selector.RNN_SIGNS:
        return (rnn_pattern << 8) | c0
    if kind == Selector.BYTE2:
        return (((reg[R_C4] >> 8) & 0xFF) << 8) | c0
    if kind == Selector.CLASSES:
        return ((reg[R_CLASSES] & 0x1FF) << 8) | c0
    return ((reg[R_CLASS_RUNS] & 0x1FF) << 8) | c0  # Selector.CLASS_RUNS


@kernel(inline=True)
def predict_node(st, reg, node, nibble, j, c0, seen, eb, rnn_pattern):
    """Node j's mixed 12-bit probability from node.inputs[j]; records what learning needs."""
    cfg = st.cfg
    ninputs = cfg[C_NINPUTS]
    nsel = cfg[C_NSEL]
    mixw = st.mixw
    inputs = node.inputs
    fdot = 0
    for m in range(nsel):
        row = selector_row(cfg[C_SEL_KIND + m], reg, nibble, j, c0, seen, eb, rnn_pattern)
        row += cfg[C_SEL_BASE + m]
        node.node_row[j, m] = row
        dot = 0
        for i in range(ninputs):
            dot += mixw[row, i] * inputs[j, i]
        dot >>= 16
        if dot > 2047:
            dot = 2047
        elif dot < -2047:
            dot = -2047
        node.node_sx[j, m] = dot
        node.node_sp[j, m] = st.squash[dot + 2048]
        fdot += st.fmixw[c0, m] * dot
    if nsel > 1:
        pm = squash_lookup(st.squash, fdot >> 16)
    else:
        pm = node.node_sp[j, 0]
    node.node_pmix[j] = pm
    return pm


@kernel(inline=True)
def learn_node(st, j, c0, bit):
    """Node j's bit is known: the first-layer rows it used and the final mixer learn."""
    cfg = st.cfg
    node = st.node
    ninputs = cfg[C_NINPUTS]
    nsel = cfg[C_NSEL]
    lr16 = cfg[C_MIXER_LR] * 16
    boost16 = cfg[C_LR_BOOST] * 16
    decay = cfg[C_LR_DECAY]
    mixw, mixn, inputs = st.mixw, st.mixn, node.inputs
    for m in range(nsel):
        row = node.node_row[j, m]
        cnt = mixn[row]
        r = lr16
        if boost16 > 0:
            r += boost16 * decay // (decay + cnt)
        if cnt < 65535:
            mixn[row] = cnt + 1
        err = ((bit << 12) - node.node_sp[j, m]) * r
        for i in range(ninputs):
            w = mixw[row, i] + ((inputs[j, i] * err + (1 << 17)) >> 18)
            if w > WEIGHT_LIMIT:
                w = WEIGHT_LIMIT
            elif w < -WEIGHT_LIMIT:
                w = -WEIGHT_LIMIT
            mixw[row, i] = w
    if nsel > 1:
        ferr = ((bit << 12) - node.node_pmix[j]) * cfg[C_FINAL_LR]
        for m in range(nsel):
            w = st.fmixw[c0, m] + ((node.node_sx[j, m] * ferr + 32768) >> 16)
            if w > WEIGHT_LIMIT:
                w = WEIGHT_LIMIT
            elif w < -WEIGHT_LIMIT:
                w = -WEIGHT_LIMIT
            st.fmixw[c0, m] = w
