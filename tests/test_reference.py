"""The numba kernels against their slow pure-Python twin (nncompress.model.reference): the same 16
probabilities, bit for bit, at every nibble.

Tables are shrunk (both sides get the same parameters) so the twin allocates little; the dynamics
do not depend on the table sizes except through hash collisions, which one test provokes on
purpose.
"""

import dataclasses

import numpy as np
import pytest

from nncompress.model.params import (COLUMN, SPARSE_GAP, SPARSE_SKIP1, WORD, WORD_BIGRAM,
                                     WORD_ORDER1, WORD_SKIP, WORD_TRIGRAM, ModelParams)
from nncompress.model.kinds import FollowWords
from nncompress.model.predictor import Predictor, bytes_to_nibbles
from nncompress.model.reference import ReferencePredictor, hash32
from nncompress.model.state import FIELDS
from nncompress.presets import params_for_level

SMALL = dict(table_bits=16, history_bits=16, match_bits=12)

_SENTENCE = b"Alice was beginning to get very tired of sitting by her sister on the bank.\n"
_MUTATED = _SENTENCE[:50] + b"X" + _SENTENCE[51:]
# Lines of different lengths (column context), words and word pairs, long repeats (match model;
# the mutated copy in between makes the match jump back to the first copy, found with a long
# verified length), upper case and UTF-8 (word folding; two- and three-byte characters), binary
# bytes and a run of zeros.
VARIED = (
    b"The quick brown fox jumps over the lazy dog;\n"
    + _SENTENCE
    + b"  and of having nothing to do: once or twice she had peeped into the book\n"
    + bytes(range(0, 256, 5))
    + b"\x00" * 24
    + b"\nTHE QUICK Brown fox, caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9.\n"
    + _MUTATED
    + _SENTENCE
    + b"x = [1, 2, 3]\ny = {'a': 0xff}\n\t\tindented\n"
    + _SENTENCE[:40]
    + "\n한국어 문장, 세 바이트 글자.\n".encode()  # three-byte UTF-8 (the word-state mixer's places)
)


def run_side_by_side(params: ModelParams, data: bytes) -> dict:
    """Feed `data` to both implementations; every prediction must be identical.  Returns how much
    of the model the input exercised."""
    fast = Predictor(params)
    slow = ReferencePredictor(params)
    matched = 0
    for k, nibble in enumerate(bytes_to_nibbles(data)):
        expected = fast.predict_next()
        got = np.asarray(slow.predict_next(), dtype=np.float64)
        np.testing.assert_array_equal(got, expected, err_msg=f"nibble {k} (byte {k // 2})")
        if slow.match is not None and slow.match.length > 0:
            matched += 1
        fast.learn(int(nibble))
        slow.learn(int(nibble))
    # one more step: the last nibble's learning must agree too
    np.testing.assert_array_equal(np.asarray(slow.predict_next()), fast.predict_next())
    assert_same_state(fast, slow)
    return dict(
        matched_nibbles=matched,
        recoveries=slow.match.recoveries if slow.match is not None else 0,
        evictions=sum(s.evictions for s in slow.slots),
        lowest_probability=min(v for m in slow.state_maps for v in m.p),
        highest_probability=max(v for m in slow.state_maps for v in m.p),
        context_rates_capped=slow.expert.twin.ctx_scaled if slow.expert is not None else 0,
    )


def assert_same_state(fast: Predictor, slow: ReferencePredictor) -> None:
    """White-box: the learned state agrees too, including float64 values the probabilities only
    see rounded (an operation-order slip in the recurrent layer shows here first).  The twin
    reports it under the state declaration's names; every field declared as twin state must be
    reported, so a new component cannot skip this comparison."""
    expected = slow.state_by_field()
    assert set(expected) == {f.name for f in FIELDS if f.twin}
    arrays = fast._arrays  # the kernels' arrays (views into the packed buffers)
    for name, entries in expected.items():
        for index, value in entries:
            assert arrays[name][index].tolist() == value, f"{name}[{index}]"
    # the comparison is not vacuous (a pure-RNNME model has no mixer: its expert's table instead)
    assert expected["tables"] and (expected["mixw"] or expected["rn_me"])


