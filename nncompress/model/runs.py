"""Run inputs (strength, issue 12): per context, the byte that last followed it and how many times
in a row it did (paq's run model).  While the nibble being coded can still be that byte, the
context predicts that byte's bit at each node, with a confidence learned per context by run
length, nibble and expected bit; elsewhere the input is 0.

One int32 entry per context hash (`table_bits - 4` index bits, so a quarter of the bytes of the
context's slot table): check byte | last byte << 8 | run length << 16.  A different check byte
replaces the entry.
"""

from __future__ import annotations

from .histories import counter_update
from .jit import kernel
from .prefetch import prefetch
from .state import C_NCTX, R_HI, R_NIBBLE
from .tree import expected_bit_of, path_node

RUN_LIMIT = 255  # run lengths saturate here
MAP_LIMIT = 1023  # count limit of the confidence maps


@kernel(inline=True)
def map_index(entry, nibble, eb):
    """Confidence map entry: run length bucket (1..15), nibble, expected bit."""
    run = entry >> 16
    bucket = run if run < 15 else 15
    return (bucket * 2 + nibble) * 2 + eb


@kernel
def lookup(st):
    """Each context's entry for the byte about to be coded (run_cur: 0 when absent)."""
    mask = st.run_table.shape[1] - 1
    for i in range(st.cfg[C_NCTX]):  # every entry's cache line requested at once
        prefetch(st.run_table[i], st.ctx_hash[i] & mask)
    for i in range(st.cfg[C_NCTX]):
        h = st.ctx_hash[i]
        idx = h & mask
        st.run_idx[i] = idx
        entry = st.run_table[i, idx]
        st.run_cur[i] = entry if (entry & 255) == ((h >> 24) & 255) and entry != 0 else 0


@kernel
def update(st, byte):
    """After `byte` was coded: extend each context's run or start a new one."""
    for i in range(st.cfg[C_NCTX]):
        entry = st.run_cur[i]
        check = (st.ctx_hash[i] >> 24) & 255
        run = 1
        if entry != 0 and ((entry >> 8) & 255) == byte:
            run = (entry >> 16) + 1
            if run > RUN_LIMIT:
                run = RUN_LIMIT
        st.run_table[i, st.run_idx[i]] = check | (byte << 8) | (run << 16)


@kernel(inline=True)
def node_inputs(st, reg, node, j, col):
    """Node j's columns col .. col + nctx - 1: per context, stretch(confidence) toward the bit
    its last byte has at the node while the path agrees with that byte, else 0."""
    nibble = reg[R_NIBBLE]
    hi = reg[R_HI]
    for i in range(st.cfg[C_NCTX]):
        entry = st.run_cur[i]
        x = 0
        if entry != 0:
            eb = expected_bit_of((entry >> 8) & 255, nibble, hi, j)
            if eb >= 0:
                x = st.stretch[st.run_p[i, map_index(entry, nibble, eb)] >> 10]
        node.inputs[j, col + i] = x


@kernel
def learn(st, value):
    """The coded nibble's path: each context's confidence in its expected bit learns."""
    reg = st.reg
    nibble = reg[R_NIBBLE]
    hi = reg[R_HI]
    for i in range(st.cfg[C_NCTX]):
        entry = st.run_cur[i]
        if entry == 0:
            continue
        for d in range(4):
            j, bit = path_node(value, d)
            eb = expected_bit_of((entry >> 8) & 255, nibble, hi, j)
            if eb < 0:
                break
            counter_update(st.run_p[i], st.run_n[i], map_index(entry, nibble, eb), bit,
                           st.recip, MAP_LIMIT)
