"""A numba twin of the two pieces of constriction 0.5 the project codes with.

- `quantize`: `Categorical(probabilities, perfect=False)`, i.e. constriction's
  `from_floating_point_probabilities_fast` over float64 with 24-bit precision: each symbol gets
  weight 1 plus its share of the remaining 2**24 - n, cut at floor(cumulative float sum * scale).
- `encode_symbol` / `encode_seal` / `decode_symbol`: constriction's queue `RangeEncoder` and
  `RangeDecoder` with its default preset (32-bit words, 64-bit state, 24-bit probabilities),
  including the encoder's "inverted" situation, where words are held back until a pending carry
  is resolved.

Both produce and read exactly the bytes constriction does (tests/test_coder_twin.py compares them
on every run).  The coder is integer arithmetic; the only floats are the quantisation's sum,
one division and one multiplication per cut, in constriction's order, without fastmath, so
every IEEE-754 machine computes the same cuts.

All state lives in small uint64 arrays, so a stream can be coded or decoded in pieces, and the
kernels can be called from other numba code (nncompress.fused decodes a block with the model
inside one loop).  Every integer here is uint64 on purpose: numba turns a mix of signed and
unsigned 64-bit integers into float64.
"""

from __future__ import annotations

import numpy as np
from .model.jit import kernel

ALPHABET = 16
PRECISION = 24

_U0 = np.uint64(0)
_U1 = np.uint64(1)
_WORD_BITS = np.uint64(32)
_PRECISION = np.uint64(PRECISION)
_TOTAL = np.uint64(1 << PRECISION)
_WORD_MASK = np.uint64(0xFFFFFFFF)
_RANGE_FLOOR = np.uint64(1 << 32)  # invariant of both coders: range >= 2**32 between symbols
_STATE_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_POINT_OFFSET = np.uint64((1 << 32) - 1)
_SMALLEST_NORMAL = 2.2250738585072014e-308
_LARGEST_FINITE = 1.7976931348623157e308
_U32_MAX_FLOAT = 4294967295.0

# Encoder state: one uint64 array of ENC_SIZE.
ENC_LOWER = 0
ENC_RANGE = 1
ENC_INVERTED = 2  # words held back while a carry may still reach them (0: normal situation)
ENC_FIRST_INVERTED = 3  # the first held-back word
ENC_WORDS = 4  # words written to the output buffer so far
ENC_SIZE = 5

# Decoder state: one uint64 array of DEC_SIZE.
DEC_LOWER = 0
DEC_RANGE = 1
DEC_POINT = 2
DEC_POS = 3  # next word to read
DEC_SIZE = 4

# decode_symbol's results besides a symbol
INVALID_DATA = -1  # quantile out of range: constriction's DecoderFrontendError::InvalidData
BAD_DISTRIBUTION = -2  # probabilities constriction refuses ("not normalizable")


def new_encoder_state() -> np.ndarray:
    state = np.zeros(ENC_SIZE, dtype=np.uint64)
    state[ENC_RANGE] = _STATE_MAX
    return state


@kernel(inline=True)
def _as_u32(x):
    """Rust's `f64 as u32`: truncate toward zero, saturate, NaN -> 0."""
    if not x > 0.0:
        return _U0
    if x >= _U32_MAX_FLOAT:
        return _WORD_MASK
    return np.uint64(x)


@kernel
def quantize(probabilities, cdf):
    """constriction's fast 24-bit quantisation of one row into cdf[0..n] (cdf[n] = 2**24).

    Returns False where constriction refuses the row: a sum that is not a positive normal float
    (all zeros, NaN, infinity, subnormal), or a negative entry (constriction does not check
    those; the model never makes them, and refusing is the only safe answer)."""
    n = probabilities.shape[0]
    total = 0.0
    for i in range(n):
        p = probabilities[i]
        if not p >= 0.0:
            return False
        total += p
    if not (total >= _SMALLEST_NORMAL and total <= _LARGEST_FINITE):
        return False
    scale = float((1 << PRECISION) - n) / total
    cumulative = 0.0
    for i in range(n):
        cdf[i] = (_as_u32(cumulative * scale) + np.uint64(i)) & _WORD_MASK
        cumulative += probabilities[i]
    cdf[n] = _TOTAL
    for i in range(n):
        if cdf[i + 1] <= cdf[i]:
            return False
    return True


