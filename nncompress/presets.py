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
from .model.kinds import FollowWords, ZeroStart
from .model.kinds import selector_mask
from .model.params import ModelParams
from .format import raw_per_payload_bit

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


# ---- round 3 (issues 11 and 12): new presets, registered under new ids below ------------------

# Levels 3-5: round 2's, with the contexts' mixer weights starting at 1 in all
_MEDIUM_R3 = ModelParams(**dict(_MEDIUM.__dict__, mixer_init=16))

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
_DEFAULT_R3 = ModelParams(**dict(
    _COMMON, **_ROUND3,
    contexts=_TWENTY,
    mixer_lr_decay=128, ctx_inputs=3,
    mixer_select=_SIX_MIXERS | selector_mask(S.RNN_SIGNS),
    apm1_order=1, apm1_weight=6, apm2_weight=6, rnn_hidden=16,
    table_bits=23, history_bits=24, match_bits=20))

# The above with 16 MiB per context table, a larger match table and 32 recurrent units; ~570 MiB
_STRONG_CM_R3 = ModelParams(**dict(_DEFAULT_R3.__dict__, rnn_hidden=32, table_bits=24,
                                   match_bits=22))


# Level 9: the above with the RNNME expert (16 units, 2^22 direct-connection weights = 16 MiB,
# byte orders 1-6 and the word): one mixer input per node, a mixer selected by its expected
# nibble, an APM on it at weight 4/16.  bench/NEURAL.md: 0.005-0.008 bpc on every English file
# (the same with 4 units: the direct connections carry it), about 1/3 slower.
_STRONG_R3 = ModelParams(**dict(
    _STRONG_CM_R3.__dict__,
    mixer_select=_STRONG_CM_R3.mixer_select | selector_mask(S.RNNME),
    rnnme_inputs=1, rnnme_apm_weight=4,
    rnnme_hidden=16, rnnme_bptt=8, rnnme_me_bits=22,
    rnnme_features=0b111111 | 1 << 8,  # orders 1-6 and the current word (rnnme_config.features_mask)
    rnnme_lr_micro=2000, rnnme_lr_min_micro=300, rnnme_lr_half=100000))


# Level 6 (the default) must stay at 50 KB/s or more (issues 11, 12), and the twenty contexts of
# _DEFAULT_R3 cost half of that speed.  So level 6 is round 2's level 6 with round 3's two free
# changes (mixer weights starting at 1 in all over the contexts, match recovery: -0.002 bpc at the
# same speed), level 7 adds the run inputs (-0.010 to -0.019 bpc, ~15 % slower), and levels 8/9
# are the twenty-context models (bench/TUNING.md, round 3).
_DEFAULT_FAST_R3 = ModelParams(**dict(_DEFAULT.__dict__, mixer_init=16, match_recover=16))
_DEFAULT_RUNS_R3 = ModelParams(**dict(_DEFAULT_FAST_R3.__dict__, run_inputs=1))


# ---- branch expert4 (issue 11, round 4): a stronger expert at level 9 --------------------------

# Level 9 with its expert changed where it pays (bench/NEURAL.md, "Round 4"): 2^26
# direct-connection weights (256 MiB; the gain grew with the table at every size measured) and 4
# recurrent units instead of 16 (the same bpc or slightly better: the direct connections carry
# the expert; ~20 % faster).  The match features (rnnme_match_feature) help on enwik8 but cost
# alice29.txt 0.0006, so they stay off.  The context-mixing part is level 9's, unchanged.
_STRONG_E4 = ModelParams(**dict(_STRONG_R3.__dict__, rnnme_hidden=4, rnnme_me_bits=26))


# ---- round 5 (issue 11): the expert reads the predictor's contexts and its match model ---------

def context_mask(contexts: tuple, kinds) -> int:
    """A mask over a context list's positions (ModelParams.case_fold, rnnme_context_features):
    the positions whose kind is one of `kinds`."""
    return sum(1 << i for i, kind in enumerate(contexts) if kind in kinds)


