"""Context hashing: what the model knows about the bytes so far, and one hash per context.

Byte-level registers (the last eight bytes, words, lines, character classes) and the indirect
contexts' follower tables are updated once per byte (`append_byte`); `byte_context_hashes` then
hashes every context (`kinds.Context`) for the byte about to be coded.
"""

from __future__ import annotations

from .jit import kernel
from .kinds import FOLLOWER_MASK, CharClass, Context, FollowWords
from .state import (C_HIST_BITS, C_KINDS, C_NCTX, R_C4, R_C8, R_CLASS_RUNS, R_CLASSES, R_COLUMN,
                    R_LINE_START, R_POS, R_PREV_LINE_START, R_WORD, R_WORD1, R_WORD2,
                    R_WORD_PREFIX)
from .state import R_CAPS, R_NEST, R_SENTENCE_WORDS, R_WORD_CAP  # strength (issue 12)
from .state import R_ABOVE, R_ABOVE_CLASS, R_LINE_CLASSES  # strength round 4 (issue 12)
from .state import R_LETTERS, R_SEPARATOR, R_WORD3  # strength round 5 (issue 12)
from .state import C_WORD_STEMS, R_STEM1, R_WORD_START  # strength round 7 (issue 12)
from .state import R_PUNCT  # strength round 17 (issue 12)
from .state import R_MATCH_EXPECT  # round 19 (issue 12)
from .state import R_PARAGRAPH, R_PARAGRAPH_HEAD1, R_PARAGRAPH_HEAD2  # round 23
from .state import R_LINE_HEAD, R_LINE_HEAD1, R_LINE_HEAD2  # round 24
from .state import C_FOLLOW_WORDS, R_FOLLOW_WORD  # round 20 (issue 12)
from .state import C_FOLLOW, R_FOLLOW_AGREE, R_FOLLOW_BYTE, R_FOLLOW_START  # round 18 (issue 12)

MASK32 = 0xFFFFFFFF
FOLLOW_VALUE_BITS = (1 << 40) - 1  # round 20: a checked follower entry's value; its check above
# round 20: kinds.FollowWords as plain integers for the kernels
FOLLOW_PAIR, FOLLOW_TRIPLE, FOLLOW_WORD_PAIR = (int(FollowWords.PAIR), int(FollowWords.TRIPLE),
                                                int(FollowWords.WORD_PAIR))
WORD_BETWEEN_WORDS = 320  # salt of the WORD context between words (keyed by the previous byte)


@kernel(inline=True)
def hash2(a, b):
    """32-bit mix of two 32-bit values (operands kept below 2^63 so int64 never overflows)."""
    h = ((a & MASK32) * 0x2E2E7B3 + (b & MASK32) * 0x5BD1E995 + 0x3C6EF372) & MASK32
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & MASK32
    h ^= h >> 12
    h = (h * 0x297A2D39) & MASK32
    h ^= h >> 15
    return h


_SPACE, _CONTROL, _LOWER, _UPPER = (CharClass.SPACE.value, CharClass.CONTROL.value,
                                    CharClass.LOWER.value, CharClass.UPPER.value)
_DIGIT, _PUNCTUATION, _OTHER_ASCII, _HIGH = (CharClass.DIGIT.value, CharClass.PUNCTUATION.value,
                                             CharClass.OTHER_ASCII.value, CharClass.HIGH.value)


@kernel(inline=True)
def byte_class(c):
    if c == 32:
        return _SPACE
    if c < 32:
        return _CONTROL
    if 97 <= c <= 122:
        return _LOWER
    if 65 <= c <= 90:
        return _UPPER
    if 48 <= c <= 57:
        return _DIGIT
    if c == 46 or c == 44 or c == 33 or c == 63 or c == 59 or c == 58:
        return _PUNCTUATION
    if c < 128:
        return _OTHER_ASCII
    return _HIGH


@kernel(inline=True)
def fold_case(x):
    """The four bytes of x with A-Z turned into a-z."""
    out = 0
    for k in range(4):
        b = (x >> (8 * k)) & 0xFF
        if 65 <= b <= 90:
            b += 32
        out |= b << (8 * k)
    return out


