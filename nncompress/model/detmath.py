"""Deterministic math tables for the model.

Encoder and decoder must compute bit-identical probabilities on every machine, so nothing in the
coding path may call a libm transcendental (whose last bit differs between libcs) or rely on
float re-association.  Everything here is built once, at import, from IEEE-754 +, -, *, / only,
which every conforming platform rounds identically; the kernels then only look values up.
"""

import numpy as np

# ln 2 split into a high part exactly representable with few bits and a low correction, so that
# k * LN2_HI is exact for the |k| we use (Cody-Waite range reduction).
_LN2_HI = 0.693145751953125
_LN2_LO = 1.428606820309417232e-06
_INV_LN2 = 1.4426950408889634


def det_exp(x: float) -> float:
    """exp(x) from IEEE basic operations only (no libm): range reduction and a Taylor series."""
    if x > 700.0:
        return float("inf")
    if x < -700.0:
        return 0.0
    k = int(round(x * _INV_LN2))
    r = (x - k * _LN2_HI) - k * _LN2_LO
    # |r| <= 0.35: 22 terms leave an error far below one ulp, and the fixed order makes it exact
    # to reproduce.
    term = 1.0
    total = 1.0
    for n in range(1, 23):
        term = term * r / n
        total = total + term
    return total * (2.0 ** k)


# Probabilities in the integer part of the model are 12-bit (1..4095 out of 4096) and the logistic
# domain ("stretch") is fixed point with 8 fractional bits, clamped to +-2047 (+-8.0).
STRETCH_LIMIT = 2047


def build_squash_table() -> np.ndarray:
    """squash[x + 2048] = round(4096 / (1 + e^(-x/256))) for x in -2048..2047, clamped to 1..4095."""
    table = np.empty(4096, dtype=np.int32)
    for i in range(4096):
        x = (i - 2048) / 256.0
        p = 4096.0 / (1.0 + det_exp(-x))
        v = int(p + 0.5)
        table[i] = min(4095, max(1, v))
    return table


def build_squash16_table() -> np.ndarray:
    """squash16[x + 4096] = round(65536 / (1 + e^(-x/256))) for x in -4096..4095, clamped to
    1..65535: the final mixer's output when probabilities have 16 bits (ModelParams.probability_bits),
    where the mixers' stretch domain reaches +-16.0 instead of +-8.0."""
    table = np.empty(8192, dtype=np.int32)
    for i in range(8192):
        x = (i - 4096) / 256.0
        p = 65536.0 / (1.0 + det_exp(-x))
        table[i] = min(65535, max(1, int(p + 0.5)))
    return table


def build_stretch_table(squash: np.ndarray) -> np.ndarray:
    """stretch[p] = the smallest x with squash(x) >= p: the integer inverse of the squash table."""
    table = np.empty(4096, dtype=np.int32)
    pi = 0
    for x in range(-STRETCH_LIMIT, STRETCH_LIMIT + 1):
        v = int(squash[x + 2048])
        for j in range(pi, v + 1):
            table[j] = x
        pi = max(pi, v + 1)
    for j in range(pi, 4096):
        table[j] = STRETCH_LIMIT
    return table


# The recurrent layer works in float64 (deterministic without fastmath: no FMA contraction, no
# re-association).  Its sigmoid is a table over [-SIG_RANGE, SIG_RANGE) with linear interpolation.
SIG_RANGE = 16.0
SIG_STEPS_PER_UNIT = 128


def build_sigmoid_table() -> np.ndarray:
    n = int(2 * SIG_RANGE * SIG_STEPS_PER_UNIT) + 2
    table = np.empty(n, dtype=np.float64)
    for i in range(n):
        x = i / SIG_STEPS_PER_UNIT - SIG_RANGE
        table[i] = 1.0 / (1.0 + det_exp(-x))
    return table


def build_reciprocal_table(n: int = 1024) -> np.ndarray:
    """recip[k] = 65536 / (k + 1.5): the adaptive-rate divisor of a count-k probability counter."""
    table = np.empty(n, dtype=np.int32)
    for k in range(n):
        table[k] = int(65536.0 / (k + 1.5))
    return table


def deterministic_uniform(count: int, seed: int) -> np.ndarray:
    """Uniform values in [-0.5, 0.5) from an integer hash: no platform-dependent RNG involved."""
    idx = np.arange(count, dtype=np.uint64) + np.uint64(seed << 32)
    x = idx * np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(29)
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53) - 0.5


SQUASH = build_squash_table()
SQUASH16 = build_squash16_table()  # round 21 (issue 12)
STRETCH = build_stretch_table(SQUASH)
SIGMOID = build_sigmoid_table()
RECIPROCAL = build_reciprocal_table()
