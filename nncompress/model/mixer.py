"""Mixers: gated linear mixing in the stretch domain.

Each first-layer mixer chooses a weight row by its selector (`kinds.Selector`); the rows of all
selectors in use are stacked in one table (`st.mixw`, mixer k's rows from cfg[C_SEL_BASE + k]).
With more than one first-layer mixer, a final mixer with weights chosen by the partial byte
combines their outputs.  Fresh weight rows learn faster (boost, halved after `mixer_lr_decay`
updates).

A weight row holds its initial weights until its first update (`mixn` counts updates), and the
table starts as zeros: predict() writes a row's initial weights (`st.mixer_initial`, one template
made by `state._mixer_initial_row` for the parameters) when it first reads one that was never
updated.  Untouched rows then cost no memory (most of the table, on a small input) and
every prediction is what eagerly initialised rows gave.
"""

from __future__ import annotations

from .jit import kernel
from .kinds import Selector
from .match import match_bucket
from .state import R_FOLLOW_BYTE  # round 18 (issue 12)
from .state import C_FINE_SHIFT  # round 21 (issue 12)
from .state import (R_ABOVE, R_ABOVE_CLASS, R_LINE_CLASSES, R_CAPS, R_COLUMN, R_NEST, R_SENTENCE_WORDS,  # strength round 4
                    R_WORD, R_WORD_CAP)
from .state import (C_FINAL_LR, C_LR_BOOST, C_LR_DECAY, C_MIXER_LR, C_NINPUTS, C_NSEL, C_SEL_BASE,
                    C_SEL_KIND, R_C4, R_CLASS_RUNS, R_CLASSES, R_MATCH_LEN, R_NIBBLE)
from .tree import path_node

WEIGHT_LIMIT = 1 << 22
FINE_STRETCH_LIMIT = 4095  # round 21: the final mixer's 16-bit output reads stretch values to +-16.0


@kernel(inline=True)
def squash_lookup(squash, x):
    if x > 2047:
        x = 2047
    if x < -2047:
        x = -2047
    return squash[x + 2048]


@kernel(inline=True)
def initial_row(mixw, row, initial):
    """A row's starting weights: the template state._mixer_initial_row made for these parameters."""
    for i in range(initial.shape[0]):
        mixw[row, i] = initial[i]


@kernel(inline=True)
def column_bucket(col):
    """Columns 0-3 each, then 4-7, 8-15, 16-31 and 32 on: 0..7."""
    if col < 4:
        return col
    if col < 8:
        return 4
    if col < 16:
        return 5
    if col < 32:
        return 6
    return 7


@kernel(inline=True)
def selector_row(kind, reg, nibble, j, c0, seen, eb, rnn_pattern, rnnme_code):
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
    if kind == Selector.RNNME:  # branch neural2: the RNNME expert's expected nibble x confidence
        return (rnnme_code << 8) | c0
    if kind == Selector.COLUMN_ABOVE:  # strength round 4 (issue 12)
        return (((reg[R_ABOVE_CLASS] << 3) | column_bucket(reg[R_COLUMN])) << 8) | c0
    if kind == Selector.WORD_STATE:
        last = reg[R_C4] & 0xFF
        if last >= 128:  # inside a UTF-8 word: the place in the character instead of the English word state
            place = 1 if last >= 0xC0 else (2 if ((reg[R_C4] >> 8) & 0xFF) >= 0xE0 else 0)
            return ((128 | min(reg[R_SENTENCE_WORDS], 7) | (place << 3)) << 8) | c0
        state = (min(reg[R_SENTENCE_WORDS], 7) | (reg[R_WORD_CAP] << 3) | ((reg[R_CAPS] & 1) << 4)
                 | (((reg[R_NEST] >> 4) & 1) << 5) | ((1 if reg[R_WORD] != 0 else 0) << 6))
        return (state << 8) | c0
    if kind == Selector.ABOVE_BYTE:
        return (reg[R_ABOVE] << 8) | c0
    if kind == Selector.LINE_CLASSES:
        return (((reg[R_LINE_CLASSES] << 3) | column_bucket(reg[R_COLUMN])) << 8) | c0
    if kind == Selector.FOLLOWER:  # round 18
        return ((reg[R_FOLLOW_BYTE] & 0x1FF) << 8) | c0
    return ((reg[R_CLASS_RUNS] & 0x1FF) << 8) | c0  # Selector.CLASS_RUNS


@kernel(inline=True)
def predict_node(st, reg, node, j, rnn_pattern):
    """Node j's mixed 12-bit probability (node_pmix[j]) from node.inputs[j]; records the rows,
    outputs and probabilities learning needs.  Nodes are independent: a decoder that codes a
    nibble bit by bit (ModelParams.path_coding) mixes only the four nodes of its path."""
    cfg = st.cfg
    ninputs = cfg[C_NINPUTS]
    nsel = cfg[C_NSEL]
    mixw, fmixw, squash = st.mixw, st.fmixw, st.squash
    inputs, node_row, node_sx, node_sp = node.inputs, node.node_row, node.node_sx, node.node_sp
    mixn = st.mixn
    c0 = node.node_c0[j]
    fdot = 0
    for m in range(nsel):
        row = selector_row(cfg[C_SEL_KIND + m], reg, reg[R_NIBBLE], j, c0, node.node_seen[j],
                           node.node_eb[j], rnn_pattern, node.node_rn_code[j])
        row += cfg[C_SEL_BASE + m]
        node_row[j, m] = row
        if mixn[row] == 0:  # never updated: holds its initial weights (the table starts at 0)
            initial_row(mixw, row, st.mixer_initial)
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
    node.node_pmix[j] = pm
    if cfg[C_FINE_SHIFT] != 0:  # round 21: the same output at 16 bits, for the final average
        if nsel > 1:
            x = fdot >> 16
            if x > FINE_STRETCH_LIMIT:
                x = FINE_STRETCH_LIMIT
            elif x < -FINE_STRETCH_LIMIT:
                x = -FINE_STRETCH_LIMIT
            node.node_pm16[j] = st.squash16[x + FINE_STRETCH_LIMIT + 1]
        else:
            node.node_pm16[j] = pm << 4


@kernel
def learn(st, value):
    """The coded nibble's path: the first-layer rows each node used, and the final mixer, learn."""
    cfg = st.cfg
    node = st.node
    ninputs = cfg[C_NINPUTS]
    nsel = cfg[C_NSEL]
    lr16 = cfg[C_MIXER_LR] * 16
    boost16 = cfg[C_LR_BOOST] * 16
    decay = cfg[C_LR_DECAY]
    flr = cfg[C_FINAL_LR]
    mixw, mixn, fmixw, inputs = st.mixw, st.mixn, st.fmixw, node.inputs
    for d in range(4):
        j, bit = path_node(value, d)
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
            c0 = node.node_c0[j]
            ferr = ((bit << 12) - node.node_pmix[j]) * flr
            for m in range(nsel):
                w = fmixw[c0, m] + ((node.node_sx[j, m] * ferr + 32768) >> 16)
                if w > WEIGHT_LIMIT:
                    w = WEIGHT_LIMIT
                elif w < -WEIGHT_LIMIT:
                    w = -WEIGHT_LIMIT
                fmixw[c0, m] = w
