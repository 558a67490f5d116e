"""The RNNME expert (rnnme.py) inside the predictor (branch neural2).

The expert predicts each nibble as a normalised 16-way distribution (its class-factorised
softmax: high nibble, then low nibble given the high one).  Here that distribution becomes, for
each binary node of the nibble tree, the probability of the node's bit (the mass under its
1-child over the mass under the node), which enters the first-layer mixers as stretch(p) (and, with
rnnme_inputs = 2, as a linear copy (p - 1/2) / 4); its most likely nibble and that nibble's
probability (4 buckets) form a code that selects mixer weights (Selector.RNNME) and the rows of an
APM whose output is averaged into the final probability (rnnme_apm_weight / 16).  The expert
trains on each byte once both nibbles are known, exactly as it does alone.

With rnnme_pure = 1 the expert's distribution is the prediction itself (no context mixing): the
RNNME compressor of Mikolov's thesis, chapter 7, behind the same coder and container.

Determinism: the expert is float32 throughout (rnnme_kernels); the node probabilities are float64
sums of float32 values in a fixed order, quantised by truncation to 12 bits.
"""

from __future__ import annotations

import numpy as np

from .apm import apm_update
from .apm import apm_predict_fine  # round 21 (issue 12)
from .jit import kernel
from .match import match_bucket  # branch expert4
from .contexts import hash2  # branch expert4
from .rnnme_config import CONTEXT_FEATURE, K_FEATS, K_NFEAT  # branch expert4
from .rnnme_config import R_MATCH as RN_MATCH  # branch expert4
from .rnnme_config import R_POS as RN_POS
from .rnnme_kernels import feature_hashes, learn_byte as expert_learn_byte
from .rnnme_kernels import predict_high, predict_low
from .state import C_APM_RATE, C_RNNME_APM_W, C_RNNME_INPUTS, R_HI, R_NIBBLE
from .state import R_MATCH_BYTE, R_MATCH_LEN  # branch expert4
from .state import C_FINE_SHIFT  # round 21 (issue 12)
from .tree import advance_nibble, path_node

# confidence buckets of the expert's most likely nibble: P < 0.4, < 0.7, < 0.9, above
CONFIDENCE_1, CONFIDENCE_2, CONFIDENCE_3 = 0.4, 0.7, 0.9


@kernel(inline=True)
def expert_state(st):
    """The expert's arrays in the tuple layout rnnme_kernels takes (rnnme.RNNME.state)."""
    return (st.rn_cfg, st.rn_reg, st.rn_fp, st.rn_u1, st.rn_u2, st.rn_uw, st.rn_w, st.rn_vh,
            st.rn_bh, st.rn_vl, st.rn_bl, st.rn_me, st.rn_me_n, st.rn_me_rate, st.rn_hs,
            st.rn_hg, st.rn_hx, st.rn_act, st.rn_expt, st.rn_fh, st.rn_fbase_h, st.rn_fbase_l,
            st.rn_z, st.rn_ph, st.rn_pl, st.rn_scr, st.rn_scr64,
            (st.rn_mvh, st.rn_vvh, st.rn_mbh, st.rn_vbh, st.rn_mvl, st.rn_vvl, st.rn_mbl,
             st.rn_vbl),
            (st.rn_mu1, st.rn_vu1, st.rn_mu2, st.rn_vu2, st.rn_muw, st.rn_vuw, st.rn_mw,
             st.rn_vw, st.rn_gw))


@kernel
def predict_distribution(st, reg, dist):
    """The expert's distribution of the nibble reg describes (high, or low given R_HI) into dist."""
    ex = expert_state(st)
    if st.rn_reg[RN_POS] == 0:  # before the first byte: the features of an empty history
        feature_hashes(st.rn_cfg, st.rn_reg, st.rn_fh)
    if reg[R_NIBBLE] == 0:
        context_features(st)
        predict_high(ex, dist)
    else:
        predict_low(ex, reg[R_HI], dist)