# Level 9's expert with direct-connection features from the mix: the match model's expected byte
# (x length bucket, x previous byte) and eight of the predictor's own context hashes (word
# bigram/trigram/skip, word + order 1, column, three character-class patterns).  bench/NEURAL.md,
# "Round 5": 0.003-0.007 bpc on alice29.txt, book2 and enwik8; same table, same memory.
_EXPERT_FEATURE_CONTEXTS = (C.WORD_BIGRAM, C.COLUMN, C.WORD_ORDER1, C.WORD_TRIGRAM, C.WORD_SKIP,
                            C.CLASS_MASK, C.CLASS_RUNS, C.CLASS_RUNS_ORDER1)
_STRONG_E5 = ModelParams(**dict(
    _STRONG_E4.__dict__, rnnme_match_feature=3,
    rnnme_context_features=context_mask(_STRONG_E4.contexts, _EXPERT_FEATURE_CONTEXTS)))


# Level 9 with smaller mixer steps (bench/TUNING.md, round 5): about 90 inputs per mixer now, so
# round 2's step sizes overshoot; 0.001-0.022 bpc on 15 of 17 shared files, the most on the small
# ones; choenamseon_ko.txt loses 0.003 (UTF-8 Korean wants the faster steps), enwik8_1M equal.
_STRONG_E5_STEPS = ModelParams(**dict(_STRONG_E5.__dict__, mixer_lr=1, mixer_lr_boost=16, final_lr=2))


# ---- round 6 (issue 12): two text-structure and two indirect contexts at level 9 -------------------

# Level 9 with four contexts more (bench/TUNING.md, round 6): the current word with the
# sentence's word count and capitalisation and with bracket/quote nesting, and the two indirect contexts
# (the bytes that followed the last one or two bytes before).  0.001-0.010 bpc on every English
# file, the most on wiki markup; four 16 MiB tables more.  The expert does not read them (that
# lost on the small files).
_STRONG_E6 = ModelParams(**dict(
    _STRONG_E5_STEPS.__dict__,
    contexts=_STRONG_E5_STEPS.contexts + (C.SENTENCE_WORD, C.NESTING_WORD, C.INDIRECT1, C.INDIRECT2)))


# Level 8 (level 9's context-mixing part without the expert) with the same four contexts and
# level 9's smaller mixer steps (bench/TUNING.md, round 6): 0.0005-0.04 bpc on every shared
# file, ~15 % slower; ~410 MiB.
_STRONG_CM_R6 = ModelParams(**dict(
    _DEFAULT_R3.__dict__, contexts=_STRONG_E6.contexts, mixer_lr=1, mixer_lr_boost=16, final_lr=2))


# ---- round 7 (issue 11): the expert's recurrent part becomes an LSTM -----------------------------

# round 7: the LSTM cell's settings (bench/NEURAL.md, "Round 7"): Adam at a larger step than the
# tanh cell's AdaMax, and the byte two back and the current word as inputs beside the last byte
LSTM_FIELDS = dict(rnnme_cell=1, rnnme_adam=1, rnnme_input2=1, rnnme_word_input_bits=10,
                   rnnme_lr_micro=5000, rnnme_lr_min_micro=1000)

# Level 9 with the expert's four tanh units replaced by 32 LSTM cells trained over 16-byte blocks
# (bench/NEURAL.md, "Round 7": 0.0002-0.005 bpc on every shared file, 0.03 on the Korean text,
# about a quarter slower), and three changes to the context-mixing part that paid once re-screened
# (bench/TUNING.md, round 7, row 260: 0.0015-0.009 on 16 files): APMs at rate 1/64, matches of
# 16 bytes or more, order 12 as a 25th context.  ~1 GiB.
_STRONG_E7 = ModelParams(**dict(
    _STRONG_E6.__dict__, **LSTM_FIELDS, rnnme_hidden=32, rnnme_bptt=16,
    apm_rate=6, match_min=16, contexts=_STRONG_E6.contexts + (C.ORDER12,)))


