"""The nibble step: learn the nibble just coded, predict the next one, with every component.

The model predicts a byte as two 16-way symbols (high nibble, then low nibble): Mikolov's
class-factorised output, where each 16-way distribution is a binary tree of 15 logistic nodes
(hierarchical softmax).  Every node's logit mixes:

* hashed maximum-entropy "direct connections": one hashed slot per context and nibble holds the
  node's bit-history state, mapped to a probability by a per-context adaptive table
  (contexts.py, histories.py);
* an order-0 node probability and a match model that follows the longest recent repeat (match.py);
* the recurrent part: V[node] . s(t), with s(t) = sigmoid(U[byte] + W s(t-1)) (rnn.py);

in gated linear mixers (mixer.py) whose output two adaptive probability maps refine (apm.py).

Entry points (all take the packed state of `state.pack`): `step` (one nibble, what the decoder
calls), `predict_known` (a run of known nibbles, what the encoder calls) and `peek_low_nibbles`
(analysis).  Encoder and decoder both go through `step_state`, so they cannot drift.

With path coding (ModelParams.path_coding) the coder needs only the four nodes on the coded
nibble's path: the encoder calls `predict_known_path`, the decoder (nncompress.fused)
`path_step_state` and then `path_probability` node by node as it descends the tree.  Both go
through `advance`, `prepare_nodes` and `node_probability`, as `step_state` does, and skipping
the other 11 nodes changes nothing (tests/test_path_coding.py).
"""

from __future__ import annotations

from . import apm, contexts, histories, match, mixer, rnn, rnnme_mix
from . import runs  # strength (issue 12)
from . import direct  # round 15 (issue 12)
from .contexts import hash2
from .jit import kernel
from .packed import unpack
from .state import C_CTX_INPUTS, C_MATCH_MIN, C_NCTX, C_RNN_H, R_HI, R_NIBBLE, R_RNN_T
from .state import C_RNNME_APM_W, C_RNNME_H, C_RNNME_INPUTS, C_RNNME_PURE  # branch neural2
from .state import C_RUN_INPUTS  # strength (issue 12)
from .state import C_DIRECT  # round 15 (issue 12)
from .state import C_FINE_SHIFT  # round 21 (issue 12)
from .tree import advance_nibble, node_c0


@kernel
def prepare_nodes(st, reg, node):
    """What the next nibble's nodes share: their partial bytes, the RNNME expert's columns (its
    16-way distribution gives every node at once), and the recurrent part's sign pattern (a
    mixer selector), which is returned.  node is st's own except in peek_low_nibbles."""
    cfg = st.cfg
    nibble = reg[R_NIBBLE]
    hi = reg[R_HI]
    for j in range(1, 16):
        node.node_c0[j] = node_c0(nibble, hi, j)
    if cfg[C_RNNME_H] > 0:  # branch neural2: the RNNME expert, after every other component's columns
        col = (cfg[C_NCTX] * cfg[C_CTX_INPUTS] + 1 + (cfg[C_NCTX] if cfg[C_RUN_INPUTS] > 0 else 0)
               + (1 if cfg[C_MATCH_MIN] > 0 else 0) + (1 if cfg[C_RNN_H] > 0 else 0))
        rnnme_mix.predict_inputs(st, reg, node, col)
    return rnn.sign_pattern(st, reg[R_RNN_T])


@kernel(inline=True)
def node_inputs(st, reg, tables, slots, node, j):
    """Node j's mixer inputs, component by component: contexts and order 0, run inputs, match,
    recurrent part, (the expert's, filled by prepare_nodes), then the bias.  reg, tables, slots
    and node are st's own except in peek_low_nibbles, which predicts from scratch copies."""
    cfg = st.cfg
    histories.node_inputs(st, reg, tables, slots, node, j)
    col = cfg[C_NCTX] * cfg[C_CTX_INPUTS] + 1  # after the contexts and order 0
    if cfg[C_RUN_INPUTS] > 0:  # strength (issue 12): the run inputs, one per context
        runs.node_inputs(st, reg, node, j, col)
        col += cfg[C_NCTX]
    if cfg[C_MATCH_MIN] > 0:
        match.node_inputs(st, reg, node, j, col)
        col += 1
    else:
        node.node_eb[j] = -1
    if cfg[C_RNN_H] > 0:
        rnn.node_inputs(st, reg, node, j, col)
        col += 1
    if cfg[C_RNNME_H] > 0:  # branch neural2
        col += cfg[C_RNNME_INPUTS]
    if cfg[C_DIRECT] > 0:  # round 15 (issue 12): the direct maps
        col = direct.node_inputs(st, reg, node, j, col)
    node.inputs[j, col] = 256  # bias


