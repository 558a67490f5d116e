"""Kernels of the RNNME expert (nncompress.model.rnnme): feature hashing, the class-factorised
softmax with its direct connections, the recurrent forward step and block BPTT, and the per-byte
learn/predict verbs.  Deterministic as described in rnnme.py."""

from __future__ import annotations

from .contexts import hash2 as mix32  # the model's own 32-bit hash of two values
from .jit import kernel
from .rnnme_ops import adam_row, table_exp, table_lookup, table_tanh  # noqa: F401
from .rnnme_ops import back_through_w, end_block, input_sum, step_weights
from .rnnme_lstm import bptt_block_lstm, forward_lstm
from .rnnme_config import (
    F_CLIP,
    F_LR,
    F_LR0,
    F_LR_MIN,
    F_ME_TOTAL,
    F_ME_CTX_TOTAL,
    K_CTX_FIRST,
    F_ONE,
    F_OUT_SCALE,
    F_ZERO,
    K_ADAM,
    K_BPTT,
    K_CELL,
    K_FEATS,
    K_H,
    K_LR_HALF,
    K_ME_MASK,
    K_NFEAT,
    CONTEXT_FEATURE,
    MASK32,
    MATCH_FEATURE,
    MATCH_ORDER1_FEATURE,
    R_C4,
    R_C8,
    R_HI,
    R_MATCH,
    R_POS,
    R_T,
    R_WORD,
    R_WORD1,
    WORD_FEATURE,
    WORD_PAIR_FEATURE,
)

# ---- kernels ------------------------------------------------------------------------------------

@kernel(checked_division=False)
def softmax16(fp, expt, z, p):
    mx = z[0]
    for c in range(1, 16):
        if z[c] > mx:
            mx = z[c]
    total = fp[F_ZERO]
    for c in range(16):
        e = table_exp(fp, expt, z[c] - mx)
        p[c] = e
        total += e
    for c in range(16):
        p[c] = p[c] / total


@kernel(checked_division=False)
def feature_hashes(cfg, reg, fh):
    """Hash of each direct-connection feature for the byte about to be coded."""
    c4 = reg[R_C4]
    c8 = reg[R_C8]
    for f in range(cfg[K_NFEAT]):
        kind = cfg[K_FEATS + f]
        if kind <= 4:
            h = mix32(kind, c4 & ((1 << (8 * kind)) - 1))
        elif kind <= 8:
            h = mix32(mix32(kind, c4), c8 & ((1 << (8 * (kind - 4))) - 1))
        elif kind == WORD_FEATURE:
            h = mix32(mix32(WORD_FEATURE, reg[R_WORD]), c4 & 0xFF)
        elif kind == WORD_PAIR_FEATURE:
            h = mix32(mix32(WORD_PAIR_FEATURE, reg[R_WORD1]), reg[R_WORD])
        elif kind == MATCH_FEATURE:  # branch expert4
            h = mix32(MATCH_FEATURE, reg[R_MATCH])
        elif kind == MATCH_ORDER1_FEATURE:  # branch expert4
            h = mix32(mix32(MATCH_ORDER1_FEATURE, reg[R_MATCH] >> 5), c4 & 0xFF)
        else:  # CONTEXT_FEATURE + i (branch expert4): the predictor writes it (rnnme_mix)
            continue
        fh[f] = h


@kernel(checked_division=False)
def output_logits(cfg, s, vout, bout, me, fbase, z):
    """z[c] = b[c] + sum_k V[k, c] s[k] + sum_f me[fbase[f] + c]   (k ascending, then f ascending)."""
    nh = cfg[K_H]
    for c in range(16):
        z[c] = bout[c]
    for k in range(nh):
        sk = s[k]
        for c in range(16):
            z[c] += vout[k, c] * sk
    for f in range(fbase.shape[0]):
        base = fbase[f]
        for c in range(16):
            z[c] += me[base + c]


@kernel(checked_division=False)
def predict_high(st, out):
    """The high nibble's 16 probabilities for the next byte (normalised) into out."""
    (cfg, reg, fp, u1, u2, uw, w, vh, bh, vl, bl, me, me_n, me_rate, hs, hg, hx, act, expt,
     fh, fbase_h, fbase_l, z, ph, pl, scr, scr64, outopt, opt) = st
    t = reg[R_T]
    mask = cfg[K_ME_MASK]
    for f in range(cfg[K_NFEAT]):
        fbase_h[f] = (fh[f] << 4) & mask
    output_logits(cfg, hs[t], vh, bh, me, fbase_h[: cfg[K_NFEAT]], z)
    softmax16(fp, expt, z, ph)
    for c in range(16):
        out[c] = ph[c]