# ---- round 8 (issue 12): level 7 -----------------------------------------------------------------

# Level 7 with the bracket/quote nesting and sentence contexts and 16 MiB tables (bench/TUNING.md,
# round 8): better than round 3's level 7 on all 17 shared files, by 0.0001 (trans) to 0.016
# (enwik8_1M), and than level 6 on all of them; ~380 MiB.  (Run inputs and the nesting context at
# level 6 gain up to 0.030 there but cost it 14 % of its speed, under issue 12's 50 KB/s floor.)
_DEFAULT_RUNS_R8 = ModelParams(**dict(
    _DEFAULT_RUNS_R3.__dict__, table_bits=24,
    contexts=_DEFAULT_RUNS_R3.contexts + (C.NESTING_WORD, C.SENTENCE_WORD)))


# ---- round 9 (issue 12): path coding at every level -------------------------------------------------

def _path_coded(params: ModelParams) -> ModelParams:
    """The same model, each nibble coded down its path (ModelParams.path_coding): the encoder
    and decoder mix 4 of the 15 tree nodes per nibble, so the same model runs about 1.3-1.9x as
    fast, for the same bits (bench/TUNING.md, round 9)."""
    return ModelParams(**dict(params.__dict__, path_coding=1))


# With that speed, level 6 takes round 8's level 7 (better than round 3's level 6 on all 17 shared
# files, by 0.0022 to 0.034; ~380 MiB), and levels 7 and 8 round 6's level 8 with round 7's three
# changes to level 9's context-mixing part (APMs at rate 1/64, matches of 16 bytes or more, order 12
# as a 25th context; bench/TUNING.md, round 9: 0.0013-0.0091 bpc better than round 6's level 8 on
# all 17 shared files), i.e. level 9 without the expert: ~425 MiB, and issue 12's level-6 figures
# on all eight English files, at about 0.5-0.75x round 3's level-6 speed (under its 50 KB/s floor,
# hence level 7).
_FAST_R9 = _path_coded(_FAST)
_MEDIUM_R9 = _path_coded(_MEDIUM_R3)
_DEFAULT_R9 = _path_coded(_DEFAULT_RUNS_R8)
_STRONG_CM_R9 = _path_coded(ModelParams(**dict(
    _STRONG_CM_R6.__dict__, apm_rate=6, match_min=16, contexts=_STRONG_CM_R6.contexts + (C.ORDER12,))))
_STRONG_R9 = _path_coded(_STRONG_E7)


# ---- round 11 (issue 12): level 6 takes the column context -------------------------------------------

# Level 6 with the column context (the column in the line and the byte above; bench/TUNING.md,
# round 10: worth 0.013-0.019 bpc alone on alice29.txt, lcet10.txt and plrabn12.txt) and level 7's
# APMs at rate 1/64 and matches of 16 bytes or more: better than preset 31 on all 17 shared files
# and issue 12's level-6 figures on all eight English files, at ~96 % of its kernel speed; ~404 MiB.
_DEFAULT_R11 = ModelParams(**dict(
    _DEFAULT_R9.__dict__, apm_rate=6, match_min=16, contexts=_DEFAULT_R9.contexts + (C.COLUMN,)))


# ---- round 12 (issue 11): the expert's direct connections step more finely ------------------------

