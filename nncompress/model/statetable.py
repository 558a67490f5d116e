"""Bit-history states: what a hashed context has seen, squeezed into one byte.

A state stands for a pair of bit counts (n0, n1), optionally with the last bit seen.  Seeing a
bit increments its own count (up to a cap) and discounts the opposite count, so a context that
changes its mind is trusted less than a steady one.  Each context order maps states to
probabilities through its own adaptive table, which learns, for instance, how reliable "seen
once, was a 1" is in an order-6 context of this file.

The tables are generated (breadth-first from the empty state), not written out by hand, so their
shape is documented by the rules below.  Which table a model uses is `ModelParams.state_table`
(an index into VARIANTS); changing a rule of an existing variant changes every prediction, which
needs a format version bump.
"""

import numpy as np


def _discount_half(n: int) -> int:
    """Opposite count after a surprise: small counts survive, large ones are roughly halved."""
    if n <= 1:
        return n
    if n <= 3:
        return 2
    return n // 2 + 1


def _discount_strong(n: int) -> int:
    """Opposite count after a surprise, roughly logarithmic: 0,1,1,2,2,2,2,3,3,...,3,4 (>=16)."""
    if n <= 1:
        return n
    if n <= 2:
        return 1
    if n <= 6:
        return 2
    if n <= 15:
        return 3
    return 4


# variant: (count cap, discount rule, keep the last bit while n0 + n1 <= this (0: never))
VARIANTS = (
    (30, _discount_half, 0),
    (30, _discount_strong, 0),
    (30, _discount_half, 8),
    (30, _discount_strong, 12),
    (60, _discount_strong, 16),
)


def build_state_table(variant: int = 0):
    """Returns (next_state[s, bit] uint8, counts[s] = (n0, n1, last) int32) for reachable states.

    last is 0/1 for the last bit when it is tracked (both counts nonzero, total small), else 2."""
    cap, discount, last_limit = VARIANTS[variant]
    start = (0, 0, 2)
    index = {start: 0}
    order = [start]
    queue = [start]
    transitions = {}
    while queue:
        state = queue.pop(0)
        for bit in (0, 1):
            n = [state[0], state[1]]
            n[bit] = min(n[bit] + 1, cap)
            n[1 - bit] = discount(n[1 - bit])
            last = bit if (n[0] > 0 and n[1] > 0 and n[0] + n[1] <= last_limit) else 2
            nxt = (n[0], n[1], last)
            if nxt not in index:
                index[nxt] = len(order)
                order.append(nxt)
                queue.append(nxt)
            transitions[state, bit] = index[nxt]
    if len(order) > 256:
        raise AssertionError(f"bit-history states must fit in one byte ({len(order)})")
    next_state = np.zeros((256, 2), dtype=np.uint8)
    counts = np.zeros((256, 3), dtype=np.int32)
    counts[:, 2] = 2
    for state, s in index.items():
        next_state[s, 0] = transitions[state, 0]
        next_state[s, 1] = transitions[state, 1]
        counts[s] = state
    return next_state, counts


class StateTable:
    """Everything the model needs about one variant's states."""

    def __init__(self, variant: int = 0):
        self.next_state, self.counts = build_state_table(variant)
        n0 = self.counts[:, 0].astype(np.int64)
        n1 = self.counts[:, 1].astype(np.int64)
        # Replacement priority of a hash slot: how much evidence its first node holds.
        self.priority = (n0 + n1).astype(np.int32)
        # 1 where only one bit value has been seen (a deterministic history), else 0.
        self.deterministic = (((n0 == 0) | (n1 == 0)) & (n0 + n1 > 0)).astype(np.int32)
        # Starting probability of a 1, 22-bit fixed point: (n1 + 1/2) / (n0 + n1 + 1).
        self.initial_p = (((2 * n1 + 1) << 22) // (2 * (n0 + n1) + 2)).astype(np.int32)