# Level 9's expert in the twin tests: fewer cells than the preset's 96 (round 28), which made these
# tests twice as slow; two blocks of eight and a rest, as in dots.add_rows_dot
TWIN_CELLS = 20


@pytest.mark.parametrize("level", [1, 3, 6, 9])
def test_twin_matches_kernels(level):
    params = dataclasses.replace(params_for_level(level), **SMALL)
    if params.rnnme_me_bits:  # the twin's direct connections are a Python list (2^27 at level 9)
        params = dataclasses.replace(params, rnnme_me_bits=16, rnnme_hidden=TWIN_CELLS)
    if params.direct_order2_bits:  # and so is its order-2 direct map (2^22)
        params = dataclasses.replace(params, direct_order2_bits=16)
    seen = run_side_by_side(params, VARIED)
    assert seen["matched_nibbles"] > 50  # the repeated sentence engaged the match model


def test_twin_matches_kernels_with_slot_eviction(sample_text):
    """A 4 KiB table per context over ~3 KB: buckets overflow and slots get replaced."""
    params = dataclasses.replace(params_for_level(6), table_bits=12, history_bits=16,
                                 match_bits=10)
    data = sample_text[:2800] + bytes(range(256))
    seen = run_side_by_side(params, data)
    assert seen["evictions"] > 1000


EVERY_CONTEXT = (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, WORD, WORD_BIGRAM, SPARSE_SKIP1, SPARSE_GAP,
                 COLUMN, WORD_ORDER1, WORD_TRIGRAM, WORD_SKIP, 40, 41, 42, 44, 46, 49, 50, 51,
                 52, 53)  # 52, 53: strength (issue 12); 54-56 (round 4): below