# Level 9 with a slower direct-connection schedule: a row used n times steps at
# max(0.01, 0.3 / (1 + 0.1 n)) instead of max(0.05, 0.5 / (1 + 0.05 n)).  Round 4 screened the
# schedule one field at a time on the tanh expert and found no lever; beside the LSTM, with 2^26
# weights and the mix's features, the finer steps are worth 0.0001-0.011 bpc on 14 of the 17
# shared files (the most on plrabn12.txt and the Korean text), and cost grammar.lsp, fields.c
# and trans 0.0002-0.005 (grammar.lsp: 2.5 bytes) (bench/NEURAL.md, "Round 12").  Same
# model, same memory and speed.
_STRONG_R12 = ModelParams(**dict(_STRONG_R9.__dict__, rnnme_me_lr_milli=300,
                                 rnnme_me_decay_milli=100, rnnme_me_min_milli=10))


# Round 13 (strength round 4, issue 12): the line as a context.  A mixer whose weight sets are
# chosen by the class of the byte above (previous line, same column) x a column bucket, one by
# the word's place in the sentence (capitalisation, quotes), three contexts keyed by the line's
# first two bytes or the two bytes above (with the last two bytes / the current word); the
# recurrent-sign mixer stays (dropping it cost the Korean text 0.001).  Model only, against preset 36:
# 0.003-0.011 bpc on the English files (news the most) (bench/TUNING.md, round 13).
_STRONG_R13 = ModelParams(**dict(
    _STRONG_R12.__dict__,
    contexts=_STRONG_R12.contexts + (C.LINE_PREFIX, C.LINE_WORD, C.ABOVE_ORDER2),
    mixer_select=selector_mask(S.PARTIAL_BYTE, S.MATCH, S.PREV_BYTE, S.SEEN, S.RNN_SIGNS, S.CLASSES,
                               S.CLASS_RUNS, S.RNNME, S.COLUMN_ABOVE, S.WORD_STATE)))


# Round 14 (strength round 5, issue 12): more word history.  Contexts keyed by the last four words
# (WORD_QUADGRAM) and by the last six letters case-folded, whatever lies between them, with the
# previous byte (LETTERS).  Model only, against preset 37: 0.0001-0.0040 bpc on 16 of the 17
# shared files, xargs.1 equal to four places (bench/TUNING.md, round 14).  WORD_SEPARATED (the
# previous word and the bytes after it) paid on the large files too but cost the three smallest.
_STRONG_R14 = ModelParams(**dict(
    _STRONG_R13.__dict__, contexts=_STRONG_R13.contexts + (C.WORD_QUADGRAM, C.LETTERS)))



# Round 15 (strength round 6, issue 12): direct maps of orders 1 and 2 (model/direct.py), plain
# adaptive probabilities beside the bit-history contexts, as two more mixer inputs that start at
# weight 0.  Model only, against preset 38: see bench/TUNING.md, round 15.
_STRONG_R15 = ModelParams(**dict(_STRONG_R14.__dict__, direct_order1=1, direct_order2_bits=22))


# Round 16 (strength round 7, issue 12): the previous word's stem as a context (STEM_WORD: the
# word less -ing/-ed/-es/-er/-ly/-s, so "walks", "walked" and "walking" share what follows them)
# and the old recurrent layer's mixer input starting at weight 0 in every row (not 1/4: the
# mixers no longer spend their first updates unlearning it).  Model only, against preset 39:
# see bench/TUNING.md, round 16.  Zeroing the order-0 input too paid on large files and cost the
# 4 kB ones up to 0.02 bpc; at level 6 neither pays.
_STRONG_R16 = ModelParams(**dict(_STRONG_R15.__dict__, contexts=_STRONG_R15.contexts + (C.STEM_WORD,),
                                 mixer_zero_start=ZeroStart.RNN))


# Round 17 (strength round 8, issue 12): four contexts on the shape of the text around the word
# (kinds.py: WORD_SHAPE, PUNCT_WORD, PUNCT_BIGRAM, WORD_FOLLOWER, the last being the word that
# followed the previous word last time, an indirect context on words).  Model only, against
# preset 40: see bench/TUNING.md, round 17.
_STRONG_R17 = ModelParams(**dict(_STRONG_R16.__dict__, contexts=_STRONG_R16.contexts + (
    C.WORD_SHAPE, C.PUNCT_WORD, C.PUNCT_BIGRAM, C.WORD_FOLLOWER)))


