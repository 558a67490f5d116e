"""The model's state, declared once.

Every array the kernels read or write is one `Field` below: its name, dtype, shape (a function of
the model parameters), the component that owns it, and its starting value.  From this one table
come the allocation (`allocate`), the packing into one flat buffer per dtype (`pack`), the
kernels' view of the state (the `State` named tuple that `packed.unpack` builds inside numba),
the memory a parameter set needs (`model_memory`), and the names the reference twin exports for
the state comparison in tests/test_reference.py.

Adding state to a component: add a Field here (and a config slot or register if it needs one),
then read it in the kernels as `st.<name>`.  No numba in this module: the command line and the
codec import it to size a model without compiling anything.
"""

from __future__ import annotations

import mmap
from collections import namedtuple
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Callable

import numpy as np

from . import detmath, rnnme_config
from .kinds import (FOLLOWER_MASK, MAX_CONTEXTS, MAX_SELECTORS, SELECTOR_ROWS, Context, FollowWords,
                    Selector, ZeroStart)
from .params import ModelParams
from .statetable import StateTable

# ---- the config array (int64, read-only): parameters the kernels read, by slot ----------------
C_NCTX = 0  # number of contexts
C_MATCH_MIN = 1  # ModelParams.match_min (0: no match model)
C_MATCH_BITS = 2
C_HIST_BITS = 3
C_RNN_H = 4  # recurrent units (0: no recurrent layer)
C_RNN_BPTT = 5
C_MIXER_LR = 6
C_APM_RATE = 7
C_NINPUTS = 8  # mixer inputs
C_CTX_INPUTS = 9  # mixer inputs per context (1..3)
C_NSEL = 10  # number of first-layer mixers
C_LR_BOOST = 11  # extra mixer step size for fresh weight sets
C_LR_DECAY = 12  # weight-set updates over which the boost halves
C_FINAL_LR = 13  # step size of the final mixer
C_SM_LIMIT = 14  # count limit of the bit-history probability tables
C_APM_W = 15  # C_APM_W + 0..2: final weights of mixer, APM1, APM2 (sum 16)
C_SEL_KIND = 18  # C_SEL_KIND + k: the Selector of first-layer mixer k
C_SEL_BASE = C_SEL_KIND + MAX_SELECTORS  # C_SEL_BASE + k: first weight row of mixer k
C_KINDS = C_SEL_BASE + MAX_SELECTORS  # C_KINDS + i: the Context kind of context i
# branch neural2: the RNNME expert (rnnme_mix.py)
C_RNNME_H = C_KINDS + MAX_CONTEXTS  # the expert's units (0: no expert)
C_RNNME_INPUTS = C_RNNME_H + 1  # its mixer inputs per node
C_RNNME_APM_W = C_RNNME_H + 2  # weight (/16) of the APM on its expected nibble
C_RNNME_PURE = C_RNNME_H + 3  # 1: the expert alone predicts
# strength (issue 12)
C_RUN_INPUTS = C_RNNME_H + 4  # ModelParams.run_inputs
C_MATCH_RECOVER = C_RUN_INPUTS + 1  # ModelParams.match_recover
C_APM_CHAIN = C_RUN_INPUTS + 2  # ModelParams.apm_chain (bit mask of apm.CHAIN_*)
C_APM_CHAIN_W = C_RUN_INPUTS + 3  # ModelParams.apm_chain_weight
C_DIRECT = C_RUN_INPUTS + 4  # round 15: the direct maps' mixer inputs (direct.py), 0..2
C_WORD_STEMS = C_RUN_INPUTS + 5  # round 16: 1 if a context reads the previous word's stem
C_FOLLOW = C_RUN_INPUTS + 6  # round 18: 1 if WORD_PREDICTED or the FOLLOWER mixer reads R_FOLLOW_*
C_FOLLOW_WORDS = C_RUN_INPUTS + 7  # round 20: ModelParams.follow_words, the bits its readers use
# round 21: final probabilities have 12 + cfg[C_FINE_SHIFT] bits (ModelParams.probability_bits: 0 or 4)
C_FINE_SHIFT = C_RUN_INPUTS + 8
C_CASE_FOLD = C_RUN_INPUTS + 9  # round 22: ModelParams.case_fold, a mask over the contexts
C_CASE_FOLD_GATE = C_RUN_INPUTS + 10  # round 23: ModelParams.case_fold_gate
CONFIG_SIZE = C_RUN_INPUTS + 11