@kernel(inline=True)
def predicted_byte(reg, hist, hmask, pos):
    """Round 18: 1 + the byte that comes after the current word's agreeing part in the word that
    followed the previous word last time, with how many bytes agree (capped at 15) from bit 9;
    0 when there is no such word, the current word differs from it, or it left the history."""
    agree = reg[R_FOLLOW_AGREE]
    start = reg[R_FOLLOW_START]
    if start == 0 or agree < 0:
        return 0
    q = start - 1 + agree
    if q >= pos or pos - q > hmask:
        return 0
    return (hist[q & hmask] + 1) | (min(agree, 15) << 9)


@kernel(inline=True)
def heads_hash(kind, in_first_word, head2, head1, word_or_c1):
    """PARAGRAPH_HEADS and LINE_HEADS (rounds 23, 24): in a paragraph's (line's) first word, the
    first words of the last two with the current word; elsewhere its own first word with it."""
    if in_first_word:
        return hash2(hash2(hash2(kind, head2), head1), word_or_c1)
    return hash2(hash2(kind + 1, head1), word_or_c1)


@kernel
def byte_context_hashes(st):
    """Hash of each context for the byte about to be coded, into st.ctx_hash."""
    cfg, reg, hist, ind = st.cfg, st.reg, st.hist, st.ind
    c4 = reg[R_C4]
    c8 = reg[R_C8]
    pos = reg[R_POS]
    hmask = (1 << cfg[C_HIST_BITS]) - 1
    word_or_c1 = reg[R_WORD] if reg[R_WORD] != 0 else c4 & 0xFF  # the word, or the last byte
    for i in range(cfg[C_NCTX]):
        kind = cfg[C_KINDS + i]
        if kind <= Context.ORDER4:
            h = hash2(kind, c4 & ((1 << (8 * kind)) - 1))
        elif kind <= Context.ORDER8:
            h = hash2(hash2(kind, c4), c8 & ((1 << (8 * (kind - 4))) - 1))
        elif kind <= Context.ORDER16:
            h = hash2(hash2(kind, c4), c8)
            for k in range(8, kind):
                b = hist[(pos - 1 - k) & hmask] if pos - 1 - k >= 0 else 0
                h = hash2(h, b)
        elif kind == Context.WORD:
            w = reg[R_WORD]
            h = hash2(kind, w) if w != 0 else hash2(WORD_BETWEEN_WORDS, c4 & 0xFF)
        elif kind == Context.WORD_BIGRAM:
            h = hash2(hash2(kind, reg[R_WORD1]), reg[R_WORD])
        elif kind == Context.SPARSE_SKIP1:
            h = hash2(kind, c4 & 0xFFFF00)
        elif kind == Context.SPARSE_GAP:
            h = hash2(kind, c4 & 0xFF00FF)
        elif kind == Context.COLUMN:
            col = reg[R_COLUMN]
            above = 0
            if reg[R_PREV_LINE_START] + col < reg[R_LINE_START]:
                above = hist[(reg[R_PREV_LINE_START] + col) & hmask]
            h = hash2(hash2(kind, min(col, 255)), above | ((c4 & 0xFF) << 8))
        elif kind == Context.WORD_ORDER1:
            h = hash2(hash2(kind, reg[R_WORD]), reg[R_WORD_PREFIX] | ((c4 & 0xFF) << 8))
        elif kind == Context.WORD_TRIGRAM:
            h = hash2(hash2(hash2(kind, reg[R_WORD2]), reg[R_WORD1]), reg[R_WORD])
        elif kind == Context.WORD_SKIP:
            h = hash2(hash2(kind, reg[R_WORD2]), reg[R_WORD])
        elif kind == Context.INDIRECT1:
            h = hash2(hash2(kind, c4 & 0xFF), ind[c4 & 0xFF])
        elif kind == Context.INDIRECT2:
            h = hash2(hash2(kind, c4 & 0xFFFF), ind[256 + (c4 & 0xFFFF)])
        elif kind == Context.CLASS_MASK:
            h = hash2(hash2(kind, reg[R_CLASSES] & 0x3FFFF), c4 & 0xFF)
        elif kind == Context.WORD_CLASSES:
            h = hash2(hash2(kind, reg[R_WORD]), reg[R_CLASSES] & 0xFFF)
        elif kind == Context.CLASS_MASK8:
            h = hash2(kind, reg[R_CLASSES])
        elif kind == Context.CLASS_RUNS:
            h = hash2(kind, reg[R_CLASS_RUNS])
        elif kind == Context.CLASS_RUNS_ORDER1:
            h = hash2(hash2(kind, reg[R_CLASS_RUNS] & 0x3FFFF), c4 & 0xFF)
        elif kind == Context.WORD_CLASS_RUNS:
            h = hash2(hash2(kind, reg[R_CLASS_RUNS] & 0xFFF), reg[R_WORD])
        elif kind == Context.SENTENCE_WORD:  # strength (issue 12)
            h = hash2(hash2(kind, reg[R_SENTENCE_WORDS] | (reg[R_CAPS] << 4)
                            | (reg[R_WORD_CAP] << 8)), reg[R_WORD])
        elif kind == Context.NESTING_WORD:  # strength (issue 12)
            h = hash2(hash2(kind, reg[R_NEST] | ((c4 & 0xFF) << 8)), reg[R_WORD])
        elif kind == Context.FOLDED_ORDER3:  # strength round 4 (issue 12)
            h = hash2(kind, fold_case(c4) & 0xFFFFFF)
        elif kind == Context.FOLDED_ORDER5:
            h = hash2(hash2(kind, fold_case(c4)), fold_case(c8) & 0xFF)
        elif kind == Context.LINE_PREFIX or kind == Context.LINE_WORD:
            col = reg[R_COLUMN]
            first = hist[reg[R_LINE_START] & hmask] if col > 0 else 256
            second = hist[(reg[R_LINE_START] + 1) & hmask] if col > 1 else 256
            h = hash2(hash2(kind, first | (second << 9)),
                      c4 & 0xFFFF if kind == Context.LINE_PREFIX else reg[R_WORD])
        elif kind == Context.ABOVE_ORDER2:
            above = reg[R_PREV_LINE_START] + reg[R_COLUMN]
            a0 = hist[above & hmask] if above < reg[R_LINE_START] else 256
            a1 = hist[(above + 1) & hmask] if above + 1 < reg[R_LINE_START] else 256
            h = hash2(hash2(kind, a0 | (a1 << 9)), c4 & 0xFFFF)
        elif kind == Context.WORD_QUADGRAM:  # strength round 5 (issue 12)
            h = hash2(hash2(hash2(hash2(kind, reg[R_WORD3]), reg[R_WORD2]), reg[R_WORD1]),
                      reg[R_WORD])
        elif kind == Context.LETTERS:
            h = hash2(hash2(kind, reg[R_LETTERS]), c4 & 0xFF)
        elif kind == Context.WORD_SEPARATED:
            h = hash2(hash2(hash2(kind, reg[R_WORD1]), reg[R_SEPARATOR]), reg[R_WORD])
        elif kind == Context.STEM_WORD:  # strength round 7 (issue 12)
            h = hash2(hash2(kind, reg[R_STEM1]), word_or_c1)
        elif kind == Context.WORD_SHAPE:  # strength round 17 (issue 12)
            length = min(pos - reg[R_WORD_START], 3) if reg[R_WORD] != 0 else 0
            h = hash2(kind, reg[R_CAPS] | (reg[R_SENTENCE_WORDS] << 4) | (reg[R_WORD_CAP] << 8)
                      | (length << 9) | ((reg[R_CLASSES] & 0x1FF) << 11))
        elif kind == Context.PUNCT_WORD:
            h = hash2(hash2(kind, reg[R_PUNCT]), word_or_c1)
        elif kind == Context.PUNCT_BIGRAM:
            h = hash2(hash2(hash2(kind, reg[R_PUNCT]), reg[R_WORD1]), word_or_c1)
        elif kind == Context.WORD_FOLLOWER:
            h = hash2(hash2(kind, reg[R_FOLLOW_WORD]), word_or_c1)
        elif kind == Context.WORD_PREDICTED:  # round 18
            h = hash2(hash2(kind, reg[R_FOLLOW_BYTE]), word_or_c1)
        elif kind == Context.PARAGRAPH_HEADS:  # round 23
            h = heads_hash(kind, reg[R_PARAGRAPH] & 1, reg[R_PARAGRAPH_HEAD2], reg[R_PARAGRAPH_HEAD1],
                           word_or_c1)
        elif kind == Context.LINE_HEADS:  # round 24
            h = heads_hash(kind, reg[R_LINE_HEAD], reg[R_LINE_HEAD2], reg[R_LINE_HEAD1], word_or_c1)
        else:  # Context.MATCH_PREDICTED (round 19); inside a UTF-8 character, the last two bytes
            h = hash2(hash2(kind, reg[R_MATCH_EXPECT]),
                      word_or_c1 if (c4 & 0xFF) < 128 else (c4 & 0xFFFF) | 0x10000)
        st.ctx_hash[i] = h


