"""Operations both recurrent cells of the RNNME expert use (rnnme_kernels' tanh cell, rnnme_lstm):
table lookups for tanh and exp (no libm), one Adam/AdaMax step of a weight row, the error a BPTT
step sends back through W, the input rows' sum for a forward step, and the weight steps of one
BPTT step and of a block's end.

Every kernel of the expert compiles with jit.UNCHECKED_DIVISION: its divisors are positive by
construction (Adam's moment plus a positive epsilon, a softmax's total of at least 1, the direct
connections' summed rates when they exceed their cap, the rate schedule's lr_half + position with
lr_half >= 1, a node's mass in node_probabilities: a sum of positive softmax outputs)."""

from __future__ import annotations

import numpy as np

from .dots import add_rows_dot
from .jit import kernel
from .rnnme_config import F_1MB1, F_1MB2, F_ACT_LO, F_ACT_STEPS, F_B1, F_B2, F_EPS, F_EXP_LO
from .rnnme_config import F_EXP_STEPS, F_ZERO, K_ADAM, K_H, K_INPUT2, K_WORD_MASK, R_C4, R_T
from .rnnme_config import R_WORD
from .rnnme_config import K_WORD_PREV, R_WORD1, WORD_PREV_INPUT  # round 25
from .contexts import hash2


@kernel(inline=True, checked_division=False)
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


@kernel(inline=True, checked_division=False)
def table_tanh(fp, act, x):
    return table_lookup(fp, act, x, F_ACT_LO, F_ACT_STEPS)


@kernel(inline=True, checked_division=False)
def table_exp(fp, expt, x):
    """exp(x) for x <= 0 (x below the table's range reads as its first entry)."""
    return table_lookup(fp, expt, x, F_EXP_LO, F_EXP_STEPS)


@kernel(inline=True, checked_division=False)
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


@kernel(inline=True, checked_division=False)
def back_through_w(fp, w, d, out, rows):
    """out[m] = sum_j w[m, j] * d[j] for m < rows: the error a BPTT step sends back through W,
    each sum in ascending j from zero (dots.add_rows_dot, eight rows at a time)."""
    for m in range(rows):
        out[m] = fp[F_ZERO]
    add_rows_dot(w, d, out, rows, d.shape[0])


@kernel(inline=True, checked_division=False)
def input_sum(cfg, reg, u1, u2, uw, hx, a):
    """a = U1[c1] + U2[c2] + Uw[word] (+ Uw[previous word], round 25) (a's width: the rows'),
    the inputs of the step from reg[R_T]; records them in hx for BPTT."""
    t = reg[R_T]
    c1 = reg[R_C4] & 0xFF
    c2 = (reg[R_C4] >> 8) & 0xFF
    wrow = reg[R_WORD] & cfg[K_WORD_MASK]
    prow = 0
    for j in range(a.shape[0]):
        a[j] = u1[c1, j]
    if cfg[K_INPUT2]:
        for j in range(a.shape[0]):
            a[j] += u2[c2, j]
    if cfg[K_WORD_MASK]:
        for j in range(a.shape[0]):
            a[j] += uw[wrow, j]
    if cfg[K_WORD_PREV]:
        prow = hash2(WORD_PREV_INPUT, reg[R_WORD1]) & cfg[K_WORD_MASK]
        for j in range(a.shape[0]):
            a[j] += uw[prow, j]
    hx[t + 1, 0] = c1
    hx[t + 1, 1] = c2
    hx[t + 1, 2] = wrow
    hx[t + 1, 3] = prow


@kernel(inline=True, checked_division=False)
def step_weights(cfg, fp, lr, u1, u2, uw, w, opt, inputs, h_prev, d, dl):
    """The weights that fed one step move along its pre-activation error d (width: the rows').
    Adam/AdaMax: W's gradient d x h(t-1) is gathered for the block's end, the input rows step
    now; SGD: W and the input rows step now by dl = lr * d."""
    (mu1, vu1, mu2, vu2, muw, vuw, mw, vw, gw) = opt
    adam = cfg[K_ADAM]
    nh = cfg[K_H]
    width = d.shape[0]
    if adam:
        for m in range(nh):
            hm = h_prev[m]
            for j in range(width):
                gw[m, j] += d[j] * hm
        c1 = inputs[0]
        adam_row(fp, lr, u1[c1], mu1[c1], vu1[c1], d, adam)
        if cfg[K_INPUT2]:
            c2 = inputs[1]
            adam_row(fp, lr, u2[c2], mu2[c2], vu2[c2], d, adam)
        if cfg[K_WORD_MASK]:
            wr = inputs[2]
            adam_row(fp, lr, uw[wr], muw[wr], vuw[wr], d, adam)
        if cfg[K_WORD_PREV]:
            pr = inputs[3]
            adam_row(fp, lr, uw[pr], muw[pr], vuw[pr], d, adam)
        return
    for j in range(width):
        dl[j] = lr * d[j]
    for m in range(nh):
        hm = h_prev[m]
        for j in range(width):
            w[m, j] += dl[j] * hm
    row = u1[inputs[0]]
    for j in range(width):
        row[j] += dl[j]
    if cfg[K_INPUT2]:
        row = u2[inputs[1]]
        for j in range(width):
            row[j] += dl[j]
    if cfg[K_WORD_MASK]:
        row = uw[inputs[2]]
        for j in range(width):
            row[j] += dl[j]
    if cfg[K_WORD_PREV]:
        row = uw[inputs[3]]
        for j in range(width):
            row[j] += dl[j]


@kernel(inline=True, checked_division=False)
def end_block(cfg, reg, fp, lr, w, opt, hs, hg):
    """After a block's BPTT: Adam's step of W from the gathered gradient, then a new block that
    starts from the last state (its whole row: an LSTM's cell too)."""
    (mu1, vu1, mu2, vu2, muw, vuw, mw, vw, gw) = opt
    adam = cfg[K_ADAM]
    steps = reg[R_T]
    if adam:
        for m in range(cfg[K_H]):
            adam_row(fp, lr, w[m], mw[m], vw[m], gw[m], adam)
            for j in range(w.shape[1]):
                gw[m, j] = fp[F_ZERO]
    for k in range(hs.shape[1]):
        hs[0, k] = hs[steps, k]
    for t in range(steps + 1):
        for k in range(hg.shape[1]):
            hg[t, k] = fp[F_ZERO]
    reg[R_T] = 0
