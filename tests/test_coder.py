"""The coder room (nncompress.coder) on its own: nibbles and 16-way distributions in, words out."""

import itertools

import numpy as np
import pytest

from nncompress import coder as coder_module
from nncompress.coder import NibbleDecoder, NibbleEncoder
from nncompress.format import NNCError


def random_case(count: int, seed: int, peak: float = 0.0):
    """Nibbles and one (unnormalised) distribution per nibble; with peak > 0 the coded nibble
    gets that extra weight, as a well-predicting model would give it."""
    rng = np.random.default_rng(seed)
    nibbles = rng.integers(0, 16, count)
    rows = rng.random((count, 16)) + 0.01
    rows[np.arange(count), nibbles] += peak * rows.sum(axis=1)
    return nibbles, rows * rng.uniform(0.1, 1000.0, (count, 1))


def encode(nibbles, rows, pieces=1) -> bytes:
    encoder = NibbleEncoder()
    for part in np.array_split(np.arange(len(nibbles)), pieces):
        encoder.encode(nibbles[part], rows[part])
    return encoder.finish()


def decode(payload: bytes, rows) -> list:
    decoder = NibbleDecoder(payload)
    return [decoder.decode(row) for row in rows]


@pytest.mark.parametrize("count", [1, 2, 7, 3000])
def test_round_trip(count):
    nibbles, rows = random_case(count, count)
    payload = encode(nibbles, rows)
    assert len(payload) % 4 == 0
    assert decode(payload, rows) == nibbles.tolist()


def test_output_is_deterministic_and_independent_of_batching():
    nibbles, rows = random_case(2000, 5)
    one = encode(nibbles, rows)
    assert encode(nibbles, rows) == one
    assert encode(nibbles, rows, pieces=7) == one  # one stream however the encoder is fed
    assert encode(nibbles, rows.astype(np.float64).copy(order="F")) == one


def test_rows_need_not_be_normalised():
    nibbles, rows = random_case(500, 6)
    normalised = rows / rows.sum(axis=1, keepdims=True)
    assert decode(encode(nibbles, rows), normalised) == nibbles.tolist()


def test_cost_follows_the_probabilities():
    """About -log2 p bits per nibble: 4 bits for a flat guess, far less for a confident one."""
    nibbles = np.random.default_rng(1).integers(0, 16, 4000)
    flat = np.ones((4000, 16))
    confident = np.full((4000, 16), 0.01)
    confident[np.arange(4000), nibbles] = 0.85
    flat_bits = 8 * len(encode(nibbles, flat))
    confident_bits = 8 * len(encode(nibbles, confident))
    assert 3.95 * 4000 <= flat_bits <= 4.05 * 4000 + 64
    expected = -np.log2(0.85 / (0.85 + 15 * 0.01)) * 4000
    assert 0.9 * expected <= confident_bits <= 1.1 * expected + 64


def test_nothing_to_code():
    encoder = NibbleEncoder()
    encoder.encode(np.zeros(0, dtype=np.int64), np.zeros((0, 16)))
    assert encoder.finish() == b""
    NibbleDecoder(b"")  # an empty payload is a valid (empty) stream


def test_payload_must_be_whole_words():
    for length in (1, 2, 3, 5, 7):
        with pytest.raises(NNCError) as info:
            NibbleDecoder(b"\0" * length)
        assert str(info.value) == "corrupt archive: range-coder payload is not a whole number of words"


def test_garbage_payload_is_an_nncerror():
    # constriction 0.5 raises AssertionError("... invalid for the employed entropy model") here
    decoder = NibbleDecoder(b"\xff" * 64)
    uniform = np.full(16, 1.0 / 16)
    with pytest.raises(NNCError, match="undecodable"):
        for _ in range(100):
            decoder.decode(uniform)


class _Boom:
    def __init__(self, exc):
        self.exc = exc

    def decode(self, model):
        raise self.exc


@pytest.mark.parametrize("exc", [AssertionError("x"), ValueError("x"), RuntimeError("x"),
                                 OverflowError("x"), TypeError("x"), IndexError("x"),
                                 type("PanicException", (BaseException,), {})("rust panic")])