@kernel(inline=True)
def _write(out, state, word):
    pos = state[ENC_WORDS]
    out[pos] = np.uint32(word & _WORD_MASK)
    state[ENC_WORDS] = pos + _U1


@kernel(inline=True)
def _flush_inverted(out, state, carried):
    """Write the held-back words: the first one plus a carry and zeros, or as is and 0xFFFFFFFF."""
    first = state[ENC_FIRST_INVERTED]
    if carried:
        _write(out, state, first + _U1)
        rest = _U0
    else:
        _write(out, state, first)
        rest = _WORD_MASK
    for _ in range(np.int64(state[ENC_INVERTED]) - 1):
        _write(out, state, rest)
    state[ENC_INVERTED] = _U0


@kernel
def encode_symbol(state, out, left, probability):
    """constriction's RangeEncoder::encode_symbol for a symbol at [left, left + probability).

    out must have room for one more word than there have been symbols (plus two for the seal)."""
    lower = state[ENC_LOWER]
    scale = state[ENC_RANGE] >> _PRECISION
    new_range = scale * probability
    new_lower = lower + scale * left  # wraps: the carry is resolved below
    if state[ENC_INVERTED] != _U0:
        if new_lower + new_range > new_lower:
            _flush_inverted(out, state, new_lower < lower)
    lower = new_lower
    if new_range < _RANGE_FLOOR:
        new_range = new_range << _WORD_BITS
        lower_word = lower >> _WORD_BITS
        lower = lower << _WORD_BITS
        if state[ENC_INVERTED] != _U0:
            state[ENC_INVERTED] += _U1
        elif lower + new_range > lower:
            _write(out, state, lower_word)
        else:
            state[ENC_INVERTED] = _U1
            state[ENC_FIRST_INVERTED] = lower_word
    state[ENC_LOWER] = lower
    state[ENC_RANGE] = new_range


@kernel
def encode_rows(state, out, symbols, probabilities, cdf):
    """Encode symbols[k] with the quantised probabilities[k]; returns the first refused row or -1."""
    for k in range(symbols.shape[0]):
        if not quantize(probabilities[k], cdf):
            return k
        s = symbols[k]
        encode_symbol(state, out, cdf[s], cdf[s + 1] - cdf[s])
    return -1


# ---- path coding (ModelParams.path_coding) -----------------------------------------------------
# A nibble is one symbol, as in the 16-way coding above, but its interval is cut down the nibble
# tree instead of from 16 floats: each node splits its interval by its probability of a 1 bit,
# in integers, so the coder needs only the four nodes of the nibble's path, and the decoder finds
# the nibble by descending the tree, asking the model for each node as it goes.

@kernel(inline=True)
def tree_split(width, p, depth):
    """The 0-branch's share of a node's interval of `width` (p/65536: the node's probability of
    a 1 bit, 1..65535), leaving each branch room for one unit per nibble below it.  A 12-bit
    model's probabilities arrive as 16p: the split is then floor(width (4096 - p) / 4096), the
    one the coder made from p of 4096 before round 21, so older archives decode as before."""
    room = np.uint64(8) >> np.uint64(depth)  # nibbles under each branch at this depth
    left = (width * np.uint64(65536 - p)) >> np.uint64(16)
    if left < room:
        left = room
    elif left > width - room:
        left = width - room
    return left


