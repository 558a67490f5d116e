"""Bit histories and adaptive probability maps: the hashed "direct connections".

Each context owns a table of 16-byte slots: a check byte, then the bit-history state
(`statetable`) of each of the nibble's 15 tree nodes.  A slot is found or claimed per nibble
(4-way bucket, evicting the least-seen slot); each context maps a state to a probability through
its own adaptive table (`sm_p`), and an order-0 map (`o0_p`) sees every node.  These give the
mixer its per-context inputs.
"""

from __future__ import annotations

from .contexts import hash2
from .kinds import CharClass
from .jit import kernel
from .prefetch import prefetch
from .state import C_CTX_INPUTS, C_NCTX, C_SM_LIMIT, R_HI, R_NIBBLE
from .state import C_CASE_FOLD, R_C4, R_SENTENCE_WORDS  # round 22 (issue 12)
from .state import C_CASE_FOLD_GATE, R_CLASSES  # round 23
from .tree import path_node

ORDER0_LIMIT = 255  # count limit of the order-0 map
# round 22 (case_fold): in the high nibble, node 10 splits 0x4_ from 0x5_ (upper-case A-O from P-Z)
# and node 11 splits 0x6_ from 0x7_ (lower case): a folded context keeps one history for both
UPPER_SPLIT_NODE = 10
LOWER_SPLIT_NODE = 11


@kernel(inline=True)
def counter_update(p, n, k, bit, recip, limit):
    """Adaptive-rate probability counter: step 1/(n+1.5), n capped at `limit`."""
    target = bit << 22
    v = p[k] + (((target - p[k]) >> 6) * recip[n[k]] >> 10)
    # the floored shift can overshoot below 0 for small limits (fast rates): clamp, or the
    # stretch lookup of a near-certain 0 would read as a near-certain 1
    p[k] = v if v > 0 else 0
    if n[k] < limit:
        n[k] += 1


@kernel(inline=True)
def bucket_base(table, h):
    """The first of the 4 slots of hash h's bucket (4 slots of 16 bytes: one cache line)."""
    nslots = table.shape[0] >> 4
    return (h & (nslots - 1)) & ~3


@kernel
def lookup_slot(table, h):
    """Find the 16-byte slot for hash h: 4-way bucket, 8-bit check; -1 if absent."""
    check = (h >> 24) & 255
    base = bucket_base(table, h)
    for k in range(4):
        off = (base + k) << 4
        if table[off] == check:
            return off
    return -1


@kernel
def claim_slot(table, h, priority):
    """lookup_slot, or else clear and claim the bucket's least-seen slot."""
    off = lookup_slot(table, h)
    if off >= 0:
        return off
    check = (h >> 24) & 255
    base = bucket_base(table, h)
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


_CONTROL, _LOWER, _UPPER, _DIGIT = (CharClass.CONTROL.value, CharClass.LOWER.value,
                                    CharClass.UPPER.value, CharClass.DIGIT.value)


@kernel(inline=True)
def case_fold_now(cfg, reg):
    """Round 22: the contexts that fold case for the byte about to be coded (ModelParams.case_fold)
    where its case is a matter of grammar or style, not of the word: in a sentence's first word
    (no word completed since . ! ?) and inside an all-capitals word (the last byte A-Z); elsewhere
    none, so that a name's capital keeps its own statistics."""
    last = reg[R_C4] & 0xFF
    if reg[R_SENTENCE_WORDS] == 0 or (last >= 65 and last <= 90):
        return cfg[C_CASE_FOLD]
    if cfg[C_CASE_FOLD_GATE] & 1:
        # round 23: no letter or digit since the last line break or tab (of the last eight bytes)
        classes = reg[R_CLASSES]
        for k in range(8):
            cls = (classes >> (3 * k)) & 7
            if cls == _CONTROL:
                return cfg[C_CASE_FOLD]
            if cls == _LOWER or cls == _UPPER or cls == _DIGIT:
                return 0
    return 0


@kernel(inline=True)
def nibble_salt(fold, i, nibble, hi):
    """What context i's hash is salted with for a nibble: 0 for a high nibble, 1 + the high
    nibble for a low one; round 22: in the contexts of the fold mask (case_fold_now) an
    upper-case high nibble (4, 5) salts as its lower-case one (6, 7), so both cases share the
    low nibble's slot."""
    if nibble == 0:
        return 0
    if (hi == 4 or hi == 5) and (fold >> i) & 1:
        return 3 + hi
    return 1 + hi


@kernel
def claim_nibble_slots(st):
    """Each context's slot for the nibble about to be coded (salted by `nibble_salt`)."""
    reg = st.reg
    slots = st.slots
    fold = case_fold_now(st.cfg, reg)
    # first every bucket's cache line is requested (slots hold the hashes meanwhile), then claimed
    for i in range(st.cfg[C_NCTX]):
        slots[i] = hash2(st.ctx_hash[i], nibble_salt(fold, i, reg[R_NIBBLE], reg[R_HI]))
        prefetch(st.tables[i], bucket_base(st.tables[i], slots[i]) << 4)
    for i in range(st.cfg[C_NCTX]):
        slots[i] = claim_slot(st.tables[i], slots[i], st.priority)


@kernel(inline=True)
def node_inputs(st, reg, tables, slots, node, j):
    """Node j's mixer inputs from the contexts (per context: stretch(p), then with ctx_inputs
    >= 2 the same if the history is deterministic, then with 3 p linear) and from the order-0 map
    (the next column); node_seen[j]: how many contexts have seen the node."""
    nctx = st.cfg[C_NCTX]
    ci = st.cfg[C_CTX_INPUTS]
    sm_p, stretch, state_det = st.sm_p, st.stretch, st.state_det
    inputs = node.inputs
    n = 0
    seen = 0
    fold = case_fold_now(st.cfg, reg) if j == UPPER_SPLIT_NODE and node.node_c0[j] < 16 else 0
    for i in range(nctx):
        s = tables[i, slots[i] + (LOWER_SPLIT_NODE if (fold >> i) & 1 else j)]
        p12 = sm_p[i, s] >> 10
        sx = stretch[p12]
        inputs[j, n] = sx
        n += 1
        if ci >= 2:
            inputs[j, n] = sx * state_det[s]
            n += 1
        if ci >= 3:
            inputs[j, n] = (p12 - 2048) >> 2
            n += 1
        if s != 0:
            seen += 1
    inputs[j, n] = stretch[st.o0_p[node.node_c0[j]] >> 10]
    node.node_seen[j] = seen


@kernel
def learn(st, value):
    """The coded nibble's path: every context's state map and state, and the order-0 map, learn."""
    recip, tables, slots, sm_p, sm_n = st.recip, st.tables, st.slots, st.sm_p, st.sm_n
    limit = st.cfg[C_SM_LIMIT]
    nctx = st.cfg[C_NCTX]
    for d in range(4):
        j, bit = path_node(value, d)
        fold = 0
        if j == UPPER_SPLIT_NODE and st.node.node_c0[j] < 16:
            fold = case_fold_now(st.cfg, st.reg)
        for i in range(nctx):
            off = slots[i] + (LOWER_SPLIT_NODE if (fold >> i) & 1 else j)
            s = tables[i, off]
            counter_update(sm_p[i], sm_n[i], s, bit, recip, limit)
            tables[i, off] = st.next_state[s, bit]
        counter_update(st.o0_p, st.o0_n, st.node.node_c0[j], bit, recip, ORDER0_LIMIT)
