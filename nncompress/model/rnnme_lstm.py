"""The RNNME expert's LSTM cell (RNNMEParams.cell = 1): forward step and block BPTT.

The tanh cell of Mikolov's RNNME (rnnme_kernels.forward) keeps no memory the direct connections
do not already hold: bench/NEURAL.md's curves are flat in H.  An LSTM cell (as in lstm-compress,
cmix and paq8px -8L) can carry state across many bytes (an open quote, a markup span, the topic
of a paragraph).  Same inputs, same output layer, same optimiser as the tanh cell:

    a = U1[c1] + U2[c2] + Uw[word] (+ Uw[previous word], round 25) + W^T h(t-1)
                                                       (4H pre-activations: gates i, f, o, g)
    i, f, o = sigmoid(a_i), sigmoid(a_f), sigmoid(a_o);  g = tanh(a_g)
    c(t) = f * c(t-1) + i * g;   h(t) = o * tanh(c(t))

The output softmaxes read h(t).  The block buffer `hs` keeps per step, in this order,
h | c | tanh(c) | i | f | o | g (7H values), so the output layer's `hs[t][:H]` is h(t) for both
cells.  sigmoid(x) = 1/2 + tanh(x/2)/2 through the same interpolated tanh table (no libm).

Determinism as in rnnme_kernels: plain IEEE operations in source order (no fastmath, so no FMA
contraction), loops that vectorise run across units, every float constant from `fp`.  The
pure-Python twin is reference_rnnme.TwinRNNME (`_lstm_forward`, `_lstm_bptt`).
"""

from __future__ import annotations

from .jit import kernel
from .rnnme_config import F_CLIP, F_HALF, F_LR, F_ONE, F_ZERO, K_H, R_T
from .rnnme_ops import back_through_w, end_block, input_sum, step_weights, table_tanh


@kernel(inline=True, checked_division=False)
def table_sigmoid(fp, act, x):
    half = fp[F_HALF]
    return half + half * table_tanh(fp, act, half * x)


@kernel(checked_division=False)
def forward_lstm(cfg, reg, fp, u1, u2, uw, w, hs, hx, act, scr):
    """h(t+1), c(t+1) and the gates into the block buffer (layout in the module docstring)."""
    nh = cfg[K_H]
    t = reg[R_T]
    a = scr[7, : 4 * nh]
    input_sum(cfg, reg, u1, u2, uw, hx, a)
    prev = hs[t]
    for m in range(nh):
        hm = prev[m]
        for j in range(4 * nh):
            a[j] += w[m, j] * hm
    nxt = hs[t + 1]
    for k in range(nh):
        i = table_sigmoid(fp, act, a[k])
        f = table_sigmoid(fp, act, a[nh + k])
        o = table_sigmoid(fp, act, a[2 * nh + k])
        g = table_tanh(fp, act, a[3 * nh + k])
        c = f * prev[nh + k] + i * g
        tc = table_tanh(fp, act, c)
        nxt[k] = o * tc
        nxt[nh + k] = c
        nxt[2 * nh + k] = tc
        nxt[3 * nh + k] = i
        nxt[4 * nh + k] = f
        nxt[5 * nh + k] = o
        nxt[6 * nh + k] = g
    reg[R_T] = t + 1


@kernel(checked_division=False)
def bptt_block_lstm(cfg, reg, fp, u1, u2, uw, w, hs, hg, hx, opt, scr):
    """Back-propagate the block's output errors (hg) through the LSTM, newest step first; weight
    updates as rnnme_kernels.bptt_block (rnnme_ops.step_weights, rnnme_ops.end_block).  The
    pre-activation errors are clipped."""
    nh = cfg[K_H]
    ng = 4 * nh
    steps = reg[R_T]
    lr = fp[F_LR]
    one = fp[F_ONE]
    clip = fp[F_CLIP]
    dhn = scr[4, :nh]  # error reaching h(t) from step t + 1
    dcn = scr[5, :nh]  # error reaching c(t) from step t + 1
    for k in range(nh):
        dhn[k] = fp[F_ZERO]
        dcn[k] = fp[F_ZERO]
    da = scr[6, :ng]
    dl = scr[3, :ng]  # (free here: the softmax's scratch row)
    for t in range(steps, 0, -1):
        cur = hs[t]
        prev = hs[t - 1]
        for k in range(nh):
            dh = hg[t, k] + dhn[k]
            tc = cur[2 * nh + k]
            i = cur[3 * nh + k]
            f = cur[4 * nh + k]
            o = cur[5 * nh + k]
            g = cur[6 * nh + k]
            dc = dh * o * (one - tc * tc) + dcn[k]
            dcn[k] = dc * f
            da[k] = dc * g * i * (one - i)
            da[nh + k] = dc * prev[nh + k] * f * (one - f)
            da[2 * nh + k] = dh * tc * o * (one - o)
            da[3 * nh + k] = dc * i * (one - g * g)
        for j in range(ng):
            if da[j] > clip:
                da[j] = clip
            elif da[j] < -clip:
                da[j] = -clip
        # the error for step t - 1 goes through W before this step's update
        back_through_w(fp, w, da, dhn, nh)
        step_weights(cfg, fp, lr, u1, u2, uw, w, opt, hx[t], prev, da, dl)
    end_block(cfg, reg, fp, lr, w, opt, hs, hg)