# ---- the register array (int64): the model's scalar state -------------------------------------
R_POS = 0  # bytes seen
R_C4 = 1  # last four bytes, most recent in the low byte
R_C8 = 2  # the four bytes before those
R_NIBBLE = 3  # 0: the high nibble is predicted next, 1: the low nibble
R_HI = 4  # high nibble of the byte being coded
R_WORD = 5  # hash of the current partial word (0 between words)
R_WORD1 = 6  # hash of the previous word
R_MATCH_PTR = 7  # position in history of the predicted next byte
R_MATCH_LEN = 8  # length of the current repeat (0: none)
R_RNN_T = 9  # steps stored in the current BPTT block
R_COLUMN = 10  # bytes since the last newline
R_LINE_START = 11  # position of the start of the current line
R_PREV_LINE_START = 12  # position of the start of the previous line
R_WORD_PREFIX = 13  # byte before the current word began
R_MATCH_BYTE = 14  # the byte the match model predicts (valid when R_MATCH_LEN > 0)
R_WORD2 = 15  # hash of the word before the previous one
R_CLASSES = 16  # character classes of the last eight bytes, 3 bits each, most recent lowest
R_CLASS_RUNS = 17  # the class of each of the last ten runs of same-class bytes, 3 bits each
# strength (issue 12): text structure
R_SENTENCE_WORDS = 18  # words completed since the last . ! ? (capped at 15)
R_CAPS = 19  # capitalised or not, the last four completed words (bit 0 the latest)
R_WORD_CAP = 20  # 1 if the current word began with a capital letter
R_NEST = 21  # ( depth (2 bits), [/{ depth (2 bits), inside "..." (1 bit)
# strength round 4 (issue 12)
R_ABOVE_CLASS = 22  # 1 + byte_class of the byte above the next one (previous line, same column); 0: none
R_ABOVE = 23  # 1 + the byte above the next one; 0: none
R_LINE_CLASSES = 24  # (1 + class of the line's first byte, 0: none) x 9 + the same for its second byte
# strength round 5 (issue 12)
R_WORD3 = 25  # hash of the third word back
R_LETTERS = 26  # the last six letters a-z (case-folded), 5 bits each, most recent lowest
R_SEPARATOR = 27  # the last three bytes that followed the previous word (before the current one)
# strength round 7 (issue 12)
R_WORD_START = 28  # position of the current word's first byte
R_STEM1 = 29  # hash of the previous word's stem (contexts.word_stem)
# strength round 17 (issue 12)
R_PUNCT = 30  # the last , ; : . ! ? byte << 4 | words completed since it (capped at 15)
# strength round 18 (issue 12): the word that followed the previous word last time, read byte by byte
R_FOLLOW_START = 31  # 1 + its position in the history; 0: none
R_FOLLOW_AGREE = 32  # bytes of the current word that agree with it (case-folded); -1: they differ
R_FOLLOW_BYTE = 33  # contexts.predicted_byte for the next byte
# round 19 (issue 12): what the match model expects, published for MATCH_PREDICTED
R_MATCH_EXPECT = 34  # 1 + the expected byte | match_bucket(length) << 9; 0: no repeat
# round 20 (issue 12): WORD_FOLLOWER's word, set when a word ends (by the last two words with
# FollowWords.WORD_PAIR, else by the last word)
R_FOLLOW_WORD = 35
# round 23: paragraphs, for PARAGRAPH_HEADS: bit 0 set from a blank line until the next line's
# first word is complete, bit 1 set while the current line has a byte other than space, tab, CR
R_PARAGRAPH = 36
R_PARAGRAPH_HEAD1 = 37  # hash of the first word of the current (or last) paragraph
R_PARAGRAPH_HEAD2 = 38  # the same for the paragraph before it
# round 24: lines, for LINE_HEADS
R_LINE_HEAD = 39  # 1 from a line break until the line's first word is complete
R_LINE_HEAD1 = 40  # hash of the first word of the current (or last) line that had a word
R_LINE_HEAD2 = 41  # the same for the line with a word before it
REGISTER_SIZE = 42


def reads_follower(p: ModelParams) -> bool:
    """Round 18: whether a context or a mixer reads the predicted byte of the word that followed
    the previous word last time."""
    return Context.WORD_PREDICTED in p.contexts or bool(p.mixer_select >> Selector.FOLLOWER & 1)


def follow_words(p: ModelParams) -> int:
    """Round 20: the bits of ModelParams.follow_words that a reader uses (PAIR and TRIPLE need
    the follower read byte by byte, WORD_PAIR the WORD_FOLLOWER context)."""
    used = 0
    if reads_follower(p):
        used |= p.follow_words & (FollowWords.PAIR | FollowWords.TRIPLE)
    if Context.WORD_FOLLOWER in p.contexts:
        used |= p.follow_words & FollowWords.WORD_PAIR
    return used


