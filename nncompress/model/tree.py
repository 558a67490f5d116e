"""The nibble tree: a nibble is coded as four binary decisions, most significant bit first, down a
tree whose 15 nodes are numbered 1..15 heap-style (node j's children are 2j for a 0 bit and
2j + 1 for a 1 bit).  Every component's prediction loops over the nodes; learning walks the
coded nibble's path."""

from __future__ import annotations

from .jit import kernel
from .state import R_HI, R_NIBBLE

NODES = 16  # node numbers 1..15 index per-node arrays; index 0 is unused


@kernel(inline=True)
def node_c0(nibble, hi, j):
    """The partial byte (with a leading 1 bit) at node j of the given nibble: 1..15 in the high
    nibble, 16..255 in the low nibble (whose high nibble hi is known)."""
    d = 0
    while (j >> (d + 1)) != 0:
        d += 1
    root = 1 if nibble == 0 else 16 + hi
    return (root << d) | (j - (1 << d))


@kernel(inline=True)
def path_node(value, depth):
    """(node, bit) at `depth` (0..3) on the path of nibble `value`."""
    return (1 << depth) | (value >> (4 - depth)), (value >> (3 - depth)) & 1


@kernel(inline=True)
def expected_bit_of(byte, nibble, hi, j):
    """The bit `byte` has at node j of the given nibble if its bits agree with the path to j
    (and, in the low nibble, its high nibble is hi), else -1."""
    if nibble == 1 and (byte >> 4) != hi:
        return -1
    d = 0
    while (j >> (d + 1)) != 0:
        d += 1
    half = byte & 15 if nibble == 1 else byte >> 4
    if (half >> (4 - d)) != j - (1 << d):
        return -1
    return (half >> (3 - d)) & 1


@kernel(inline=True)
def advance_nibble(reg, value):
    """Record the nibble just coded in reg's position registers; returns the byte it completes
    (value was a low nibble), or -1 (a high nibble: the byte is still open)."""
    if reg[R_NIBBLE] == 0:
        reg[R_HI] = value
        reg[R_NIBBLE] = 1
        return -1
    byte = (reg[R_HI] << 4) | value
    reg[R_NIBBLE] = 0
    reg[R_HI] = 0
    return byte