# Round 18 (strength round 9, issue 12): the word that followed the previous word last time, read
# byte by byte: the byte it has next while the current word agrees with it, as a context
# (WORD_PREDICTED) and as a mixer selector (Selector.FOLLOWER); and the order-3 SSE stage at
# 4/16, its rows sized to the input (apm_chain_bits).  Model only, against preset 41: see
# bench/TUNING.md, round 18.
_STRONG_R18 = ModelParams(**dict(
    _STRONG_R17.__dict__, contexts=_STRONG_R17.contexts + (C.WORD_PREDICTED,),
    mixer_select=_STRONG_R17.mixer_select | selector_mask(S.FOLLOWER), apm_chain=1,
    apm_chain_weight=4, apm_chain_bits=18))


# Round 19 (strength round 10, issue 12): the byte the match model expects, with its length
# bucket, hashed with the current word (MATCH_PREDICTED), as round 18 did for the follower
# word's.  Model only, against preset 42: see bench/TUNING.md, round 19.
_STRONG_R19 = ModelParams(**dict(
    _STRONG_R18.__dict__, contexts=_STRONG_R18.contexts + (C.MATCH_PREDICTED,)))


# Round 20 (strength round 11, issue 12): the follower word read byte by byte is the one that
# followed the last three words, else the last two, else the last word, the longest seen; and
# WORD_FOLLOWER's word the one that followed the last two words if seen (follow_words).  Model
# only, against preset 43: see bench/TUNING.md, round 20.
_STRONG_R20 = ModelParams(**dict(_STRONG_R19.__dict__, follow_words=int(
    FollowWords.PAIR | FollowWords.TRIPLE | FollowWords.WORD_PAIR)))


# Round 21 (strength round 12, issue 12): 16-bit final probabilities (the final mixer's output
# and the APMs' at 16 bits; what learns is unchanged), so that what the model is sure of costs
# it less.  Model only, against preset 44: see bench/TUNING.md, round 21.
_STRONG_R21 = ModelParams(**dict(_STRONG_R20.__dict__, probability_bits=16))


# Round 22 (strength round 13, issue 12): the contexts keyed by words look upper-case letters up
# where the lower-case ones are (case_fold): "The" at a sentence start learns from "the".  Orders
# and the other contexts keep the case apart (folding them too costs book2's markup).  Model
# only, against preset 45: see bench/TUNING.md, round 22.
WORD_KEYED = frozenset((
    C.WORD, C.WORD_BIGRAM, C.WORD_ORDER1, C.WORD_TRIGRAM, C.WORD_SKIP,
    C.WORD_CLASS_RUNS, C.SENTENCE_WORD, C.NESTING_WORD, C.LINE_WORD,
    C.WORD_QUADGRAM, C.LETTERS, C.STEM_WORD, C.WORD_SHAPE,
    C.PUNCT_WORD, C.PUNCT_BIGRAM, C.WORD_FOLLOWER, C.WORD_PREDICTED,
    C.MATCH_PREDICTED))
_STRONG_R22 = ModelParams(**dict(_STRONG_R21.__dict__,
                                 case_fold=context_mask(_STRONG_R21.contexts, WORD_KEYED)))


# Round 23 (strength round 14, issue 12): paragraphs.  A context keyed by the first words of the
# last two paragraphs in a paragraph's first word (a play's next speaker follows the last two;
# a news article's headers follow each other), else by the paragraph's first word, with the
# current word (PARAGRAPH_HEADS, word-keyed: folded too); and case folded also in the first word
# after a line break or a tab (a verse line's capital, a speech after its speaker's name:
# case_fold_gate).  Model only, against preset 46: see bench/TUNING.md, round 23.
_STRONG_R23_CONTEXTS = _STRONG_R22.contexts + (C.PARAGRAPH_HEADS,)
_STRONG_R23 = ModelParams(**dict(
    _STRONG_R22.__dict__, contexts=_STRONG_R23_CONTEXTS,
    case_fold=context_mask(_STRONG_R23_CONTEXTS, WORD_KEYED | {C.PARAGRAPH_HEADS}),
    case_fold_gate=1))


