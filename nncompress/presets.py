"""Compression levels 1..9: named model configurations, and the registry of presets that
archives name.

A format-2 header names its preset by id (PRESETS) instead of listing every parameter, so a
registered preset is FROZEN: what id N means can never change, or every archive naming it would
decode wrong.  tests/test_presets.py pins each one's parameter integers.  To change what a level
means, define the new ModelParams under a new name and APPEND an entry `id: Preset(level, params)`
(the newest entry for a level is what the level uses); never edit or remove an entry, nor a
ModelParams object one refers to.  Format-1 headers carry every parameter and need no registry.

Tuned on alice29.txt, paper1 and a prefix of news, confirmed on the rest of the shared corpora;
bench/TUNING.md logs every experiment behind these choices.
"""

from __future__ import annotations

from dataclasses import dataclass

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

# 10 contexts (3 character-class patterns), + deterministic-history input, 6 mixers; ~72 MiB
_MEDIUM = ModelParams(**dict(
    _COMMON,
    contexts=(C.ORDER1, C.ORDER2, C.ORDER3, C.ORDER4, C.ORDER6, C.WORD, C.WORD_SKIP,
              C.CLASS_MASK, C.CLASS_MASK8, C.CLASS_RUNS),
    ctx_inputs=2, mixer_select=_SIX_MIXERS,
    rnn_hidden=8, table_bits=21, history_bits=23, match_bits=19))

# 12 contexts (3 character-class patterns), 6 mixers, order-1 APM; ~126 MiB
_DEFAULT = ModelParams(**dict(
    _COMMON,
    contexts=(C.ORDER1, C.ORDER2, C.ORDER3, C.ORDER4, C.ORDER6, C.ORDER8, C.WORD, C.WORD_BIGRAM,
              C.WORD_SKIP, C.CLASS_MASK, C.CLASS_MASK8, C.CLASS_RUNS),
    ctx_inputs=2, mixer_select=_SIX_MIXERS,
    apm1_order=1, apm1_weight=6, apm2_weight=6, rnn_hidden=16,
    table_bits=22, history_bits=24, match_bits=20))

# 20 contexts with 3 inputs each, 16 MiB per context table, 7 mixers (level 6's and the
# recurrent-state signs: all but byte 2 back), the mixer boost halved after 128 updates; ~468 MiB
_STRONG = ModelParams(**dict(
    _COMMON,
    contexts=(C.ORDER1, C.ORDER2, C.ORDER3, C.ORDER4, C.ORDER5, C.ORDER6, C.ORDER8, C.WORD,
              C.WORD_BIGRAM, C.SPARSE_SKIP1, C.SPARSE_GAP, C.COLUMN, C.WORD_ORDER1,
              C.WORD_TRIGRAM, C.WORD_SKIP, C.CLASS_MASK, C.CLASS_MASK8, C.CLASS_RUNS,
              C.CLASS_RUNS_ORDER1, C.WORD_CLASS_RUNS),
    mixer_lr_decay=128, ctx_inputs=3,
    mixer_select=_SIX_MIXERS | selector_mask(S.RNN_SIGNS),
    apm1_order=1, apm1_weight=6, apm2_weight=6, rnn_hidden=32,
    table_bits=24, history_bits=24, match_bits=22))


@dataclass(frozen=True)
class Preset:
    level: int  # the level it was made for (shown by -l)
    params: ModelParams


# Append-only.  id 0 is reserved: "custom parameters, listed in full".
PRESETS = {
    1: Preset(1, _FAST), 2: Preset(2, _FAST),
    3: Preset(3, _MEDIUM), 4: Preset(4, _MEDIUM), 5: Preset(5, _MEDIUM),
    6: Preset(6, _DEFAULT), 7: Preset(7, _DEFAULT), 8: Preset(8, _DEFAULT),
    9: Preset(9, _STRONG),
}

# Each level is the newest preset registered for it.
LEVEL_PRESET = {preset.level: id_ for id_, preset in sorted(PRESETS.items())}
LEVELS = {level: PRESETS[id_].params for level, id_ in sorted(LEVEL_PRESET.items())}


def params_for_level(level: int) -> ModelParams:
    if level not in LEVELS:
        raise ValueError(f"compression level must be 1..9, not {level!r}")
    return LEVELS[level]


def header_fields(params: ModelParams, preset: int | None) -> tuple[int, tuple, tuple]:
    """(preset id, overrides, full parameter list) for a format-2 header: the registered preset
    the parameters were derived from and the scalar fields that differ from it (e.g.
    fit_to_input's sizes), or preset 0 and every parameter when preset is None or 0 (custom
    parameters) or the context lists differ."""
    if preset:
        overrides = params.overrides_from(PRESETS[preset].params)
        if overrides is not None:
            return preset, overrides, ()
    return 0, (), tuple(params.to_ints())


def header_params(header) -> ModelParams:
    """The model parameters a (format 1 or 2) header describes; ValueError if it describes none."""
    if header.version >= 2 and header.preset:
        preset = PRESETS.get(header.preset)
        if preset is None:
            raise ValueError(f"unknown preset {header.preset} (made by a newer nncompress?)")
        return preset.params.with_overrides(header.overrides)
    return ModelParams.from_ints(list(header.params))


def header_level(header) -> int | None:
    """The level a header's stream was made at (None: custom parameters)."""
    if header.version >= 2:
        preset = PRESETS.get(header.preset)
        return preset.level if preset is not None else None
    return header.level or None
