"""The preset registry: format-2 archives name their preset by id, so a registered preset means
the same parameters forever (nncompress/presets.py).  And fit_to_input, which sizes a preset to a
known input."""

import dataclasses
import hashlib

import pytest

from nncompress.model.params import SIZE_RULES, ModelParams, fit_to_input
from nncompress.model.state import model_memory
from nncompress.presets import LEVEL_PRESET, LEVELS, PRESETS, header_fields, params_for_level

# One line per registered preset: sha256 of (level, ModelParams.to_ints()), first 16 hex digits.
# APPEND a line when a preset is appended; a line that stops matching means a released preset was
# edited, and every archive naming it would decode wrong: restore it and append a new id instead.
FROZEN = {
    1: "80fb4ebd75b71faa",
    2: "08d95a5608e49188",
    3: "9209c1d3d9386fdd",
    4: "e022d47a55366834",
    5: "cc990eb5f6f2681d",
    6: "cc1d82689419d044",
    7: "1f93d0a188041a3e",
    8: "db9e3e98063ed2f3",
    9: "3514026aca0ad3db",
    # round 3: levels 3-9 (issues 11, 12)
    10: "088904c1238226dc",
    11: "45bdbdd02debc8d4",
    12: "63edacb98a050a73",
    13: "594e53e16167f2be",
    14: "bfa00797058c31c9",
    15: "ed2142385a2f0430",
    16: "0cba469644d8364b",
    17: "5500b87dd2173dda",
    18: "c10d595af7d07150",
    # round 4 (branch expert4): level 9 with a stronger expert
    19: "ee5c65eb62fa2328",
    # round 5: level 9's expert with the predictor's contexts and match model as features
    20: "8ef853e1f2bcce51",
    21: "b74ba35dbe8c5b7b",
    # round 6: level 9 with the sentence, nesting and indirect contexts
    22: "cb67c3d736e9c7eb",
    # round 6: level 8 with the same contexts and level 9's mixer steps
    23: "55805691aa4839fe",
    # round 7: level 9's expert with an LSTM cell
    24: "4742f6891de4ccb9",
    # round 8: level 7 with the nesting and sentence contexts, 16 MiB tables
    25: "c334a6090985e698",
    # round 9: path coding at every level; level 6 takes level 7's model, 7 and 8 level 8's
    26: "e24abcc1bdaaef76",
    27: "f94e72202af55e44",
    28: "713308ee1f42ed0f",
    29: "6ef7096ede7516bb",
    30: "95a15ccfcb6bcdae",
    31: "fc9b0ae29a27c394",
    32: "ab6bf7c1fb0390cf",
    33: "26632ed0940cb8b2",
    34: "e4a4ae99d36ea9b0",
    # round 11: level 6 with the column context, APM rate 1/64, matches of 16 bytes or more
    35: "12b49977786a3e74",
    # round 12: level 9's direct connections with a slower step schedule
    36: "3d02399eb3abeb19",
    # round 13: level 9 reads the line (column/above and word-state mixers, line contexts)
    37: "a395bfce20c5761a",
    # round 14: level 9 with more word history (the last four words, the last six letters)
    38: "00fe2aeb6de1aff6",
    # round 15: level 9 with direct maps of orders 1 and 2
    39: "93515ca14e35303a",
    # round 16: level 9 with the previous word's stem, its old recurrent input starting at 0
    40: "4b701c5f1119203a",
    # round 17: level 9 reads punctuation, capitalisation and the word that followed last time
    41: "7d9820d4bcd3cf21",
    # round 18: level 9 reads the follower word byte by byte; an order-3 SSE stage
    42: "e9acf353499a673a",
    # round 19: level 9 reads the byte the match model expects as a context
    43: "98d1b2b6ec0995dc",
    # round 20: level 9's follower words by the last two and three words
    44: "acb0155499425651",
    # round 21: level 9's 16-bit final probabilities
    45: "3b323ae5c976d977",
    # round 22: level 9's word contexts fold upper case onto lower case
    46: "1af93cf64525c4bc",
    # round 23: level 9 reads the paragraphs' first words, folds case after a line break or tab
    47: "d0399f92a0dc8408",
    # round 24: level 9's line heads and order 10 in place of two free contexts
    48: "804f81628c7090e3",
    # round 25: level 9's expert reads the previous word, 64 cells
    49: "5f90ba00f1a1e956",
    # round 27: level 9's expert reads three more of the mix's contexts as direct connections
    50: "a5d785e182ce11eb",
    # round 28: level 9's expert has 96 cells, BPTT 32, 2^27 weights, its context features capped
    51: "c5708a170e3aa792",
}


def digest(preset) -> str:
    return hashlib.sha256(repr((preset.level, preset.params.to_ints())).encode()).hexdigest()[:16]


def test_registered_presets_are_frozen():
    assert sorted(PRESETS) == sorted(FROZEN), "every registered preset is pinned here, and only those"
    for id_, preset in PRESETS.items():
        assert digest(preset) == FROZEN[id_], (
            f"preset {id_} changed: archives naming it would decode wrong; append a new id instead")
    assert 0 not in PRESETS  # 0 means "custom parameters, listed in full"


def test_levels_are_the_newest_preset_for_each():
    assert sorted(LEVELS) == list(range(1, 10))
    for level, id_ in LEVEL_PRESET.items():
        assert PRESETS[id_].level == level
        assert id_ == max(i for i, p in PRESETS.items() if p.level == level)
        assert params_for_level(level) is PRESETS[id_].params
    with pytest.raises(ValueError, match="1..9"):
        params_for_level(10)