# Round 24 (strength round 15, issue 12): round 22's leave-one-out found two of level 9's contexts
# free, SENTENCE_WORD and WORD_ORDER1; in their places the first words of the last two lines in
# a line's first word, else the line's first word, with the current word (LINE_HEADS,
# word-keyed: folded too), and order 10.  Same count (38), same memory and speed.  Model only,
# against preset 47: see bench/TUNING.md, round 24.
_R24_SWAP = {C.SENTENCE_WORD: C.LINE_HEADS, C.WORD_ORDER1: C.ORDER10}
_STRONG_R24_CONTEXTS = tuple(_R24_SWAP.get(k, k) for k in _STRONG_R23.contexts)
_STRONG_R24 = ModelParams(**dict(
    _STRONG_R23.__dict__, contexts=_STRONG_R24_CONTEXTS,
    case_fold=context_mask(_STRONG_R24_CONTEXTS, WORD_KEYED | {C.PARAGRAPH_HEADS, C.LINE_HEADS}),
    rnnme_context_features=context_mask(_STRONG_R24_CONTEXTS, {
        k for i, k in enumerate(_STRONG_R23.contexts) if _STRONG_R23.rnnme_context_features >> i & 1})))


# Round 25 (issues 11 and 12): the expert's network reads the previous word (an input row of its
# own beside the current word's: rnnme_word_input_prev), with 2^16 word rows that start at zero,
# 64 LSTM cells and a smaller first step; its direct connections also hash the previous word
# with the current one (word feature 2); the SSE chain's share 6/16.  Model only, against preset
# 48: see bench/TUNING.md, round 25.
_STRONG_R25 = ModelParams(**dict(
    _STRONG_R24.__dict__, rnnme_hidden=64, rnnme_word_input_bits=16, rnnme_word_input_prev=1,
    rnnme_word_rows_zero=1, rnnme_lr_micro=3500,
    rnnme_features=0b111111 | 2 << 8,  # orders 1-6, the current word and the word pair
    apm_chain_weight=6))


# Round 27 (issue 11): three more of the predictor's contexts as the expert's direct-connection
# features: the current word (WORD), the bracket/quote nesting with the word (NESTING_WORD: wiki
# links and templates, code) and the first words of the last lines with the word (LINE_HEADS).
# The direct connections learn them jointly with the network in the 16-way softmax, which the
# mix cannot; the network is unchanged.  Model only, against preset 49: see bench/TUNING.md,
# round 27.
_STRONG_R27 = ModelParams(**dict(
    _STRONG_R25.__dict__,
    rnnme_context_features=_STRONG_R25.rnnme_context_features | context_mask(
        _STRONG_R25.contexts, {C.WORD, C.NESTING_WORD, C.LINE_HEADS})))


