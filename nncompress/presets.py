"""Compression levels 1..9: named model configurations.  Every field ends up in the header, so
changing a preset never breaks old archives (they carry their own parameters).

Tuned on alice29.txt, paper1 and a prefix of news, confirmed on the rest of the shared corpora;
bench/TUNING.md logs every experiment behind these choices.
"""

from __future__ import annotations

from .model.kinds import Context as C
from .model.kinds import Selector as S
from .model.kinds import selector_mask
from .model.params import ModelParams

DEFAULT_LEVEL = 6

# Shared by all levels: mixer step 2 with a boost for fresh weight sets, final mixer step 4/4,
# bit-history states that keep the last bit while n0 + n1 <= 8, RNN step 0.3.
_COMMON = dict(mixer_lr=2, mixer_lr_boost=32, mixer_lr_decay=256, final_lr=4, state_table=2,
               rnn_lr_micro=300000, rnn_bptt=8)

# 7 contexts (2 character-class patterns), one input each, 4 mixers; ~34 MiB
_FAST = ModelParams(**dict(
    _COMMON,
    contexts=(C.ORDER1, C.ORDER2, C.ORDER3, C.ORDER4, C.WORD, C.CLASS_MASK8, C.CLASS_RUNS),
    ctx_inputs=1,
    mixer_select=selector_mask(S.PARTIAL_BYTE, S.SEEN, S.CLASSES, S.CLASS_RUNS),
    rnn_hidden=8, table_bits=20, history_bits=22, match_bits=18))

# The mixers of levels 3 to 8: level 1's and the match state and previous byte.
_SIX_MIXERS = selector_mask(S.PARTIAL_BYTE, S.MATCH, S.PREV_BYTE, S.SEEN, S.CLASSES, S.CLASS_RUNS)

# 10 contexts (3 character-class patterns), + deterministic-history input, 6 mixers, the
# contexts' mixer weights starting at 1 in all (round 3); ~72 MiB
_MEDIUM = ModelParams(**dict(
    _COMMON, mixer_init=16,
    contexts=(C.ORDER1, C.ORDER2, C.ORDER3, C.ORDER4, C.ORDER6, C.WORD, C.WORD_SKIP,
              C.CLASS_MASK, C.CLASS_MASK8, C.CLASS_RUNS),
    ctx_inputs=2, mixer_select=_SIX_MIXERS,
    rnn_hidden=8, table_bits=21, history_bits=23, match_bits=19))

# Level 9's 20 contexts (orders, words, sparse, column, character classes)
_TWENTY = (C.ORDER1, C.ORDER2, C.ORDER3, C.ORDER4, C.ORDER5, C.ORDER6, C.ORDER8, C.WORD,
           C.WORD_BIGRAM, C.SPARSE_SKIP1, C.SPARSE_GAP, C.COLUMN, C.WORD_ORDER1,
           C.WORD_TRIGRAM, C.WORD_SKIP, C.CLASS_MASK, C.CLASS_MASK8, C.CLASS_RUNS,
           C.CLASS_RUNS_ORDER1, C.WORD_CLASS_RUNS)

# Round 3 (bench/TUNING.md): a run input per context (the byte last seen there and its run
# length), the contexts' mixer weights starting at 1 in all (not 1/4 each: with 20 contexts the
# old start cost small files up to 0.1 bpc), and a repeat of 16 bytes or more survives a mismatch
_ROUND3 = dict(run_inputs=1, mixer_init=16, match_recover=16)

# Level 9's contexts with 3 inputs and a run input each, 8 MiB per context table, 7 mixers (as
# level 9), 16 recurrent units: stronger than round 2's level 9 on every shared file, at about
# round 2's level-9 speed (bench/TUNING.md, round 3); ~349 MiB
_DEFAULT = ModelParams(**dict(
    _COMMON, **_ROUND3,
    contexts=_TWENTY,
    mixer_lr_decay=128, ctx_inputs=3,
    mixer_select=_SIX_MIXERS | selector_mask(S.RNN_SIGNS),
    apm1_order=1, apm1_weight=6, apm2_weight=6, rnn_hidden=16,
    table_bits=23, history_bits=24, match_bits=20))

# 20 contexts with 3 inputs and a run input each, 16 MiB per context table, 7 mixers (level 6's
# and the recurrent-state signs: all but byte 2 back), the mixer boost halved after 128 updates;
# ~570 MiB
_STRONG = ModelParams(**dict(
    _COMMON, **_ROUND3,
    contexts=_TWENTY,
    mixer_lr_decay=128, ctx_inputs=3,
    mixer_select=_SIX_MIXERS | selector_mask(S.RNN_SIGNS),
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