def follower_sections(p: ModelParams) -> int:
    """Sections of 2^16 entries in state.follower_starts: by the last word, then (round 20) by
    the last two words, then by the last three; 0 when nothing reads the follower."""
    if not reads_follower(p):
        return 0
    return 3 if p.follow_words & FollowWords.TRIPLE else 2 if p.follow_words & FollowWords.PAIR else 1


class Dims:
    """Sizes derived from the parameters (what the field shapes are written in)."""

    def __init__(self, params: ModelParams):
        p = self.params = params
        self.nctx = len(p.contexts)
        self.selectors = p.selectors
        self.nsel = len(self.selectors)
        self.mixer_rows = sum(SELECTOR_ROWS[s] for s in self.selectors)
        # per context 1..3, then order 0, match, recurrent, bias
        self.ninputs = (self.nctx * p.ctx_inputs + 1 + (1 if p.match_min else 0)
                        + (1 if p.rnn_hidden else 0) + 1)
        # strength (issue 12): one run input per context, after order 0
        self.run_inputs = self.nctx if p.run_inputs else 0
        self.ninputs += self.run_inputs
        self.run_entries = 1 << (p.table_bits - 4) if p.run_inputs else 1
        self.nh = max(p.rnn_hidden, 1)  # the recurrent arrays keep one unit when it is off
        # branch neural2: the RNNME expert's mixer inputs (before the bias)
        self.rnnme_inputs = p.rnnme_inputs if p.rnnme_hidden and not p.rnnme_pure else 0
        self.ninputs += self.rnnme_inputs
        # round 15 (issue 12): the direct maps' inputs (before the bias)
        self.direct_inputs = p.direct_order1 + (1 if p.direct_order2_bits else 0)
        # map sizes, 1-entry placeholders when off (order 2: at most a quarter of a table's slots)
        self.direct_order1_entries = 1 << 16 if p.direct_order1 else 1
        self.direct_order2_entries = (1 << min(p.direct_order2_bits, p.table_bits - 2)
                                      if p.direct_order2_bits else 1)
        self.ninputs += self.direct_inputs
        self.bptt_rows = p.rnn_bptt + 2

    @cached_property
    def states(self) -> StateTable:
        return StateTable(self.params.state_table)

    @cached_property
    def rnnme(self) -> dict:
        """branch neural2: the RNNME expert's starting arrays (a one-unit placeholder when off)."""
        return rnnme_config.initial_arrays(rnnme_config.from_model(self.params), np.int32)

    @cached_property
    def rnnme_shapes(self) -> dict:
        """The same arrays' shapes without allocating the two tables a header sizes by a power of
        two (direct connections, word input rows): a hostile header is refused by its size
        (codec's memory limit) before anything that size exists."""
        expert = rnnme_config.from_model(self.params)
        small = rnnme_config.initial_arrays(replace(expert, me_bits=0, word_input_bits=0), np.int32)
        shapes = {name: a.shape for name, a in small.items()}
        if expert.me_bits:
            shapes["me"] = (1 << expert.me_bits,)
            shapes["me_n"] = (max(1, (1 << expert.me_bits) >> 4),)
        if expert.word_input_bits:
            rows = (1 << expert.word_input_bits, shapes["uw"][1])
            shapes["uw"] = rows
            if expert.adam:  # (the moments are 1-element placeholders under SGD)
                shapes["muw"] = shapes["vuw"] = rows
        return shapes