# Round 28 (issue 11): a larger expert for the larger inputs (96 LSTM cells, BPTT blocks of 32
# bytes, 2^27 direct-connection weights), and a cap of 1 on the summed first steps of the rows
# read through the mix's contexts (rnnme_me_ctx_total_milli), which otherwise overshoot at every
# fresh word.  Model only, against preset 50: see bench/TUNING.md, round 28.
_STRONG_R28 = ModelParams(**dict(
    _STRONG_R27.__dict__, rnnme_hidden=96, rnnme_bptt=32, rnnme_me_bits=27,
    rnnme_me_ctx_total_milli=1000))


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
    # round 3 (issues 11, 12): levels 1 and 2 unchanged
    10: Preset(3, _MEDIUM_R3), 11: Preset(4, _MEDIUM_R3), 12: Preset(5, _MEDIUM_R3),
    13: Preset(6, _DEFAULT_R3), 14: Preset(7, _DEFAULT_R3), 15: Preset(8, _DEFAULT_R3),
    16: Preset(9, _STRONG_R3),
    # round 3, speed: level 6 back at round 2's cost, level 7 between it and level 8
    17: Preset(6, _DEFAULT_FAST_R3), 18: Preset(7, _DEFAULT_RUNS_R3),
    # round 4 (branch expert4): level 9's expert with a 2^26-weight table and 4 units
    19: Preset(9, _STRONG_E4),
    # round 5: level 9's expert with the predictor's contexts and match model as features
    20: Preset(9, _STRONG_E5),
    # round 5: the same with smaller mixer steps
    21: Preset(9, _STRONG_E5_STEPS),
    # round 6
    22: Preset(9, _STRONG_E6),
    23: Preset(8, _STRONG_CM_R6),
    # round 7
    24: Preset(9, _STRONG_E7),
    # round 8
    25: Preset(7, _DEFAULT_RUNS_R8),
    # round 9: path coding at every level; level 6 takes level 7's model, levels 7 and 8 level 9's
    # context-mixing part
    26: Preset(1, _FAST_R9), 27: Preset(2, _FAST_R9),
    28: Preset(3, _MEDIUM_R9), 29: Preset(4, _MEDIUM_R9), 30: Preset(5, _MEDIUM_R9),
    31: Preset(6, _DEFAULT_R9), 32: Preset(7, _STRONG_CM_R9), 33: Preset(8, _STRONG_CM_R9),
    34: Preset(9, _STRONG_R9),
    # round 11: level 6 with the column context, APMs at rate 1/64 and matches of 16 bytes or more
    35: Preset(6, _DEFAULT_R11),
    # round 12: level 9's direct connections with a slower step schedule
    36: Preset(9, _STRONG_R12),
    # round 13: level 9 reads the line: column/above and word-state mixers, line contexts
    37: Preset(9, _STRONG_R13),
    # round 14: level 9 with more word history (the last four words, the last six letters)
    38: Preset(9, _STRONG_R14),
    # round 15: level 9 with direct maps of orders 1 and 2 beside its contexts
    39: Preset(9, _STRONG_R15),
    # round 16: level 9 with the previous word's stem, and its old recurrent input starting at 0
    40: Preset(9, _STRONG_R16),
    # round 17: level 9 reads punctuation, capitalisation and the word that followed last time
    41: Preset(9, _STRONG_R17),
    # round 18: level 9 reads the follower word byte by byte; an order-3 SSE stage
    42: Preset(9, _STRONG_R18),
    # round 19 (issue 12)
    43: Preset(9, _STRONG_R19),
    # round 20 (issue 12): the follower words by the last two and three words
    44: Preset(9, _STRONG_R20),
    # round 21 (issue 12): 16-bit final probabilities
    45: Preset(9, _STRONG_R21),
    # round 22 (issue 12): the word contexts fold upper case onto lower case
    46: Preset(9, _STRONG_R22),
    # round 23 (issue 12): the paragraphs' first words; case folded after a line break or tab
    47: Preset(9, _STRONG_R23),
    # round 24 (issue 12): line heads and order 10 in place of two free contexts
    48: Preset(9, _STRONG_R24),
    # round 25 (issues 11, 12): the expert reads the previous word, 64 cells
    49: Preset(9, _STRONG_R25),
    # round 27 (issue 11): the expert's direct connections read three more of the mix's contexts
    50: Preset(9, _STRONG_R27),
    # round 28 (issue 11): a larger expert; its context features' first steps capped
    51: Preset(9, _STRONG_R28),
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