@kernel
def encode_paths(state, out, nibbles, path_p):
    """Path coding: code nibbles[k], whose path nodes' probabilities are path_p[k, 0..3].

    out must have room for one more word than there have been symbols (plus two for the seal)."""
    for k in range(nibbles.shape[0]):
        v = nibbles[k]
        lo = _U0
        width = _TOTAL
        for d in range(4):
            left = tree_split(width, path_p[k, d], d)
            if (v >> (3 - d)) & 1:
                lo += left
                width -= left
            else:
                width = left
        encode_symbol(state, out, lo, width)


@kernel
def encode_seal(state, out):
    """constriction's RangeEncoder::seal: the words that end the stream (none if it is empty).

    Leaves state unchanged apart from the word count."""
    lower = state[ENC_LOWER]
    if state[ENC_RANGE] == _STATE_MAX:
        return
    point = lower + _POINT_OFFSET
    if state[ENC_INVERTED] != _U0:
        saved = state[ENC_INVERTED]
        _flush_inverted(out, state, point < lower)
        state[ENC_INVERTED] = saved
    point_word = point >> _WORD_BITS
    _write(out, state, point_word)
    upper_word = (lower + state[ENC_RANGE]) >> _WORD_BITS
    if upper_word == point_word:
        _write(out, state, _U0)


@kernel
def decoder_start(state, words):
    """constriction's RangeDecoder::from_compressed: the point is the first two words (a short
    stream is padded with zero bits)."""
    point = _U0
    read = 0
    while read < 2 and read < words.shape[0]:
        point = (point << _WORD_BITS) | np.uint64(words[read])
        read += 1
    if read == 1:
        point = point << _WORD_BITS
    state[DEC_LOWER] = _U0
    state[DEC_RANGE] = _STATE_MAX
    state[DEC_POINT] = point
    state[DEC_POS] = np.uint64(read)


@kernel(inline=True)
def decode_quantile(state):
    """Where the decoder's point lies in the next symbol's 2**24 units (>= 2**24: invalid data)."""
    return (state[DEC_POINT] - state[DEC_LOWER]) // (state[DEC_RANGE] >> _PRECISION)


@kernel
def decode_consume(state, words, left, probability):
    """Move the decoder past the symbol decoded at [left, left + probability)."""
    lower = state[DEC_LOWER]
    point = state[DEC_POINT]
    scale = state[DEC_RANGE] >> _PRECISION
    lower = lower + scale * left
    new_range = scale * probability
    if new_range < _RANGE_FLOOR:
        lower = lower << _WORD_BITS
        new_range = new_range << _WORD_BITS
        point = point << _WORD_BITS
        pos = state[DEC_POS]
        if pos < np.uint64(words.shape[0]):
            point = point | np.uint64(words[pos])
            state[DEC_POS] = pos + _U1
    state[DEC_LOWER] = lower
    state[DEC_RANGE] = new_range
    state[DEC_POINT] = point


@kernel
def decode_symbol(state, words, cdf, n):
    """constriction's RangeDecoder::decode_symbol with the quantised cdf[0..n]; returns the
    symbol, or INVALID_DATA where constriction reports invalid compressed data."""
    quantile = decode_quantile(state)
    if quantile >= _TOTAL:
        return INVALID_DATA
    # the symbol whose interval holds the quantile (cdf is strictly increasing, cdf[0] == 0)
    lo = 0
    hi = n
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if cdf[mid] <= quantile:
            lo = mid
        else:
            hi = mid
    decode_consume(state, words, cdf[lo], cdf[lo + 1] - cdf[lo])
    return lo


@kernel
def decode_row(state, words, probabilities, cdf):
    """Quantise one row and decode a symbol with it (BAD_DISTRIBUTION / INVALID_DATA on failure)."""
    if not quantize(probabilities, cdf):
        return BAD_DISTRIBUTION
    return decode_symbol(state, words, cdf, probabilities.shape[0])


@kernel
def decode_rows(state, words, probabilities, out, cdf):
    """Decode one symbol per row into out; returns the first failing row's code or 0."""
    for k in range(probabilities.shape[0]):
        s = decode_row(state, words, probabilities[k], cdf)
        if s < 0:
            return s
        out[k] = s
    return 0
