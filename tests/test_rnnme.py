"""The RNNME expert (nncompress.model.rnnme) against its slow pure-Python twin
(nncompress.model.reference_rnnme), bit for bit, plus determinism, a real range-coder round trip
and learning checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nncompress.model import rnnme
from nncompress.model.reference_rnnme import TwinRNNME
from nncompress.model.rnnme import RNNME, RNNMEParams

MASK32 = 0xFFFFFFFF

TEXT = (b"Alice was beginning to get very tired of sitting by her sister on the bank, and of "
        b"having nothing to do: once or twice she had peeped into the book her sister was "
        b"reading, but it had no pictures or conversations in it, 'and what is the use of a "
        b"book,' thought Alice 'without pictures or conversations?'\r\n\x00\xff\xc3\xa9 THE END.\n")

# Small sizes; a short learning-rate half-life, a tight clip and a low cap on the direct-connection
# rates so that the schedule, the clipping and the rate scaling all act within a few hundred bytes.
SMALL = RNNMEParams(hidden=8, bptt=3, me_bits=10, orders=(1, 2, 3, 5, 7), word_feature=2,
                    input2=1, word_input_bits=4, lr_micro=50000, lr_min_micro=20000, lr_half=50,
                    out_scale_milli=1500, me_lr_milli=900, me_decay_milli=100, me_min_milli=30,
                    me_total_milli=1200, clip_milli=300)


@pytest.mark.parametrize("float_bits", [32, 64])
@pytest.mark.parametrize("variant", ["full", "plain", "sgd", "adam", "adamax", "odd",
                                     "lstm", "lstm-sgd", "lstm-adam", "lstm-plain", "lstm-odd"])
def test_kernels_match_the_twin_bit_for_bit(float_bits, variant):
    params = dataclasses.replace(SMALL, float_bits=float_bits)
    if variant.startswith("lstm"):  # the LSTM cell (rnnme_lstm); its gate errors are smaller
        params = dataclasses.replace(params, cell=1, clip_milli=20)
        variant = variant[5:] or "full"
    if variant in ("sgd", "adam", "adamax"):  # (full and plain use the default, AdaMax)
        params = dataclasses.replace(params, adam={"sgd": 0, "adam": 1, "adamax": 2}[variant])
    if variant == "odd":  # 11 units: dots.add_rows_dot's block of eight rows and its rest
        params = dataclasses.replace(params, hidden=11)
    if variant == "plain":  # one input, no word features, no cap on the rates
        params = dataclasses.replace(params, input2=0, word_input_bits=0, word_feature=0,
                                     orders=(1, 2), me_total_milli=100000, bptt=5)
    fast = RNNME(params)
    twin = TwinRNNME(params)
    for k, byte in enumerate(TEXT * 2):
        hi = byte >> 4
        np.testing.assert_array_equal(fast.predict_high(), np.array(twin.predict_high()),
                                      err_msg=f"high nibble of byte {k}")
        np.testing.assert_array_equal(fast.predict_low(hi), np.array(twin.predict_low(hi)),
                                      err_msg=f"low nibble of byte {k}")
        fast.learn(byte)
        twin.learn(byte)
    np.testing.assert_array_equal(fast.arrays["w"], np.array(twin.w, dtype=fast.dtype))
    np.testing.assert_array_equal(fast.arrays["u1"], np.array(twin.u1, dtype=fast.dtype))
    np.testing.assert_array_equal(fast.arrays["u2"], np.array(twin.u2, dtype=fast.dtype))
    np.testing.assert_array_equal(fast.arrays["uw"], np.array(twin.uw, dtype=fast.dtype))
    np.testing.assert_array_equal(fast.arrays["me"], np.array(twin.me, dtype=fast.dtype))
    # the input exercised the schedule's floor, and (full variant) the clip and the rate cap
    assert float(fast.arrays["fp"][rnnme.F_LR]) == pytest.approx(params.lr_min_micro * 1e-6, rel=1e-6)
    if variant != "plain":
        assert twin.clips > 0 and twin.scaled > 0


def test_run_matches_the_stepwise_verbs_and_repeats_exactly():
    params = dataclasses.replace(SMALL, hidden=16, bptt=4)
    data = TEXT * 3
    probs, dists = RNNME(params).run(data, keep_dists=True)
    again = RNNME(params).run(data)
    np.testing.assert_array_equal(probs, again)
    model = RNNME(params)
    for k, byte in enumerate(data):
        high = model.predict_high().copy()
        low = model.predict_low(byte >> 4).copy()
        assert high[byte >> 4] * low[byte & 15] == probs[k]
        np.testing.assert_array_equal(high.astype(np.float32), dists[k, :16])
        np.testing.assert_array_equal(low.astype(np.float32), dists[k, 16:])
        model.learn(byte)


def test_distributions_are_normalised_and_positive():
    probs, dists = RNNME(SMALL).run(TEXT * 2, keep_dists=True)
    assert (dists > 0).all()
    np.testing.assert_allclose(dists[:, :16].sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(dists[:, 16:].sum(axis=1), 1.0, rtol=1e-5)
    assert (probs > 0).all() and (probs <= 1).all()


def test_range_coder_round_trip_with_a_fresh_decoder_model():
    from nncompress.coder import NibbleDecoder, NibbleEncoder

    params = RNNMEParams(hidden=16, me_bits=14, input2=1)
    data = TEXT * 2
    model = RNNME(params)
    encoder = NibbleEncoder()
    for byte in data:
        encoder.encode(np.array([byte >> 4]), model.predict_high()[None, :].copy())
        encoder.encode(np.array([byte & 15]), model.predict_low(byte >> 4)[None, :].copy())
        model.learn(byte)
    payload = encoder.finish()
    model = RNNME(params)
    decoder = NibbleDecoder(payload)
    out = bytearray()
    for _ in range(len(data)):
        hi = decoder.decode(model.predict_high())
        lo = decoder.decode(model.predict_low(hi))
        model.learn((hi << 4) | lo)
        out.append((hi << 4) | lo)
    assert bytes(out) == data
    assert len(payload) < len(data) * 0.7  # well below 8 bits a byte: the model learned


def test_the_expert_learns_repeated_text():
    # the same 300 bytes four times: the last copy must cost far less than the first (a model that
    # does not learn stays near 8 bits per byte; uniform guessing is exactly 8)
    params = RNNMEParams(hidden=32, me_bits=16)
    probs = RNNME(params).run(TEXT * 4)
    n = len(TEXT)
    first = -np.log2(probs[:n]).mean()
    last = -np.log2(probs[3 * n :]).mean()
    assert first < 7.0
    assert last < 1.0


def test_network_alone_learns_without_direct_connections():
    params = RNNMEParams(hidden=32, me_bits=0, lr_micro=20000)
    probs = RNNME(params).run(TEXT * 6)
    n = len(TEXT)
    assert -np.log2(probs[5 * n :]).mean() < -np.log2(probs[:n]).mean() - 1.0


def test_lstm_network_alone_learns_and_beats_the_tanh_cell_on_repeats():
    # without direct connections only the recurrent state can predict: an LSTM that does not
    # carry its cell state (or a wrong gradient) stays near the first copy's cost
    n = len(TEXT)
    costs = {}
    for cell in (0, 1):
        params = RNNMEParams(hidden=32, me_bits=0, lr_micro=20000, lr_min_micro=5000, adam=1, cell=cell)
        probs = RNNME(params).run(TEXT * 6)
        costs[cell] = (-np.log2(probs[:n]).mean(), -np.log2(probs[5 * n :]).mean())
    first, last = costs[1]
    assert last < first - 2.0
    assert last < costs[0][1]


@pytest.mark.parametrize("cell", [0, 1])
def test_bptt_updates_are_the_gradient_by_finite_differences(cell):
    # The twin copies the kernels operation for operation, so a wrong derivative in both would
    # pass the bit-for-bit test.  Here the twin runs in float64 with exact activations; a block
    # of steps from a non-zero state, with fixed output errors e(t) on h(t), defines
    # J = sum_t e(t) . h(t), and one SGD step of a tiny rate must move every input row and
    # recurrent weight by rate x dJ/dweight, which central differences measure independently.
    import copy
    import math
    import random

    from nncompress.model.reference_rnnme import TwinRNNME

    h, steps = 3, 5
    params = RNNMEParams(cell=cell, hidden=h, bptt=steps, me_bits=0, orders=(), word_feature=0,
                         adam=0, float_bits=64, clip_milli=10**9)
    twin = TwinRNNME(params)
    twin._tanh = math.tanh
    twin._sigmoid = lambda x: 1.0 / (1.0 + math.exp(-x))
    rng = random.Random(5)
    start = [rng.uniform(-0.8, 0.8) for _ in range(twin.width)]
    inputs = [65, 66, 65, 67, 66]
    errors = [[0.0] * h] + [[rng.uniform(-1, 1) for _ in range(h)] for _ in range(steps)]

    def run(u1, w):
        state, total, states = start, 0.0, [start]
        for t, c1 in enumerate(inputs, 1):
            a = list(u1[c1])
            for m in range(h):
                for k in range(twin.gates):
                    a[k] += w[m][k] * state[m]
            state = twin._lstm_forward(a, state) if cell else [math.tanh(x) for x in a]
            states.append(state)
            total += sum(e * v for e, v in zip(errors[t], state[:h]))
        return total, states

    u1, w = copy.deepcopy(twin.u1), copy.deepcopy(twin.w)
    twin.states = run(u1, w)[1]
    twin.errors = errors
    twin.inputs = [(0, 0, 0, 0)] + [(c, 0, 0, 0) for c in inputs]  # (c1, c2, word, previous word)
    twin.lr = rate = 1e-9
    twin._bptt()
    eps = 1e-6
    for name, before, after in (("u1", u1, twin.u1), ("w", w, twin.w)):
        rows = (65, 66, 67) if name == "u1" else range(h)
        for row in rows:
            for col in range(twin.gates):
                up, down = copy.deepcopy(before), copy.deepcopy(before)
                up[row][col] += eps
                down[row][col] -= eps
                if name == "u1":
                    numeric = (run(up, w)[0] - run(down, w)[0]) / (2 * eps)
                else:
                    numeric = (run(u1, up)[0] - run(u1, down)[0]) / (2 * eps)
                analytic = (after[row][col] - before[row][col]) / rate
                assert analytic == pytest.approx(numeric, abs=1e-5), (name, row, col)


@pytest.mark.parametrize("field, value", [("hidden", 0), ("bptt", 0), ("me_bits", 4),
                                          ("orders", (9,)), ("float_bits", 16),
                                          ("word_feature", 3), ("input2", 2), ("cell", 2)])
def test_invalid_parameters_are_rejected(field, value):
    with pytest.raises(ValueError):
        RNNME(dataclasses.replace(SMALL, **{field: value}))


def test_node_probabilities_multiply_back_to_the_nibble_distribution():
    params = dataclasses.replace(SMALL, hidden=16)
    model = RNNME(params)
    for byte in TEXT[:40]:
        model.predict_high()
        model.predict_low(byte >> 4)
        model.learn(byte)
    p16 = model.predict_high().copy()
    nodes = np.empty(16)
    rnnme.node_probabilities(p16, nodes, np.empty(32))
    assert ((nodes[1:] > 0) & (nodes[1:] < 1)).all()
    assert nodes[1] == pytest.approx(p16[8:].sum() / p16.sum(), rel=1e-12)
    for v in range(16):
        j, prob = 1, 1.0
        for depth in range(4):
            bit = (v >> (3 - depth)) & 1
            prob *= nodes[j] if bit else 1.0 - nodes[j]
            j = 2 * j + bit
        assert prob == pytest.approx(p16[v] / p16.sum(), rel=1e-9)


_TARGET_SCRIPT = """
import sys
import numpy as np
from nncompress.model.rnnme import RNNME, RNNMEParams
data = open(sys.argv[1], 'rb').read()
out = b''
for cell in (0, 1):
    probs, dists = RNNME(RNNMEParams(hidden=32, me_bits=16, input2=1, cell=cell)).run(data, keep_dists=True)
    out += probs.tobytes() + dists.tobytes()
open(sys.argv[2], 'wb').write(out)
"""


def test_generic_cpu_target_gives_the_same_bits(tmp_path):
    # a scalar build (NUMBA_CPU_NAME=generic, no AVX) against this machine's vectorised one: the
    # loops that vectorise run across units, so each lane does the scalar code's operations
    # (both cells: tanh, then LSTM)
    import os
    import subprocess
    import sys

    src = tmp_path / "input"
    src.write_bytes(TEXT * 4)
    outputs = []
    for cpu_name in (None, "generic"):
        env = dict(os.environ)
        if cpu_name:
            env["NUMBA_CPU_NAME"] = cpu_name
            env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache-generic")
        dst = tmp_path / f"out-{cpu_name}"
        subprocess.run([sys.executable, "-c", _TARGET_SCRIPT, str(src), str(dst)], env=env,
                       check=True, timeout=600)
        outputs.append(dst.read_bytes())
    assert outputs[0] == outputs[1]
    probs = RNNME(RNNMEParams(hidden=32, me_bits=16, input2=1)).run(TEXT * 4)
    assert outputs[0].startswith(probs.tobytes())