def _config(d: Dims) -> np.ndarray:
    p = d.params
    cfg = np.zeros(CONFIG_SIZE, dtype=np.int64)
    cfg[C_NCTX] = d.nctx
    cfg[C_MATCH_MIN] = p.match_min
    cfg[C_MATCH_BITS] = p.match_bits
    cfg[C_HIST_BITS] = p.history_bits
    cfg[C_RNN_H] = p.rnn_hidden
    cfg[C_RNN_BPTT] = p.rnn_bptt
    cfg[C_MIXER_LR] = p.mixer_lr
    cfg[C_APM_RATE] = p.apm_rate
    cfg[C_NINPUTS] = d.ninputs
    cfg[C_CTX_INPUTS] = p.ctx_inputs
    cfg[C_NSEL] = d.nsel
    cfg[C_LR_BOOST] = p.mixer_lr_boost
    cfg[C_LR_DECAY] = p.mixer_lr_decay
    cfg[C_FINAL_LR] = p.final_lr
    cfg[C_SM_LIMIT] = p.sm_limit
    cfg[C_APM_W : C_APM_W + 3] = (16 - p.apm1_weight - p.apm2_weight, p.apm1_weight, p.apm2_weight)
    rows = 0
    for k, selector in enumerate(d.selectors):
        cfg[C_SEL_KIND + k] = selector
        cfg[C_SEL_BASE + k] = rows
        rows += SELECTOR_ROWS[selector]
    cfg[C_KINDS : C_KINDS + d.nctx] = p.contexts
    cfg[C_RNNME_H] = p.rnnme_hidden
    cfg[C_RNNME_INPUTS] = d.rnnme_inputs
    cfg[C_RNNME_APM_W] = p.rnnme_apm_weight
    cfg[C_RNNME_PURE] = p.rnnme_pure
    # strength (issue 12)
    cfg[C_RUN_INPUTS] = p.run_inputs
    cfg[C_MATCH_RECOVER] = p.match_recover
    cfg[C_APM_CHAIN] = p.apm_chain
    cfg[C_APM_CHAIN_W] = p.apm_chain_weight
    cfg[C_DIRECT] = d.direct_inputs
    cfg[C_WORD_STEMS] = int(Context.STEM_WORD in p.contexts)
    cfg[C_FOLLOW] = int(reads_follower(p))
    cfg[C_FOLLOW_WORDS] = follow_words(p)
    cfg[C_FINE_SHIFT] = p.probability_bits - 12
    cfg[C_CASE_FOLD] = p.case_fold
    cfg[C_CASE_FOLD_GATE] = p.case_fold_gate
    return cfg


def _apm_identity(d: Dims) -> np.ndarray:
    """An APM row's starting points, the identity map: 33 points over the stretch domain, 16-bit."""
    return np.array([detmath.SQUASH[min(4095, max(0, (b - 16) * 128 + 2048))] * 16 for b in range(33)],
                    dtype=np.int32)


def _chain_rows(d: Dims, bit: int) -> int:
    """Rows of the SSE-chain APM selected by `bit` (strength, issue 12); 1 when it is off."""
    if not d.params.apm_chain & bit:
        return 1
    return CHAIN_MATCH_ROWS if bit == CHAIN_MATCH else 1 << chain_bits(d.params)


def chain_bits(p: ModelParams) -> int:
    """log2 rows of the SSE chain's hashed APMs (ModelParams.apm_chain_bits, round 18)."""
    return min(p.apm_chain_bits, p.table_bits - 4) if p.apm_chain_bits else CHAIN_BITS


# strength (issue 12): the extra APMs (apm.CHAIN_*, by bit) and their rows: the match state's
# fixed, the others hashed into 2^chain_bits rows
CHAIN_ORDER3, CHAIN_MATCH, CHAIN_WORD, CHAIN_ORDER4 = 1, 2, 4, 8
CHAIN_MATCH_ROWS = 32 * 3 * 256
CHAIN_BITS = 18


def _apm_rows(rows: int) -> np.ndarray:
    """APM rows initialised up front, each the identity map (the RNNME expert's APM: 64 x 256
    rows, small enough not to need the ready flags of apm1/apm2)."""
    return np.tile(_apm_identity(None), (rows, 1))


INITIAL_WEIGHT = (1 << 16) // 4  # a shared input's starting weight (1/4, in 16.16 fixed point)


def _mixer_initial_row(d: Dims) -> np.ndarray:
    """The weights every first-layer row starts from (mixer.initial_row copies them in).

    The first input of each context: 1/4 each, or mixer_init/16 shared by all the contexts; the
    contexts' other inputs, their run inputs and the direct maps' inputs: 0; the shared inputs
    (order 0, match, recurrent, expert) and the bias: 1/4, except those mixer_zero_start puts at 0."""
    p = d.params
    row = np.zeros(d.ninputs, dtype=np.int32)
    first = INITIAL_WEIGHT if not p.mixer_init else ((1 << 16) * p.mixer_init) // (16 * d.nctx)
    row[0: d.nctx * p.ctx_inputs: p.ctx_inputs] = first
    col = d.nctx * p.ctx_inputs
    shared = [ZeroStart.ORDER0]  # order 0, then (after the run inputs) match, recurrent, expert
    shared += [ZeroStart.MATCH] * (1 if p.match_min else 0) + [ZeroStart.RNN] * (1 if p.rnn_hidden else 0)
    shared += [ZeroStart.EXPERT] * d.rnnme_inputs
    for k, bit in enumerate(shared):
        at = col + k + (d.run_inputs if k > 0 else 0)
        row[at] = 0 if p.mixer_zero_start & bit else INITIAL_WEIGHT
    row[-1] = INITIAL_WEIGHT  # the bias
    return row