def test_every_coder_failure_becomes_an_nncerror(exc):
    decoder = NibbleDecoder(b"", backend="constriction")
    decoder._decoder = _Boom(exc)
    with pytest.raises(NNCError) as info:
        decoder.decode(np.full(16, 1.0))
    panic = type(exc).__name__ == "PanicException"  # pyo3's, a BaseException: no detail shown
    assert str(info.value) == "corrupt archive: undecodable block payload" + ("" if panic else " (x)")
    assert info.value.__suppress_context__  # one clean line, not a chained traceback


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3)])
def test_signals_and_exits_pass_through_the_decoder(exc):
    """The CLI turns SIGTERM into an exception raised wherever Python is: inside decode() it must
    not be mistaken for damage."""
    decoder = NibbleDecoder(b"", backend="constriction")
    decoder._decoder = _Boom(exc)
    with pytest.raises(type(exc)):
        decoder.decode(np.full(16, 1.0))
    assert not issubclass(type(exc), coder_module._CODER_ERRORS)


# ---------------------------------------------------------------------------------------------
# The twin encoder's own checks (constriction checks its inputs in Rust; the twin's kernel does
# not, so NibbleEncoder must refuse what would index outside the cdf or the word buffer).


def test_twin_encoder_refuses_bad_input_by_name():
    rows = np.ones((3, 16))
    cases = [
        (np.array([1, 2, 3]), np.ones((3, 15)), "probabilities must have one row of 16 per nibble"),
        (np.array([1, 2, 3]), np.ones((2, 16)), "probabilities must have one row of 16 per nibble"),
        (np.array([1, 16, 3]), rows, "nibbles must lie in 0..15"),
        (np.array([1, -1, 3]), rows, "nibbles must lie in 0..15"),
        (np.array([16]), rows[:1], "nibbles must lie in 0..15"),
    ]
    for nibbles, probabilities, message in cases:
        with pytest.raises(ValueError) as info:
            NibbleEncoder(backend="twin").encode(nibbles, probabilities)
        assert str(info.value) == message
    bad = np.ones((4, 16))
    bad[2] = np.nan
    with pytest.raises(ValueError) as info:
        NibbleEncoder(backend="twin").encode(np.arange(4), bad)
    assert str(info.value) == "probability row 2 is not normalizable (all zero, negative, NaN or infinite)"


def test_twin_encoder_takes_any_numeric_rows_as_float64():
    """Rows arrive as float64 from the model; float32 or integer weights are converted first,
    so the twin codes them exactly as their float64 values (as constriction, which converts)."""
    nibbles, rows = random_case(600, 11)
    for dtype in (np.float32, np.int64, np.uint16):
        given = (rows * 50).astype(dtype)
        twin = NibbleEncoder(backend="twin")
        twin.encode(nibbles, given)
        reference = NibbleEncoder(backend="twin")
        reference.encode(nibbles, given.astype(np.float64))
        assert twin.finish() == reference.finish()


@pytest.mark.parametrize("backend", ["twin", "constriction"])
def test_costly_nibbles_in_one_call_and_in_many(backend):
    """Every nibble at the smallest probability (24 bits each): 3000 in one call write 2,250
    words, past the twin's first buffer of 1,024; fed in pieces of 1 to 999 (each of which
    fits that buffer) it must grow as it goes.  Both give constriction's bytes."""
    count = 3000
    nibbles = np.arange(count) % 15 + 1
    rows = np.full((count, 16), 2.0 ** -30)
    rows[:, 0] = 1.0
    oracle = NibbleEncoder(backend="constriction")
    oracle.encode(nibbles, rows)
    expected = oracle.finish()
    assert len(expected) >= 4 * 2200
    one = NibbleEncoder(backend=backend)
    one.encode(nibbles, rows)
    assert one.finish() == expected
    pieces = NibbleEncoder(backend=backend)
    start, sizes = 0, itertools.cycle([1, 700, 3, 999, 2])
    while start < count:
        step = next(sizes)
        pieces.encode(nibbles[start : start + step], rows[start : start + step])
        start += step
    assert pieces.finish() == expected
    assert decode(expected, rows) == nibbles.tolist()


def test_backend_choice_and_its_refusal():
    assert NibbleEncoder().backend == coder_module.BACKEND
    assert NibbleDecoder(b"").backend == coder_module.DECODER
    for backend in coder_module.BACKENDS:
        assert NibbleEncoder(backend=backend).backend == backend
        assert NibbleDecoder(b"", backend=backend).backend == backend
    for make in (lambda: NibbleEncoder(backend="zpaq"), lambda: NibbleDecoder(b"", backend="zpaq")):
        with pytest.raises(ValueError) as info:
            make()
        assert str(info.value) == (f"coder backend 'zpaq' is not available here "
                                   f"(have {coder_module.BACKENDS})")


