"""The coder room (nncompress.coder) on its own: nibbles and 16-way distributions in, words out."""

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