@pytest.mark.parametrize("params", [
    # everything on: all context kinds, 3 inputs each, all eight mixers (the match mixer through
    # mixer_sets=2), another state table, a short BPTT block, a fast APM; sm_limit=4 drives
    # bit-history probabilities into the clamp at 0
    ModelParams(contexts=EVERY_CONTEXT, ctx_inputs=3, mixer_select=0b11111111, mixer_sets=2,
                state_table=4, rnn_hidden=5, rnn_bptt=3, rnn_lr_micro=900000, apm_rate=3,
                apm1_order=1, apm1_weight=3, apm2_weight=9, sm_limit=4, match_min=4,
                mixer_lr_boost=3, mixer_lr_decay=7, final_lr=11, **SMALL),
    # everything off: one context, no match model, no recurrent layer, a single mixer
    ModelParams(contexts=(2,), match_min=0, rnn_hidden=0, mixer_select=1, apm1_weight=0,
                apm2_weight=16, state_table=1, **SMALL),
    # indirect contexts, the match-byte and hashed-order-2 mixers, a small second APM
    ModelParams(contexts=(1, 2, 40, 41, 42, 44, 46, 49, 50, 51, WORD), ctx_inputs=2, mixer_select=0b11000101,
                apm1_order=1, **SMALL),
    # character-class contexts and both class selectors
    ModelParams(contexts=(1, 3, 46, 49, WORD), mixer_select=0b11000011, **SMALL),
    # the defaults of ModelParams (1 mixer + the match-state mixer)
    ModelParams(mixer_sets=2, **SMALL),
    # strength (issue 12): run inputs, match recovery, every SSE-chain APM, the text-structure
    # contexts
    ModelParams(contexts=(1, 2, 3, 6, WORD, 46, 52, 53), ctx_inputs=2, run_inputs=1, match_min=5,
                match_recover=8, apm_chain=15, apm_chain_weight=5, apm1_order=1,
                mixer_select=0b11000011, rnn_hidden=4, **SMALL),
    # the same components one by one
    ModelParams(contexts=(1, 2, 4, WORD), run_inputs=1, **SMALL),
    ModelParams(contexts=(1, 3, WORD), match_min=6, match_recover=6, mixer_select=0b10, **SMALL),
    ModelParams(contexts=(1, 2, WORD), apm_chain=0b1010, apm_chain_weight=16, mixer_init=12, **SMALL),
    # strength round 4: case-folded orders, the line-prefix context, the column and word-state
    # mixers
    ModelParams(contexts=(1, 2, WORD, 54, 55, 56), mixer_select=(1 << 9) | (1 << 10) | 1,
                **SMALL),
    ModelParams(contexts=(1, 3, 56, 57, 58), mixer_select=(1 << 9) | (1 << 11) | (1 << 12) | 0b10,
                match_min=5, **SMALL),
    # strength round 5: four-word, letters-only and word-separator contexts
    ModelParams(contexts=(1, 2, WORD, 59, 60, 61), mixer_select=0b1000001, **SMALL),
    # round 15: the direct maps of orders 1 and 2 (a small order-2 map: collisions on this input)
    ModelParams(contexts=(1, 2, WORD), mixer_select=0b11, direct_order1=1, direct_order2_bits=12, **SMALL),
    ModelParams(contexts=(1, 3), direct_order2_bits=13, run_inputs=1, **SMALL),
    # round 16: the previous word's stem; the shared inputs starting at 0 (with run inputs and a
    # direct map between them and around them, so that every column lands where the kernels put it)
    ModelParams(contexts=(1, 2, WORD, 62), mixer_select=0b11, **SMALL),
    ModelParams(contexts=(1, 3, WORD), run_inputs=1, match_min=5, rnn_hidden=4, direct_order1=1,
                mixer_zero_start=0b101, mixer_init=12, mixer_select=0b11, **SMALL),
    ModelParams(contexts=(2, WORD), ctx_inputs=2, match_min=6, rnn_hidden=3, mixer_zero_start=0b1010,
                **SMALL),
    # round 26: the recurrent layer at 11 units (dots.add_rows_dot's block of eight and the rest,
    # on W's rows and on its columns), its BPTT block shorter than the input's line
    ModelParams(contexts=(1, 2, WORD), rnn_hidden=11, rnn_bptt=4, rnn_lr_micro=900000, **SMALL),
    # round 17: the sentence-shape, punctuation and word-follower contexts; then all 40 contexts
    # allowed since round 17 (32 before), with the seen-count mixer, whose rows grow with them
    ModelParams(contexts=(1, 2, WORD, 63, 64, 65, 66), mixer_select=0b1001, **SMALL),
    ModelParams(contexts=EVERY_CONTEXT + (54, 55, 56, 59, 60, 61, 62, 63, 64, 65, 66),
                mixer_select=0b1001, **SMALL),
    # round 18: the byte the follower word predicts, as a context and as a mixer selector
    ModelParams(contexts=(1, 2, WORD, 66, 67), mixer_select=(1 << 13) | 0b11, **SMALL),
    # round 18: the SSE chain's hashed rows sized with the context tables (apm_chain_bits=18,
    # table_bits=16: 2^12 rows, and they collide on this input)
    ModelParams(contexts=(1, 2, WORD), apm_chain=0b1101, apm_chain_bits=18, **SMALL),
    # round 19: the byte the match model expects as a context (a short minimum and recovery, so
    # that repeats of every length bucket occur); and without a match model, where it expects nothing
    ModelParams(contexts=(1, 2, WORD, 68), match_min=5, match_recover=6, **SMALL),
    ModelParams(contexts=(1, 3, 68), match_min=0, **SMALL),
    # round 20: the follower word by the last two words (the repeated sentences give pairs that
    # recur), read through the context and through the FOLLOWER mixer
    ModelParams(contexts=(1, 2, WORD, 67), mixer_select=(1 << 13) | 0b11, follow_words=1, **SMALL),
    # and by the last three words, WORD_FOLLOWER's word by the last two (every FollowWords bit)
    ModelParams(contexts=(1, 2, WORD, 66, 67), mixer_select=(1 << 13) | 0b11, follow_words=7, **SMALL),
    # the bits without their readers: nothing changes, no table grows
    ModelParams(contexts=(1, 2, WORD), follow_words=7, **SMALL),
    # round 21: 16-bit final probabilities through the final mixer, both APMs and the SSE chain;
    # and with a single mixer (no final mixer: its 12-bit output scaled)
    ModelParams(contexts=(1, 2, WORD), mixer_select=0b11, apm1_order=1, apm_chain=0b1101,
                apm_chain_bits=18, probability_bits=16, **SMALL),
    ModelParams(contexts=(1, 3), mixer_select=1, apm1_weight=2, apm2_weight=3, probability_bits=16, **SMALL),
    # round 22: upper case looked up as lower case after the high nibble, in some contexts (the
    # first and the word context, not order 3) and, with run inputs and the analysis peek, in all
    ModelParams(contexts=(1, 3, WORD), mixer_select=0b11, case_fold=0b101, **SMALL),
    ModelParams(contexts=(2, 4, WORD, 62), run_inputs=1, case_fold=0b1111, probability_bits=16, **SMALL),
    # round 23: the paragraphs' first words as a context, and folding after a line break or tab
    # too (VARIED has tab-indented lines and capitals after line breaks)
    ModelParams(contexts=(1, 2, WORD, 69), mixer_select=0b11, case_fold=0b1100, case_fold_gate=1,
                **SMALL),
    # round 24: the lines' first words (VARIED has lines with and without words), folded
    ModelParams(contexts=(1, 2, WORD, 72), mixer_select=0b11, case_fold=0b1000, **SMALL),
], ids=["everything", "minimal", "indirect", "classes", "defaults", "strength", "runs",
        "match_recover", "apm_chain", "round4", "round4_column", "round5_words", "direct_maps",
        "direct_order2", "round16_stems", "zero_start", "zero_start_match_rnn", "round26_rnn_eleven_units", "round17_shapes",
        "round17_wide", "round18_follower", "round18_chain_bits", "round19_match_predicted",
        "round19_no_match_model", "round20_follow_pair", "round20_follow_words",
        "round20_follow_words_unread", "round21_fine", "round21_fine_one_mixer",
        "round22_case_fold", "round22_case_fold_all", "round23_paragraphs",
        "round24_line_heads"])