@dataclass(frozen=True)
class Field:
    name: str
    dtype: str
    shape: Callable[[Dims], tuple]
    owner: str  # the module under nncompress/model/ whose kernels own it
    init: Callable[[Dims], np.ndarray] | int | float = 0  # an array, or a fill value
    node: bool = False  # part of one prediction's per-node working set (the `Node` tuple)
    twin: bool = True  # learned state that the reference twin reproduces (tests compare it)

    @property
    def ndim(self) -> int:
        return len(self.shape(_SHAPE_PROBE))


def _rnnme_field(name: str, twin: bool) -> Field:
    """branch neural2: one array of the RNNME expert (rnnme_config.initial_arrays), as rn_<name>."""
    probe = rnnme_config.initial_arrays(rnnme_config.from_model(ModelParams()), np.int32)[name]
    return Field("rn_" + name, probe.dtype.name, lambda d: d.rnnme_shapes[name], "rnnme",
                 lambda d: d.rnnme[name], twin=twin)


# the learned arrays the reference twin reproduces; the rest are settings, scratch or moments
RNNME_TWIN_ARRAYS = ("u1", "w", "vh", "bh", "vl", "bl", "me", "me_n", "hs")


def _rnnme_fields() -> tuple:
    names = rnnme_config.ARRAY_NAMES + rnnme_config.OUT_MOMENT_NAMES + rnnme_config.NET_MOMENT_NAMES
    fields = tuple(_rnnme_field(name, name in RNNME_TWIN_ARRAYS) for name in names)
    apm = Field("rn_apm", "int32", lambda d: (64 << 8 if d.params.rnnme_apm_weight else 1, 33),
                "rnnme_mix", lambda d: _apm_rows(64 << 8 if d.params.rnnme_apm_weight else 1))
    return fields + (apm,)


NODES = 16  # per-node arrays: the nibble tree's nodes are 1..15 (tree.py), index 0 unused