@kernel(inline=True)
def text_structure(reg, byte):
    """strength (issue 12): sentence ends and bracket/quote nesting after `byte`."""
    if byte == 46 or byte == 33 or byte == 63:  # . ! ?
        reg[R_SENTENCE_WORDS] = 0
    nest = reg[R_NEST]
    paren = nest & 3
    square = (nest >> 2) & 3
    quote = (nest >> 4) & 1
    if byte == 40 and paren < 3:
        paren += 1
    elif byte == 41 and paren > 0:
        paren -= 1
    elif (byte == 91 or byte == 123) and square < 3:
        square += 1
    elif (byte == 93 or byte == 125) and square > 0:
        square -= 1
    elif byte == 34:
        quote ^= 1
    elif byte == 10 and (reg[R_C4] >> 8) & 0xFF == 10:  # a blank line closes everything
        paren, square, quote = 0, 0, 0
    reg[R_NEST] = paren | (square << 2) | (quote << 4)


# strength round 7 (issue 12): a word's stem, for the contexts that key the next word by the
# previous one's stem ("runs", "running" and "run" share their statistics there)
STEM_LETTERS = 32  # a longer word's stem is its first 32 bytes


@kernel(inline=True)
def fold_byte(b):
    return b + 32 if 65 <= b <= 90 else b