def test_twin_matches_kernels_unusual_configurations(params):
    seen = run_side_by_side(params, VARIED)
    # 22-bit probabilities: never above certainty; the floor clamp at 0 is reached only at the
    # fastest adaptation rates (sm_limit=4), and there it is reached
    assert seen["highest_probability"] <= 1 << 22
    if params.sm_limit == 4:
        assert seen["lowest_probability"] == 0
    else:
        assert seen["lowest_probability"] > 0
    if params.match_recover:  # the mutated sentence's copy went on past the mismatch
        assert seen["recoveries"] > 0


def wrap_input(sample_text: bytes, history: int) -> bytes:
    """Several times the history size: text with repeats inside the window, then a random block
    repeated exactly one history length later (its old copy is overwritten: a match there is stale)."""
    import random

    rng = random.Random(7)
    period = bytes(rng.randrange(256) for _ in range(history))
    text = sample_text[:1500]
    return text + text[200:900] + period + period + text[:600] + period[:300] + text[100:700]


# A play's layout: speeches in paragraphs, each headed by its speaker, verse lines after a tab
PLAY = b"".join(
    speaker + b"\t" + line + b"\n\tAnd so " + line.lower() + b"\n\n"
    for speaker, line in [(b"OLIVER", b"Call him in."), (b"CHARLES", b"Good morrow to you."),
                          (b"OLIVER", b"What news?"), (b"CHARLES", b"No news at the court."),
                          (b"\t[Enter DENNIS]", b""), (b"OLIVER", b"Where will he live?"),
                          (b"CHARLES", b"In the forest.")] * 2)


