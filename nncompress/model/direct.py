"""Direct maps: adaptive probabilities of order 1 and 2 without bit histories, as mixer inputs.

Each entry is a probability of a 1 bit at one tree node in one context, stepping 1/(n + 1.5)
toward each coded bit (n capped at 255, as the order-0 map does): a running average where the
hashed contexts give a bit-history state mapped to a probability.  The two estimators disagree
most where a context's bits drift; the mixer takes both.  Order 1 is indexed by (previous byte,
partial byte), 2^16 entries; order 2 by a hash of the last two bytes and the partial byte into
2^min(direct_order2_bits, table_bits - 2) entries (no check bits; sized with the context tables,
so a small input's fitted tables shrink it too).  A map that is off is a one-entry placeholder.
"""

from __future__ import annotations

from .contexts import hash2
from .histories import ORDER0_LIMIT, counter_update
from .jit import kernel
from .state import R_C4
from .tree import path_node


@kernel(inline=True)
def order1_index(c4, c0):
    return ((c4 & 0xFF) << 8) | c0


@kernel(inline=True)
def order2_index(o2_p, c4, c0):
    return hash2(c4 & 0xFFFF, c0) & (o2_p.shape[0] - 1)


@kernel(inline=True)
def node_inputs(st, reg, node, j, col):
    """Node j's inputs from the maps that are on, from column col; returns the next column."""
    c0 = node.node_c0[j]
    c4 = reg[R_C4]
    if st.o1_p.shape[0] > 1:
        node.inputs[j, col] = st.stretch[st.o1_p[order1_index(c4, c0)] >> 10]
        col += 1
    if st.o2_p.shape[0] > 1:
        node.inputs[j, col] = st.stretch[st.o2_p[order2_index(st.o2_p, c4, c0)] >> 10]
        col += 1
    return col


@kernel
def learn(st, value):
    """The coded nibble's path learns in each map that is on (before the byte moves on)."""
    c4 = st.reg[R_C4]
    for d in range(4):
        j, bit = path_node(value, d)
        c0 = st.node.node_c0[j]
        if st.o1_p.shape[0] > 1:
            counter_update(st.o1_p, st.o1_n, order1_index(c4, c0), bit, st.recip, ORDER0_LIMIT)
        if st.o2_p.shape[0] > 1:
            counter_update(st.o2_p, st.o2_n, order2_index(st.o2_p, c4, c0), bit, st.recip, ORDER0_LIMIT)
