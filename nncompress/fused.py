"""Decoding with the model inside one numba loop: step the model, decode a nibble, repeat.

The per-nibble round trip through Python (one kernel call and one constriction model per
nibble) made decoding markedly slower than encoding; here the model's step kernel and the
range-coder twin (nncompress.rangecoder) run in the same compiled loop.  The loop is resumable:
the coder's state lives in its array and the model's in the predictor, so a block can be
decoded in pieces of any size.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from numba import njit

from . import rangecoder
# the model's step kernel (learn, then predict) on its unpacked state, and the unpacking
from .model.kernels import step_state as model_step, unpack as model_state

_decode_row = rangecoder.decode_row


@njit(cache=True)
def decode_with_model(packed, pending, state, words, out, start, count, probabilities, cdf):
    """Decode out[start : start + count]: before each nibble the model learns the previous one
    (pending; < 0 at the start of a stream) and predicts into probabilities.

    Returns (status, pending): status 0, or rangecoder.INVALID_DATA / BAD_DISTRIBUTION; pending
    is the last nibble decoded, which the model has not learned yet."""
    model = model_state(packed)  # once per call, not per nibble as `step` would
    value = pending
    for k in range(start, start + count):
        model_step(model, value, probabilities)
        symbol = _decode_row(state, words, probabilities, cdf)
        if symbol < 0:
            return symbol, value
        out[k] = symbol
        value = symbol
    return 0, value


def _dependency_stamp() -> str:
    """Modification time and size of every file whose code the compiled loop embeds."""
    kernel = getattr(model_step, "py_func", model_step)  # a plain function under NUMBA_DISABLE_JIT
    model_dir = Path(sys.modules[kernel.__module__].__file__).parent
    files = sorted(model_dir.rglob("*.py")) + [Path(rangecoder.__file__)]
    lines = []
    for path in files:
        stat = path.stat()
        lines.append(f"{path.relative_to(model_dir.parent)} {stat.st_mtime_ns} {stat.st_size}")
    return "\n".join(lines)


def _forget_stale_machine_code() -> None:
    """numba's cache checks only the caller's own file (numba PR #8396 is unmerged), but the cached
    loop embeds the model's and the coder's kernels: drop it when any of their files changed, or
    a decoder would keep running the previous model."""
    cache = getattr(decode_with_model, "_cache", None)
    folder = getattr(cache, "_cache_path", None)
    if folder is None:
        return
    marker = Path(folder) / "fused.decode_with_model.deps"
    stamp = _dependency_stamp()
    try:
        if marker.read_text() == stamp:
            return
    except OSError:
        pass
    cache.flush()
    try:
        marker.write_text(stamp)
    except OSError:
        pass


_forget_stale_machine_code()


def decode_run(predictor, state: np.ndarray, words: np.ndarray, out: np.ndarray, start: int,
               count: int, scratch: tuple[np.ndarray, np.ndarray]) -> int:
    """Drive `predictor` (nncompress.model.predictor.Predictor) through count nibbles; returns the
    coder status (0: fine).  Uses the predictor's packed state and pending nibble directly: this
    is the in-kernel twin of its predict_next()/learn() pair."""
    probabilities, cdf = scratch
    status, pending = decode_with_model(predictor._packed, predictor._pending, state, words, out,
                                        start, count, probabilities, cdf)
    predictor._pending = int(pending)
    return int(status)