def test_twin_matches_kernels_on_paragraphs():
    """Rounds 23 and 24: blank lines, paragraph and line heads (a stage direction's first word
    among them) and tab-indented capitals, with every component of level 9 that reads them."""
    # the expert's size fields shrink like the tables (the twin's LSTM is pure Python, O(cells^2)
    # a byte; 20 cells: two blocks of eight and a rest); tests/test_rnnme.py covers the cell
    params = dataclasses.replace(params_for_level(9), **SMALL, rnnme_me_bits=16,
                                 direct_order2_bits=16, rnnme_hidden=TWIN_CELLS)
    assert {69, 72} <= set(params.contexts) and params.case_fold_gate
    run_side_by_side(params, PLAY + VARIED[:300])


def test_paragraph_heads_price_the_next_speaker():
    """Round 23: in a dialogue, who speaks next follows who spoke in the last two paragraphs.
    Three speakers take turns in a fixed order with lines of their own: the bytes before a name
    do not tell whose turn it is, the last two names do, and with PARAGRAPH_HEADS the names cost
    less."""
    from nncompress.analysis.costs import code_lengths

    speakers = [b"ANNA", b"BORIS", b"CELIA"]
    lines = [b"the river is cold", b"a stone fell", b"look at the cloud", b"sugar, then lemon",
             b"where is the tiger", b"maple leaves", b"we saw it today"]
    text = b"".join(speakers[k % 3] + b"\t" + lines[(5 * k) % 7] + b".\n\n" for k in range(60))
    base = ModelParams(contexts=(1, 2, WORD), mixer_select=0b11, **SMALL)
    heads = dataclasses.replace(base, contexts=(1, 2, WORD, 69))
    plain_costs, head_costs = code_lengths(text, params=base), code_lengths(text, params=heads)
    starts = [k for k in range(2, len(text)) if text[k - 2:k] == b"\n\n"]
    assert len(starts) == 59
    # about log2(3) bits a name without the context, once it has learned the three
    assert sum(head_costs[k] for k in starts) < sum(plain_costs[k] for k in starts) - 12


def test_line_heads_price_the_next_line_start():
    """Round 24: header lines that follow each other in a fixed order, each with a value of its
    own: the line break does not tell which header comes next, the last two lines' first words
    do, and with LINE_HEADS the headers' first bytes cost less."""
    from nncompress.analysis.costs import code_lengths

    fields = [b"From", b"Subject", b"Date"]
    values = [b"the river", b"a stone fell", b"look at the cloud", b"sugar and lemon", b"tiger",
              b"maple leaves", b"we saw it"]
    text = b"".join(fields[k % 3] + b": " + values[(5 * k) % 7] + b"\n" for k in range(90))
    base = ModelParams(contexts=(1, 2, WORD), mixer_select=0b11, **SMALL)
    heads = dataclasses.replace(base, contexts=(1, 2, WORD, 72))
    plain_costs, head_costs = code_lengths(text, params=base), code_lengths(text, params=heads)
    starts = [k for k in range(1, len(text)) if text[k - 1] == 10]
    assert len(starts) == 89
    assert sum(head_costs[k] for k in starts) < sum(plain_costs[k] for k in starts) - 12


def test_case_fold_gate_folds_a_capital_after_a_line_break_or_tab():
    """Round 23: with case_fold_gate, a capital at a verse line's start (after a tab or a line
    break, mid-sentence) reads the lower-case histories; without it, only a sentence's first word
    does; a capital after a space mid-sentence is left alone either way."""
    from nncompress.analysis.costs import code_lengths

    words = [b"apple", b"river", b"stone", b"cloud", b"maple", b"sugar", b"tiger", b"lemon"]
    # the word context reads the previous byte at a word's first letter: a tab is followed by the
    # lower-case word in one line and by its capital at the next line's start
    verse = b"".join(b"we saw the\t" + w + b",\n\t" + w[:1].upper() + w[1:] + b" was there,\n"
                     for w in words * 3)
    folded = ModelParams(contexts=(1, 2, WORD), mixer_select=0b11, case_fold=0b100, **SMALL)
    gated = dataclasses.replace(folded, case_fold_gate=1)
    capitals = [k for k in range(1, len(verse)) if 65 <= verse[k] <= 90]
    folded_costs, gated_costs = code_lengths(verse, params=folded), code_lengths(verse, params=gated)
    assert sum(gated_costs[k] for k in capitals) < sum(folded_costs[k] for k in capitals)
    names = b"we saw " + b" and ".join(w[:1].upper() + w[1:] + b" with the " + w for w in words * 3)
    np.testing.assert_array_equal(code_lengths(names, params=folded), code_lengths(names, params=gated))


