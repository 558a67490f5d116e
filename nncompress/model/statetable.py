"""Bit-history states: what a hashed context has seen, squeezed into one byte.

A state stands for a pair of bit counts (n0, n1).  Seeing a bit increments its own count (up to a
cap) and discounts the opposite count, so a context that changes its mind is trusted less than a
steady one.  Each context order maps states to probabilities through its own adaptive table, which
learns, for instance, how reliable "seen once, was a 1" is in an order-6 context of this file.

The table is generated (breadth-first from the empty state), not written out by hand, so its
shape is documented by the rules below.  It is part of the format: changing a rule changes every
prediction, which needs a format version bump.
"""

import numpy as np

COUNT_CAP = 30


def _discount(n: int) -> int:
    """Opposite count after a surprise: small counts survive, large ones are roughly halved."""
    if n <= 1:
        return n
    if n <= 3:
        return 2
    return n // 2 + 1


def build_state_table():
    """Returns (next_state[s, bit] uint8, counts[s] = (n0, n1) int32) for all reachable states."""
    start = (0, 0)
    index = {start: 0}
    order = [start]
    queue = [start]
    transitions = {}
    while queue:
        state = queue.pop(0)
        for bit in (0, 1):
            n = [state[0], state[1]]
            n[bit] = min(n[bit] + 1, COUNT_CAP)
            n[1 - bit] = _discount(n[1 - bit])
            nxt = (n[0], n[1])
            if nxt not in index:
                index[nxt] = len(order)
                order.append(nxt)
                queue.append(nxt)
            transitions[state, bit] = index[nxt]
    if len(order) > 256:
        raise AssertionError("bit-history states must fit in one byte")
    next_state = np.zeros((256, 2), dtype=np.uint8)
    counts = np.zeros((256, 2), dtype=np.int32)
    for state, s in index.items():
        next_state[s, 0] = transitions[state, 0]
        next_state[s, 1] = transitions[state, 1]
        counts[s] = state
    return next_state, counts


NEXT_STATE, STATE_COUNTS = build_state_table()
NUM_STATES = int(np.count_nonzero(STATE_COUNTS.sum(axis=1))) + 1
# Replacement priority of a hash slot: how much evidence its first node holds.
STATE_PRIORITY = STATE_COUNTS.sum(axis=1).astype(np.int32)
# 1 where only one bit value has been seen (a deterministic history), else 0.
STATE_DETERMINISTIC = ((STATE_COUNTS.min(axis=1) == 0) & (STATE_COUNTS.max(axis=1) > 0)).astype(np.int32)


def initial_state_probabilities() -> np.ndarray:
    """Starting probability of a 1 for each state, 22-bit fixed point: (n1 + 1/2) / (n0 + n1 + 1)."""
    n0 = STATE_COUNTS[:, 0].astype(np.int64)
    n1 = STATE_COUNTS[:, 1].astype(np.int64)
    return (((2 * n1 + 1) << 22) // (2 * (n0 + n1) + 2)).astype(np.int32)
