"""The model's vocabulary, named once: context kinds, mixer weight-set selectors, character classes.

The numbers are part of the archive format (headers record context kinds and the selector mask),
so a member's value never changes; new kinds and selectors get new numbers.  Kernels, presets,
the reference twin and the docs all use these names.  No numba here: the command line imports it.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag


class Context(IntEnum):
    """What a hashed context table is keyed by.  ORDER1..ORDER16: the previous n bytes."""

    ORDER1 = 1
    ORDER2 = 2
    ORDER3 = 3
    ORDER4 = 4
    ORDER5 = 5
    ORDER6 = 6
    ORDER7 = 7
    ORDER8 = 8
    ORDER9 = 9
    ORDER10 = 10
    ORDER11 = 11
    ORDER12 = 12
    ORDER13 = 13
    ORDER14 = 14
    ORDER15 = 15
    ORDER16 = 16
    WORD = 32  # the current (partial) word, case-folded; the previous byte between words
    WORD_BIGRAM = 33  # previous word + current partial word
    SPARSE_SKIP1 = 34  # bytes 2 and 3 back (skipping the last byte)
    SPARSE_GAP = 35  # bytes 1 and 3 back
    COLUMN = 36  # column in the line + the byte above it in the previous line
    WORD_ORDER1 = 37  # current partial word + previous byte + the byte before the word
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
    # strength (issue 12): text structure
    SENTENCE_WORD = 52  # current word + words since the sentence began + capitalisation of the last words
    NESTING_WORD = 53  # current word + bracket/quote nesting + previous byte
    # strength round 4 (issue 12)
    FOLDED_ORDER3 = 54  # the last three bytes, letters case-folded
    FOLDED_ORDER5 = 55  # the last five bytes, letters case-folded
    LINE_PREFIX = 56  # the first two bytes of the current line + the last two bytes
    LINE_WORD = 57  # the first two bytes of the current line + the current partial word
    ABOVE_ORDER2 = 58  # the two bytes above (previous line, this column and the next) + the last two bytes
    # strength round 5 (issue 12)
    WORD_QUADGRAM = 59  # three previous words + current partial word
    LETTERS = 60  # the last six letters (case-folded, whatever lies between them) + the previous byte
    WORD_SEPARATED = 61  # previous word + the bytes after it (its last three) + current partial word
    # strength round 7 (issue 12): the previous word's stem (contexts.word_stem)
    STEM_WORD = 62  # previous word's stem + current partial word, or the previous byte between words
    # strength round 17 (issue 12): the shape of the sentence around the current word
    # capitalisation of the last words + words since the sentence began + the current word's first
    # letter's case and length (up to 3) + character classes of the last three bytes
    WORD_SHAPE = 63
    PUNCT_WORD = 64  # the last , ; : . ! ? + words since it + current partial word (or previous byte)
    PUNCT_BIGRAM = 65  # PUNCT_WORD's punctuation and count + previous word + current partial word
    WORD_FOLLOWER = 66  # the word that followed the previous word last time + current partial word
    # round 18: the byte that word has next where the current word still agrees with it (with how
    # many bytes agree) + current partial word, or the previous byte between words
    WORD_PREDICTED = 67
    # round 19: the byte the match model expects (with its length bucket; none: 0) + current
    # partial word, or the previous byte between words, or after a byte >= 128 (inside a UTF-8
    # character) the last two bytes
    MATCH_PREDICTED = 68
    # round 23: the first words of the last two paragraphs (after a blank line) + the current
    # partial word, in a paragraph's first word (a play's speaker follows the speakers before);
    # elsewhere the current paragraph's first word + the current partial word
    PARAGRAPH_HEADS = 69
    # round 24: in a line's first word, the first words of the last two lines that had a word +
    # the current partial word (news headers, troff requests, verse); elsewhere the line's first
    # word + the current partial word.  (70 and 71 were screened: bench/TUNING.md, round 24)
    LINE_HEADS = 72


MAX_ORDER = 16
MAX_CONTEXTS = 40  # 32 until round 17
FOLLOWER_MASK = (1 << 16) - 1  # WORD_FOLLOWER's table: 2^16 words, by a word hash's low bits


class Selector(IntEnum):
    """First-layer mixers: what chooses each one's weight set (bit k of ModelParams.mixer_select).
    With more than one, a final mixer (weights chosen by the partial byte) combines them."""

    PARTIAL_BYTE = 0  # the bits of the byte known so far
    MATCH = 1  # match length bucket x the bit the match model expects
    PREV_BYTE = 2  # previous byte x partial byte
    SEEN = 3  # how many contexts have seen this node x node
    RNN_SIGNS = 4  # sign pattern of four recurrent units x partial byte
    BYTE2 = 5  # the byte two back x partial byte
    CLASSES = 6  # character classes of the last three bytes x partial byte
    CLASS_RUNS = 7  # classes of the last three same-class runs x partial byte
    # branch neural2: the RNNME expert's most likely nibble x its confidence (4) x partial byte
    RNNME = 8
    # strength round 4 (issue 12)
    COLUMN_ABOVE = 9  # class of the byte above (in the previous line) x column bucket x partial byte
    # words into the sentence x capitalisation x inside quotes x in a word x partial byte; after a
    # UTF-8 byte, words into the sentence x the next byte's place in its character instead
    WORD_STATE = 10
    ABOVE_BYTE = 11  # the byte above (previous line, same column) x partial byte
    LINE_CLASSES = 12  # classes of the line's first two bytes x column bucket x partial byte
    # round 18: the byte WORD_PREDICTED's word has next (0: none) x partial byte
    FOLLOWER = 13


# weight rows each selector chooses among (SEEN: up to MAX_CONTEXTS + 1 counts x 32 nodes)
SELECTOR_ROWS = {
    Selector.PARTIAL_BYTE: 256,
    Selector.MATCH: 32 * 3,
    Selector.PREV_BYTE: 1 << 16,
    Selector.SEEN: (MAX_CONTEXTS + 1) * 32,
    Selector.RNN_SIGNS: 16 << 8,
    Selector.BYTE2: 1 << 16,
    Selector.CLASSES: 1 << 17,
    Selector.CLASS_RUNS: 1 << 17,
    Selector.RNNME: 64 << 8,  # branch neural2
    Selector.COLUMN_ABOVE: 72 << 8,  # 1 + 8 classes (0: no byte above) x 8 column buckets
    Selector.WORD_STATE: 152 << 8,  # 128 word states + 8 sentence positions x 3 UTF-8 places
    Selector.ABOVE_BYTE: 257 << 8,
    Selector.LINE_CLASSES: 648 << 8,  # 9 x 9 class pairs x 8 column buckets
    Selector.FOLLOWER: 257 << 8,  # 1 + the expected byte (0: none)
}
MAX_SELECTORS = len(Selector)


def selector_mask(*selectors: Selector) -> int:
    """The ModelParams.mixer_select value that turns on these first-layer mixers."""
    mask = 0
    for s in selectors:
        mask |= 1 << Selector(s)
    return mask


class ZeroStart(IntFlag):
    """Round 16 (issue 12): the shared mixer inputs whose weights start at 0 instead of 1/4
    (ModelParams.mixer_zero_start, a bit mask)."""

    ORDER0 = 1  # the order-0 map
    MATCH = 2  # the match model
    RNN = 4  # the old recurrent layer
    EXPERT = 8  # the RNNME expert's inputs


class FollowWords(IntFlag):
    """Round 20 (issue 12): what the follower tables are also keyed by (ModelParams.follow_words,
    a bit mask).  Each longer key has its own table section with a 16-bit check, and is read
    first: a word seen after these very words beats one seen after the last word alone."""

    PAIR = 1  # the follower read byte by byte (WORD_PREDICTED, Selector.FOLLOWER): the last two words
    TRIPLE = 2  # the same, the last three words (before the pair)
    WORD_PAIR = 4  # the follower word of WORD_FOLLOWER: the last two words


class CharClass(IntEnum):
    """Character classes of bytes (the CLASS_* contexts and the CLASSES/CLASS_RUNS selectors)."""

    SPACE = 0
    CONTROL = 1
    LOWER = 2
    UPPER = 3
    DIGIT = 4
    PUNCTUATION = 5  # . , ! ? ; :
    OTHER_ASCII = 6
    HIGH = 7  # bytes >= 128
