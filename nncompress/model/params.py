"""Model hyperparameters: everything that changes a prediction, recorded in every archive header."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

from . import rnnme_config
from .kinds import MAX_CONTEXTS, Context, Selector, selector_mask

# The context kinds under their short names (presets and tests import them from here too).
WORD, WORD_BIGRAM, SPARSE_SKIP1, SPARSE_GAP = (Context.WORD, Context.WORD_BIGRAM,
                                              Context.SPARSE_SKIP1, Context.SPARSE_GAP)
COLUMN, WORD_ORDER1, WORD_TRIGRAM, WORD_SKIP = (Context.COLUMN, Context.WORD_ORDER1,
                                               Context.WORD_TRIGRAM, Context.WORD_SKIP)
INDIRECT1, INDIRECT2, CLASS_MASK, WORD_CLASSES = (Context.INDIRECT1, Context.INDIRECT2,
                                                  Context.CLASS_MASK, Context.WORD_CLASSES)
CLASS_MASK8, CLASS_RUNS, CLASS_RUNS_ORDER1, WORD_CLASS_RUNS = (
    Context.CLASS_MASK8, Context.CLASS_RUNS, Context.CLASS_RUNS_ORDER1, Context.WORD_CLASS_RUNS)
KNOWN_KINDS = frozenset(int(k) for k in Context)


def extension(off: int):
    """A parameter added after format 1 was released; `off` must reproduce the older model exactly."""
    return field(default=off, metadata={"extension": True})


@dataclass(frozen=True)
class ModelParams:
    contexts: tuple = (Context.ORDER1, Context.ORDER2, Context.ORDER3, Context.ORDER4,
                       Context.ORDER6, Context.WORD)
    table_bits: int = 22  # bytes per context table, log2
    match_min: int = 7  # shortest repeat the match model follows; 0 disables it
    match_bits: int = 20  # match-model hash table entries, log2
    history_bits: int = 24  # history buffer for the match model and long orders, log2
    rnn_hidden: int = 16  # recurrent units; 0 disables the recurrent part
    rnn_bptt: int = 8  # truncated back-propagation block length, bytes
    rnn_lr_micro: int = 300000  # recurrent learning rate x 1e-6
    mixer_lr: int = 6  # mixer step size (error scale)
    mixer_sets: int = 1  # 1: weights chosen by the partial byte; 2: plus a mixer chosen by match state
    apm_rate: int = 7  # adaptive probability map step, 1/2^rate
    ctx_inputs: int = 1  # mixer inputs per context: 1 stretch(p); 2 + same when deterministic; 3 + linear p
    mixer_select: int = 1  # first-layer mixers (kinds.Selector), a bit mask: see selector_mask
    mixer_lr_boost: int = 0  # extra mixer step size for a fresh weight set ...
    mixer_lr_decay: int = 1024  # ... halved after this many updates of that set
    final_lr: int = 8  # step size (1/4 units) of the final mixer combining several first-layer mixers
    apm1_weight: int = 4  # final probability = (mixer*(16-a1-a2) + apm1*a1 + apm2*a2) / 16
    apm2_weight: int = 8
    sm_limit: int = 1023  # bit-history probability tables adapt at rate 1/min(n + 1.5, limit + 1.5)
    apm1_order: int = 0  # first APM's rows: 0 the partial byte, 1 the partial byte and the previous byte
    state_table: int = 0  # bit-history state machine variant (statetable.VARIANTS)

    # Extension fields (declared with extension()) come after the context list in the header, in
    # declaration order, with trailing "off" values left out: a format-1 header written before a
    # field existed simply lacks it and reads as off, and an archive that uses no extension is
    # byte-identical to one written before extensions existed.  Append new fields below only,
    # never reorder them, and give each the default that reproduces the old model exactly.

    # ---- branch neural2: the RNNME expert (rnnme.py, rnnme_mix.py); off (0) = no expert ----
    rnnme_hidden: int = extension(0)  # the expert's recurrent units; 0: no expert at all
    rnnme_bptt: int = extension(0)  # its truncated BPTT block length, bytes
    rnnme_me_bits: int = extension(0)  # its direct-connection hash table: 2^bits float32 weights
    rnnme_features: int = extension(0)  # direct-connection features (rnnme_config.features_mask)
    rnnme_lr_micro: int = extension(0)  # its initial learning rate x 1e-6 ...
    rnnme_lr_min_micro: int = extension(0)  # ... decaying to this floor ...
    rnnme_lr_half: int = extension(0)  # ... as lr / (1 + bytes / half)
    rnnme_inputs: int = extension(0)  # mixer inputs per node: 1 stretch(p); 2 + a linear copy
    rnnme_apm_weight: int = extension(0)  # final p = (p * (16 - w) + APM(expected nibble) * w) / 16
    rnnme_pure: int = extension(0)  # 1: the expert alone predicts (no context mixing)

    # strength (issue 12): run inputs, match recovery, SSE chain
    run_inputs: int = extension(0)  # 1: per context, the last byte seen there and its run length
    match_recover: int = extension(0)  # >0: a match of at least this length survives a mismatch
    apm_chain: int = extension(0)  # extra APMs (a bit mask of apm.CHAIN_*), averaged
    apm_chain_weight: int = extension(8)  # their average's share of the final probability, /16
    mixer_init: int = extension(0)  # >0: the contexts' first inputs start at mixer_init/16 in all, not 1/4 each

    # ---- branch expert4: the RNNME expert's direct-connection rate schedule (rnnme_config) ----
    # a row used n times steps at max(min, lr / (1 + n * decay)); 0 = the schedule of branch
    # neural2 (lr 0.5, decay 0.05, min 0.05), which older headers mean
    rnnme_me_lr_milli: int = extension(0)  # the rows' first step size x 1e-3 (0: 500)
    rnnme_me_decay_milli: int = extension(0)  # its decay per use x 1e-3 (0: 50)
    rnnme_me_min_milli: int = extension(0)  # its floor x 1e-3 (0: 50)
    # direct-connection features from the match model, a bit mask: 1 its expected byte x length
    # bucket, 2 its expected byte x the previous byte (rnnme_config.MATCH_*FEATURE)
    rnnme_match_feature: int = extension(0)
    # the predictor's own contexts as direct-connection features, a bit mask over `contexts`
    rnnme_context_features: int = extension(0)

    # ---- round 7 (issue 11): the expert's recurrent cell ----
    rnnme_cell: int = extension(0)  # 0: the tanh cell of Mikolov's RNNME; 1: an LSTM cell
    rnnme_adam: int = extension(0)  # the network's optimiser: 0 AdaMax (older headers), 1 Adam
    rnnme_input2: int = extension(0)  # 1: the byte two back is a network input too
    rnnme_word_input_bits: int = extension(0)  # > 0: an input row per hashed current word (2^bits rows)

    # ---- round 9 (issue 12): how each nibble reaches the range coder (the model is the same) ----
    # 0: one 16-way symbol from the products of its 15 nodes' probabilities; 1: one symbol whose
    # interval is cut down the nibble tree in integers (rangecoder.tree_split), so that encoder
    # and decoder compute only the 4 nodes of its path (1.3-1.9x as fast, the same bits)
    path_coding: int = extension(0)

    # ---- round 15 (issue 12): direct maps, adaptive probabilities without bit histories ----
    direct_order1: int = extension(0)  # 1: a map of order 1 (previous byte x partial byte)
    # > 0: a map of order 2, hashed into 2^min(bits, table_bits - 2) entries: at most a quarter of
    # a context table's slots, so it shrinks with the tables for a small input (no header override)
    direct_order2_bits: int = extension(0)

    # ---- round 16 (issue 12): where the mixers' shared inputs start ----
    # a bit mask (kinds.ZeroStart) of shared inputs whose weights start at 0 instead of 1/4: an
    # input the mixer has yet to learn to trust costs less from 0 than from a quarter of the sum
    mixer_zero_start: int = extension(0)

    # ---- round 18 (issue 12): the SSE chain's size ----
    # > 0: the chain's hashed APMs (order 3, word, order 4) have 2^min(bits, table_bits - 4) rows,
    # so they shrink with the context tables for a small input (no header override); 0: 2^18
    # rows whatever the tables, what older headers mean.  Their rows are spread by a hash: at
    # 2^18 rows even a 4 KB input touched most of their 33 MiB
    apm_chain_bits: int = extension(0)

    # ---- round 20 (issue 12): the follower words by the last two and three words ----
    # a bit mask (kinds.FollowWords): when a word ends, where it began (and the word itself) is
    # also recorded under the two and three words before it, each in a table section of its own
    # with 16 check bits; the follower read byte by byte (WORD_PREDICTED, Selector.FOLLOWER) is
    # then the one that followed the last three words if seen (TRIPLE), else the last two (PAIR),
    # else the last word; WORD_FOLLOWER's word likewise by the last two words (WORD_PAIR).  0: the
    # last word only, what older headers mean.  Only the models that read a follower use it
    follow_words: int = extension(0)

    # ---- round 21 (issue 12): the final probability's precision ----
    # bits of each binary decision's final probability (1..2^bits - 1 of 2^bits): 12, what older
    # headers mean, or 16.  At 16 the final mixer's output and the APMs keep 16 bits (the mixers
    # and everything that learns still work in 12), so a byte the model is sure of costs down to
    # 8 * log2(65536/65535) = 0.0002 bits instead of 0.0028.  Not with the pure expert
    probability_bits: int = extension(12)

    # ---- round 22 (issue 12): upper and lower case share what follows the high nibble ----
    # a bit mask over `contexts`: in those contexts the low nibble of a byte whose high nibble is
    # 4 or 5 (upper-case letters and @ [ \ ] ^ _) is looked up in the slot of high nibble 6 or 7
    # (lower-case letters and ` { | } ~), and in the high nibble the node that splits 0x4_ from
    # 0x5_ keeps its history in the one that splits 0x6_ from 0x7_: "T" learns from and teaches
    # "t" after the same context, while the case bit itself stays apart.  0, what older headers
    # mean: none
    case_fold: int = extension(0)
    # ---- round 23 (issue 12): where else case is layout, not the word ----
    # bits widening where case_fold applies (histories.case_fold_now): 1 = also in the first word
    # after a line break or a tab (verse lines, a play's speeches after the speaker's name).
    # 0, what older headers mean: only a sentence's first word and inside all-capitals words
    case_fold_gate: int = extension(0)

    # ---- round 25 (issues 11, 12): the expert's network reads the previous word ----
    # 1: the previous word's row of the expert's word-input table (rnnme_word_input_bits) is a
    # network input beside the current word's, so that the LSTM sees the word just completed
    # while the current one is still short or empty.  0, what older headers mean: the current
    # word's row alone
    rnnme_word_input_prev: int = extension(0)
    # 1: the word-input rows start at 0 instead of small random values: a word (above all a
    # previous word) seen once then adds nothing to the network's inputs until it has learned
    # (with preset 49's smaller step, 0.004 bpc on the Korean text, whose words rarely repeat:
    # bench/TUNING.md, round 25).  0, what older headers mean: random rows
    rnnme_word_rows_zero: int = extension(0)

    # ---- round 28 (issue 11): the direct connections' fresh rows of the mix's contexts ----
    # cap x 1e-3 on the summed step sizes of the rows read through the mix's contexts
    # (rnnme_context_features) for one byte: at a fresh word most of those rows are fresh at
    # once, and their full first steps together overshoot (bench/TUNING.md, round 28).
    # 0, what older headers mean: no cap of their own
    rnnme_me_ctx_total_milli: int = extension(0)

    def __post_init__(self):
        # names in, plain numbers stored: headers, reprs and JSON see the format's integers
        if isinstance(self.contexts, tuple):
            object.__setattr__(self, "contexts", tuple(
                int(k) if isinstance(k, Context) else k for k in self.contexts))

    @property
    def selectors(self) -> tuple:
        """The first-layer mixers in use, in mixer order (mixer_sets=2 is the old spelling of MATCH)."""
        mask = self.mixer_select | (selector_mask(Selector.MATCH) if self.mixer_sets == 2 else 0)
        return tuple(s for s in Selector if mask >> s & 1)

    def validate(self) -> "ModelParams":
        if not 1 <= len(self.contexts) <= MAX_CONTEXTS:
            raise ValueError(f"between 1 and {MAX_CONTEXTS} contexts are supported")
        for kind in self.contexts:
            if kind not in KNOWN_KINDS:
                raise ValueError(f"unknown context kind {kind}")
        checks = [
            (12 <= self.table_bits <= 30, "table_bits must be in 12..30"),
            (self.match_min == 0 or 3 <= self.match_min <= 64, "match_min must be 0 or 3..64"),
            (10 <= self.match_bits <= 28, "match_bits must be in 10..28"),
            (10 <= self.history_bits <= 30, "history_bits must be in 10..30"),
            (0 <= self.rnn_hidden <= 512, "rnn_hidden must be in 0..512"),
            (1 <= self.rnn_bptt <= 64, "rnn_bptt must be in 1..64"),
            (0 <= self.rnn_lr_micro <= 10_000_000, "rnn_lr_micro out of range"),
            (1 <= self.mixer_lr <= 64, "mixer_lr must be in 1..64"),
            (self.mixer_sets in (1, 2), "mixer_sets must be 1 or 2"),
            (2 <= self.apm_rate <= 12, "apm_rate must be in 2..12"),
            (self.apm1_order in (0, 1), "apm1_order must be 0 or 1"),
            (0 <= self.state_table < 5, "state_table must be in 0..4"),
            (1 <= self.ctx_inputs <= 3, "ctx_inputs must be in 1..3"),
            (1 <= self.mixer_select < (1 << len(Selector)), "mixer_select must be a nonzero selector mask"),
            (0 <= self.mixer_lr_boost <= 1024, "mixer_lr_boost must be in 0..1024"),
            (1 <= self.mixer_lr_decay <= 1 << 20, "mixer_lr_decay must be in 1..2^20"),
            (1 <= self.final_lr <= 256, "final_lr must be in 1..256"),
            (2 <= self.sm_limit <= 1023, "sm_limit must be in 2..1023"),
            # strength (issue 12)
            (self.run_inputs in (0, 1), "run_inputs must be 0 or 1"),
            (0 <= self.match_recover <= 65535, "match_recover must be in 0..65535"),
            (0 <= self.apm_chain < 16, "apm_chain must be in 0..15"),
            (0 <= self.apm_chain_weight <= 16, "apm_chain_weight must be in 0..16"),
            (0 <= self.mixer_init <= 256, "mixer_init must be in 0..256"),
            (0 <= self.apm1_weight and 0 <= self.apm2_weight and self.apm1_weight + self.apm2_weight <= 16,
             "apm weights must be >= 0 with a sum <= 16"),
        ]
        checks.append((self.direct_order1 in (0, 1), "direct_order1 must be 0 or 1"))
        checks.append((self.direct_order2_bits == 0 or 12 <= self.direct_order2_bits <= 26,
                       "direct_order2_bits must be 0 or 12..26"))
        checks.append((0 <= self.mixer_zero_start < 16, "mixer_zero_start must be in 0..15"))
        checks.append((self.apm_chain_bits == 0 or 10 <= self.apm_chain_bits <= 24,
                       "apm_chain_bits must be 0 or 10..24"))
        checks.append((0 <= self.follow_words < 8, "follow_words must be in 0..7"))
        checks.append((self.probability_bits in (12, 16) and not (self.probability_bits == 16 and self.rnnme_pure),
                       "probability_bits must be 12 or 16 (and 12 with rnnme_pure)"))
        checks.append((self.path_coding in (0, 1) and not (self.path_coding and self.rnnme_pure),
                       "path_coding must be 0 or 1 (and 0 with rnnme_pure)"))
        checks += self._rnnme_checks()
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        return self

    def _rnnme_checks(self) -> list:
        """branch neural2: the RNNME expert's fields are all 0 when it is off."""
        rnnme_fields = ("rnnme_bptt", "rnnme_me_bits", "rnnme_features", "rnnme_lr_micro",
                        "rnnme_lr_min_micro", "rnnme_lr_half", "rnnme_inputs",
                        "rnnme_apm_weight", "rnnme_pure",
                        "rnnme_me_lr_milli", "rnnme_me_decay_milli", "rnnme_me_min_milli",
                        "rnnme_match_feature", "rnnme_context_features", "rnnme_cell",
                        "rnnme_adam", "rnnme_input2", "rnnme_word_input_bits",
                        "rnnme_word_input_prev", "rnnme_word_rows_zero",
                        "rnnme_me_ctx_total_milli")
        uses_selector = bool(self.mixer_select >> Selector.RNNME & 1)
        if not self.rnnme_hidden:
            return [(all(getattr(self, name) == 0 for name in rnnme_fields) and not uses_selector,
                     "the RNNME expert's settings need rnnme_hidden > 0")]
        return [
            (1 <= self.rnnme_hidden <= 1024, "rnnme_hidden must be in 0..1024"),
            (1 <= self.rnnme_bptt <= 256, "rnnme_bptt must be in 1..256"),
            (self.rnnme_me_bits == 0 or 8 <= self.rnnme_me_bits <= 30,
             "rnnme_me_bits must be 0 or 8..30"),
            (0 <= self.rnnme_features < 3 << 8 and (self.rnnme_features >> 8) != 3,
             "rnnme_features: byte orders 1..8 (bits 0-7) and a word feature 0..2 (bits 8-9)"),
            (1 <= self.rnnme_lr_micro <= 1_000_000 and 0 <= self.rnnme_lr_min_micro <= 1_000_000,
             "rnnme learning rates out of range"),
            (1 <= self.rnnme_lr_half <= 1 << 40, "rnnme_lr_half must be >= 1"),
            (self.rnnme_pure in (0, 1), "rnnme_pure must be 0 or 1"),
            (self.rnnme_pure or 1 <= self.rnnme_inputs <= 2, "rnnme_inputs must be 1 or 2"),
            (0 <= self.rnnme_apm_weight <= 16, "rnnme_apm_weight must be in 0..16"),
            # branch expert4
            (0 <= self.rnnme_me_lr_milli <= 10_000 and 0 <= self.rnnme_me_decay_milli <= 10_000
             and 0 <= self.rnnme_me_min_milli <= 10_000,
             "rnnme direct-connection rates must be in 0..10000 (thousandths)"),
            (0 <= self.rnnme_match_feature <= 3, "rnnme_match_feature must be in 0..3"),
            (0 <= self.case_fold < 1 << len(self.contexts), "case_fold: a mask over the contexts"),
            (0 <= self.case_fold_gate <= 1, "case_fold_gate must be 0 or 1"),
            (0 <= self.rnnme_context_features < 1 << len(self.contexts)
             and not (self.rnnme_pure and self.rnnme_context_features),
             "rnnme_context_features: a mask over the contexts (not with rnnme_pure)"),
            (self.rnnme_cell in (0, 1), "rnnme_cell must be 0 (tanh) or 1 (LSTM)"),
            (self.rnnme_adam in (0, 1), "rnnme_adam must be 0 (AdaMax) or 1 (Adam)"),
            (self.rnnme_input2 in (0, 1), "rnnme_input2 must be 0 or 1"),
            (0 <= self.rnnme_word_input_bits <= 24, "rnnme_word_input_bits must be in 0..24"),
            (self.rnnme_word_input_prev in (0, 1) and not (self.rnnme_word_input_prev
                                                           and not self.rnnme_word_input_bits),
             "rnnme_word_input_prev must be 0 or 1 (and 0 without rnnme_word_input_bits)"),
            (self.rnnme_word_rows_zero in (0, 1), "rnnme_word_rows_zero must be 0 or 1"),
            (0 <= self.rnnme_me_ctx_total_milli <= 100_000,
             "rnnme_me_ctx_total_milli must be in 0..100000 (thousandths; 0: no cap)"),
            (len(rnnme_config.from_model(self).features) <= rnnme_config.MAX_FEATURES,
             f"the RNNME expert takes at most {rnnme_config.MAX_FEATURES} direct-connection "
             "features (byte orders, word, match and context features together)"),
        ]

    @classmethod
    def base_names(cls) -> list:
        """The scalar fields every format-1 header carries, in header order."""
        return [f.name for f in fields(cls) if f.name != "contexts" and not f.metadata.get("extension")]

    @classmethod
    def extension_names(cls) -> list:
        return [f.name for f in fields(cls) if f.metadata.get("extension")]

    @classmethod
    def scalar_names(cls) -> list:
        """Every field but the context list, numbered as format-2 headers number their overrides:
        the base scalars, then the extensions (so appending a field keeps every number)."""
        return cls.base_names() + cls.extension_names()

    def overrides_from(self, base: "ModelParams") -> tuple | None:
        """((scalar field index, value), ...) that turn `base` into these parameters, or None when
        the context lists differ (a format-2 header then carries the full list)."""
        if self.contexts != base.contexts:
            return None
        return tuple((index, getattr(self, name)) for index, name in enumerate(self.scalar_names())
                     if getattr(self, name) != getattr(base, name))

    def with_overrides(self, overrides) -> "ModelParams":
        """These parameters with scalar fields replaced by index (overrides_from's inverse)."""
        names = self.scalar_names()
        changes = {}
        for index, value in overrides:
            if index >= len(names):
                raise ValueError("model parameter override of an unknown field "
                                 "(made by a newer nncompress?)")
            changes[names[index]] = value
        return replace(self, **changes).validate()

    # Header encoding: the base scalars in declaration order, the context list, then the extension
    # fields up to the last one that is not at its default ("off"); all varints.
    def to_ints(self) -> list:
        base = [getattr(self, name) for name in self.base_names()]
        extensions = [getattr(self, name) for name in self.extension_names()]
        defaults = [f.default for f in fields(self) if f.metadata.get("extension")]
        while extensions and extensions[-1] == defaults[len(extensions) - 1]:
            extensions.pop()
        return base + [len(self.contexts), *self.contexts] + extensions

    @classmethod
    def from_ints(cls, values: list) -> "ModelParams":
        names = cls.base_names()
        if len(values) < len(names) + 1:
            raise ValueError("model parameter block is too short")
        kwargs = dict(zip(names, values[: len(names)]))
        count = values[len(names)]
        rest = values[len(names) + 1 :]
        if count > len(rest):
            raise ValueError("model parameter block has a wrong context count")
        contexts, extensions = tuple(rest[:count]), rest[count:]
        extension_names = cls.extension_names()
        if len(extensions) > len(extension_names):
            raise ValueError("model parameter block is too long (made by a newer nncompress?)")
        kwargs.update(zip(extension_names, extensions))
        return cls(contexts=contexts, **kwargs).validate()

    def describe(self) -> dict:
        return asdict(self)