@kernel(checked_division=False)
def predict_low(st, hi, out):
    """The low nibble's 16 probabilities given the high nibble hi (normalised) into out."""
    (cfg, reg, fp, u1, u2, uw, w, vh, bh, vl, bl, me, me_n, me_rate, hs, hg, hx, act, expt,
     fh, fbase_h, fbase_l, z, ph, pl, scr, scr64, outopt, opt) = st
    t = reg[R_T]
    mask = cfg[K_ME_MASK]
    for f in range(cfg[K_NFEAT]):
        fbase_l[f] = (mix32(fh[f], hi + 1) << 4) & mask
    reg[R_HI] = hi
    output_logits(cfg, hs[t], vl[hi], bl[hi], me, fbase_l[: cfg[K_NFEAT]], z)
    softmax16(fp, expt, z, pl)
    for c in range(16):
        out[c] = pl[c]


@kernel(checked_division=False)
def train_softmax(cfg, fp, s, g, vout, bout, mv, vv, mb, vb, me, me_n, me_rate, fbase, p, target,
                  lr_out, scr):
    """One softmax's cross-entropy step: error e = onehot(target) - p.  Adds V e to the hidden
    error g (with V before its update), then updates V, the bias and the direct connections."""
    nh = cfg[K_H]
    e = scr[0, :16]
    el = scr[1, :16]
    for c in range(16):
        e[c] = -p[c]
    e[target] = fp[F_ONE] - p[target]
    for c in range(16):
        el[c] = lr_out * e[c]
    for k in range(nh):
        acc = g[k]
        for c in range(16):
            acc += vout[k, c] * e[c]
        g[k] = acc
    adam = cfg[K_ADAM]
    if adam:
        grow = scr[2, :16]
        for k in range(nh):
            sk = s[k]
            for c in range(16):
                grow[c] = e[c] * sk
            adam_row(fp, lr_out, vout[k], mv[k], vv[k], grow, adam)
        adam_row(fp, lr_out, bout, mb, vb, e, adam)
    else:
        for k in range(nh):
            sk = s[k]
            for c in range(16):
                vout[k, c] += el[c] * sk
        for c in range(16):
            bout[c] += el[c]
    # direct connections: each row's rate decays with its use count; when the rows' rates sum
    # to more than F_ME_TOTAL they are scaled down to that sum, so a byte whose contexts are all
    # fresh moves its logits by at most F_ME_TOTAL * e (no overshoot), and the step goes mostly to
    # the rows that know least
    nf = fbase.shape[0]
    rates = scr[3]
    total = fp[F_ZERO]
    for f in range(nf):
        row = fbase[f] >> 4
        n = me_n[row]
        rates[f] = me_rate[n]
        total += rates[f]
        if n < me_rate.shape[0] - 1:
            me_n[row] = n + 1
    scale = fp[F_ONE]
    if total > fp[F_ME_TOTAL]:
        scale = fp[F_ME_TOTAL] / total
    # round 28: the mix's contexts (the last features) have a cap of their own.  A fresh word
    # makes most of them fresh at once, and their summed first steps (0.3 each) would push the
    # logits by several units on one byte's evidence; the byte orders keep their full steps.
    # (The overall cap above still sees the unscaled rates: with its default it never binds.)
    first = cfg[K_CTX_FIRST]
    ctx_total = fp[F_ZERO]
    for f in range(first, nf):
        ctx_total += rates[f]
    if ctx_total > fp[F_ME_CTX_TOTAL]:
        ctx_scale = fp[F_ME_CTX_TOTAL] / ctx_total
        for f in range(first, nf):
            rates[f] = rates[f] * ctx_scale
    for f in range(nf):
        base = fbase[f]
        rate = rates[f] * scale
        for c in range(16):
            me[base + c] += rate * e[c]


@kernel(checked_division=False)
def bptt_block(cfg, reg, fp, u1, u2, uw, w, hs, hg, hx, opt, scr):
    """Back-propagate the stored hidden errors through the block (newest step first), updating
    W and the input rows; then start a new block from the last state.  SGD updates W at each
    step (after propagating through it); Adam sums W's gradient over the block and steps once,
    and steps each input row at each step."""
    nh = cfg[K_H]
    steps = reg[R_T]
    lr = fp[F_LR]
    one = fp[F_ONE]
    clip = fp[F_CLIP]
    dn = scr[4, :nh]  # error reaching step t from step t + 1
    for k in range(nh):
        dn[k] = 0
    d = scr[5, :nh]
    dl = scr[6, :nh]
    for t in range(steps, 0, -1):
        for k in range(nh):
            sk = hs[t, k]
            dk = (hg[t, k] + dn[k]) * (one - sk * sk)
            if dk > clip:
                dk = clip
            elif dk < -clip:
                dk = -clip
            d[k] = dk
        # the error for step t - 1 goes through W before this step's update
        back_through_w(fp, w, d, dn, nh)
        step_weights(cfg, fp, lr, u1, u2, uw, w, opt, hx[t], hs[t - 1], d, dl)
    end_block(cfg, reg, fp, lr, w, opt, hs, hg)