FIELDS = (
    # the step: configuration and scalar registers
    Field("cfg", "int64", lambda d: (CONFIG_SIZE,), "nibble", _config, twin=False),
    Field("reg", "int64", lambda d: (REGISTER_SIZE,), "nibble", twin=False),
    # context hashing: byte history, context hashes, indirect-context followers
    Field("hist", "uint8", lambda d: (1 << d.params.history_bits,), "contexts"),
    Field("ctx_hash", "int64", lambda d: (d.nctx,), "contexts", twin=False),
    Field("ind", "int64", lambda d: (256 + 65536,), "contexts"),
    # round 17: a word -> the word that followed it last time, by the low bits of its hash (only
    # WORD_FOLLOWER reads it; one placeholder entry otherwise, and the kernels then skip it); round
    # 20 (FollowWords.WORD_PAIR): then the same by the last two words, 16 check bits from bit 40
    Field("word_followers", "int64",
          lambda d: ((2 if follow_words(d.params) & FollowWords.WORD_PAIR else 1) * (FOLLOWER_MASK + 1)
                     if Context.WORD_FOLLOWER in d.params.contexts else 1,),
          "contexts"),
    # round 18: a word -> 1 + the position of the word that followed it last time (only models
    # that read it allocate it); round 20 (FollowWords.PAIR, TRIPLE): then the same by the last
    # two and three words, the high 16 bits of their hash from bit 40 as a check
    Field("follower_starts", "int64",
          lambda d: (follower_sections(d.params) * (FOLLOWER_MASK + 1) or 1,), "contexts"),
    # bit histories: hashed slots of node states, their probability maps, the order-0 map
    Field("tables", "uint8", lambda d: (d.nctx, 1 << d.params.table_bits), "histories"),
    Field("slots", "int64", lambda d: (d.nctx,), "histories", twin=False),
    Field("sm_p", "int32", lambda d: (d.nctx, 256), "histories",
          lambda d: np.tile(d.states.initial_p, (d.nctx, 1))),
    Field("sm_n", "int32", lambda d: (d.nctx, 256), "histories"),
    Field("o0_p", "int32", lambda d: (256,), "histories", 1 << 21),
    Field("o0_n", "int32", lambda d: (256,), "histories"),
    # round 15 (issue 12): direct maps of orders 1 and 2
    Field("o1_p", "int32", lambda d: (d.direct_order1_entries,), "direct", 1 << 21),
    Field("o1_n", "int32", lambda d: (d.direct_order1_entries,), "direct"),
    Field("o2_p", "int32", lambda d: (d.direct_order2_entries,), "direct", 1 << 21),
    Field("o2_n", "int32", lambda d: (d.direct_order2_entries,), "direct"),
    Field("next_state", "uint8", lambda d: (256, 2), "histories",
          lambda d: d.states.next_state, twin=False),
    Field("priority", "int32", lambda d: (256,), "histories",
          lambda d: d.states.priority, twin=False),
    Field("state_det", "int32", lambda d: (256,), "histories",
          lambda d: d.states.deterministic, twin=False),
    Field("recip", "int32", lambda d: (detmath.RECIPROCAL.shape[0],), "histories",
          lambda d: detmath.RECIPROCAL, twin=False),
    # match model
    Field("match_table", "int64", lambda d: (1 << d.params.match_bits if d.params.match_min
                                             else 1,), "match"),
    Field("msm_p", "int32", lambda d: (64,), "match", 1 << 21),
    Field("msm_n", "int32", lambda d: (64,), "match"),
    # mixers: first-layer weight sets (rows of all selectors, stacked) and the final mixer
    # rows start at 0 and receive their initial weights when first read (mixer.initial_row)
    Field("mixw", "int32", lambda d: (d.mixer_rows, d.ninputs), "mixer"),
    Field("mixn", "int32", lambda d: (d.mixer_rows,), "mixer"),
    Field("mixer_initial", "int32", lambda d: (d.ninputs,), "mixer", _mixer_initial_row, twin=False),
    Field("fmixw", "int32", lambda d: (256, MAX_SELECTORS), "mixer", lambda d: (1 << 16) // d.nsel),
    Field("squash", "int32", lambda d: (4096,), "mixer", lambda d: detmath.SQUASH, twin=False),
    Field("stretch", "int32", lambda d: (4096,), "mixer", lambda d: detmath.STRETCH, twin=False),
    # adaptive probability maps
    # rows start at 0 and receive the identity map when first read (apm.apm_row)
    Field("apm1", "int32", lambda d: (256 << (8 * d.params.apm1_order), 33), "apm"),
    Field("apm2", "int32", lambda d: (1 << 16, 33), "apm"),
    Field("apm1_ready", "uint8", lambda d: (256 << (8 * d.params.apm1_order),), "apm", twin=False),
    Field("apm2_ready", "uint8", lambda d: (1 << 16,), "apm", twin=False),
    Field("apm_identity", "int32", lambda d: (33,), "apm", _apm_identity, twin=False),
    # strength (issue 12): run inputs (per context: check byte | last byte << 8 | run << 16,
    # the entries of the byte being coded and their maps by run length, nibble and expected bit)
    Field("run_table", "int32", lambda d: (d.nctx, d.run_entries), "runs"),
    Field("run_idx", "int64", lambda d: (d.nctx,), "runs", twin=False),
    Field("run_cur", "int64", lambda d: (d.nctx,), "runs", twin=False),
    Field("run_p", "int32", lambda d: (d.nctx, 64), "runs", 1 << 21),
    Field("run_n", "int32", lambda d: (d.nctx, 64), "runs"),
    # strength (issue 12): the SSE chain's APMs (one row when off)
    # round 18: like APM1/APM2's, the chain's rows receive the identity map when first read
    # (apm_chain_ready[k] marks member 1 << k's), so a small input touches few of them
    Field("apm_o3", "int32", lambda d: (_chain_rows(d, CHAIN_ORDER3), 33), "apm"),
    Field("apm_match", "int32", lambda d: (_chain_rows(d, CHAIN_MATCH), 33), "apm"),
    Field("apm_word", "int32", lambda d: (_chain_rows(d, CHAIN_WORD), 33), "apm"),
    Field("apm_o4", "int32", lambda d: (_chain_rows(d, CHAIN_ORDER4), 33), "apm"),
    Field("apm_chain_ready", "uint8",
          lambda d: (4, max(_chain_rows(d, 1 << k) for k in range(4))), "apm", twin=False),
    # recurrent layer (the arrays keep one unit when it is off)
    Field("rnn_u", "float64", lambda d: (256, d.nh), "rnn",
          lambda d: detmath.deterministic_uniform(256 * d.nh, 1).reshape(256, d.nh) * 0.2),
    Field("rnn_w", "float64", lambda d: (d.nh, d.nh), "rnn",
          lambda d: detmath.deterministic_uniform(d.nh * d.nh, 2).reshape(d.nh, d.nh) * 0.2),
    Field("rnn_v", "float64", lambda d: (256, d.nh), "rnn"),
    Field("rnn_b", "float64", lambda d: (256,), "rnn"),
    Field("rnn_s", "float64", lambda d: (d.bptt_rows, d.nh), "rnn", 0.1),
    Field("rnn_x", "int64", lambda d: (d.bptt_rows,), "rnn"),
    Field("rnn_g", "float64", lambda d: (d.bptt_rows, d.nh), "rnn"),
    Field("rnn_delta", "float64", lambda d: (2, d.nh), "rnn", twin=False),  # bptt's scratch
    Field("rnn_lr", "float64", lambda d: (1,), "rnn", lambda d: d.params.rnn_lr_micro * 1e-6,
          twin=False),
    Field("sig", "float64", lambda d: (detmath.SIGMOID.shape[0],), "rnn",
          lambda d: detmath.SIGMOID, twin=False),
    # one prediction's working set, kept for learning once the nibble is known
    Field("node_c0", "int64", lambda d: (NODES,), "nibble", node=True, twin=False),
    Field("node_seen", "int64", lambda d: (NODES,), "histories", node=True, twin=False),
    Field("node_eb", "int64", lambda d: (NODES,), "match", node=True, twin=False),
    Field("inputs", "int32", lambda d: (NODES, d.ninputs), "nibble", node=True, twin=False),
    Field("node_row", "int64", lambda d: (NODES, MAX_SELECTORS), "nibble", node=True, twin=False),
    Field("node_sx", "int32", lambda d: (NODES, MAX_SELECTORS), "nibble", node=True, twin=False),
    Field("node_sp", "int32", lambda d: (NODES, MAX_SELECTORS), "nibble", node=True, twin=False),
    Field("node_pmix", "int32", lambda d: (NODES,), "nibble", node=True, twin=False),
    Field("node_apm", "int64", lambda d: (NODES, 6), "nibble", node=True, twin=False),
    Field("node_p", "int32", lambda d: (NODES,), "nibble", node=True, twin=False),
    Field("node_z", "float64", lambda d: (NODES,), "nibble", node=True, twin=False),
    # branch neural2: the RNNME expert's per-nibble working set: its nibble distribution, each
    # node's 12-bit P(1), the (expected nibble, confidence) code, the APM points used
    Field("node_rn_dist", "float64", lambda d: (NODES,), "rnnme_mix", node=True, twin=False),
    Field("node_rn_p", "int32", lambda d: (NODES,), "rnnme_mix", node=True, twin=False),
    Field("node_rn_code", "int64", lambda d: (NODES,), "rnnme_mix", node=True, twin=False),
    Field("node_rn_apm", "int64", lambda d: (NODES, 3), "rnnme_mix", node=True, twin=False),
    # strength (issue 12): the SSE chain's (row, low point, weight) per APM
    Field("node_chain", "int64", lambda d: (NODES, 12), "apm", node=True, twin=False),
    # round 21 (issue 12): with 16-bit final probabilities, the final mixer's output at 16 bits
    # over a stretch domain twice as wide (detmath.SQUASH16; one entry when off)
    Field("squash16", "int32", lambda d: (8192 if d.params.probability_bits == 16 else 1,), "mixer",
          lambda d: detmath.SQUASH16 if d.params.probability_bits == 16 else np.ones(1, np.int32),
          twin=False),
    Field("node_pm16", "int32", lambda d: (NODES,), "nibble", node=True, twin=False),
) + _rnnme_fields()

_SHAPE_PROBE = Dims(ModelParams())
DTYPE_GROUPS = ("uint8", "int32", "int64", "float64", "float32")  # one packed buffer each, in this order
FIELD_INDEX = {f.name: k for k, f in enumerate(FIELDS)}
NODE_FIELDS = tuple(f for f in FIELDS if f.node)
MODEL_FIELDS = tuple(f for f in FIELDS if not f.node)
# What the kernels see: st.<model field>, and st.node.<working-set field>.
Node = namedtuple("Node", [f.name for f in NODE_FIELDS])
State = namedtuple("State", [f.name for f in MODEL_FIELDS] + ["node"])


def _shapes(params: ModelParams) -> tuple[Dims, list]:
    d = Dims(params)
    return d, [tuple(int(n) for n in f.shape(d)) for f in FIELDS]


def model_memory(params: ModelParams) -> int:
    """Bytes of the model's arrays for these parameters (what `Predictor.memory_bytes` reports),
    computed without allocating them."""
    _, shapes = _shapes(params)
    return sum(int(np.prod(shape)) * np.dtype(f.dtype).itemsize for f, shape in zip(FIELDS, shapes))


def _initial_value(f: Field, d: Dims, shape: tuple):
    """A field's starting value: an array of its shape, a scalar fill value, or None (zeros)."""
    init = f.init
    if callable(init):
        value = np.asarray(init(d))
        if value.ndim == 0:
            return value.astype(f.dtype)
        if value.shape != shape or value.dtype != np.dtype(f.dtype):
            raise AssertionError(f"state field {f.name}: expected {f.dtype} {shape}, "
                                 f"got {value.dtype} {value.shape}")
        return value
    return np.array(init, dtype=f.dtype) if init else None


def allocate(params: ModelParams) -> dict:
    """The starting state: one array per field, by name (in FIELDS order)."""
    d, shapes = _shapes(params)
    arrays = {}
    for f, shape in zip(FIELDS, shapes):
        value = _initial_value(f, d, shape)
        array = np.zeros(shape, f.dtype)
        if value is not None:
            array[...] = value
        arrays[f.name] = array
    return arrays


def _zeros(count: int, dtype: str, huge_pages: bool) -> np.ndarray:
    """A zeroed buffer.  numpy asks the kernel for transparent huge pages for large arrays
    (fewer TLB misses on a big model's random accesses), but then the first touch anywhere in a
    2 MiB page commits all of it; a model for a small input touches few of its mixer rows, so it
    takes ordinary pages, committed 4 KiB at a time."""
    if huge_pages or count == 0:
        return np.zeros(max(count, 1), dtype=dtype)
    nbytes = count * np.dtype(dtype).itemsize
    pages = mmap.mmap(-1, nbytes)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        try:
            pages.madvise(mmap.MADV_NOHUGEPAGE)
        except OSError:
            pass
    return np.frombuffer(pages, dtype=dtype, count=count)


def allocate_packed(params: ModelParams, huge_pages: bool = True) -> tuple[tuple, dict]:
    """pack(allocate(params)) without the intermediate copies: the starting state written
    straight into the packed buffers, so a model's peak memory is its own size (the big tables
    start at zero and their pages are touched only when used).  huge_pages: see _zeros."""
    d, shapes = _shapes(params)
    sizes = dict.fromkeys(DTYPE_GROUPS, 0)
    layout = np.zeros((len(FIELDS), 4), dtype=np.int64)
    for k, (f, shape) in enumerate(zip(FIELDS, shapes)):
        layout[k, 0] = sizes[f.dtype]
        layout[k, 1 : 1 + len(shape)] = shape
        sizes[f.dtype] += int(np.prod(shape))
    buffers = {dtype: _zeros(size, dtype, huge_pages) for dtype, size in sizes.items()}
    views = {}
    for k, (f, shape) in enumerate(zip(FIELDS, shapes)):
        count = int(np.prod(shape))
        view = buffers[f.dtype][layout[k, 0] : layout[k, 0] + count].reshape(shape)
        value = _initial_value(f, d, shape)
        if value is not None and value.any():  # zeros already: writing them would touch the pages
            view[...] = value
        views[f.name] = view
    return tuple(buffers[dtype] for dtype in DTYPE_GROUPS) + (layout,), views


def pack(arrays: dict) -> tuple[tuple, dict]:
    """Copy the arrays into one flat buffer per dtype.  Returns (packed, views): packed =
    (uint8, int32, int64, float64 buffers, layout) is what the kernels take (a numba call
    unboxes each array argument, so four buffers beat forty arrays); views are the fields as
    numpy views into those buffers, by name, so Python and the kernels share the memory.
    layout[k] = (offset in its buffer, shape...) of FIELDS[k]."""
    sizes = dict.fromkeys(DTYPE_GROUPS, 0)
    layout = np.zeros((len(FIELDS), 4), dtype=np.int64)
    for k, f in enumerate(FIELDS):
        array = arrays[f.name]
        layout[k, 0] = sizes[f.dtype]
        layout[k, 1 : 1 + array.ndim] = array.shape
        sizes[f.dtype] += array.size
    buffers = {dtype: np.zeros(max(size, 1), dtype=dtype) for dtype, size in sizes.items()}
    views = {}
    for k, f in enumerate(FIELDS):
        array = arrays[f.name]
        view = buffers[f.dtype][layout[k, 0] : layout[k, 0] + array.size].reshape(array.shape)
        if array.any():  # the big tables start at zero: skip touching their pages
            view[...] = array
        views[f.name] = view
    return tuple(buffers[dtype] for dtype in DTYPE_GROUPS) + (layout,), views
