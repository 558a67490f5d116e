"""nncompress's own cost of every byte, read from the predictions the real encoder codes."""

from __future__ import annotations

import numpy as np

from .. import format as fmt
from ..codec import StreamEncoder
from ..model.params import ModelParams, fit_to_input
from ..model.predictor import Predictor
from ..presets import DEFAULT_LEVEL, params_for_level


def resolve_params(level: int, params: ModelParams | None) -> tuple[int, ModelParams]:
    if params is None:
        return level, params_for_level(level)
    return 0, params.validate()


def model_pass(data, level: int = DEFAULT_LEVEL, params: ModelParams | None = None,
                block_size: int = fmt.DEFAULT_BLOCK_SIZE, progress=None) -> tuple[np.ndarray, int]:
    """Compress `data` exactly as `nncompress.compress` does, watching the coder's predictions:
    returns (cost of every byte in bits, size of the .nnc stream)."""
    level, params = resolve_params(level, params)
    raw = bytes(data)
    encoder = StreamEncoder(level, None if level else params, block_size, size=len(raw))
    costs = np.empty(len(raw), dtype=np.float64)
    done = 0

    def observe(nibbles, nibble_costs):
        nonlocal done
        costs[done : done + nibbles.shape[0] // 2] = nibble_costs[0::2] + nibble_costs[1::2]
        done += nibbles.shape[0] // 2

    total = len(encoder.header())
    for start in range(0, len(raw), block_size):
        total += len(encoder.block(raw[start : start + block_size], progress, observe,
                                   last=start + block_size >= len(raw)))
    total += len(encoder.end())
    return costs, total


def code_lengths(data, level: int = DEFAULT_LEVEL, params: ModelParams | None = None) -> np.ndarray:
    """nncompress's cost of every byte of `data` in bits (its self-information under the model,
    which learns as it goes).  The sum is the range coder's payload up to a few bytes; add the
    header and framing to get the .nnc size."""
    return model_pass(data, level, params)[0]


def nncompress_size(data, level: int = DEFAULT_LEVEL, params: ModelParams | None = None) -> int:
    """Size of `nncompress.compress(data, level)` without building it (same predictions, same
    range coder, container bytes counted)."""
    return model_pass(data, level, params)[1]


def top_predictions(data, level: int = DEFAULT_LEVEL, params: ModelParams | None = None,
                    top: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(costs, top byte values (n, top), their probabilities (n, top)) for every byte, from
    `Predictor.byte_distributions` (a Python loop: ~20-40 KB/s, meant for short prefixes)."""
    _, params = resolve_params(level, params)
    data = bytes(data)
    # the model compress() uses for this input: sized to it (fit_to_input), as model_pass's
    costs, dists = Predictor(fit_to_input(params, len(data)), len(data)).byte_distributions(data)
    if dists.shape[0] == 0:
        return costs, np.zeros((0, top), dtype=np.int64), np.zeros((0, top))
    idx = np.argsort(-dists, axis=1, kind="stable")[:, :top]
    return costs, idx, np.take_along_axis(dists, idx, axis=1)

