"""Empirical conditional entropies and the adaptive order-2 baseline (numpy only)."""

from __future__ import annotations

import numpy as np

MAX_ORDER = 5
HIGH_ORDER_NOTE = ("H_k is the empirical entropy of a byte given the k bytes before it, from the "
                   "file's own counts: a lower bound no adaptive coder reaches; for k >= 2 on small "
                   "files it is optimistic (contexts seen once cost nothing).")



def as_array(data) -> np.ndarray:
    if isinstance(data, np.ndarray):
        return data.astype(np.uint8, copy=False)
    return np.frombuffer(bytes(data), dtype=np.uint8)


def _context_keys(raw: np.ndarray, k: int) -> np.ndarray:
    """For positions i >= k: the k previous bytes packed into one integer (most recent lowest)."""
    n = raw.shape[0]
    ctx = np.zeros(max(n - k, 0), dtype=np.uint64)
    for j in range(1, k + 1):
        ctx |= raw[k - j : n - j].astype(np.uint64) << np.uint64(8 * (j - 1))
    return ctx


def _sum_clogc(counts: np.ndarray) -> float:
    c = counts.astype(np.float64)
    return float(np.sum(c * np.log2(c)))


def entropy_details(data, max_order: int = MAX_ORDER) -> list[dict]:
    """Per order k: H(X | k previous bytes) in bits per byte over positions k..n-1, the number of
    distinct contexts, and the fraction of positions whose context occurs only once (those
    positions contribute zero bits: the reason high orders are optimistic on small files)."""
    if not 0 <= max_order <= 7:
        raise ValueError("max_order must be in 0..7")
    raw = as_array(data)
    n = raw.shape[0]
    rows = []
    for k in range(max_order + 1):
        count = n - k
        if count <= 0:
            rows.append(dict(order=k, bits_per_byte=None, positions=0, contexts=0,
                             single_context_fraction=None))
            continue
        ctx = _context_keys(raw, k)
        joint = (ctx << np.uint64(8)) | raw[k:].astype(np.uint64)
        _, ctx_counts = np.unique(ctx, return_counts=True)
        _, joint_counts = np.unique(joint, return_counts=True)
        h = (_sum_clogc(ctx_counts) - _sum_clogc(joint_counts)) / count
        rows.append(dict(order=k, bits_per_byte=max(h, 0.0), positions=int(count),
                         contexts=int(ctx_counts.shape[0]),
                         single_context_fraction=float(np.sum(ctx_counts == 1)) / count))
    return rows


def entropy_table(data, max_order: int = MAX_ORDER) -> dict[int, float | None]:
    """{k: H(X | k previous bytes) in bits per byte} for k = 0..max_order (None if the data is
    shorter than k + 1 bytes).  High orders are optimistic lower bounds on small inputs."""
    return {row["order"]: row["bits_per_byte"] for row in entropy_details(data, max_order)}


def _prior_occurrences(keys: np.ndarray) -> np.ndarray:
    """out[i] = number of j < i with keys[j] == keys[i]."""
    n = keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    idx = np.arange(n, dtype=np.int64)
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    starts[1:] = sk[1:] != sk[:-1]
    group_start = np.maximum.accumulate(np.where(starts, idx, 0))
    out = np.empty(n, dtype=np.int64)
    out[order] = idx - group_start
    return out


def order2_code_lengths(data, alpha: float = 0.5) -> np.ndarray:
    """Ideal code length (bits) of each byte under an adaptive order-2 model: counts of the byte
    after the two previous bytes (zeros before the start), learned as it goes, with the additive
    estimator P = (c(ctx, x) + alpha) / (c(ctx) + 256 alpha); alpha = 1/2 is Krichevsky-Trofimov."""
    raw = as_array(data)
    padded = np.concatenate([np.zeros(2, dtype=np.uint8), raw])
    ctx = _context_keys(padded, 2)
    joint = (ctx << np.uint64(8)) | raw.astype(np.uint64)
    c_joint = _prior_occurrences(joint)
    c_ctx = _prior_occurrences(ctx)
    return -np.log2((c_joint + alpha) / (c_ctx + 256.0 * alpha))

