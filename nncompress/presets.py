"""Compression levels 1..9: named model configurations.  Every field ends up in the header, so
changing a preset never breaks old archives (they carry their own parameters).

Tuned on alice29.txt, paper1 and a prefix of news, confirmed on the rest of the shared corpora;
bench/TUNING.md logs every experiment behind these choices.
"""

from __future__ import annotations

from .model.params import (CLASS_MASK, CLASS_MASK8, CLASS_RUNS, CLASS_RUNS_ORDER1, COLUMN,
                           SPARSE_GAP, SPARSE_SKIP1, WORD, WORD_BIGRAM,
                           WORD_CLASS_RUNS, WORD_ORDER1, WORD_SKIP, WORD_TRIGRAM, ModelParams)

DEFAULT_LEVEL = 6

# Shared by all levels: mixer step 2 with a boost for fresh weight sets, final mixer step 4/4,
# bit-history states that keep the last bit while n0 + n1 <= 8, RNN step 0.3.
_COMMON = dict(mixer_lr=2, mixer_lr_boost=32, mixer_lr_decay=256, final_lr=4, state_table=2,
               rnn_lr_micro=300000, rnn_bptt=8)

# 7 contexts (2 character-class patterns), one input each, 4 mixers (partial byte; contexts-seen
# count; classes of the last 3 bytes; classes of the last 3 same-class runs); ~34 MiB
_FAST = ModelParams(**dict(_COMMON, contexts=(1, 2, 3, 4, WORD, CLASS_MASK8, CLASS_RUNS),
                           ctx_inputs=1, mixer_select=0b11001001,
                           rnn_hidden=8, table_bits=20, history_bits=22, match_bits=18))
# 10 contexts (3 character-class patterns), + deterministic-history input, 6 mixers (+ match
# state, previous byte: the level-6 set); ~72 MiB
_MEDIUM = ModelParams(**dict(_COMMON, contexts=(1, 2, 3, 4, 6, WORD, WORD_SKIP, CLASS_MASK,
                                                CLASS_MASK8, CLASS_RUNS),
                             ctx_inputs=2, mixer_select=0b11001111,
                             rnn_hidden=8, table_bits=21, history_bits=23, match_bits=19))
# 12 contexts (3 of them character-class patterns), 6 mixers (partial byte; match state;
# previous byte; contexts seen; classes of the last 3 bytes; classes of the last 3 same-class
# runs), order-1 APM; ~126 MiB
_DEFAULT = ModelParams(**dict(_COMMON, contexts=(1, 2, 3, 4, 6, 8, WORD, WORD_BIGRAM, WORD_SKIP,
                                                 CLASS_MASK, CLASS_MASK8, CLASS_RUNS),
                              ctx_inputs=2, mixer_select=0b11001111,
                              apm1_order=1, apm1_weight=6, apm2_weight=6, rnn_hidden=16,
                              table_bits=22, history_bits=24, match_bits=20))
# 20 contexts with 3 inputs each, 7 mixers (all but the RNN-sign one), 16 MiB per context
# table, the mixer boost halved after 128 updates; ~468 MiB
_STRONG = ModelParams(**dict(_COMMON, contexts=(1, 2, 3, 4, 5, 6, 8, WORD, WORD_BIGRAM,
                                                SPARSE_SKIP1, SPARSE_GAP, COLUMN, WORD_ORDER1,
                                                WORD_TRIGRAM, WORD_SKIP, CLASS_MASK, CLASS_MASK8,
                                                CLASS_RUNS, CLASS_RUNS_ORDER1, WORD_CLASS_RUNS),
                             mixer_lr_decay=128, ctx_inputs=3, mixer_select=0b11011111,
                             apm1_order=1, apm1_weight=6, apm2_weight=6, rnn_hidden=32,
                             table_bits=24, history_bits=24, match_bits=22))

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