@kernel(inline=True)
def word_stem(hist, hmask, start, end):
    """Hash of the word hist[start:end], case-folded, less one English suffix: -ing (words of 5
    letters or more), -ed, -es, -er, -ly (4 or more), -s but not -ss (3 or more)."""
    n = end - start
    l0 = fold_byte(hist[(end - 1) & hmask]) if n >= 1 else 0
    l1 = fold_byte(hist[(end - 2) & hmask]) if n >= 2 else 0
    l2 = fold_byte(hist[(end - 3) & hmask]) if n >= 3 else 0
    cut = 0
    if n > 4 and l2 == 105 and l1 == 110 and l0 == 103:  # ing
        cut = 3
    elif n > 3 and l1 == 101 and (l0 == 100 or l0 == 115 or l0 == 114):  # ed es er
        cut = 2
    elif n > 3 and l1 == 108 and l0 == 121:  # ly
        cut = 2
    elif n > 2 and l0 == 115 and l1 != 115:  # s
        cut = 1
    h = 0
    for k in range(min(n - cut, STEM_LETTERS)):
        h = hash2(h + 1, fold_byte(hist[(start + k) & hmask]))
    return h


@kernel(inline=True)
def agree_word(reg, hist, hmask, pos, folded):
    """Round 18: after the current word's latest byte (`folded`, at pos - 1), whether the word
    still agrees, case-folded, with the word that followed the previous word last time."""
    k = pos - 1 - reg[R_WORD_START]
    if reg[R_FOLLOW_AGREE] != k or reg[R_FOLLOW_START] == 0:
        reg[R_FOLLOW_AGREE] = -1
        return
    q = reg[R_FOLLOW_START] - 1 + k
    if q < pos - 1 and pos - 1 - q <= hmask and fold_byte(hist[q & hmask]) == folded:
        reg[R_FOLLOW_AGREE] = k + 1
    else:
        reg[R_FOLLOW_AGREE] = -1


@kernel(inline=True)
def store_checked(table, section, key, value):
    """Round 20: `value` under `key` in section `section` of a follower table (2^16 entries
    each, by the key's low 16 bits), with the key's high 16 bits from bit 40 as a check."""
    table[section * (FOLLOWER_MASK + 1) + (key & FOLLOWER_MASK)] = ((key >> 16) << 40) | value


