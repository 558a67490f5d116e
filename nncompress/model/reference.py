"""A slow, plainly written reference twin of the predictor's numba kernels (`nibble.step`).

The numba kernels work on flat arrays for speed; this module re-implements the same model with one
class per component and ordinary Python ints, floats, lists and bytearrays, so the algorithm can be
read (and checked) without the array plumbing.  `tests/test_reference.py` runs both on short inputs
and requires the same 16 probabilities, bit for bit, at every nibble.

Only the constant tables are shared with the fast model (squash/stretch/sigmoid/reciprocal from
`detmath`, the bit-history state machine from `statetable`, the recurrent layer's deterministic
initial weights); every piece of dynamics is written again here.

Fidelity notes (what "bit for bit" takes):

* Integer arithmetic: Python's `>>` floors negative numbers, like the kernels' int64 arithmetic
  shift, and `//` only ever sees non-negative operands.  Python ints never overflow, so 32-bit
  hashes are masked explicitly.  Every value the kernels store into an int32 array stays far from
  the int32 limits (counters are within 0..2^22, APM entries within 0..2^16, mixer weights are
  clamped to +-2^22, counts are capped), so no wrap-around needs mirroring; `_int32` checks that
  where it is cheap.
* Fast adaptation rates (`sm_limit` <= 62) let the floored step overshoot below zero; both
  implementations clamp the probability at 0 there.
* The recurrent layer is float64 in both implementations with the same operation order (Python
  floats are IEEE doubles, and numba without fastmath neither re-associates nor fuses), and its
  sigmoid is the interpolated `detmath.SIGMOID` table, never `math.exp`.
* Learning is delayed like `Predictor`'s: `learn(nibble)` only records the nibble; the next
  `predict_next()` learns it, then predicts.
"""

from __future__ import annotations

from . import detmath
from .detmath import deterministic_uniform
from .kinds import FOLLOWER_MASK, SELECTOR_ROWS, CharClass, Context, FollowWords, Selector, ZeroStart
from .params import ModelParams
from .statetable import StateTable

# strength (issue 12): the SSE chain's APMs, by bit of ModelParams.apm_chain (as in state.py)
CHAIN_ORDER3, CHAIN_MATCH, CHAIN_WORD, CHAIN_ORDER4 = 1, 2, 4, 8

MASK32 = 0xFFFFFFFF
SQUASH = detmath.SQUASH.tolist()  # 12-bit probability of stretch value x at [x + 2048]
SQUASH16 = detmath.SQUASH16.tolist()  # round 21: 16-bit probability of stretch value x at [x + 4096]
STRETCH = detmath.STRETCH.tolist()  # stretch value (-2047..2047) of a 12-bit probability
SIGMOID = detmath.SIGMOID.tolist()  # 1/(1+e^-x) at x = i/128 - 16
RECIPROCAL = detmath.RECIPROCAL.tolist()  # 65536 / (n + 1.5)
WEIGHT_LIMIT = 1 << 22



def _int32(v: int) -> int:
    """A value about to be stored where the kernels keep an int32: it must fit (nothing wraps)."""
    assert -(1 << 31) <= v < (1 << 31), v
    return v


def hash32(a: int, b: int) -> int:
    """The model's 32-bit mix of two values (each reduced to 32 bits first)."""
    h = ((a & MASK32) * 0x2E2E7B3 + (b & MASK32) * 0x5BD1E995 + 0x3C6EF372) & MASK32
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & MASK32
    h ^= h >> 12
    h = (h * 0x297A2D39) & MASK32
    h ^= h >> 15
    return h


def clamp(x, lo, hi):
    return lo if x < lo else hi if x > hi else x


def squash(x: int) -> int:
    return SQUASH[clamp(x, -2047, 2047) + 2048]


# ---- the nibble tree ----------------------------------------------------------------------------
# A nibble is coded as four binary decisions, most significant bit first, down a tree whose nodes
# are numbered 1..15 heap-style: node j's children are 2j (bit 0) and 2j + 1 (bit 1).

def node_depth(j: int) -> int:
    return j.bit_length() - 1


def partial_byte(low_half: bool, hi: int, j: int) -> int:
    """The byte's bits known at node j, behind a leading 1: 1..15 in the high nibble, 16..255 in
    the low nibble (where the high nibble hi is known)."""
    depth = node_depth(j)
    bits_so_far = j - (1 << depth)
    root = 16 + hi if low_half else 1
    return (root << depth) | bits_so_far


def expected_bit_of(byte: int, low_half: bool, hi: int, j: int) -> int:
    """The bit `byte` has at node j if its bits agree with the path to j (and, in the low half,
    its high nibble is hi), else -1."""
    if low_half and (byte >> 4) != hi:
        return -1
    half = byte & 15 if low_half else byte >> 4
    depth = node_depth(j)
    if half >> (4 - depth) != j - (1 << depth):
        return -1
    return (half >> (3 - depth)) & 1


# ---- byte-level state ---------------------------------------------------------------------------

def byte_class(c: int) -> CharClass:
    if c == 32:
        return CharClass.SPACE
    if c < 32:
        return CharClass.CONTROL
    if 97 <= c <= 122:
        return CharClass.LOWER
    if 65 <= c <= 90:
        return CharClass.UPPER
    if 48 <= c <= 57:
        return CharClass.DIGIT
    if c in b".,!?;:":
        return CharClass.PUNCTUATION
    return CharClass.OTHER_ASCII if c < 128 else CharClass.HIGH


def _is_word_byte(c: int) -> bool:
    return 97 <= c <= 122 or c >= 128


def _checked(table: dict, key: int, otherwise):
    """Round 20: the value stored under `key` (its low 16 bits index, its high 16 bits check),
    else `otherwise`."""
    entry = table.get(key & FOLLOWER_MASK)
    return entry[1] if entry is not None and entry[0] == key >> 16 else otherwise


def _checked_entries(table: dict, section: int, offset: int) -> list:
    """Round 20: a checked table as the fast model lays it out: section `section` of the array,
    the check from bit 40 above the value (+ `offset`)."""
    return [(section * (FOLLOWER_MASK + 1) + k, (check << 40) | (value + offset))
            for k, (check, value) in table.items()]