@kernel(inline=True)
def node_probability(st, reg, tables, slots, node, j, rnn_pattern):
    """Node j's final probability of a 1 bit (node_p[j], of 2^(12 + cfg[C_FINE_SHIFT])), after
    prepare_nodes: its inputs,
    its mixers, then its APMs.  Nodes do not depend on each other, and learning reads only the
    coded nibble's path, so path coding may compute just the 4 nodes of the path."""
    node_inputs(st, reg, tables, slots, node, j)
    mixer.predict_node(st, reg, node, j, rnn_pattern)
    apm.refine_node(st, reg, node, j)
    if st.cfg[C_RNNME_APM_W] > 0:  # branch neural2: the APM on the RNNME expert's expected nibble
        rnnme_mix.refine_node(st, node, j)
    return node.node_p[j]


@kernel
def predict_nibble(st, reg, tables, slots, node, out):
    """The next nibble's 16 (unnormalised) probabilities into out: every node's probability,
    multiplied down each nibble's path."""
    rnn_pattern = prepare_nodes(st, reg, node)
    for j in range(1, 16):
        node_probability(st, reg, tables, slots, node, j, rnn_pattern)
    node_p = node.node_p
    one = 4096 << st.cfg[C_FINE_SHIFT]  # round 21: probabilities of 2^12 or 2^16
    for v in range(16):
        j = 1
        prob = 1.0
        for d in range(4):
            bit = (v >> (3 - d)) & 1
            pj = node_p[j]
            prob *= pj if bit == 1 else one - pj
            j = 2 * j + bit
        out[v] = prob


@kernel
def learn_nibble(st, value):
    """Every node on the coded nibble's path learns its bit, in every component (each
    component's state is its own, so component by component is the same as node by node)."""
    histories.learn(st, value)
    if st.cfg[C_RUN_INPUTS] > 0:  # strength (issue 12)
        runs.learn(st, value)
    if st.cfg[C_MATCH_MIN] > 0:
        match.learn(st, value)
    mixer.learn(st, value)
    apm.learn(st, value)
    if st.cfg[C_DIRECT] > 0:  # round 15 (issue 12)
        direct.learn(st, value)
    if st.cfg[C_RNN_H] > 0:
        rnn.learn(st, value)
    if st.cfg[C_RNNME_APM_W] > 0:  # branch neural2
        rnnme_mix.learn(st, value)


@kernel
def learn_byte(st, byte):
    if st.cfg[C_RUN_INPUTS] > 0:  # strength (issue 12): before the context hashes move on
        runs.update(st, byte)
    contexts.append_byte(st, byte)
    if st.cfg[C_MATCH_MIN] > 0:
        match.update(st, byte)
    if st.cfg[C_RNN_H] > 0:
        rnn.learn_byte(st, byte)
    if st.cfg[C_RNNME_H] > 0:  # branch neural2
        rnnme_mix.learn_byte(st, byte)


@kernel
def advance(st, value):
    """Learn the nibble just coded (value >= 0; < 0 starts the stream) and move every context on:
    what comes before the next nibble's prediction.  Not for the pure expert."""
    reg = st.reg
    if value >= 0:
        learn_nibble(st, value)
        byte = advance_nibble(reg, value)
        if byte >= 0:
            learn_byte(st, byte)
            contexts.byte_context_hashes(st)
            if st.cfg[C_RUN_INPUTS] > 0:  # strength (issue 12)
                runs.lookup(st)
    else:
        contexts.byte_context_hashes(st)
        if st.cfg[C_RUN_INPUTS] > 0:  # strength (issue 12)
            runs.lookup(st)
    histories.claim_nibble_slots(st)


