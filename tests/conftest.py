import os
import random

import pytest

from nncompress.corpora import shared_corpora  # noqa: F401  (one lookup, shared with `nncompress bench`)


@pytest.fixture(scope="session")
def corpora():
    path = shared_corpora()
    if path is None:
        message = "shared corpora not available (set NNC_CORPORA)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + ": in CI the real-text tests must run, not skip")
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def sample_text() -> bytes:
    """A few KB of English text every Python has."""
    from nncompress.demo import default_input

    return default_input(20_000)[1]


@pytest.fixture(scope="session")
def large_text(sample_text) -> bytes:
    """~210 KB of text-like data (no corpus needed): the sample's lines reshuffled with numbered
    records, so a block spans several of the encoder's 64 KiB prediction chunks and the range
    coder's stream crosses them."""
    rng = random.Random(2024)
    lines = sample_text.splitlines(keepends=True)
    out = []
    size = 0
    record = 0
    while size < 210_000:
        line = rng.choice(lines)
        if rng.random() < 0.2:
            record += rng.randrange(1, 50)
            line = b"%06d | %s" % (record, line)
        out.append(line)
        size += len(line)
    return b"".join(out)


@pytest.fixture(scope="session")
def large_archive(large_text) -> bytes:
    """large_text at level 1 with the default block size, compressed once for the API and CLI tests."""
    import nncompress

    return nncompress.compress(large_text, 1)


class _Terminal:
    """A text stream that says it is a terminal (isatty), writing through to the real one."""

    def __init__(self, stream):
        self.stream = stream

    def isatty(self):
        return True

    def write(self, text):
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()


@pytest.fixture
def make_stderr_a_terminal(monkeypatch):
    """Call it in the test body (capture swaps sys.stderr between fixture setup and the test):
    sys.stderr then says it is an interactive terminal, and capsys still sees what is written."""
    import sys

    return lambda: monkeypatch.setattr(sys, "stderr", _Terminal(sys.stderr))


@pytest.fixture
def decoded_nibbles(monkeypatch):
    """{"n": nibbles the model has decoded so far}: the decoding work actually done, counted
    where every decoder passes (codec.BlockDecoder.decode; Predictor.predict_next is not called
    by the in-kernel decoder, so counting it would see nothing)."""
    from nncompress.codec import BlockDecoder

    counter = {"n": 0}
    original = BlockDecoder.decode

    def counting(self, max_nibbles):
        nibbles = original(self, max_nibbles)
        counter["n"] += len(nibbles)
        return nibbles

    monkeypatch.setattr(BlockDecoder, "decode", counting)
    return counter