def test_header_fields_name_the_preset_and_what_differs():
    base = params_for_level(6)
    six = LEVEL_PRESET[6]
    assert header_fields(base, six) == (six, (), ())
    fitted = fit_to_input(base, 1000)
    preset, overrides, full = header_fields(fitted, six)
    assert preset == LEVEL_PRESET[6] and full == ()
    assert PRESETS[preset].params.with_overrides(overrides) == fitted
    # custom parameters (level 0), or a different context list: the full list
    assert header_fields(base, None) == header_fields(base, 0) == (0, (), tuple(base.to_ints()))
    other = dataclasses.replace(base, contexts=base.contexts[:-1])
    assert header_fields(other, six) == (0, (), tuple(other.to_ints()))
    with pytest.raises(ValueError, match="unknown field"):
        base.with_overrides(((len(ModelParams.scalar_names()), 1),))
    with pytest.raises(ValueError, match="table_bits"):
        base.with_overrides(((0, 40),))  # validated


@pytest.mark.parametrize("level", range(1, 10))
def test_fit_to_input_only_lowers_size_fields(level):
    params = params_for_level(level)
    assert fit_to_input(params, None) is params
    big = fit_to_input(params, 1 << 30)
    assert big == params  # a large input: nothing changes, not even the header
    for size in (0, 1, 6, 4096, 100_000):
        fitted = fit_to_input(params, size)
        fitted.validate()
        changed = {f.name for f in dataclasses.fields(params) if getattr(fitted, f.name) != getattr(params, f.name)}
        assert changed <= {rule.field for rule in SIZE_RULES}
        for rule in SIZE_RULES:
            assert getattr(fitted, rule.field) <= getattr(params, rule.field)
            # still room for the whole input: 2^bits > size << headroom (or the field's minimum)
            assert getattr(fitted, rule.field) in (getattr(params, rule.field), rule.minimum) or \
                1 << getattr(fitted, rule.field) > size << rule.headroom
    # a 4 KB input: the model is a small fraction of the preset's (issue 15: 611 MiB at -9).  Most
    # of what is left is mixer rows that a small input never touches (they start at zero, on
    # ordinary pages): the resident peak is what tests/test_small_inputs.py bounds (< 200 MiB).
    # The mixer rows grow with the contexts and selectors (level 9 since round 13: 28 contexts,
    # ~115 inputs a row, ten selectors: 228 MiB; round 14: 30 contexts, 242 MiB; round 15: 246 MiB;
    # round 16: 253 MiB; round 17: 35 contexts, 281 MiB of 1305; round 18: the FOLLOWER mixer's
    # 65,792 rows, 331 MiB of 1404; round 19: 37 contexts, 339 MiB of 1431; round 20: 1.5 MiB of
    # follower tables by word pairs and triples, not fitted, 340.1 MiB of 1432; round 23: 38
    # contexts, 348 MiB of 1460; round 25: the expert's 2^16 word rows and their optimiser
    # moments, 192 MiB that are not fitted: they start at zero, so a small input's pages are
    # touched only in the rows it uses, 539.5 MiB of 1651; round 28: 96 cells make those rows
    # 288 MiB, 636.7 MiB of 2020).
    fitted = model_memory(fit_to_input(params, 4096))
    assert fitted <= 637 << 20 and fitted < model_memory(params)


def test_fit_to_input_keeps_a_component_that_is_off():
    off = dataclasses.replace(params_for_level(1), match_min=0)
    assert fit_to_input(off, 10).match_min == 0
    rule = SIZE_RULES[0]
    tiny = dataclasses.replace(params_for_level(1), **{rule.field: rule.minimum})
    assert getattr(fit_to_input(tiny, 1 << 30), rule.field) == rule.minimum  # never raised


def test_history_fitted_to_the_input_predicts_exactly_as_the_full_ring(sample_text):
    """The history ring sized to the input never wraps: predictions are the full-size model's."""
    from nncompress.model.predictor import Predictor

    data = sample_text[:3000]
    params = params_for_level(1)
    fitted = dataclasses.replace(params, history_bits=fit_to_input(params, len(data)).history_bits)
    assert fitted.history_bits < params.history_bits
    full = Predictor(params).predict_known(data)
    assert (Predictor(fitted, len(data)).predict_known(data) == full).all()


def test_an_archive_can_name_any_registered_preset(sample_text):
    """preset_id writes what a level meant when it was registered (a level later given new
    parameters still reproduces its old archives), and is refused for unknown ids."""
    import nncompress
    from nncompress.format import parse_header
    from nncompress.presets import header_params

    data = sample_text[:300]
    for id_, preset in PRESETS.items():
        c = nncompress.NNCompressor(preset.level, preset_id=id_, size=len(data))
        archive = c.compress(data) + c.flush()
        header = parse_header(archive)[0]
        assert header.preset == id_ and header_params(header) == fit_to_input(preset.params, len(data))
        assert nncompress.decompress(archive) == data
        if id_ == LEVEL_PRESET[preset.level]:
            assert archive == nncompress.compress(data, preset.level)
    with pytest.raises(ValueError, match="no registered preset"):
        nncompress.NNCompressor(6, preset_id=max(PRESETS) + 1)
    with pytest.raises(ValueError, match="not both"):
        nncompress.NNCompressor(6, preset_id=6, params=params_for_level(6))