def test_twin_matches_kernels_across_history_wrap(sample_text):
    """history_bits=10: the 1 KiB ring buffer wraps four times; the match model must drop
    candidates whose bytes were overwritten (the staleness guard) and the long orders and the
    column context read wrapped positions."""
    params = ModelParams(contexts=(1, 2, 3, 12, 16, WORD, COLUMN), match_min=7, history_bits=10,
                         table_bits=14, match_bits=10, rnn_hidden=4, mixer_sets=2)
    data = wrap_input(sample_text, 1 << params.history_bits)
    assert len(data) > 4 << params.history_bits
    seen = run_side_by_side(params, data)
    assert seen["matched_nibbles"] > 500  # repeats inside the window were followed after wraps


def test_twin_matches_kernels_when_the_follower_word_leaves_the_history(sample_text):
    """Round 18: with a 1 KiB history, the word that followed a word last time is often
    overwritten before the word comes again; the mixer selected by its expected byte (here
    without the WORD_PREDICTED context: the follower's table is kept for the mixer alone) must then
    expect nothing, in the kernels as in the twin."""
    params = ModelParams(contexts=(1, 3, WORD), mixer_select=(1 << 13) | 1, history_bits=10,
                         table_bits=14, match_bits=10)
    run_side_by_side(params, wrap_input(sample_text, 1 << params.history_bits))


def test_hash_is_32_bit_and_masks_its_operands():
    assert hash32(0, 0) == hash32(1 << 32, 1 << 33)
    assert all(0 <= hash32(a, b) <= 0xFFFFFFFF for a in (0, 1, 2**32 - 1) for b in (0, 7, 2**40))


# ---- branch neural2: the RNNME expert in the mix ------------------------------------------------

# a small expert: 6 units, 2^12 direct-connection weights, orders 1-3 and the current word
EXPERT = dict(rnnme_hidden=6, rnnme_bptt=3, rnnme_me_bits=12, rnnme_features=0b111 | 1 << 8,
              rnnme_lr_micro=20000, rnnme_lr_min_micro=5000, rnnme_lr_half=200, rnnme_inputs=1)


@pytest.mark.parametrize("extra", [
    dict(EXPERT),
    dict(EXPERT, rnnme_inputs=2, rnnme_apm_weight=6, mixer_select=0b100000011),
    dict(EXPERT, rnnme_pure=1, rnnme_inputs=0, path_coding=0),  # the pure expert codes 16-way
    # branch expert4: the match model's features, four of the predictor's contexts as features
    # (the first and three from the end of level 3's list), a rate schedule of its own
    dict(EXPERT, rnnme_match_feature=3, rnnme_context_features=0b1110000001,
         rnnme_me_lr_milli=300, rnnme_me_decay_milli=20, rnnme_me_min_milli=100),
    # round 7: the LSTM cell with Adam, the byte two back and a word input row
    dict(EXPERT, rnnme_cell=1, rnnme_adam=1, rnnme_input2=1, rnnme_word_input_bits=6),
    dict(EXPERT, rnnme_cell=1, rnnme_pure=1, rnnme_inputs=0, path_coding=0),
    # round 16: the expert's two inputs and the recurrent layer's start at weight 0
    dict(EXPERT, rnnme_inputs=2, rnn_hidden=3, mixer_zero_start=0b1100, direct_order1=1),
    # round 21: the expert's APM on 16-bit final probabilities
    dict(EXPERT, rnnme_apm_weight=5, mixer_select=0b100000011, probability_bits=16),
    # round 25: the previous word's row as a network input too, with both cells
    dict(EXPERT, rnnme_cell=1, rnnme_adam=1, rnnme_input2=1, rnnme_word_input_bits=6,
         rnnme_word_input_prev=1),
    dict(EXPERT, rnnme_word_input_bits=5, rnnme_word_input_prev=1),
    # round 28: the context features' rows with a cap of their own on their summed rates
    dict(EXPERT, rnnme_cell=1, rnnme_adam=1, rnnme_context_features=0b1110000001,
         rnnme_me_ctx_total_milli=700),
], ids=["input", "two-inputs-selector-apm", "pure", "match-context-features-rates", "lstm-inputs",
        "lstm-pure", "zero-start", "apm-fine", "lstm-previous-word", "tanh-previous-word",
        "context-feature-cap"])