class ByteHistory:
    """Everything the contexts know about the bytes seen so far."""

    def __init__(self, history_bits: int, follow_words: int = 0):
        self.mask = (1 << history_bits) - 1
        self.follow_words = follow_words  # round 20: ModelParams.follow_words (FollowWords bits)
        self.buffer = bytearray(1 << history_bits)  # circular; position p at p & mask
        self.pos = 0  # bytes seen
        self.last4 = 0  # the last four bytes, most recent lowest
        self.before4 = 0  # the four bytes before those
        self.word = 0  # hash of the current partial word, 0 between words
        self.word1 = 0  # the previous word's hash
        self.word2 = 0  # the one before it
        self.word3 = 0  # and the one before that (strength round 5)
        self.letters = 0  # the last six letters a-z, case-folded, 5 bits each, most recent lowest
        self.separator = 0  # the last three bytes that followed the previous word
        self.word_prefix = 0  # the byte before the current word
        self.word_start = 0  # position of the current word's first byte (strength round 7)
        self.stem1 = 0  # hash of the previous word's stem (word_stem)
        self.column = 0  # bytes since the last newline
        self.line_start = 0
        self.prev_line_start = 0
        # indirect contexts: the last two bytes that followed each byte / each pair of bytes
        self.followers1 = [0] * 256
        self.followers2 = [0] * 65536
        self.classes = 0  # byte_class of the last eight bytes, 3 bits each, most recent lowest
        self.class_runs = 0  # the class of each of the last ten runs of same-class bytes
        # strength (issue 12): text structure
        self.sentence_words = 0  # words completed since the last . ! ? (at most 15)
        self.caps = 0  # capitalised or not, the last four completed words (bit 0 the latest)
        self.word_cap = 0  # the current word began with a capital letter
        self.paren = 0  # ( depth, at most 3
        self.square = 0  # [ and { depth, at most 3
        self.quote = 0  # inside "..."
        self.punct = 0  # the last , ; : . ! ? byte << 4 | words completed since (strength round 17)
        self.word_followers = {}  # low bits of a word's hash -> the word that followed it last time
        self.follower_starts = {}  # the same key -> where that word began (round 18)
        # round 20: low 16 bits of a key's hash -> (its high 16 bits, the value): the key the last
        # two (three) words, the value where the word that followed them began, or that word
        self.pair_starts = {}
        self.triple_starts = {}
        self.pair_followers = {}
        # round 23: paragraphs (a blank line starts one) and the first words of the last two
        self.paragraph_start = 0  # after a blank line, until the next line's first word is complete
        self.line_has_text = 0  # the current line has a byte other than space, tab or CR
        self.paragraph_head1 = 0  # the first word of the current (or last) paragraph
        self.paragraph_head2 = 0  # and of the one before it
        # round 24: the first words of the last lines
        self.line_head = 0  # from a line break until the line's first word is complete
        self.line_head1 = 0  # the first word of the current (or last) line with a word
        self.line_head2 = 0  # and of the line with a word before it

    def at(self, position: int) -> int:
        return self.buffer[position & self.mask]

    def word_stem(self, start: int, end: int) -> int:
        """Hash of the word at [start, end), case-folded, less one English suffix (strength round 7)."""
        word = bytes(self.at(k) for k in range(start, end)).lower()
        cut = 0
        if len(word) > 4 and word.endswith(b"ing"):
            cut = 3
        elif len(word) > 3 and word[-2:] in (b"ed", b"es", b"er", b"ly"):
            cut = 2
        elif len(word) > 2 and word.endswith(b"s") and not word.endswith(b"ss"):
            cut = 1
        h = 0
        for c in word[: len(word) - cut][:32]:
            h = hash32(h + 1, c)
        return h

    def follower_start(self):
        """Where the word that followed the last word began (round 18), or with FollowWords.PAIR
        and TRIPLE (round 20) the one that followed the last two or three words, the longest
        seen; None if none is known."""
        start = self.follower_starts.get(self.word1 & FOLLOWER_MASK)
        if self.follow_words & FollowWords.PAIR:
            start = _checked(self.pair_starts, hash32(self.word2, self.word1), start)
        if self.follow_words & FollowWords.TRIPLE:
            start = _checked(self.triple_starts, hash32(hash32(self.word3, self.word2), self.word1), start)
        return start

    def follower_word(self) -> int:
        """WORD_FOLLOWER's word: the one that followed the last word last time (round 17), or
        with FollowWords.WORD_PAIR (round 20) the one that followed the last two words if seen."""
        word = self.word_followers.get(self.word1 & FOLLOWER_MASK, 0)
        if self.follow_words & FollowWords.WORD_PAIR:
            word = _checked(self.pair_followers, hash32(self.word2, self.word1), word)
        return word

    def follower_expects(self) -> int:
        """Round 18: 1 + the byte the word that followed the previous word last time has after as
        many bytes as the current word has, if all of those agree with the current word's
        (case-folded), with that count (at most 15) from bit 9; 0 otherwise."""
        start = self.follower_start()
        if start is None:
            return 0
        length = self.pos - self.word_start if self.word != 0 else 0
        for k in range(length + 1):  # each byte of the word, then the one expected next
            at = self.word_start + k if k < length else self.pos
            if start + k >= at or at - (start + k) > self.mask:
                return 0
            if k < length and bytes([self.at(start + k)]).lower() != bytes([self.at(at)]).lower():
                return 0
        return (self.at(start + length) + 1) | (min(length, 15) << 9)

    def byte_back(self, n: int) -> int:
        """The n-th most recent byte (n = 1: the last one); 0 before the start."""
        return self.at(self.pos - n) if self.pos - n >= 0 else 0

    def append(self, byte: int) -> None:
        c1, c21 = self.last4 & 0xFF, self.last4 & 0xFFFF
        self.followers1[c1] = ((self.followers1[c1] << 8) | byte) & 0xFFFF
        self.followers2[c21] = ((self.followers2[c21] << 8) | byte) & 0xFFFF
        self.buffer[self.pos & self.mask] = byte
        self.before4 = ((self.before4 << 8) | (self.last4 >> 24)) & MASK32
        self.last4 = ((self.last4 << 8) | byte) & MASK32
        self.pos += 1
        # words: letters, case-folded, and bytes >= 128 (UTF-8) continue a word
        c = byte + 32 if 65 <= byte <= 90 else byte
        if _is_word_byte(c):
            if self.word == 0:
                self.word_start = self.pos - 1
                self.word_prefix = (self.last4 >> 8) & 0xFF
                self.word_cap = int(65 <= byte <= 90)
            self.word = hash32(self.word + 1, c)
            if c <= 122:
                self.letters = ((self.letters << 5) | (c - 96)) & 0x3FFFFFFF
        elif self.word != 0:
            self.separator = byte
            self.stem1 = self.word_stem(self.word_start, self.pos - 1)
            word4 = self.word3
            self.word3, self.word2, self.word1, self.word = self.word2, self.word1, self.word, 0
            self.word_followers[self.word2 & FOLLOWER_MASK] = self.word1
            self.follower_starts[self.word2 & FOLLOWER_MASK] = self.word_start
            if self.word3 != 0:  # round 20: under the two (three) words before the one that ended
                pair = hash32(self.word3, self.word2)
                if self.follow_words & FollowWords.PAIR:
                    self.pair_starts[pair & FOLLOWER_MASK] = (pair >> 16, self.word_start)
                if self.follow_words & FollowWords.WORD_PAIR:
                    self.pair_followers[pair & FOLLOWER_MASK] = (pair >> 16, self.word1)
                if self.follow_words & FollowWords.TRIPLE and word4 != 0:
                    triple = hash32(hash32(word4, self.word3), self.word2)
                    self.triple_starts[triple & FOLLOWER_MASK] = (triple >> 16, self.word_start)
            self.sentence_words = min(self.sentence_words + 1, 15)
            self.caps = ((self.caps << 1) | self.word_cap) & 15
            self.word_cap = 0
            self.punct = (self.punct & ~15) | min((self.punct & 15) + 1, 15)
            if self.paragraph_start:  # round 23
                self.paragraph_head2, self.paragraph_head1 = self.paragraph_head1, self.word1
                self.paragraph_start = 0
            if self.line_head:  # round 24
                self.line_head2, self.line_head1 = self.line_head1, self.word1
                self.line_head = 0
        else:
            self.separator = ((self.separator << 8) | byte) & 0xFFFFFF
        if byte in b".!?":
            self.sentence_words = 0
        if byte in b",;:.!?":
            self.punct = byte << 4
        if byte == ord("(") and self.paren < 3:
            self.paren += 1
        elif byte == ord(")") and self.paren > 0:
            self.paren -= 1
        elif byte in b"[{" and self.square < 3:
            self.square += 1
        elif byte in b"]}" and self.square > 0:
            self.square -= 1
        elif byte == ord('"'):
            self.quote ^= 1
        elif byte == 10 and (self.last4 >> 8) & 0xFF == 10:
            self.paren = self.square = self.quote = 0
        cls = byte_class(byte)
        if (self.classes & 7) != cls or self.pos == 1:
            self.class_runs = ((self.class_runs << 3) | cls) & 0x3FFFFFFF
        self.classes = ((self.classes << 3) | cls) & 0xFFFFFF
        if byte == 10:
            if not self.line_has_text:  # round 23: the line that ends was blank: a paragraph starts
                self.paragraph_start = 1
            self.line_has_text = 0
            self.line_head = 1  # round 24
            self.prev_line_start, self.line_start, self.column = self.line_start, self.pos, 0
        else:
            if byte not in b" \t\r":  # round 23
                self.line_has_text = 1
            self.column += 1