@kernel(checked_division=False)
def forward(cfg, reg, fp, u1, u2, uw, w, hs, hx, act, scr):
    """s(t+1) = tanh(U1[c1] + U2[c2] + Uw[word] + sum_m W[m, .] s(t)[m]) into the block buffer."""
    nh = cfg[K_H]
    t = reg[R_T]
    a = scr[7, :nh]
    input_sum(cfg, reg, u1, u2, uw, hx, a)
    for m in range(nh):
        sm = hs[t, m]
        for k in range(nh):
            a[k] += w[m, k] * sm
    for k in range(nh):
        hs[t + 1, k] = table_tanh(fp, act, a[k])
    reg[R_T] = t + 1


@kernel(checked_division=False)
def learn_byte(st, byte):
    """Train on the byte just coded (after predict_high and predict_low(byte >> 4)), then advance
    the network and the features to the next byte."""
    (cfg, reg, fp, u1, u2, uw, w, vh, bh, vl, bl, me, me_n, me_rate, hs, hg, hx, act, expt,
     fh, fbase_h, fbase_l, z, ph, pl, scr, scr64, outopt, opt) = st
    nf = cfg[K_NFEAT]
    t = reg[R_T]
    hi = byte >> 4
    lr_out = fp[F_LR] * fp[F_OUT_SCALE]
    (mvh, vvh, mbh, vbh, mvl, vvl, mbl, vbl) = outopt
    train_softmax(cfg, fp, hs[t], hg[t], vh, bh, mvh, vvh, mbh, vbh, me, me_n, me_rate,
                  fbase_h[:nf], ph, hi, lr_out, scr)
    oh = hi if cfg[K_ADAM] else 0  # (the moments are 1-element placeholders under SGD)
    train_softmax(cfg, fp, hs[t], hg[t], vl[hi], bl[hi], mvl[oh], vvl[oh], mbl[oh], vbl[oh], me,
                  me_n, me_rate, fbase_l[:nf], pl, byte & 15, lr_out, scr)
    # byte-level registers
    pos = reg[R_POS] + 1
    reg[R_POS] = pos
    reg[R_C8] = ((reg[R_C8] << 8) | (reg[R_C4] >> 24)) & MASK32
    reg[R_C4] = ((reg[R_C4] << 8) | byte) & MASK32
    c = byte
    if 65 <= c <= 90:
        c += 32
    if (97 <= c <= 122) or c >= 128:
        reg[R_WORD] = mix32(reg[R_WORD] + 1, c)
    elif reg[R_WORD] != 0:
        reg[R_WORD1] = reg[R_WORD]
        reg[R_WORD] = 0
    # learning-rate schedule: lr0 / (1 + pos / half), floored (float64, then stored in the
    # model's float type)
    lr = fp[F_LR0] * cfg[K_LR_HALF] / (cfg[K_LR_HALF] + pos)
    if lr < fp[F_LR_MIN]:
        lr = fp[F_LR_MIN]
    fp[F_LR] = lr
    if cfg[K_CELL]:
        if t >= cfg[K_BPTT]:
            bptt_block_lstm(cfg, reg, fp, u1, u2, uw, w, hs, hg, hx, opt, scr)
        forward_lstm(cfg, reg, fp, u1, u2, uw, w, hs, hx, act, scr)
    else:
        if t >= cfg[K_BPTT]:
            bptt_block(cfg, reg, fp, u1, u2, uw, w, hs, hg, hx, opt, scr)
        forward(cfg, reg, fp, u1, u2, uw, w, hs, hx, act, scr)
    feature_hashes(cfg, reg, fh)


@kernel(checked_division=False)
def run_known(st, data, probs, dists):
    """Code `data` without a coder: probs[i] = P(data[i]); dists[i] (if dists has rows) = the
    high nibble's 16 probabilities followed by the low nibble's given the actual high nibble."""
    scr64 = st[26]  # the expert's float64 scratch rows (rnnme_config.ARRAY_NAMES)
    ph = scr64[0, :16]
    pl = scr64[1, :16]
    keep = dists.shape[0] > 0
    for i in range(data.shape[0]):
        byte = data[i]
        predict_high(st, ph)
        predict_low(st, byte >> 4, pl)
        probs[i] = ph[byte >> 4] * pl[byte & 15]
        if keep:
            for c in range(16):
                dists[i, c] = ph[c]
                dists[i, 16 + c] = pl[c]
        learn_byte(st, byte)


@kernel(checked_division=False)
def node_probabilities(p16, out, tree):
    """For a binary-node mixer: out[j] = P(bit 1 at heap node j) for the nodes 1..15 of a nibble
    tree (node j's children are 2j for bit 0 and 2j + 1 for bit 1; leaf 16 + v is nibble v),
    i.e. the mass under the 1-child over the mass under j (out[0] is unused).  Float64 sums in a
    fixed order: deterministic."""
    for v in range(16):
        tree[16 + v] = p16[v]
    for j in range(15, 0, -1):
        tree[j] = tree[2 * j] + tree[2 * j + 1]
    out[0] = 0.0
    for j in range(1, 16):
        out[j] = tree[2 * j + 1] / tree[j]
