"""Decoding with the model inside one numba loop: step the model, decode a nibble, repeat.

The per-nibble round trip through Python (one kernel call and one constriction model per
nibble) made decoding markedly slower than encoding; here the model's step kernel and the
range-coder twin (nncompress.rangecoder) run in the same compiled loop.  The loop is resumable:
the coder's state lives in its array and the model's in the predictor, so a block can be
decoded in pieces of any size.
"""

from __future__ import annotations

import numpy as np

from . import rangecoder
from .model.jit import kernel
# the model's step kernel (learn, then predict) on its unpacked state, and the unpacking
from .model.kernels import step_state as model_step, unpack as model_state
from .model.kernels import path_probability, path_step_state  # path coding

_decode_row = rangecoder.decode_row
_decode_quantile, _decode_consume = rangecoder.decode_quantile, rangecoder.decode_consume
_tree_split, _TOTAL = rangecoder.tree_split, rangecoder._TOTAL


@kernel
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


@kernel
def decode_paths_with_model(packed, pending, state, words, out, start, count):
    """decode_with_model for path coding (ModelParams.path_coding): descend the nibble tree
    towards the point (rangecoder.tree_split), the model computing each node on the way only."""
    model = model_state(packed)
    value = pending
    for k in range(start, start + count):
        rnn_pattern = path_step_state(model, value)
        quantile = _decode_quantile(state)
        if quantile >= _TOTAL:
            return rangecoder.INVALID_DATA, value
        lo = np.uint64(0)
        width = _TOTAL
        j = 1
        for d in range(4):
            left = _tree_split(width, path_probability(model, j, rnn_pattern), d)
            if quantile >= lo + left:
                lo += left
                width -= left
                j = 2 * j + 1
            else:
                width = left
                j = 2 * j
        _decode_consume(state, words, lo, width)
        value = j - 16
        out[k] = value
    return 0, value


def decode_run(predictor, state: np.ndarray, words: np.ndarray, out: np.ndarray, start: int,
               count: int, scratch: tuple[np.ndarray, np.ndarray]) -> int:
    """Drive `predictor` (nncompress.model.predictor.Predictor) through count nibbles; returns the
    coder status (0: fine).  Uses the predictor's packed state and pending nibble directly: this
    is the in-kernel twin of its predict_next()/learn() pair."""
    probabilities, cdf = scratch
    if predictor.path_coding:
        status, pending = decode_paths_with_model(predictor._packed, predictor._pending, state,
                                                  words, out, start, count)
    else:
        status, pending = decode_with_model(predictor._packed, predictor._pending, state, words,
                                            out, start, count, probabilities, cdf)
    predictor._pending = int(pending)
    return int(status)