def test_twin_decoder_names_what_went_wrong():
    decoder = NibbleDecoder(b"\0" * 8, backend="twin")
    with pytest.raises(ValueError) as info:
        decoder.decode(np.ones(15))
    assert str(info.value) == "probabilities must be one row of 16"
    with pytest.raises(NNCError) as info:
        decoder.decode(np.zeros(16))
    assert str(info.value) == ("corrupt archive: undecodable block payload "
                               "(model probabilities not normalizable)")
    uniform = np.full(16, 1.0 / 16)
    decoder = NibbleDecoder(b"\xff" * 64, backend="twin")
    with pytest.raises(NNCError) as info:
        for _ in range(100):
            decoder.decode(uniform)
    assert str(info.value) == ("corrupt archive: undecodable block payload "
                               "(compressed data invalid for the entropy model)")


def test_twin_decoder_takes_any_numeric_row_as_float64():
    nibbles, rows = random_case(400, 12)
    rows = (rows * 50).astype(np.float32)
    payload = encode(nibbles, rows.astype(np.float64))
    decoder = NibbleDecoder(payload, backend="twin")
    assert [decoder.decode(row) for row in rows] == nibbles.tolist()


class _Scripted:
    """A stand-in for the model's Predictor (predict_next / learn) on the per-nibble path."""

    def __init__(self, rows):
        self.rows, self.learned = rows, []

    def predict_next(self):
        return self.rows[len(self.learned)]

    def learn(self, value):
        self.learned.append(value)


def test_constriction_decode_run_resumes_where_it_stopped():
    nibbles, rows = random_case(700, 13, peak=2.0)
    payload = encode(nibbles, rows)
    decoder = NibbleDecoder(payload, backend="constriction")
    predictor = _Scripted(rows)
    out = np.full(700, 99, dtype=np.uint8)
    start = 0
    for size in (1, 2, 0, 300, 397):
        decoder.decode_run(predictor, out, start, size)
        start += size
        assert (out[start:] == 99).all()  # nothing written past the piece
    assert out.tolist() == predictor.learned == nibbles.tolist()


def test_twin_decode_run_names_damage():
    from nncompress.model.predictor import Predictor
    from nncompress.presets import params_for_level

    out = np.zeros(2000, dtype=np.uint8)
    decoder = NibbleDecoder(b"\xff" * 64, backend="twin")
    with pytest.raises(NNCError) as info:
        decoder.decode_run(Predictor(params_for_level(1)), out, 0, 2000)
    assert str(info.value) == ("corrupt archive: undecodable block payload "
                               "(compressed data invalid for the entropy model)")


BOUNDS_SCRIPT = """
import itertools, numpy as np
from nncompress.coder import NibbleDecoder, NibbleEncoder
count = 3000
nibbles = np.arange(count) % 16
rows = np.full((count, 16), 2.0 ** -30)
rows[np.arange(count), (nibbles + 1) % 16] = 1.0   # every nibble at the smallest probability
rows[::7] = 1.0                                    # and some flat rows
one = NibbleEncoder(backend="twin")
one.encode(nibbles, rows)
pieces = NibbleEncoder(backend="twin")
start, sizes = 0, itertools.cycle([1, 700, 3, 999, 2])
while start < count:
    step = next(sizes)
    pieces.encode(nibbles[start : start + step], rows[start : start + step])
    start += step
payload = one.finish()
assert pieces.finish() == payload
decoder = NibbleDecoder(payload, backend="twin")
assert [decoder.decode(row) for row in rows] == nibbles.tolist()
print("ok", len(payload))
"""


def test_twin_coder_stays_inside_its_arrays(tmp_path):
    """numba does not check indices: a word buffer grown too little, or a cdf one entry short,
    writes past its array and corrupts the heap, which may or may not show.  With
    NUMBA_BOUNDSCHECK=1 (a fresh kernel cache, so the coder's kernels compile with checks) any
    such access is an IndexError instead."""
    import os
    import subprocess
    import sys

    import nncompress

    # the very package this process imported (run from tmp_path, so not the working directory's)
    tree = os.path.dirname(os.path.dirname(os.path.abspath(nncompress.__file__)))
    path = os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=path)
    result = subprocess.run([sys.executable, "-c", BOUNDS_SCRIPT], env=env, capture_output=True,
                            text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("ok ")
