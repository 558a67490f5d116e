"""Dot products in a fixed order, several at once: the recurrent layers' matrix-vector products.

Each sum adds its terms in ascending order onto its starting value, the order the reference twins
use and every archive depends on, so it cannot be vectorised along the sum.  Summed one at a time,
each addition waits for the previous one (a chain as long as the sum); eight sums side by side
are eight independent chains, which keeps the CPU's adders busy and runs several times faster
with every bit unchanged (bench/TUNING.md, round 26).
"""

from __future__ import annotations

from .jit import kernel


@kernel(inline=True)
def add_rows_dot(w, x, out, rows, width):
    """out[k] += sum_j w[k, j] * x[j] for k < rows, j < width, each sum in ascending j onto
    out[k].  w may be a transposed view (rnn.bptt sums W's columns)."""
    k = 0
    while k + 8 <= rows:
        w0, w1, w2, w3 = w[k], w[k + 1], w[k + 2], w[k + 3]
        w4, w5, w6, w7 = w[k + 4], w[k + 5], w[k + 6], w[k + 7]
        a0, a1, a2, a3 = out[k], out[k + 1], out[k + 2], out[k + 3]
        a4, a5, a6, a7 = out[k + 4], out[k + 5], out[k + 6], out[k + 7]
        for j in range(width):
            xj = x[j]
            a0 += w0[j] * xj
            a1 += w1[j] * xj
            a2 += w2[j] * xj
            a3 += w3[j] * xj
            a4 += w4[j] * xj
            a5 += w5[j] * xj
            a6 += w6[j] * xj
            a7 += w7[j] * xj
        out[k], out[k + 1], out[k + 2], out[k + 3] = a0, a1, a2, a3
        out[k + 4], out[k + 5], out[k + 6], out[k + 7] = a4, a5, a6, a7
        k += 8
    while k < rows:
        acc = out[k]
        for j in range(width):
            acc += w[k, j] * x[j]
        out[k] = acc
        k += 1
