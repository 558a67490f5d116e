"""Compression levels 1..9: named model configurations.  Every field ends up in the header, so
changing a preset never breaks old archives (they carry their own parameters)."""

from __future__ import annotations

from .model.params import COLUMN, SPARSE_SKIP1, WORD, WORD_BIGRAM, ModelParams

DEFAULT_LEVEL = 6

_FAST = ModelParams(contexts=(1, 2, 3, 4, WORD), table_bits=20, history_bits=22, match_bits=18,
                    rnn_hidden=8, mixer_lr=4)
_MEDIUM = ModelParams(contexts=(1, 2, 3, 4, 6, WORD), table_bits=21, history_bits=23,
                      match_bits=19, rnn_hidden=8, mixer_lr=4)
_DEFAULT = ModelParams(contexts=(1, 2, 3, 4, 5, 6, 8, WORD, WORD_BIGRAM), table_bits=22,
                       rnn_hidden=16, mixer_lr=4, mixer_sets=2)
_STRONG = ModelParams(contexts=(1, 2, 3, 4, 5, 6, 7, 8, 12, WORD, WORD_BIGRAM, SPARSE_SKIP1, COLUMN),
                      table_bits=24, match_bits=22, rnn_hidden=32, mixer_lr=4, mixer_sets=2)

LEVELS = {
    1: _FAST, 2: _FAST,
    3: _MEDIUM, 4: _MEDIUM, 5: _MEDIUM,
    6: _DEFAULT, 7: _DEFAULT, 8: _DEFAULT,
    9: _STRONG,
}


def params_for_level(level: int) -> ModelParams:
    if level not in LEVELS:
        raise ValueError(f"compression level must be 1..9, not {level!r}")
    return LEVELS[level]