def fold_case(x: int) -> int:
    """The four bytes of x with A-Z turned into a-z."""
    return int.from_bytes(x.to_bytes(4, "little").lower(), "little")


def column_bucket(column: int) -> int:
    """Columns 0-3 each, then 4-7, 8-15, 16-31 and 32 on: 0..7."""
    return column if column < 4 else 4 if column < 8 else 5 if column < 16 else 6 if column < 32 else 7


def context_hash(kind: int, h: ByteHistory, match_expects: int = 0) -> int:
    """The hash of context `kind` (a kinds.Context) for the byte about to be coded;
    match_expects: MatchModel.expects() (0 without a match model)."""
    c1 = h.last4 & 0xFF
    if kind <= Context.ORDER4:  # the last `kind` bytes
        return hash32(kind, h.last4 & ((1 << (8 * kind)) - 1))
    if kind <= Context.ORDER8:
        return hash32(hash32(kind, h.last4), h.before4 & ((1 << (8 * (kind - 4))) - 1))
    if kind <= Context.ORDER16:
        x = hash32(hash32(kind, h.last4), h.before4)
        for n in range(9, kind + 1):
            x = hash32(x, h.byte_back(n))
        return x
    if kind == Context.WORD:  # between words: the previous byte, under its own salt
        return hash32(kind, h.word) if h.word != 0 else hash32(320, c1)
    if kind == Context.WORD_BIGRAM:
        return hash32(hash32(kind, h.word1), h.word)
    if kind == Context.SPARSE_SKIP1:  # bytes 2 and 3 back
        return hash32(kind, h.last4 & 0xFFFF00)
    if kind == Context.SPARSE_GAP:  # bytes 1 and 3 back
        return hash32(kind, h.last4 & 0xFF00FF)
    if kind == Context.COLUMN:
        above = 0
        if h.prev_line_start + h.column < h.line_start:
            above = h.at(h.prev_line_start + h.column)
        return hash32(hash32(kind, min(h.column, 255)), above | (c1 << 8))
    if kind == Context.WORD_ORDER1:
        return hash32(hash32(kind, h.word), h.word_prefix | (c1 << 8))
    if kind == Context.WORD_TRIGRAM:
        return hash32(hash32(hash32(kind, h.word2), h.word1), h.word)
    if kind == Context.WORD_SKIP:
        return hash32(hash32(kind, h.word2), h.word)
    if kind == Context.INDIRECT1:
        return hash32(hash32(kind, c1), h.followers1[c1])
    if kind == Context.INDIRECT2:
        c21 = h.last4 & 0xFFFF
        return hash32(hash32(kind, c21), h.followers2[c21])
    if kind == Context.CLASS_MASK:
        return hash32(hash32(kind, h.classes & 0x3FFFF), c1)
    if kind == Context.WORD_CLASSES:
        return hash32(hash32(kind, h.word), h.classes & 0xFFF)
    if kind == Context.CLASS_MASK8:
        return hash32(kind, h.classes)
    if kind == Context.CLASS_RUNS:
        return hash32(kind, h.class_runs)
    if kind == Context.CLASS_RUNS_ORDER1:
        return hash32(hash32(kind, h.class_runs & 0x3FFFF), c1)
    if kind == Context.WORD_CLASS_RUNS:
        return hash32(hash32(kind, h.class_runs & 0xFFF), h.word)
    if kind == Context.SENTENCE_WORD:  # strength (issue 12)
        return hash32(hash32(kind, h.sentence_words | (h.caps << 4) | (h.word_cap << 8)), h.word)
    if kind == Context.NESTING_WORD:
        nest = h.paren | (h.square << 2) | (h.quote << 4)
        return hash32(hash32(kind, nest | (c1 << 8)), h.word)
    if kind == Context.FOLDED_ORDER3:  # strength round 4 (issue 12)
        return hash32(kind, fold_case(h.last4) & 0xFFFFFF)
    if kind == Context.FOLDED_ORDER5:
        return hash32(hash32(kind, fold_case(h.last4)), fold_case(h.before4) & 0xFF)
    if kind in (Context.LINE_PREFIX, Context.LINE_WORD):
        first = h.at(h.line_start) if h.column > 0 else 256
        second = h.at(h.line_start + 1) if h.column > 1 else 256
        return hash32(hash32(kind, first | (second << 9)),
                      h.last4 & 0xFFFF if kind == Context.LINE_PREFIX else h.word)
    if kind == Context.ABOVE_ORDER2:
        above = h.prev_line_start + h.column
        a0 = h.at(above) if above < h.line_start else 256
        a1 = h.at(above + 1) if above + 1 < h.line_start else 256
        return hash32(hash32(kind, a0 | (a1 << 9)), h.last4 & 0xFFFF)
    if kind == Context.WORD_QUADGRAM:  # strength round 5 (issue 12)
        return hash32(hash32(hash32(hash32(kind, h.word3), h.word2), h.word1), h.word)
    if kind == Context.LETTERS:
        return hash32(hash32(kind, h.letters), c1)
    if kind == Context.WORD_SEPARATED:
        return hash32(hash32(hash32(kind, h.word1), h.separator), h.word)
    if kind == Context.STEM_WORD:  # strength round 7 (issue 12)
        return hash32(hash32(kind, h.stem1), h.word if h.word != 0 else c1)
    if kind == Context.WORD_SHAPE:  # strength round 17 (issue 12)
        length = min(h.pos - h.word_start, 3) if h.word != 0 else 0
        return hash32(kind, h.caps | (h.sentence_words << 4) | (h.word_cap << 8) | (length << 9)
                      | ((h.classes & 0x1FF) << 11))
    if kind == Context.PUNCT_WORD:
        return hash32(hash32(kind, h.punct), h.word if h.word != 0 else c1)
    if kind == Context.PUNCT_BIGRAM:
        return hash32(hash32(hash32(kind, h.punct), h.word1), h.word if h.word != 0 else c1)
    if kind == Context.WORD_FOLLOWER:
        follower = h.follower_word()
        return hash32(hash32(kind, follower), h.word if h.word != 0 else c1)
    if kind == Context.WORD_PREDICTED:  # round 18
        return hash32(hash32(kind, h.follower_expects()), h.word if h.word != 0 else c1)
    if kind == Context.MATCH_PREDICTED:  # round 19
        return hash32(hash32(kind, match_expects),
                      (h.word if h.word != 0 else c1) if c1 < 128 else (h.last4 & 0xFFFF) | 0x10000)
    if kind in (Context.PARAGRAPH_HEADS, Context.LINE_HEADS):  # rounds 23, 24
        at_start, head2, head1 = ((h.paragraph_start, h.paragraph_head2, h.paragraph_head1)
                                  if kind == Context.PARAGRAPH_HEADS
                                  else (h.line_head, h.line_head2, h.line_head1))
        word = h.word if h.word != 0 else c1
        if at_start:  # in the paragraph's (line's) first word: the first words of the last two
            return hash32(hash32(hash32(kind, head2), head1), word)
        return hash32(hash32(kind + 1, head1), word)
    raise ValueError(f"unknown context kind {kind}")


# ---- hashed bit histories -----------------------------------------------------------------------

class ContextSlots:
    """One context's table: 16-byte slots (a check byte, then the bit-history state of each of the
    15 tree nodes), four slots per bucket; a missing slot evicts the bucket's least seen one."""

    def __init__(self, table_bits: int, priority: list):
        self.table = bytearray(1 << table_bits)
        self.num_slots = len(self.table) >> 4
        self.priority = priority  # evidence held by a state (eviction order)
        self.offset = 0  # the current nibble's slot
        self.evictions = 0  # (instrumentation for tests: claims that replaced a used slot)

    def claim(self, h: int) -> None:
        check = (h >> 24) & 255
        first = (h & (self.num_slots - 1)) & ~3
        offsets = [(first + k) * 16 for k in range(4)]
        for off in offsets:
            if self.table[off] == check:
                self.offset = off
                return
        # min() keeps the first of equals, like a strict "<" scan
        victim = min(offsets, key=lambda off: self.priority[self.table[off + 1]])
        if any(self.table[victim : victim + 16]):
            self.evictions += 1
        self.table[victim : victim + 16] = bytes(16)
        self.table[victim] = check
        self.offset = victim

    def state(self, j: int) -> int:
        return self.table[self.offset + j]

    def set_state(self, j: int, s: int) -> None:
        self.table[self.offset + j] = s