# -- sizing the model to a known input ----------------------------------------------------------
@dataclass(frozen=True)
class SizeRule:
    """A log2 size field that an input of known size can shrink without changing what is learned:
    fit_to_input gives it max(minimum, log2(input bytes) + headroom), never more than the preset."""
    field: str
    minimum: int  # the smallest value validate() accepts
    headroom: int  # log2 of the entries (or bytes) wanted per input byte


# One line per size field (a new component's table adds its own).  Measured in bench/SMALL.md:
# fitting costs no more than noise in bpc on 3.7 KB .. 53 KB files at levels 1, 6 and 9.
SIZE_RULES = (
    # context tables: 16-byte slots, at most 2 claimed per input byte and context (one per
    # nibble), so 256 bytes per input byte keeps each table under 1/8 full (4-way buckets)
    SizeRule("table_bits", 12, 6),
    # the history ring holds the whole input twice over: it never wraps, so every byte it is
    # asked for is the byte a full-size ring returns
    SizeRule("history_bits", 10, 1),
    # one entry per input byte at most: 16 entries per byte keeps collisions rare
    SizeRule("match_bits", 10, 4),
    # the RNNME expert's direct connections: 7 features x 2 softmaxes x 16 weights = 224 weights
    # touched per byte at most, about 2^7.8; 2^7 per byte keeps the table near that (hashed rows
    # have no check bits, so unlike the tables above this can change predictions: on tiny inputs,
    # where the expert is worth little, a 4 KB input's table is 4 MiB instead of 16)
    SizeRule("rnnme_me_bits", 16, 7),
    # (round 25's word-input rows, rnnme_word_input_bits, have no rule: 2^16 rows that start at
    # zero cost a small input only the rows it uses, as their pages are touched only then, and an
    # override would cost a small archive 3 header bytes)
)


def fit_to_input(params: ModelParams, size: int | None) -> ModelParams:
    """The parameters sized for an input of `size` bytes (None: unknown, kept as they are).

    Every path that knows its input's size (a buffer, a regular file, a segment) calls this, so
    an archive's bytes depend only on the input and the settings, never on how it was run; the
    header records the fitted sizes."""
    if size is None:
        return params
    need = max(size, 1).bit_length()  # 2^need > size
    changes = {}
    for rule in SIZE_RULES:
        current = getattr(params, rule.field)
        wanted = max(rule.minimum, need + rule.headroom)
        if wanted < current:  # a field that is off (0) or already small stays as it is
            changes[rule.field] = wanted
    return replace(params, **changes) if changes else params