def test_twin_matches_kernels_with_the_rnnme_expert(extra):
    params = dataclasses.replace(params_for_level(3), **SMALL, **extra)
    seen = run_side_by_side(params, VARIED)
    if extra.get("rnnme_match_feature"):
        assert seen["matched_nibbles"] > 50  # the match features were hashed from real repeats
    # the cap acted (four fresh rows at 0.5 sum to 2.0), and only where it is set
    assert (seen["context_rates_capped"] > 0) == bool(extra.get("rnnme_me_ctx_total_milli"))


def test_word_stem_drops_one_english_suffix_and_folds_case():
    """Round 16: the previous word's stem (Context.STEM_WORD) is the word less -ing, -ed,
    -es, -er, -ly or -s, case-folded; short words and -ss keep their letters."""
    from nncompress.model.reference import ByteHistory

    def stem(word: bytes) -> int:
        h = ByteHistory(12)
        for b in b"x " + word + b" ":
            h.append(b)
        return h.stem1

    assert stem(b"walking") == stem(b"walked") == stem(b"Walks") == stem(b"WALK") == stem(b"walker")
    assert stem(b"quickly") == stem(b"quick")
    assert stem(b"class") != stem(b"clas")  # -ss is not a plural
    assert stem(b"is") != stem(b"i") and stem(b"bed") != stem(b"b")  # too short to cut
    assert stem(b"sing") != stem(b"s")  # -ing needs five letters
    assert stem(b"run") != stem(b"walk")


def test_punctuation_and_word_follower_registers():
    """Round 17: PUNCT_WORD's register is the last , ; : . ! ? and the words completed since it
    (reset by the next mark); WORD_FOLLOWER's table maps a word to the word after it last time."""
    from nncompress.model.reference import ByteHistory

    def fed(text: bytes) -> ByteHistory:
        h = ByteHistory(12)
        for b in text:
            h.append(b)
        return h

    assert fed(b"Yes, we can go").punct == (ord(",") << 4) | 2  # "we" and "can"; "go" is partial
    assert fed(b"Yes, we can. Go").punct == ord(".") << 4
    assert fed(b"no mark here ").punct == 3  # the count runs from the start
    assert fed(b"one two " * 20).punct == 15  # and stops at 15
    h = fed(b"the cat sat; the dog ran; the ")
    dog = fed(b"x dog ").word1
    assert h.word_followers[h.word1 & 0xFFFF] == dog  # "the" was last followed by "dog"
    assert h.word_followers[dog & 0xFFFF] == fed(b"x ran ").word1
    # round 18: "the" was last followed by "dog": between words its first byte is expected, inside
    # a word that agrees (case-folded) the next one, with the bytes that agree from bit 9
    story = b"the cat sat; the dog ran; "
    assert fed(story + b"the ").follower_expects() == ord("d") + 1
    assert fed(story + b"The D").follower_expects() == (ord("o") + 1) | (1 << 9)
    assert fed(story + b"the do").follower_expects() == (ord("g") + 1) | (2 << 9)
    assert fed(story + b"the dog").follower_expects() == (ord(" ") + 1) | (3 << 9)
    assert fed(story + b"the dot").follower_expects() == 0  # it differs
    assert fed(story + b"the c").follower_expects() == 0
    assert fed(b"the cat").follower_expects() == 0  # no word has ended yet