class AdaptiveProbabilities:
    """Probabilities of a 1 in 22-bit fixed point, each moving toward what it sees at rate
    1/(n + 1.5), n = its update count capped at `limit`.  Used for the per-context state maps,
    the order-0 node probabilities and the match model's confidence."""

    def __init__(self, initial: list, limit: int):
        self.p = list(initial)
        self.n = [0] * len(self.p)
        self.limit = limit

    def p12(self, k: int) -> int:
        return self.p[k] >> 10

    def stretched(self, k: int) -> int:
        return STRETCH[self.p12(k)]

    def update(self, k: int, bit: int) -> None:
        error = (bit << 22) - self.p[k]
        self.p[k] = max(0, _int32(self.p[k] + (((error >> 6) * RECIPROCAL[self.n[k]]) >> 10)))
        if self.n[k] < self.limit:
            self.n[k] += 1


class StateMap(AdaptiveProbabilities):
    """One context's map from bit-history state to probability, starting at (n1 + 1/2)/(n + 1)."""

    def __init__(self, states: StateTable, limit: int):
        super().__init__([int(v) for v in states.initial_p], limit)


# ---- match model --------------------------------------------------------------------------------

def match_bucket(length: int) -> int:
    return length if length < 16 else min(31, 16 + ((length - 16) >> 2))


class MatchModel:
    """Follows the most recent earlier occurrence of the last `min_len` bytes and predicts the
    byte that followed it."""

    def __init__(self, min_len: int, table_bits: int, recover: int = 0):
        self.min_len = min_len
        # strength (issue 12): a repeat this long survives a mismatch, going on at length 1
        # (below min_len: "recovering"); 0: a mismatch ends it
        self.recover = recover
        self.recoveries = 0  # (instrumentation for tests: repeats that survived a mismatch)
        self.table_mask = (1 << table_bits) - 1
        self.last_seen = [0] * (1 << table_bits)  # hash of min_len bytes -> position after them
        self.length = 0  # current repeat length, 0: none
        self.ptr = 0  # history position of the predicted byte
        self.byte = 0  # the predicted byte (meaningful while length > 0)
        self.confidence = AdaptiveProbabilities([1 << 21] * 64, 1023)  # by (bucket, expected bit)

    def expected_bit(self, low_half: bool, hi: int, j: int) -> int:
        """The bit the predicted byte has at node j, or -1 if no match or it left the path."""
        if self.length == 0:
            return -1
        return expected_bit_of(self.byte, low_half, hi, j)

    def expects(self) -> int:
        """Round 19: 1 + the predicted byte | its length bucket << 9; 0 without a repeat."""
        return (self.byte + 1) | (match_bucket(self.length) << 9) if self.length > 0 else 0

    def confidence_index(self, expected: int) -> int:
        return match_bucket(self.length) * 2 + expected

    def update(self, byte: int, h: ByteHistory) -> None:
        """After `byte` was appended to the history."""
        if self.length > 0:
            if self.byte == byte:
                self.length = min(self.length + 1, 65535)
                self.ptr += 1
            elif self.recover and self.length >= self.recover:
                self.recoveries += 1
                self.length = 1
                self.ptr += 1
            else:
                self.length = 0
        if h.pos < self.min_len:
            return
        key = 0
        for n in range(1, self.min_len + 1):
            key = hash32(key, h.at(h.pos - n))
        key &= self.table_mask
        if self.length < self.min_len:  # none, or recovering
            cand = self.last_seen[key]
            if cand > 0 and h.pos - cand < h.mask:
                # verify (the hash may collide): count agreeing bytes backwards, up to 32
                length = 0
                while length < 32 and cand - 1 - length >= 0 and \
                        h.at(cand - 1 - length) == h.at(h.pos - 1 - length):
                    length += 1
                if length >= self.min_len:
                    self.length = length
                    self.ptr = cand
        self.last_seen[key] = h.pos
        if self.length > 0:
            self.byte = h.at(self.ptr)


# ---- strength (issue 12): run inputs -------------------------------------------------------------

class RunModel:
    """Per context, the byte that last followed it and how many times in a row (one entry per
    context hash: check byte, byte, run length); while the path agrees with that byte, an input
    toward its bit, with a confidence learned by (run length bucket, nibble, expected bit)."""

    def __init__(self, ncontexts: int, table_bits: int):
        self.entries = [[0] * (1 << (table_bits - 4)) for _ in range(ncontexts)]
        self.mask = (1 << (table_bits - 4)) - 1
        self.current = [(0, 0, 0)] * ncontexts  # (index, byte, run) of the byte being coded
        self.confidence = [AdaptiveProbabilities([1 << 21] * 64, 1023) for _ in range(ncontexts)]

    def lookup(self, hashes: list) -> None:
        self.current = []
        for table, h in zip(self.entries, hashes):
            idx = h & self.mask
            check, byte, run = table[idx] & 255, (table[idx] >> 8) & 255, table[idx] >> 16
            if table[idx] == 0 or check != (h >> 24) & 255:
                byte, run = 0, 0
            self.current.append((idx, byte, run))

    def update(self, hashes: list, byte: int) -> None:
        for table, h, (idx, last, run) in zip(self.entries, hashes, self.current):
            run = min(run + 1, 255) if run > 0 and last == byte else 1
            table[idx] = ((h >> 24) & 255) | (byte << 8) | (run << 16)

    @staticmethod
    def index(run: int, low_half: bool, expected: int) -> int:
        return (min(run, 15) * 2 + int(low_half)) * 2 + expected

    def expected(self, i: int, low_half: bool, hi: int, j: int) -> int:
        _, byte, run = self.current[i]
        return expected_bit_of(byte, low_half, hi, j) if run > 0 else -1

    def inputs(self, low_half: bool, hi: int, j: int) -> list:
        out = []
        for i, (_, _, run) in enumerate(self.current):
            eb = self.expected(i, low_half, hi, j)
            out.append(self.confidence[i].stretched(self.index(run, low_half, eb)) if eb >= 0 else 0)
        return out

    def learn(self, low_half: bool, hi: int, j: int, bit: int) -> None:
        for i, (_, _, run) in enumerate(self.current):
            eb = self.expected(i, low_half, hi, j)
            if eb >= 0:
                self.confidence[i].update(self.index(run, low_half, eb), bit)


# ---- mixing -------------------------------------------------------------------------------------

class Mixer:
    """A gated linear mixer in the stretch domain: dot(weights[row], inputs) / 2^16, with the weight
    row chosen by a selector.  Rows are created on first use (all start equal), which behaves
    exactly like a preallocated table.  Fresh rows learn faster (boost, halved after `decay`
    updates)."""

    def __init__(self, initial_row: list, lr: int, boost: int, decay: int):
        self.initial_row = initial_row
        self.weights = {}
        self.counts = {}
        self.lr16 = lr * 16
        self.boost16 = boost * 16
        self.decay = decay

    def _row(self, row: int) -> list:
        if row not in self.weights:
            self.weights[row] = list(self.initial_row)
        return self.weights[row]

    def mix(self, row: int, inputs: list) -> int:
        w = self._row(row)
        total = 0
        for i in range(len(inputs)):
            total += w[i] * inputs[i]
        return clamp(total >> 16, -2047, 2047)

    def update(self, row: int, inputs: list, p12: int, bit: int) -> None:
        w = self._row(row)
        count = self.counts.get(row, 0)
        rate = self.lr16
        if self.boost16 > 0:
            rate += self.boost16 * self.decay // (self.decay + count)
        if count < 65535:
            self.counts[row] = count + 1
        err = ((bit << 12) - p12) * rate
        for i in range(len(inputs)):
            w[i] = clamp(w[i] + ((inputs[i] * err + (1 << 17)) >> 18), -WEIGHT_LIMIT, WEIGHT_LIMIT)