@kernel(inline=True)
def read_checked(table, section, key, otherwise):
    """Round 20: the value stored under `key` by store_checked if its check matches, else `otherwise`."""
    entry = table[section * (FOLLOWER_MASK + 1) + (key & FOLLOWER_MASK)]
    if entry != 0 and (entry >> 40) == (key >> 16):
        return entry & FOLLOW_VALUE_BITS
    return otherwise


@kernel
def append_byte(st, byte):
    """Byte-level state after a byte: followers, history, order registers, words, classes, lines."""
    reg, hist, ind = st.reg, st.hist, st.ind
    # indirect contexts: what followed the previous byte / the last two bytes
    c4 = reg[R_C4]
    ind[c4 & 0xFF] = ((ind[c4 & 0xFF] << 8) | byte) & 0xFFFF
    ind[256 + (c4 & 0xFFFF)] = ((ind[256 + (c4 & 0xFFFF)] << 8) | byte) & 0xFFFF
    pos = reg[R_POS]
    hist[pos & ((1 << st.cfg[C_HIST_BITS]) - 1)] = byte
    reg[R_C8] = ((reg[R_C8] << 8) | (reg[R_C4] >> 24)) & MASK32
    reg[R_C4] = ((reg[R_C4] << 8) | byte) & MASK32
    pos += 1
    reg[R_POS] = pos
    # words: letters (case-folded) and UTF-8 bytes continue a word
    c = byte
    if 65 <= c <= 90:
        c += 32
    if (97 <= c <= 122) or c >= 128:
        if reg[R_WORD] == 0:
            reg[R_WORD_START] = pos - 1  # strength round 7 (issue 12)
            reg[R_WORD_PREFIX] = (reg[R_C4] >> 8) & 0xFF
            reg[R_WORD_CAP] = 1 if 65 <= byte <= 90 else 0  # strength (issue 12)
        reg[R_WORD] = hash2(reg[R_WORD] + 1, c)
        if st.cfg[C_FOLLOW]:  # round 18
            agree_word(reg, hist, (1 << st.cfg[C_HIST_BITS]) - 1, pos, c)
        if c <= 122:  # strength round 5 (issue 12)
            reg[R_LETTERS] = ((reg[R_LETTERS] << 5) | (c - 96)) & 0x3FFFFFFF
    elif reg[R_WORD] != 0:
        reg[R_SEPARATOR] = byte  # strength round 5 (issue 12)
        if st.cfg[C_WORD_STEMS]:  # only STEM_WORD reads it: the other models skip the hashing
            reg[R_STEM1] = word_stem(hist, (1 << st.cfg[C_HIST_BITS]) - 1, reg[R_WORD_START], pos - 1)
        word4 = reg[R_WORD3]  # round 20: the key of the last three words before the one that ended
        reg[R_WORD3] = reg[R_WORD2]
        reg[R_WORD2] = reg[R_WORD1]
        reg[R_WORD1] = reg[R_WORD]
        reg[R_WORD] = 0
        keyed = st.cfg[C_FOLLOW_WORDS]
        if st.word_followers.shape[0] > 1:  # round 17: only WORD_FOLLOWER reads it
            followers = st.word_followers
            followers[reg[R_WORD2] & FOLLOWER_MASK] = reg[R_WORD1]
            follower = followers[reg[R_WORD1] & FOLLOWER_MASK]
            if keyed & FOLLOW_WORD_PAIR:  # round 20: the word that followed the last two words
                if reg[R_WORD3] != 0:
                    store_checked(followers, 1, hash2(reg[R_WORD3], reg[R_WORD2]), reg[R_WORD1] & MASK32)
                follower = read_checked(followers, 1, hash2(reg[R_WORD2], reg[R_WORD1]), follower)
            reg[R_FOLLOW_WORD] = follower
        if st.cfg[C_FOLLOW]:  # round 18: the word that ended follows the one before it
            starts = st.follower_starts
            start = reg[R_WORD_START] + 1
            starts[reg[R_WORD2] & FOLLOWER_MASK] = start
            follower = starts[reg[R_WORD1] & FOLLOWER_MASK]
            # round 20: where the word that followed the last two (three) words began, if seen
            if keyed & FOLLOW_PAIR:
                if reg[R_WORD3] != 0:
                    store_checked(starts, 1, hash2(reg[R_WORD3], reg[R_WORD2]), start)
                follower = read_checked(starts, 1, hash2(reg[R_WORD2], reg[R_WORD1]), follower)
            if keyed & FOLLOW_TRIPLE:
                if reg[R_WORD3] != 0 and word4 != 0:
                    store_checked(starts, 2, hash2(hash2(word4, reg[R_WORD3]), reg[R_WORD2]), start)
                follower = read_checked(starts, 2, hash2(hash2(reg[R_WORD3], reg[R_WORD2]), reg[R_WORD1]),
                                        follower)
            reg[R_FOLLOW_START] = follower
            reg[R_FOLLOW_AGREE] = 0
        # strength (issue 12): sentence position and capitalisation
        reg[R_SENTENCE_WORDS] = min(reg[R_SENTENCE_WORDS] + 1, 15)
        reg[R_CAPS] = ((reg[R_CAPS] << 1) | reg[R_WORD_CAP]) & 15
        reg[R_WORD_CAP] = 0
        reg[R_PUNCT] = (reg[R_PUNCT] & ~15) | min((reg[R_PUNCT] & 15) + 1, 15)  # round 17
        if reg[R_PARAGRAPH] & 1:  # round 23: a paragraph's first word is complete
            reg[R_PARAGRAPH_HEAD2] = reg[R_PARAGRAPH_HEAD1]
            reg[R_PARAGRAPH_HEAD1] = reg[R_WORD1]
            reg[R_PARAGRAPH] &= ~1
        if reg[R_LINE_HEAD]:  # round 24: a line's first word is complete
            reg[R_LINE_HEAD2] = reg[R_LINE_HEAD1]
            reg[R_LINE_HEAD1] = reg[R_WORD1]
            reg[R_LINE_HEAD] = 0
    else:
        reg[R_SEPARATOR] = ((reg[R_SEPARATOR] << 8) | byte) & 0xFFFFFF
    text_structure(reg, byte)
    cls = byte_class(byte)
    if cls == _PUNCTUATION:  # round 17: , ; : . ! ? (after the word count above: from 0)
        reg[R_PUNCT] = byte << 4
    if (reg[R_CLASSES] & 7) != cls or pos == 1:
        reg[R_CLASS_RUNS] = ((reg[R_CLASS_RUNS] << 3) | cls) & 0x3FFFFFFF
    reg[R_CLASSES] = ((reg[R_CLASSES] << 3) | cls) & 0xFFFFFF
    if byte == 10:
        # round 23: a line with nothing but spaces, tabs or CR (bit 1 clear) starts a paragraph
        reg[R_PARAGRAPH] = (reg[R_PARAGRAPH] | 1) if (reg[R_PARAGRAPH] & 2) == 0 else reg[R_PARAGRAPH] & ~2
        reg[R_LINE_HEAD] = 1  # round 24
        reg[R_PREV_LINE_START] = reg[R_LINE_START]
        reg[R_LINE_START] = pos
        reg[R_COLUMN] = 0
    else:
        if byte != 32 and byte != 9 and byte != 13:  # round 23: the line has text
            reg[R_PARAGRAPH] |= 2
        reg[R_COLUMN] += 1
    # strength round 4 (issue 12): the byte above the next one, for Selector.COLUMN_ABOVE
    hmask = (1 << st.cfg[C_HIST_BITS]) - 1
    above = reg[R_PREV_LINE_START] + reg[R_COLUMN]
    if above < reg[R_LINE_START]:
        reg[R_ABOVE] = 1 + hist[above & hmask]
        reg[R_ABOVE_CLASS] = 1 + byte_class(hist[above & hmask])
    else:
        reg[R_ABOVE] = 0
        reg[R_ABOVE_CLASS] = 0
    col = reg[R_COLUMN]
    first = 1 + byte_class(hist[reg[R_LINE_START] & hmask]) if col > 0 else 0
    second = 1 + byte_class(hist[(reg[R_LINE_START] + 1) & hmask]) if col > 1 else 0
    reg[R_LINE_CLASSES] = first * 9 + second
    if st.cfg[C_FOLLOW]:  # round 18
        reg[R_FOLLOW_BYTE] = predicted_byte(reg, hist, hmask, pos)
