"""Model hyperparameters: everything that changes a prediction, recorded in every archive header."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

# Character classes (kinds 42..51, selectors 6 and 7): 0 space, 1 control, 2 lower case, 3 upper
# case, 4 digit, 5 .,!?;: 6 other ASCII, 7 bytes >= 128.
# Context kinds: what a hashed context table is keyed by.  1..16 are byte orders (the previous n
# bytes); the others are text-aware contexts.  The numbers are part of the format.
WORD = 32  # the current (partial) word, case-folded; the previous byte between words
WORD_BIGRAM = 33  # previous word + current partial word
SPARSE_SKIP1 = 34  # bytes 2 and 3 back (skipping the last byte)
SPARSE_GAP = 35  # bytes 1 and 3 back
COLUMN = 36  # column in the line + the byte above it in the previous line
WORD_ORDER1 = 37  # current partial word + previous byte class + the byte before the word
WORD_TRIGRAM = 38  # two previous words + current partial word
WORD_SKIP = 39  # the word before the previous one + current partial word
INDIRECT1 = 40  # previous byte + the two bytes that followed it the last two times
INDIRECT2 = 41  # last two bytes + the two bytes that followed them the last two times
CLASS_MASK = 42  # character classes of the last six bytes + previous byte
WORD_CLASSES = 44  # current partial word + character classes of the last four bytes
CLASS_MASK8 = 46  # character classes of the last eight bytes
CLASS_RUNS = 49  # classes of the last ten runs of same-class bytes
CLASS_RUNS_ORDER1 = 50  # classes of the last six runs of same-class bytes + previous byte
WORD_CLASS_RUNS = 51  # current partial word + classes of the last four runs
MAX_ORDER = 16
KNOWN_KINDS = frozenset(range(1, MAX_ORDER + 1)) | {
    WORD, WORD_BIGRAM, SPARSE_SKIP1, SPARSE_GAP, COLUMN, WORD_ORDER1, WORD_TRIGRAM, WORD_SKIP,
    INDIRECT1, INDIRECT2, CLASS_MASK, WORD_CLASSES, CLASS_MASK8, CLASS_RUNS, CLASS_RUNS_ORDER1,
    WORD_CLASS_RUNS}
MAX_CONTEXTS = 32
# First-layer mixer weight-set selectors (bit k of ModelParams.mixer_select); with more than one,
# a final mixer (weights chosen by the partial byte) combines them.
SELECTORS = ("partial byte", "match length x expected bit", "previous byte x partial byte",
             "contexts seen x node", "recurrent-state signs x partial byte", "byte 2 back x partial byte",
             "classes of the last three bytes x partial byte",
             "classes of the last three same-class runs x partial byte")


@dataclass(frozen=True)
class ModelParams:
    contexts: tuple = (1, 2, 3, 4, 6, WORD)
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
    mixer_select: int = 1  # bitmask of first-layer mixers (weight-set selectors), see SELECTORS
    mixer_lr_boost: int = 0  # extra mixer step size for a fresh weight set ...
    mixer_lr_decay: int = 1024  # ... halved after this many updates of that set
    final_lr: int = 8  # step size (1/4 units) of the final mixer combining several first-layer mixers
    apm1_weight: int = 4  # final probability = (mixer*(16-a1-a2) + apm1*a1 + apm2*a2) / 16
    apm2_weight: int = 8
    sm_limit: int = 1023  # bit-history probability tables adapt at rate 1/min(n + 1.5, limit + 1.5)
    apm1_order: int = 0  # first APM's rows: 0 the partial byte, 1 the partial byte and the previous byte
    state_table: int = 0  # bit-history state machine variant (statetable.VARIANTS)

    @property
    def selectors(self) -> tuple:
        mask = self.mixer_select | (2 if self.mixer_sets == 2 else 0)
        return tuple(k for k in range(len(SELECTORS)) if mask >> k & 1)

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
            (1 <= self.mixer_select < (1 << len(SELECTORS)), "mixer_select must be a nonzero selector mask"),
            (0 <= self.mixer_lr_boost <= 1024, "mixer_lr_boost must be in 0..1024"),
            (1 <= self.mixer_lr_decay <= 1 << 20, "mixer_lr_decay must be in 1..2^20"),
            (1 <= self.final_lr <= 256, "final_lr must be in 1..256"),
            (2 <= self.sm_limit <= 1023, "sm_limit must be in 2..1023"),
            (0 <= self.apm1_weight and 0 <= self.apm2_weight and self.apm1_weight + self.apm2_weight <= 16,
             "apm weights must be >= 0 with a sum <= 16"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        return self

    # Header encoding: the scalar fields in declaration order, then the context list; all varints.
    def to_ints(self) -> list:
        scalars = [getattr(self, f.name) for f in fields(self) if f.name != "contexts"]
        return scalars + [len(self.contexts), *self.contexts]

    @classmethod
    def from_ints(cls, values: list) -> "ModelParams":
        names = [f.name for f in fields(cls) if f.name != "contexts"]
        if len(values) < len(names) + 1:
            raise ValueError("model parameter block is too short")
        kwargs = dict(zip(names, values[: len(names)]))
        count = values[len(names)]
        contexts = tuple(values[len(names) + 1 :])
        if len(contexts) != count:
            raise ValueError("model parameter block has a wrong context count")
        return cls(contexts=contexts, **kwargs).validate()

    def describe(self) -> dict:
        return asdict(self)