class FinalMixer:
    """Combines the first-layer mixers' outputs; weights chosen by the partial byte."""

    def __init__(self, nmixers: int, lr: int):
        self.weights = [[(1 << 16) // nmixers] * nmixers for _ in range(256)]
        self.lr = lr

    def stretched_sum(self, c0: int, stretched: list) -> int:
        """The mixed stretch value, before squashing (and before any clamp)."""
        total = 0
        for m in range(len(stretched)):
            total += self.weights[c0][m] * stretched[m]
        return total >> 16

    def mix(self, c0: int, stretched: list) -> int:
        return squash(self.stretched_sum(c0, stretched))

    def update(self, c0: int, stretched: list, p12: int, bit: int) -> None:
        err = ((bit << 12) - p12) * self.lr
        w = self.weights[c0]
        for m in range(len(stretched)):
            w[m] = clamp(w[m] + ((stretched[m] * err + 32768) >> 16), -WEIGHT_LIMIT, WEIGHT_LIMIT)


class APM:
    """Adaptive probability map: per row, 33 points over the stretch domain (16-bit
    probabilities), interpolated; the two points around the input learn."""

    INITIAL = [SQUASH[clamp((b - 16) * 128 + 2048, 0, 4095)] * 16 for b in range(33)]

    def __init__(self, rate: int):
        self.rows = {}  # created on first use, all starting as the identity map
        self.shift = 7 + rate

    def _row(self, row: int) -> list:
        if row not in self.rows:
            self.rows[row] = list(self.INITIAL)
        return self.rows[row]

    def refine(self, row: int, st: int, shift: int = 0) -> tuple:
        """(probability of 12 + shift bits, lower point, weight of the upper point) at stretch
        value st."""
        t = self._row(row)
        s = st + 2048
        lo, w = s >> 7, s & 127
        p = (t[lo] * (128 - w) + t[lo + 1] * w) >> (11 - shift)
        return clamp(p, 1, (4096 << shift) - 1), lo, w

    def update(self, row: int, lo: int, w: int, bit: int) -> None:
        t = self._row(row)
        target = bit << 16
        t[lo] = _int32(t[lo] + (((target - t[lo]) * (128 - w)) >> self.shift))
        t[lo + 1] = _int32(t[lo + 1] + (((target - t[lo + 1]) * w) >> self.shift))


# ---- the recurrent layer ------------------------------------------------------------------------

def rnn_sigmoid(x: float) -> float:
    """detmath's sigmoid table, linearly interpolated."""
    t = (x + 16.0) * 128.0
    if t <= 0.0:
        return SIGMOID[0]
    if t >= len(SIGMOID) - 2:
        return SIGMOID[len(SIGMOID) - 2]
    i = int(t)
    f = t - i
    return SIGMOID[i] + (SIGMOID[i + 1] - SIGMOID[i]) * f


class RecurrentLayer:
    """s(t) = sigmoid(U[byte] + W s(t-1)); node logits V[c0] . s(t) + b[c0].  V and b learn every
    node; U and W learn by back-propagation through time once a block of `bptt` bytes is full."""

    def __init__(self, hidden: int, bptt: int, lr: float):
        nh = self.nh = hidden
        u = deterministic_uniform(256 * nh, 1).tolist()
        w = deterministic_uniform(nh * nh, 2).tolist()
        self.U = [[u[b * nh + k] * 0.2 for k in range(nh)] for b in range(256)]
        self.W = [[w[k * nh + m] * 0.2 for m in range(nh)] for k in range(nh)]
        self.V = [[0.0] * nh for _ in range(256)]
        self.b = [0.0] * 256
        self.bptt = bptt
        self.lr = lr
        # the current block: states[0] is the state the block starts from; states[t] (t >= 1)
        # follows bytes[t]; grads[t] accumulates the error w.r.t. states[t]
        self.states = [[0.1] * nh]
        self.bytes = [0]
        self.grads = [[0.0] * nh]

    @property
    def state(self) -> list:
        return self.states[-1]

    def sign_pattern(self) -> int:
        """Which of the first four units are above 1/2."""
        pattern = 0
        for k in range(min(self.nh, 4)):
            if self.state[k] > 0.5:
                pattern |= 1 << k
        return pattern

    def logit(self, c0: int) -> float:
        z = self.b[c0]
        for k in range(self.nh):
            z += self.V[c0][k] * self.state[k]
        return z

    def learn_node(self, c0: int, z: float, bit: int) -> None:
        e = bit - rnn_sigmoid(z)
        s = self.state
        g = self.grads[-1]
        v = self.V[c0]
        for k in range(self.nh):
            g[k] += e * v[k]
            v[k] += self.lr * e * s[k]
        self.b[c0] += self.lr * e

    def advance(self, byte: int) -> None:
        if len(self.states) - 1 >= self.bptt:
            self._backprop()
        prev = self.state
        new = []
        for k in range(self.nh):
            acc = self.U[byte][k]
            for m in range(self.nh):
                acc += self.W[k][m] * prev[m]
            new.append(rnn_sigmoid(acc))
        self.states.append(new)
        self.bytes.append(byte)
        self.grads.append([0.0] * self.nh)

    def _backprop(self) -> None:
        nh = self.nh
        delta_next = [0.0] * nh
        for t in range(len(self.states) - 1, 0, -1):
            s = self.states[t]
            delta = []
            for k in range(nh):
                g = self.grads[t][k]
                for m in range(nh):
                    g += self.W[m][k] * delta_next[m]
                delta.append(clamp(g * s[k] * (1.0 - s[k]), -15.0, 15.0))
            # U and W change only after this step's deltas were computed with the old W
            prev = self.states[t - 1]
            for k in range(nh):
                dk = self.lr * delta[k]
                self.U[self.bytes[t]][k] += dk
                for m in range(nh):
                    self.W[k][m] += dk * prev[m]
            delta_next = delta
        self.states = [self.states[-1]]
        self.bytes = [0]
        self.grads = [[0.0] * nh]


# ---- the predictor ------------------------------------------------------------------------------

class NodeRecord:
    """What a node's prediction used, kept for learning once its bit is known."""

    __slots__ = ("c0", "inputs", "expected", "rows", "stretched", "probs", "pmix", "apm1", "apm2",
                 "z", "chain", "direct")


class ReferencePredictor:
    """Same interface and the same probabilities as `Predictor`, slowly."""

    def __init__(self, params: ModelParams):
        self.params = p = params.validate()
        states = StateTable(p.state_table)
        self.next_state = states.next_state.tolist()
        self.deterministic = states.deterministic.tolist()
        priority = states.priority.tolist()
        # round 20: the FollowWords bits whose reader is there
        reads_follower = Context.WORD_PREDICTED in p.contexts or p.mixer_select >> Selector.FOLLOWER & 1
        used = (p.follow_words & (FollowWords.PAIR | FollowWords.TRIPLE) if reads_follower else 0) | (
            p.follow_words & FollowWords.WORD_PAIR if Context.WORD_FOLLOWER in p.contexts else 0)
        self.history = ByteHistory(p.history_bits, used)
        self.contexts = list(p.contexts)
        self.slots = [ContextSlots(p.table_bits, priority) for _ in self.contexts]
        self.state_maps = [StateMap(states, p.sm_limit) for _ in self.contexts]
        self.context_hashes = [0] * len(self.contexts)
        self.order0 = AdaptiveProbabilities([1 << 21] * 256, 255)
        self.match = MatchModel(p.match_min, p.match_bits, p.match_recover) if p.match_min else None
        # strength (issue 12): run inputs, the SSE chain
        self.runs = RunModel(len(self.contexts), p.table_bits) if p.run_inputs else None
        self.chain = {bit: APM(p.apm_rate) for bit in (CHAIN_ORDER3, CHAIN_MATCH, CHAIN_WORD, CHAIN_ORDER4)
                      if p.apm_chain & bit}
        self.chain_weight = p.apm_chain_weight
        # round 18: apm_chain_bits > 0 sizes the hashed members with the context tables
        self.chain_mask = (1 << (min(p.apm_chain_bits, p.table_bits - 4) if p.apm_chain_bits else 18)) - 1
        self.rnn = RecurrentLayer(p.rnn_hidden, p.rnn_bptt, p.rnn_lr_micro * 1e-6) \
            if p.rnn_hidden else None
        self.expert = ExpertInMix(p) if p.rnnme_hidden else None  # branch neural2
        # round 15 (issue 12): the direct maps of orders 1 and 2
        self.direct1 = AdaptiveProbabilities([1 << 21] * (1 << 16), 255) if p.direct_order1 else None
        self.direct2 = AdaptiveProbabilities([1 << 21] * (1 << min(p.direct_order2_bits, p.table_bits - 2)),
                                             255) if p.direct_order2_bits else None
        # mixer inputs: per context (stretch(p), + the same if deterministic, + linear p), then
        # order 0, the run inputs, match, recurrent, the expert, the direct maps, bias; weights
        # start at 1/4 on the first input of each context, on every shared input (round 16: at 0
        # where mixer_zero_start says so) and on the bias, at 0 on the rest
        ci = p.ctx_inputs
        initial = []
        first = (1 << 14) if not p.mixer_init else ((1 << 16) * p.mixer_init) // (16 * len(self.contexts))
        for _ in self.contexts:
            initial += [first] + [0] * (ci - 1)

        def shared(bit):
            return 0 if p.mixer_zero_start & bit else 1 << 14

        initial += [shared(ZeroStart.ORDER0)]
        if self.runs is not None:  # strength (issue 12): run inputs start at 0
            initial += [0] * len(self.contexts)
        if self.match is not None:
            initial += [shared(ZeroStart.MATCH)]
        if self.rnn is not None:
            initial += [shared(ZeroStart.RNN)]
        if self.expert is not None:  # branch neural2: the expert's inputs
            initial += [shared(ZeroStart.EXPERT)] * self.expert.inputs
        # round 15: the direct maps' inputs start at 0, just before the bias
        initial += [0] * ((self.direct1 is not None) + (self.direct2 is not None))
        initial += [1 << 14]  # bias
        self.selectors = p.selectors
        self.mixers = [Mixer(initial, p.mixer_lr, p.mixer_lr_boost, p.mixer_lr_decay)
                       for _ in self.selectors]
        self.final = FinalMixer(len(self.selectors), p.final_lr)
        self.apm1 = APM(p.apm_rate)
        self.apm1_by_prev_byte = p.apm1_order == 1
        self.apm2 = APM(p.apm_rate)
        self.weight_mix = 16 - p.apm1_weight - p.apm2_weight
        self.weight_apm1 = p.apm1_weight
        self.weight_apm2 = p.apm2_weight
        self.shift = p.probability_bits - 12  # round 21: final probabilities of 12 + shift bits
        if self.expert is not None:
            self.expert.shift = self.shift
        self.low_half = False  # predicting the high nibble (False) or the low one (True)
        self.hi = 0  # the byte's high nibble, once known
        self.nodes = {}  # node j -> NodeRecord of the last prediction
        self._pending = -1

    # -- the Predictor interface --

    def predict_next(self) -> list:
        """Learn the pending nibble (if any), then return the next nibble's 16 probabilities."""
        if self._pending >= 0:
            self._learn_nibble(self._pending)
            if not self.low_half:
                self.hi = self._pending
                self.low_half = True
            else:
                self._learn_byte((self.hi << 4) | self._pending)
                self.low_half = False
                self.hi = 0
                self._hash_contexts()
        else:
            self._hash_contexts()
        if self.expert is not None and self.expert.pure:  # branch neural2: the expert alone
            return self.expert.predict(self.low_half, self.hi)
        salt = 1 + self.hi if self.low_half else 0
        # round 22: an upper-case high nibble salts as its lower-case one in the folded contexts
        fold = self._case_fold_now() if self.low_half and self.hi in (4, 5) else 0
        for i, (slots, h) in enumerate(zip(self.slots, self.context_hashes)):
            slots.claim(hash32(h, salt + 2 if (fold >> i) & 1 else salt))
        return self._predict_nibble()

    def learn(self, nibble: int) -> None:
        self._pending = nibble

    def state_by_field(self) -> dict:
        """The learned state under the names of the fast model's state declaration
        (`state.FIELDS` with twin=True): field -> [(index, expected value of array[index]), ...].
        Components that are off contribute no entries; rows never touched are left out."""
        h = self.history
        s = {name: [] for name in (
            "hist", "ind", "tables", "sm_p", "sm_n", "o0_p", "o0_n", "match_table", "msm_p",
            "msm_n", "mixw", "mixn", "fmixw", "apm1", "apm2", "rnn_u", "rnn_w", "rnn_v", "rnn_b",
            "rnn_s", "rnn_x", "rnn_g",
            # strength (issue 12)
            "run_table", "run_p", "run_n", "apm_o3", "apm_match", "apm_word", "apm_o4",
            # round 15 (issue 12)
            "o1_p", "o1_n", "o2_p", "o2_n",
            # round 17 (issue 12)
            "word_followers",
            # round 18 (issue 12)
            "follower_starts")}
        for name, direct_map in (("o1", self.direct1), ("o2", self.direct2)):
            if direct_map is not None:
                s[name + "_p"].append((..., direct_map.p))
                s[name + "_n"].append((..., direct_map.n))
        if self.runs is not None:
            for i, table in enumerate(self.runs.entries):
                s["run_table"].append((i, table))
                s["run_p"].append((i, self.runs.confidence[i].p))
                s["run_n"].append((i, self.runs.confidence[i].n))
        for bit, name in ((CHAIN_ORDER3, "apm_o3"), (CHAIN_MATCH, "apm_match"),
                          (CHAIN_WORD, "apm_word"), (CHAIN_ORDER4, "apm_o4")):
            if bit in self.chain:
                for row, points in self.chain[bit].rows.items():
                    s[name].append((row, points))
        s.update(ExpertInMix.state_by_field(self.expert))  # branch neural2
        s["hist"].append((..., list(h.buffer)))
        s["ind"].append((..., h.followers1 + h.followers2))
        if Context.WORD_FOLLOWER in self.contexts:  # round 17
            s["word_followers"].extend(h.word_followers.items())
            s["word_followers"].extend(_checked_entries(h.pair_followers, 1, 0))
        if Context.WORD_PREDICTED in self.contexts or self.params.mixer_select >> Selector.FOLLOWER & 1:
            s["follower_starts"].extend((k, v + 1) for k, v in h.follower_starts.items())
            s["follower_starts"].extend(_checked_entries(h.pair_starts, 1, 1))
            s["follower_starts"].extend(_checked_entries(h.triple_starts, 2, 1))
        for i, (slots, smap) in enumerate(zip(self.slots, self.state_maps)):
            s["tables"].append((i, list(slots.table)))
            s["sm_p"].append((i, smap.p))
            s["sm_n"].append((i, smap.n))
        s["o0_p"].append((..., self.order0.p))
        s["o0_n"].append((..., self.order0.n))
        if self.match is not None:
            s["match_table"].append((..., self.match.last_seen))
            s["msm_p"].append((..., self.match.confidence.p))
            s["msm_n"].append((..., self.match.confidence.n))
        base = 0  # the fast model stacks the selectors' weight rows in mixer order
        for kind, mixer in zip(self.selectors, self.mixers):
            for row, weights in mixer.weights.items():
                s["mixw"].append((base + row, weights))
            for row, count in mixer.counts.items():
                s["mixn"].append((base + row, count))
            base += SELECTOR_ROWS[kind]
        if len(self.mixers) > 1:
            s["fmixw"].append(((slice(None), slice(0, len(self.mixers))), self.final.weights))
        for name, apm in (("apm1", self.apm1), ("apm2", self.apm2)):
            for row, points in apm.rows.items():
                s[name].append((row, points))
        if self.rnn is not None:
            rnn = self.rnn
            steps = slice(0, len(rnn.states))
            for name, value in (("rnn_u", rnn.U), ("rnn_w", rnn.W), ("rnn_v", rnn.V), ("rnn_b", rnn.b)):
                s[name].append((..., value))
            for name, value in (("rnn_s", rnn.states), ("rnn_x", rnn.bytes), ("rnn_g", rnn.grads)):
                s[name].append((steps, value))
        return s

    # -- internals --

    def _hash_contexts(self) -> None:
        expects = self.match.expects() if self.match is not None else 0
        self.context_hashes = [context_hash(kind, self.history, expects) for kind in self.contexts]
        if self.runs is not None:  # strength (issue 12)
            self.runs.lookup(self.context_hashes)

    def _learn_byte(self, byte: int) -> None:
        if self.expert is not None:
            self.expert.twin.learn(byte)
            if self.expert.pure:
                return
        if self.runs is not None:  # strength (issue 12): still the coded byte's context hashes
            self.runs.update(self.context_hashes, byte)
        self.history.append(byte)
        if self.match is not None:
            self.match.update(byte, self.history)
            if self.expert is not None:  # branch expert4: what its match features see next
                m = self.match
                self.expert.twin.match_code = ((m.byte + 1) << 5 | match_bucket(m.length)) \
                    if m.length > 0 else 0
        if self.rnn is not None:
            self.rnn.advance(byte)

    def _selector_row(self, kind: int, c0: int, j: int, seen: int, expected: int, pattern: int) -> int:
        c1 = self.history.last4 & 0xFF
        if kind == Selector.PARTIAL_BYTE:
            return c0
        if kind == Selector.MATCH:
            length = self.match.length if self.match is not None else 0
            return (match_bucket(length) if length > 0 else 0) * 3 + expected + 1
        if kind == Selector.PREV_BYTE:
            return (c1 << 8) | c0
        if kind == Selector.SEEN:
            return (seen << 5) | (int(self.low_half) << 4) | j
        if kind == Selector.RNN_SIGNS:
            return (pattern << 8) | c0
        c2 = (self.history.last4 >> 8) & 0xFF
        if kind == Selector.BYTE2:
            return (c2 << 8) | c0
        if kind == Selector.CLASSES:
            return ((self.history.classes & 0x1FF) << 8) | c0
        if kind == Selector.RNNME:
            return (self.expert.code << 8) | c0
        h = self.history
        if kind == Selector.COLUMN_ABOVE:  # strength round 4 (issue 12)
            above = h.prev_line_start + h.column
            above_class = 1 + byte_class(h.at(above)) if above < h.line_start else 0
            return (((above_class << 3) | column_bucket(h.column)) << 8) | c0
        if kind == Selector.WORD_STATE:
            last, before = h.last4 & 0xFF, (h.last4 >> 8) & 0xFF
            if last >= 0x80:  # inside a UTF-8 word: where the next byte falls in its character
                place = 1 if last >= 0xC0 else (2 if before >= 0xE0 else 0)
                return ((128 | min(h.sentence_words, 7) | (place << 3)) << 8) | c0
            state = (min(h.sentence_words, 7) | (h.word_cap << 3) | ((h.caps & 1) << 4)
                     | (h.quote << 5) | (int(h.word != 0) << 6))
            return (state << 8) | c0
        if kind == Selector.ABOVE_BYTE:
            above = h.prev_line_start + h.column
            return ((1 + h.at(above) if above < h.line_start else 0) << 8) | c0
        if kind == Selector.LINE_CLASSES:
            first = 1 + byte_class(h.at(h.line_start)) if h.column > 0 else 0
            second = 1 + byte_class(h.at(h.line_start + 1)) if h.column > 1 else 0
            return ((((first * 9 + second) << 3) | column_bucket(h.column)) << 8) | c0
        if kind == Selector.FOLLOWER:  # round 18
            return ((h.follower_expects() & 0x1FF) << 8) | c0
        return ((self.history.class_runs & 0x1FF) << 8) | c0

    def _case_fold_now(self) -> int:
        """Round 22: the contexts that fold case for the next byte: case_fold in a sentence's
        first word and inside an all-capitals word (the last byte A-Z), else none."""
        last = self.history.last4 & 0xFF
        if self.history.sentence_words == 0 or 65 <= last <= 90:
            return self.params.case_fold
        if self.params.case_fold_gate & 1:
            # round 23: nor any letter or digit since the last control byte (line break, tab) of
            # the last eight bytes
            for k in range(min(8, self.history.pos)):
                cls = byte_class(self.history.byte_back(k + 1))
                if cls == CharClass.CONTROL:
                    return self.params.case_fold
                if cls in (CharClass.LOWER, CharClass.UPPER, CharClass.DIGIT):
                    return 0
        return 0

    def _folded_node(self, i: int, j: int) -> int:
        """Round 22 (case_fold): in a folded context the high nibble's node that splits 0x4_ from
        0x5_ keeps its history where the one splitting 0x6_ from 0x7_ does."""
        if not self.low_half and j == 10 and (self._case_fold_now() >> i) & 1:
            return 11
        return j

    def _predict_node(self, j: int, pattern: int) -> int:
        p = self.params
        c1 = self.history.last4 & 0xFF
        c2 = (self.history.last4 >> 8) & 0xFF
        node = NodeRecord()
        node.c0 = c0 = partial_byte(self.low_half, self.hi, j)
        inputs = []
        seen = 0
        for i, (slots, smap) in enumerate(zip(self.slots, self.state_maps)):
            s = slots.state(self._folded_node(i, j))
            p12 = smap.p12(s)
            st = smap.stretched(s)
            inputs.append(st)
            if p.ctx_inputs >= 2:
                inputs.append(st * self.deterministic[s])
            if p.ctx_inputs >= 3:
                inputs.append((p12 - 2048) >> 2)
            if s != 0:
                seen += 1
        inputs.append(self.order0.stretched(c0))
        if self.runs is not None:  # strength (issue 12)
            inputs += self.runs.inputs(self.low_half, self.hi, j)
        node.expected = -1
        if self.match is not None:
            node.expected = self.match.expected_bit(self.low_half, self.hi, j)
            if node.expected >= 0:
                inputs.append(self.match.confidence.stretched(self.match.confidence_index(node.expected)))
            else:
                inputs.append(0)
        node.z = 0.0
        if self.rnn is not None:
            node.z = self.rnn.logit(c0)
            inputs.append(int(clamp(node.z * 256.0, -2047.0, 2047.0)))
        if self.expert is not None:
            inputs += self.expert.inputs_at(j)
        node.direct = []  # round 15 (issue 12): (map, entry) of each direct map that is on
        if self.direct1 is not None:
            node.direct.append((self.direct1, (c1 << 8) | c0))
        if self.direct2 is not None:
            node.direct.append((self.direct2, hash32(self.history.last4 & 0xFFFF, c0)
                                & (len(self.direct2.p) - 1)))
        for direct_map, k in node.direct:
            inputs.append(direct_map.stretched(k))
        inputs.append(256)
        node.inputs = inputs
        node.rows, node.stretched, node.probs = [], [], []
        for kind, mixer in zip(self.selectors, self.mixers):
            row = self._selector_row(kind, c0, j, seen, node.expected, pattern)
            # the fast model stacks the selectors' rows in one array: a row past its block would
            # silently train the next selector's weights there
            assert 0 <= row < SELECTOR_ROWS[kind], (Selector(kind).name, row)
            x = mixer.mix(row, inputs)
            node.rows.append(row)
            node.stretched.append(x)
            node.probs.append(SQUASH[x + 2048])
        if len(self.mixers) > 1:
            x = self.final.stretched_sum(c0, node.stretched)
            node.pmix = squash(x)
            pm_fine = SQUASH16[clamp(x, -4095, 4095) + 4096]  # round 21
        else:
            node.pmix = node.probs[0]
            pm_fine = node.pmix << 4
        st = STRETCH[node.pmix]
        shift, top = self.shift, (4096 << self.shift) - 1
        row1 = (c1 << 8) | c0 if self.apm1_by_prev_byte else c0
        row2 = hash32(c0, c1 | (c2 << 8)) & 0xFFFF
        p1, lo1, w1 = self.apm1.refine(row1, st, shift)
        p2, lo2, w2 = self.apm2.refine(row2, st, shift)
        node.apm1 = (row1, lo1, w1)
        node.apm2 = (row2, lo2, w2)
        self.nodes[j] = node
        mixed = (pm_fine if shift else node.pmix) * self.weight_mix + p1 * self.weight_apm1 + p2 * self.weight_apm2
        p_final = clamp((mixed + 8) >> 4, 1, top)
        node.chain = []
        if self.chain:  # strength (issue 12): the SSE chain's average takes its share
            total = 0
            for bit, apm in self.chain.items():
                row = self._chain_row(bit, c0, j)
                pk, lo, w = apm.refine(row, st, shift)
                node.chain.append((bit, row, lo, w))
                total += pk
            average = total // len(self.chain)
            p_final = clamp((p_final * (16 - self.chain_weight) + average * self.chain_weight + 8) >> 4,
                            1, top)
        if self.expert is not None and self.expert.apm_weight:
            p_final = self.expert.refine(j, c0, p_final)
        return p_final

    def _chain_row(self, bit: int, c0: int, j: int) -> int:
        """The row of SSE-chain APM `bit` (strength, issue 12)."""
        last4 = self.history.last4
        if bit == CHAIN_ORDER3:
            return hash32(c0 + 0x300, last4 & 0xFFFFFF) & self.chain_mask
        if bit == CHAIN_MATCH:
            length = self.match.length if self.match is not None else 0
            expected = -1
            if length > 0:
                expected = expected_bit_of(self.match.byte, self.low_half, self.hi, j)
            return ((match_bucket(length) * 3 + expected + 1) << 8) | c0
        if bit == CHAIN_WORD:
            return hash32(c0 + 0x500, self.history.word + (last4 & 0xFF) * 0x10000 + 1) & self.chain_mask
        return hash32(c0 + 0x400, last4) & self.chain_mask

    def _predict_nibble(self) -> list:
        pattern = self.rnn.sign_pattern() if self.rnn is not None else 0
        if self.expert is not None:
            self.expert.twin.context_hashes = self.context_hashes  # branch expert4
            self.expert.predict(self.low_half, self.hi)
        p_one = [0] * 16  # P(bit = 1) at each node, of 2^(12 + shift)
        for j in range(1, 16):
            p_one[j] = self._predict_node(j, pattern)
        out = []
        for v in range(16):
            prob = 1.0
            j = 1
            for depth in range(4):
                bit = (v >> (3 - depth)) & 1
                prob *= p_one[j] if bit else (4096 << self.shift) - p_one[j]
                j = 2 * j + bit
            out.append(prob)
        return out

    def _learn_nibble(self, value: int) -> None:
        if self.expert is not None and self.expert.pure:
            return  # branch neural2: nothing but the expert learns (in _learn_byte)
        j = 1
        for depth in range(4):
            bit = (value >> (3 - depth)) & 1
            node = self.nodes[j]
            for i, (slots, smap) in enumerate(zip(self.slots, self.state_maps)):
                k = self._folded_node(i, j)
                s = slots.state(k)
                smap.update(s, bit)
                slots.set_state(k, self.next_state[s][bit])
            self.order0.update(node.c0, bit)
            if node.expected >= 0:
                self.match.confidence.update(self.match.confidence_index(node.expected), bit)
            for m, mixer in enumerate(self.mixers):
                mixer.update(node.rows[m], node.inputs, node.probs[m], bit)
            if len(self.mixers) > 1:
                self.final.update(node.c0, node.stretched, node.pmix, bit)
            self.apm1.update(*node.apm1, bit)
            self.apm2.update(*node.apm2, bit)
            for chain_bit, row, lo, w in node.chain:  # strength (issue 12)
                self.chain[chain_bit].update(row, lo, w, bit)
            if self.runs is not None:
                self.runs.learn(self.low_half, self.hi, j, bit)
            if self.rnn is not None:
                self.rnn.learn_node(node.c0, node.z, bit)
            if self.expert is not None and self.expert.apm_weight:
                self.expert.apm.update(*self.expert.apm_points[j], bit)
            for direct_map, k in node.direct:  # round 15 (issue 12)
                direct_map.update(k, bit)
            j = 2 * j + bit


# ---- branch neural2: the RNNME expert in the mix ------------------------------------------------

class ExpertInMix:
    """The RNNME expert (its own twin, reference_rnnme.TwinRNNME) as the predictor uses it: per
    nibble its 16-way distribution, per node the 12-bit probability of the 1 bit (float64 subtree
    masses, truncated), the (most likely nibble, confidence) code, and the APM on that code."""

    CONFIDENCE = (0.4, 0.7, 0.9)

    def __init__(self, p: ModelParams):
        from . import rnnme_config
        from .reference_rnnme import TwinRNNME

        self.twin = TwinRNNME(rnnme_config.from_model(p))
        self.pure = bool(p.rnnme_pure)
        self.inputs = 0 if self.pure else p.rnnme_inputs
        self.apm_weight = p.rnnme_apm_weight
        self.apm = APM(p.apm_rate)
        self.apm_points = {}
        self.code = 0
        self.p12 = [0] * 16
        self.shift = 0  # round 21: the mix's final probabilities have 12 + shift bits

    def predict(self, low_half: bool, hi: int) -> list:
        dist = self.twin.predict_low(hi) if low_half else self.twin.predict_high()
        best = 0
        for v in range(1, 16):
            if dist[v] > dist[best]:
                best = v
        self.code = best * 4 + sum(dist[best] >= c for c in self.CONFIDENCE)
        mass = [0.0] * 16 + list(dist)
        for j in range(15, 0, -1):
            mass[j] = mass[2 * j] + mass[2 * j + 1]
        self.p12 = [0] + [clamp(int(mass[2 * j + 1] / mass[j] * 4096.0), 1, 4095)
                          for j in range(1, 16)]
        return list(dist)

    def inputs_at(self, j: int) -> list:
        p12 = self.p12[j]
        return [STRETCH[p12], (p12 - 2048) >> 2][: self.inputs]

    def refine(self, j: int, c0: int, p: int) -> int:
        row = (self.code << 8) | c0
        pa, lo, w = self.apm.refine(row, STRETCH[p >> self.shift], self.shift)
        self.apm_points[j] = (row, lo, w)
        return clamp((p * (16 - self.apm_weight) + pa * self.apm_weight + 8) >> 4, 1, (4096 << self.shift) - 1)

    @staticmethod
    def state_by_field(expert) -> dict:
        names = ("u1", "w", "vh", "bh", "vl", "bl", "me", "me_n", "hs")
        s = {"rn_" + name: [] for name in names}
        s["rn_apm"] = []
        if expert is None:
            return s
        t = expert.twin
        for name in ("u1", "w", "vh", "bh", "vl", "bl", "me", "me_n"):
            s["rn_" + name].append((..., getattr(t, name)))
        s["rn_hs"].append((slice(0, len(t.states)), t.states))
        for row, points in expert.apm.rows.items():
            s["rn_apm"].append((row, points))
        return s
