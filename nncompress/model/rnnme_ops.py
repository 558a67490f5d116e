"""Elementwise operations of the RNNME expert's kernels (rnnme_kernels, rnnme_lstm): table
lookups for tanh and exp (no libm) and one Adam/AdaMax step of a weight row."""

from __future__ import annotations

import numpy as np

from .jit import kernel
from .rnnme_config import F_1MB1, F_1MB2, F_ACT_LO, F_ACT_STEPS, F_B1, F_B2, F_EPS, F_EXP_LO
from .rnnme_config import F_EXP_STEPS, F_ZERO


@kernel(inline=True)
def table_lookup(fp, table, x, lo, steps):
    """Linear interpolation in a table covering [-fp[lo], ...) at fp[steps] entries per unit;
    below the range reads the first entry, above it the last."""
    t = (x + fp[lo]) * fp[steps]
    if not t > fp[F_ZERO]:  # (a NaN reads the first entry too, never an index out of the table)
        return table[0]
    last = table.shape[0] - 2
    ti = np.floor(t)  # exact, and stays in the table's float type
    i = int(ti)
    if i >= last:
        return table[last]
    f = t - ti
    return table[i] + (table[i + 1] - table[i]) * f


@kernel(inline=True)
def table_tanh(fp, act, x):
    return table_lookup(fp, act, x, F_ACT_LO, F_ACT_STEPS)


@kernel(inline=True)
def table_exp(fp, expt, x):
    """exp(x) for x <= 0 (x below the table's range reads as its first entry)."""
    return table_lookup(fp, expt, x, F_EXP_LO, F_EXP_STEPS)


@kernel(inline=True)
def adam_row(fp, lr, w, m, v, g, mode):
    """One Adam step (ascent along g, no bias correction) for each element of a weight row;
    mode 2 is AdaMax (v tracks max |g| instead of g^2: no square root at all)."""
    b1 = fp[F_B1]
    omb1 = fp[F_1MB1]
    b2 = fp[F_B2]
    omb2 = fp[F_1MB2]
    eps = fp[F_EPS]
    for i in range(w.shape[0]):
        gi = g[i]
        mi = b1 * m[i] + omb1 * gi
        m[i] = mi
        if mode == 2:
            vi = b2 * v[i]
            ag = abs(gi)
            if ag > vi:
                vi = ag
            v[i] = vi
            w[i] += (lr * mi) / (vi + eps)
        else:
            # sqrt is an IEEE-754 basic operation (correctly rounded everywhere), not libm
            vi = b2 * v[i] + omb2 * (gi * gi)
            v[i] = vi
            w[i] += (lr * mi) / (np.sqrt(vi) + eps)