@kernel
def step_state(st, value, out):
    """`step` on the unpacked state (state.State)."""
    if st.cfg[C_RNNME_PURE] > 0:  # branch neural2: the RNNME expert alone
        rnnme_mix.pure_step(st, value, out)
        return
    advance(st, value)
    predict_nibble(st, st.reg, st.tables, st.slots, st.node, out)


@kernel(inline=True)
def path_step_state(st, value):
    """Path coding (ModelParams.path_coding), on the unpacked state: learn `value` like
    step_state, then only prepare what the next nibble's nodes share; returns the sign pattern
    that path_probability takes.  The coder then asks for the four nodes of the nibble's path, one
    by one, as it learns each bit: those nodes' probabilities are exactly what step_state
    computes for them, and learning reads only those nodes, so the model runs identically."""
    advance(st, value)
    return prepare_nodes(st, st.reg, st.node)


@kernel(inline=True)
def path_probability(st, j, rnn_pattern):
    """Path coding: node j's probability of a 1 bit, of 65536 (1..65535), after
    path_step_state.  A 12-bit model's p becomes 16p: the coder's split (rangecoder.tree_split)
    is then exactly the one it made from p of 4096, so older archives decode as before."""
    p = node_probability(st, st.reg, st.tables, st.slots, st.node, j, rnn_pattern)
    return p << (4 - st.cfg[C_FINE_SHIFT])


@kernel
def step(packed, value, out):
    """Learn the nibble just coded (value >= 0), then predict the next nibble into out[16].

    value < 0 starts the stream: nothing has been coded yet, only predict."""
    step_state(unpack(packed), value, out)


@kernel
def predict_known(packed, first_value, nibbles, probs):
    """Encoder side: run `step` over known nibbles, storing each prediction (probs[k] is the
    distribution nibbles[k] is coded with).  first_value is the nibble still to be learned from
    the previous call (-1 at the start of the stream)."""
    st = unpack(packed)
    value = first_value
    for k in range(nibbles.shape[0]):
        step_state(st, value, probs[k])
        value = nibbles[k]


@kernel
def predict_known_path(packed, first_value, nibbles, path_p):
    """Path coding, encoder side: for each known nibble, the probabilities of a 1 bit at the four
    nodes of its path (path_p[k, depth], 1..65535 of 65536), learning as `step` does."""
    st = unpack(packed)
    value = first_value
    for k in range(nibbles.shape[0]):
        rnn_pattern = path_step_state(st, value)
        value = nibbles[k]
        j = 1
        for d in range(4):
            path_p[k, d] = path_probability(st, j, rnn_pattern)
            j = 2 * j + ((value >> (3 - d)) & 1)


@kernel
def peek_low_nibbles(packed, scratch_tables, scratch_slots, scratch_reg, scratch_node, out):
    """Analysis only: the low-nibble distribution for each of the 16 possible high nibbles.

    Call right after the high nibble of a byte was predicted (before it is learned).  Changes
    no model state: slots are looked up without being claimed (a missing slot reads as fresh
    zeros, exactly what claiming would create) and the per-node working set is scratch_node
    (a state.Node).  out has shape (16, 16): out[hi, lo] ~ P(lo | hi)."""
    st = unpack(packed)
    reg, tables = st.reg, st.tables
    for k in range(reg.shape[0]):
        scratch_reg[k] = reg[k]
    scratch_reg[R_NIBBLE] = 1
    fold = histories.case_fold_now(st.cfg, reg)  # round 22
    for hi in range(16):
        scratch_reg[R_HI] = hi
        if st.cfg[C_RNNME_PURE] > 0:  # branch neural2: the RNNME expert alone
            rnnme_mix.predict_distribution(st, scratch_reg, out[hi])
            continue
        for i in range(st.cfg[C_NCTX]):
            salt = histories.nibble_salt(fold, i, 1, hi)
            off = histories.lookup_slot(tables[i], hash2(st.ctx_hash[i], salt))
            for k in range(16):
                scratch_tables[i, k] = tables[i, off + k] if off >= 0 else 0
            scratch_slots[i] = 0
        predict_nibble(st, scratch_reg, scratch_tables, scratch_slots, scratch_node, out[hi])