def header_raw_per_bit(header) -> int:
    """The bound on raw bytes per payload bit (format.raw_per_payload_bit) of the model a header
    describes; a header that describes none gets the tightest (its decoder refuses it anyway)."""
    try:
        bits = header_params(header).probability_bits
    except (ValueError, TypeError):
        bits = 12
    return raw_per_payload_bit(bits)


def header_level(header) -> int | None:
    """The level a header's stream was made at (None: custom parameters)."""
    if header.version >= 2:
        preset = PRESETS.get(header.preset)
        return preset.level if preset is not None else None
    return header.level or None


# ---- branch neural2: the RNNME expert -----------------------------------------------------------

MODELS = ("cm", "rnnme")  # the CLI's --model: context mixing (the levels), or the RNNME expert alone

# the pure RNNME compressor's defaults (bench/NEURAL.md: H 64, 2^24 direct-connection weights,
# byte orders 1-6 and the current word)
RNNME_DEFAULTS = dict(hidden=64, me_bits=24, orders=(1, 2, 3, 4, 5, 6), word=1, bptt=8, cell=0)
RNNME_CELLS = {"tanh": 0, "lstm": 1}


def rnnme_fields(hidden: int = 16, me_bits: int = 22, orders=(1, 2, 3, 4, 5, 6), word: int = 1,
                 bptt: int = 8, cell: int = 0) -> dict:
    """The ModelParams fields of an RNNME expert (learning rates as measured in bench/NEURAL.md);
    cell 1: the LSTM cell with LSTM_FIELDS."""
    from .model.rnnme_config import features_mask

    fields = dict(rnnme_hidden=hidden, rnnme_bptt=bptt, rnnme_me_bits=me_bits,
                  rnnme_features=features_mask(tuple(orders), word), rnnme_lr_micro=2000,
                  rnnme_lr_min_micro=300, rnnme_lr_half=100000)
    if cell:
        fields.update(LSTM_FIELDS)
    return fields


def rnnme_params(**options) -> ModelParams:
    """The pure RNNME compressor (no context mixing): RNNME_DEFAULTS updated by options (hidden,
    me_bits, orders, word, bptt, cell).  The context-mixing part is left at its smallest sizes, unused."""
    settings = dict(RNNME_DEFAULTS)
    unknown = set(options) - set(settings)
    if unknown:
        raise ValueError(f"unknown RNNME option(s): {', '.join(sorted(unknown))}")
    settings.update(options)
    if not all(1 <= order <= 8 for order in settings["orders"]):
        raise ValueError("RNNME orders must be in 1..8")
    return ModelParams(contexts=(C.ORDER1,), table_bits=12, match_min=0, match_bits=10,
                       history_bits=10, rnn_hidden=0, mixer_select=1,
                       rnnme_pure=1, **rnnme_fields(**settings)).validate()


def parse_model(spec: str) -> ModelParams | None:
    """--model: "cm" (None: the level decides) or "rnnme[,hidden=N][,me_bits=N][,orders=1-6]
    [,word=0|1|2][,bptt=N][,cell=tanh|lstm]" (xz-style options after the model's name)."""
    name, *options = spec.split(",")
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r} (choose from {', '.join(MODELS)})")
    if name == "cm":
        if options:
            raise ValueError("the cm model takes no options (use the level)")
        return None
    settings = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep:
            raise ValueError(f"RNNME option {option!r} is not key=value")
        if key == "orders":
            lo, _, hi = value.partition("-")
            settings[key] = tuple(range(int(lo), int(hi or lo) + 1))
        elif key == "me":
            settings["me_bits"] = int(value)
        elif key == "cell":
            if value not in RNNME_CELLS:
                raise ValueError(f"RNNME cell must be one of {', '.join(RNNME_CELLS)}, not {value!r}")
            settings[key] = RNNME_CELLS[value]
        else:
            settings[key] = int(value)
    return rnnme_params(**settings)