def test_follower_of_the_last_words_comes_first():
    """Round 20 (follow_words): after "of the" the follower is the word that followed "of the"
    last time, not the one that followed "the" last time (PAIR); after "one of the", the one that
    followed those three words (TRIPLE); pairs never seen together fall back on the last word's
    follower, and without the bits nothing changes.  WORD_FOLLOWER's word likewise (WORD_PAIR)."""
    from nncompress.model.reference import ByteHistory

    def fed(text: bytes, follow_words: int) -> ByteHistory:
        h = ByteHistory(12, follow_words)
        for b in text:
            h.append(b)
        return h

    def expects(text: bytes, follow_words: int = FollowWords.PAIR) -> int:
        return fed(text, follow_words).follower_expects()

    story = b"one of the cats; then the dogs; "
    assert expects(story + b"of the ") == ord("c") + 1  # "of the" -> "cats"
    assert expects(story + b"of the ", follow_words=0) == ord("d") + 1  # "the" -> "dogs"
    assert expects(story + b"on the ") == ord("d") + 1  # "on the": never seen, "the" -> "dogs"
    assert expects(story + b"of the ca") == (ord("t") + 1) | (2 << 9)
    assert expects(story + b"of the do") == 0  # it differs from "cats"
    both = FollowWords.PAIR | FollowWords.TRIPLE
    story = b"one of the cats; two of the rats; "
    assert expects(story + b"one of the ", both) == ord("c") + 1  # "one of the" -> "cats"
    assert expects(story + b"one of the ") == ord("r") + 1  # "of the" -> "rats"
    assert expects(story + b"six of the ", both) == ord("r") + 1  # never seen: "of the"
    assert expects(story + b"one of the ", FollowWords.TRIPLE) == ord("c") + 1
    story = b"one of the cats; then the dogs; "
    word = fed(story + b"of the ", FollowWords.WORD_PAIR).follower_word()
    assert word == fed(b"x cats ", 0).word1 and word != fed(story + b"of the ", 0).follower_word()
    assert fed(story + b"of the ", FollowWords.WORD_PAIR).follower_expects() == ord("d") + 1


def test_case_fold_shares_a_capital_with_its_lower_case_letter_only_where_case_is_grammar():
    """Round 22: with the word context folded, a word met in lower case mid-sentence is cheaper
    when it starts the next sentence with a capital (both nibbles of the capital read the
    lower-case histories); a capital in the middle of a sentence (a name) is left alone."""
    from nncompress.analysis.costs import code_lengths

    words = [b"apple", b"river", b"stone", b"cloud", b"maple", b"sugar", b"tiger", b"lemon"]
    text = b"".join(b"we saw the " + w + b" today. " + w[:1].upper() + w[1:] + b" was there. "
                    for w in words * 3)
    base = ModelParams(contexts=(1, 2, WORD), mixer_select=0b11, **SMALL)
    folded = dataclasses.replace(base, case_fold=0b100)
    plain_costs = code_lengths(text, params=base)
    folded_costs = code_lengths(text, params=folded)
    capitals = [k for k in range(1, len(text)) if 65 <= text[k] <= 90]
    assert capitals and sum(folded_costs[k] for k in capitals) < sum(plain_costs[k] for k in capitals)
    # names in the middle of a sentence (no . ! ? and no all-capitals word): the gate stays shut,
    # and the folded model reads exactly what the plain one reads
    names = b"we saw " + b" and ".join(w[:1].upper() + w[1:] + b" with the " + w for w in words * 3)
    np.testing.assert_array_equal(code_lengths(names, params=base), code_lengths(names, params=folded))
