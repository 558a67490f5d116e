"""The recurrent layer: s(t) = sigmoid(U[byte] + W s(t-1)); node logits V[c0] . s(t) + b[c0].

V and b learn at every node; U and W learn by truncated back-propagation through time once a
block of `rnn_bptt` bytes is stored.  float64 with a fixed operation order (no fastmath: no
fused multiply-add, no re-association) and a table sigmoid, so every target computes the same
bits.  Off (rnn_hidden=0): none of this runs and the arrays keep one unused unit.
"""

from __future__ import annotations

from .dots import add_rows_dot
from .jit import kernel
from .state import C_RNN_BPTT, C_RNN_H, R_RNN_T
from .tree import path_node

SIGNS = 4  # units whose signs form the RNN_SIGNS selector's pattern


@kernel
def rnn_sigmoid(sig, x):
    # table over [-16, 16), 128 steps per unit, linear interpolation
    t = (x + 16.0) * 128.0
    if t <= 0.0:
        return sig[0]
    if t >= sig.shape[0] - 2:
        return sig[sig.shape[0] - 2]
    i = int(t)
    f = t - i
    return sig[i] + (sig[i + 1] - sig[i]) * f


@kernel
def forward(st, byte):
    """s(t) = sigmoid(U[byte] + W s(t-1)) into the next row of the block buffer."""
    nh = st.cfg[C_RNN_H]
    reg, rnn_u, rnn_w, rnn_s = st.reg, st.rnn_u, st.rnn_w, st.rnn_s
    t = reg[R_RNN_T]
    acc = rnn_s[t + 1]  # the sums, in the row they end in
    for k in range(nh):
        acc[k] = rnn_u[byte, k]
    add_rows_dot(rnn_w, rnn_s[t], acc, nh, nh)
    for k in range(nh):
        acc[k] = rnn_sigmoid(st.sig, acc[k])
    st.rnn_x[t + 1] = byte
    reg[R_RNN_T] = t + 1


@kernel
def bptt(st):
    """Block back-propagation through time over the stored steps, then start a new block."""
    nh = st.cfg[C_RNN_H]
    reg, rnn_u, rnn_w, rnn_s, rnn_x, rnn_g = st.reg, st.rnn_u, st.rnn_w, st.rnn_s, st.rnn_x, st.rnn_g
    lr = st.rnn_lr[0]
    steps = reg[R_RNN_T]
    delta_next = st.rnn_delta[0]
    delta = st.rnn_delta[1]
    for k in range(nh):
        delta_next[k] = 0.0
        delta[k] = 0.0
    for t in range(steps, 0, -1):
        g = rnn_g[t]  # (the block's errors at t are not read again: the sums may end there)
        add_rows_dot(rnn_w.T, delta_next, g, nh, nh)  # W's columns
        for k in range(nh):
            s = rnn_s[t, k]
            d = g[k] * s * (1.0 - s)
            if d > 15.0:
                d = 15.0
            elif d < -15.0:
                d = -15.0
            delta[k] = d
        # weight updates use the pre-update W for the propagated error above (computed first)
        for k in range(nh):
            dk = lr * delta[k]
            rnn_u[rnn_x[t], k] += dk
            for m in range(nh):
                rnn_w[k, m] += dk * rnn_s[t - 1, m]
        for k in range(nh):
            delta_next[k] = delta[k]
    for k in range(nh):
        rnn_s[0, k] = rnn_s[steps, k]
    for t in range(steps + 1):
        for k in range(nh):
            rnn_g[t, k] = 0.0
    reg[R_RNN_T] = 0


@kernel
def learn_byte(st, byte):
    """After a byte: back-propagate a full block, then step the state."""
    if st.reg[R_RNN_T] >= st.cfg[C_RNN_BPTT]:
        bptt(st)
    forward(st, byte)


@kernel(inline=True)
def sign_pattern(st, t):
    """Which of the first SIGNS units are above 1/2 (the RNN_SIGNS selector)."""
    pattern = 0
    for k in range(min(st.cfg[C_RNN_H], SIGNS)):
        if st.rnn_s[t, k] > 0.5:
            pattern |= 1 << k
    return pattern


@kernel(inline=True)
def node_inputs(st, reg, node, j, col):
    """Node j's logit V[c0] . s(t) + b[c0] (node_z[j]) and its mixer input in column col:
    stretch units (x256), clamped."""
    nh = st.cfg[C_RNN_H]
    t = reg[R_RNN_T]
    rnn_v, rnn_s = st.rnn_v, st.rnn_s
    c0 = node.node_c0[j]
    z = st.rnn_b[c0]
    for k in range(nh):
        z += rnn_v[c0, k] * rnn_s[t, k]
    node.node_z[j] = z
    zi = z * 256.0
    if zi > 2047.0:
        zi = 2047.0
    elif zi < -2047.0:
        zi = -2047.0
    node.inputs[j, col] = int(zi)


@kernel
def learn(st, value):
    """The coded nibble's path: V[c0] and b[c0] learn; the error flows into the block's gradient."""
    nh = st.cfg[C_RNN_H]
    t = st.reg[R_RNN_T]
    lr = st.rnn_lr[0]
    rnn_v, rnn_s, rnn_g, node = st.rnn_v, st.rnn_s, st.rnn_g, st.node
    for d in range(4):
        j, bit = path_node(value, d)
        c0 = node.node_c0[j]
        e = bit - rnn_sigmoid(st.sig, node.node_z[j])
        for k in range(nh):
            rnn_g[t, k] += e * rnn_v[c0, k]
            rnn_v[c0, k] += lr * e * rnn_s[t, k]
        st.rnn_b[c0] += lr * e