@kernel
def context_features(st):
    """branch expert4: the expert's features that are the predictor's own contexts, hashed from
    the byte's context hashes (computed after the expert learned the last byte, so here)."""
    cfg = st.rn_cfg
    for f in range(cfg[K_NFEAT]):
        kind = cfg[K_FEATS + f]
        if kind >= CONTEXT_FEATURE:
            st.rn_fh[f] = hash2(kind, st.ctx_hash[kind - CONTEXT_FEATURE])


@kernel
def predict_inputs(st, reg, node, col):
    """Fill the expert's mixer columns of every node, its node probabilities and its code."""
    dist = node.node_rn_dist
    predict_distribution(st, reg, dist)
    best = 0
    for v in range(1, 16):
        if dist[v] > dist[best]:
            best = v
    top = dist[best]
    confidence = 0
    if top >= CONFIDENCE_3:
        confidence = 3
    elif top >= CONFIDENCE_2:
        confidence = 2
    elif top >= CONFIDENCE_1:
        confidence = 1
    code = best * 4 + confidence
    mass = _subtree_masses(dist, st.rn_scr64[0])
    two_inputs = st.cfg[C_RNNME_INPUTS] == 2
    stretch = st.stretch
    for j in range(1, 16):
        p12 = int(mass[2 * j + 1] / mass[j] * 4096.0)
        if p12 < 1:
            p12 = 1
        elif p12 > 4095:
            p12 = 4095
        node.node_rn_p[j] = p12
        node.node_rn_code[j] = code
        node.inputs[j, col] = stretch[p12]
        if two_inputs:
            node.inputs[j, col + 1] = (p12 - 2048) >> 2


@kernel(inline=True)
def _subtree_masses(dist, mass):
    """mass[j] = the probability under heap node j (leaves 16 + v), float64 in a fixed order."""
    for v in range(16):
        mass[16 + v] = dist[v]
    for j in range(15, 0, -1):
        mass[j] = mass[2 * j] + mass[2 * j + 1]
    return mass


@kernel(inline=True)
def refine_node(st, node, j):
    """Average an APM over (expected nibble, confidence, partial byte) into node j's final
    probability; records the point for learning in node_rn_apm[j] = (row, low point, weight)."""
    w_apm = st.cfg[C_RNNME_APM_W]
    shift = st.cfg[C_FINE_SHIFT]  # round 21: node_p has 12 + shift bits
    p = node.node_p[j]
    row = (node.node_rn_code[j] << 8) | node.node_c0[j]
    pa, lo, w = apm_predict_fine(st.rn_apm, row, st.stretch[p >> shift], shift)
    node.node_rn_apm[j, 0] = row
    node.node_rn_apm[j, 1] = lo
    node.node_rn_apm[j, 2] = w
    p = (p * (16 - w_apm) + pa * w_apm + 8) >> 4
    top = (4096 << shift) - 1
    if p < 1:
        p = 1
    elif p > top:
        p = top
    node.node_p[j] = p


@kernel
def learn(st, value):
    """The coded nibble's path: the APM points used learn (the mixers learn the expert's inputs
    with every other input, in mixer.learn)."""
    a = st.node.node_rn_apm
    rate = st.cfg[C_APM_RATE]
    for d in range(4):
        j, bit = path_node(value, d)
        apm_update(st.rn_apm, a[j, 0], a[j, 1], a[j, 2], bit, rate)


@kernel
def learn_byte(st, byte):
    """The expert trains on the byte just coded (its last predictions were this byte's nibbles).
    The match model has already moved on to the next byte: its expected byte and length bucket
    are what the expert's match features (rnnme_match_feature) hash for that byte."""
    length = st.reg[R_MATCH_LEN]
    st.rn_reg[RN_MATCH] = ((st.reg[R_MATCH_BYTE] + 1) << 5 | match_bucket(length)) if length > 0 else 0
    expert_learn_byte(expert_state(st), byte)


@kernel
def pure_step(st, value, out):
    """rnnme_pure: `nibble.step_state` with the expert alone."""
    reg = st.reg
    if value >= 0:
        byte = advance_nibble(reg, value)
        if byte >= 0:
            learn_byte(st, byte)
    predict_distribution(st, reg, out)
