"""`nncompress analyze`: how much information a file holds, and where the model pays for it.

    nncompress analyze FILE|DIR|SET ... [--level N] [--json OUT] [--plot OUT.png]
                       [--html OUT.html] [--html-limit BYTES] [--window N]

For every file it reports

* size and number of distinct byte values;
* the empirical conditional entropies H(X | k previous bytes), k = 0..5, from the file's own
  counts.  These are *not* achievable code lengths: a model that knew the whole file's statistics
  in advance would reach them, an adaptive coder has to learn them.  For k >= 2 on small files they
  are optimistic lower bounds (many contexts occur once, and a context seen once "predicts" its
  byte for free), so H_5 of a 100 KB file can be far below what any compressor achieves;
* the ideal code length of a simple adaptive order-2 model (Krichevsky-Trofimov estimator, counts
  learned as it goes: a real, decodable baseline);
* gzip (zlib -9), xz (lzma -9e) and PAQ (paq9a, when the `paq` package is installed) for reference;
* nncompress's self-information per byte, read from the predictions `codec.StreamEncoder` codes
  while it compresses the file, and the size of that real .nnc stream.

Directories and named corpus sets get a summary table with totals.  `--plot` draws learning
curves (bits per byte over a moving window vs position), `--html` writes a self-contained page
with every character coloured by its cost under the model and the model's top-5 predictions on
hover.

Python API: `code_lengths`, `entropy_table`, `entropy_details`, `order2_code_lengths`,
`analyze_file`, `analyze_paths`, `write_plot`, `write_html`.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np

from . import format as fmt
from .benchmark import python_codec
from .codec import StreamEncoder
from .model.params import ModelParams
from .model.predictor import Predictor
from .presets import DEFAULT_LEVEL, params_for_level

MAX_ORDER = 5
DEFAULT_HTML_LIMIT = 20_000
HIGH_ORDER_NOTE = ("H_k is the empirical entropy of a byte given the k bytes before it, from the "
                   "file's own counts: a lower bound no adaptive coder reaches; for k >= 2 on small "
                   "files it is optimistic (contexts seen once cost nothing).")


# ------------------------------------------------------------------------------------------------
# Empirical entropies
# ------------------------------------------------------------------------------------------------

def _as_array(data) -> np.ndarray:
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
    raw = _as_array(data)
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


# ------------------------------------------------------------------------------------------------
# Adaptive baselines and the model
# ------------------------------------------------------------------------------------------------

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
    raw = _as_array(data)
    padded = np.concatenate([np.zeros(2, dtype=np.uint8), raw])
    ctx = _context_keys(padded, 2)
    joint = (ctx << np.uint64(8)) | raw.astype(np.uint64)
    c_joint = _prior_occurrences(joint)
    c_ctx = _prior_occurrences(ctx)
    return -np.log2((c_joint + alpha) / (c_ctx + 256.0 * alpha))


def _resolve_params(level: int, params: ModelParams | None) -> tuple[int, ModelParams]:
    if params is None:
        return level, params_for_level(level)
    return 0, params.validate()


def _model_pass(data, level: int = DEFAULT_LEVEL, params: ModelParams | None = None,
                block_size: int = fmt.DEFAULT_BLOCK_SIZE, progress=None) -> tuple[np.ndarray, int]:
    """Compress `data` exactly as `nncompress.compress` does, watching the coder's predictions:
    returns (cost of every byte in bits, size of the .nnc stream)."""
    level, params = _resolve_params(level, params)
    raw = bytes(data)
    encoder = StreamEncoder(level, None if level else params, block_size)
    costs = np.empty(len(raw), dtype=np.float64)
    done = 0

    def observe(nibbles, probs):
        nonlocal done
        p = probs[np.arange(nibbles.shape[0]), nibbles] / probs.sum(axis=1)
        costs[done : done + nibbles.shape[0] // 2] = -np.log2(p[0::2] * p[1::2])
        done += nibbles.shape[0] // 2

    total = len(encoder.header())
    for start in range(0, len(raw), block_size):
        total += len(encoder.block(raw[start : start + block_size], progress, observe))
    total += len(encoder.end())
    return costs, total


def code_lengths(data, level: int = DEFAULT_LEVEL, params: ModelParams | None = None) -> np.ndarray:
    """nncompress's cost of every byte of `data` in bits (its self-information under the model,
    which learns as it goes).  The sum is the range coder's payload up to a few bytes; add the
    header and framing to get the .nnc size."""
    return _model_pass(data, level, params)[0]


def nncompress_size(data, level: int = DEFAULT_LEVEL, params: ModelParams | None = None) -> int:
    """Size of `nncompress.compress(data, level)` without building it (same predictions, same
    range coder, container bytes counted)."""
    return _model_pass(data, level, params)[1]


def top_predictions(data, level: int = DEFAULT_LEVEL, params: ModelParams | None = None,
                    top: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(costs, top byte values (n, top), their probabilities (n, top)) for every byte, from
    `Predictor.byte_distributions` (a Python loop: ~20-40 KB/s, meant for short prefixes)."""
    _, params = _resolve_params(level, params)
    costs, dists = Predictor(params).byte_distributions(bytes(data))
    if dists.shape[0] == 0:
        return costs, np.zeros((0, top), dtype=np.int64), np.zeros((0, top))
    idx = np.argsort(-dists, axis=1, kind="stable")[:, :top]
    return costs, idx, np.take_along_axis(dists, idx, axis=1)


# ------------------------------------------------------------------------------------------------
# Per-file and per-set analysis
# ------------------------------------------------------------------------------------------------

def _bpc(nbytes, n) -> float | None:
    return 8.0 * nbytes / n if n else None


def _reference_compressor(codec: str):
    try:
        return python_codec(codec)[0]
    except ImportError:
        return None


def analyze_file(source, level: int = DEFAULT_LEVEL, *, name: str | None = None,
                 params: ModelParams | None = None, references: bool = True,
                 max_order: int = MAX_ORDER, keep_costs: bool = False) -> dict:
    """All per-file numbers as a JSON-ready dict.  `source` is a path or bytes.  With
    keep_costs=True the dict also holds the per-byte cost arrays ("costs": {"nncompress",
    "order2"}, numpy, not JSON-serialisable) for plots and pages."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        path = None
    else:
        path = str(source)
        data = Path(source).read_bytes()
    n = len(data)
    t0 = time.perf_counter()
    costs, nnc_size = _model_pass(data, level, params)
    model_seconds = time.perf_counter() - t0
    o2 = order2_code_lengths(data)
    level_used, params_used = _resolve_params(level, params)
    bits = float(costs.sum())
    result = {
        "name": name or (os.path.basename(path) if path else "<bytes>"),
        "path": path,
        "bytes": n,
        "distinct_bytes": int(np.unique(_as_array(data)).shape[0]),
        "entropy": entropy_details(data, max_order),
        "order2_adaptive": {"bits": float(o2.sum()), "bpc": _bpc(o2.sum() / 8, n),
                            "estimator": "Krichevsky-Trofimov (alpha=1/2), counts learned online"},
        "nncompress": {
            "level": level_used,
            "params": params_used.describe(),
            "code_length_bits": bits,
            "code_length_bpc": _bpc(bits / 8, n),
            "compressed_bytes": nnc_size,
            "compressed_bpc": _bpc(nnc_size, n),
            "seconds": round(model_seconds, 3),
        },
        "reference": {},
        "notes": [HIGH_ORDER_NOTE],
    }
    if references:
        ref = result["reference"]
        for key, fn in [("gzip", _reference_compressor("zlib")),
                        ("xz", _reference_compressor("lzma")),
                        ("paq", _reference_compressor("paq9a"))]:
            if fn is None:
                ref[key] = None
                result["notes"].append("PAQ skipped: the 'paq' package (paq9a) is not installed.")
                continue
            size = len(fn(data))
            ref[key] = {"bytes": size, "bpc": _bpc(size, n)}
    if keep_costs:
        result["costs"] = {"nncompress": costs, "order2": o2}
        result["data"] = data
    return result


def _json_ready(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("costs", "data")}


class SetError(Exception):
    """A corpus set name that could not be resolved to files."""


def _resolve_set(name: str, corpora_dir: str | None = None) -> list[Path] | None:
    """A named corpus set (canterbury, calgary, ..., or one catalog file) -> its verified files,
    via `nncompress.corpora`; None if `name` is not a set name (or that module is missing)."""
    try:
        from . import corpora
    except ImportError:
        return None
    try:
        if not corpora.is_set(name):
            return None
        return list(corpora.resolve_set(name, corpora_dir))
    except corpora.CorpusError as exc:
        raise SetError(str(exc)) from None


def _dir_files(path: Path) -> list[Path]:
    """The files of a directory, in order: the ones MANIFEST.tsv lists if there is one (the
    shared-corpora layout), else every regular non-hidden file (not recursive)."""
    manifest = path / "MANIFEST.tsv"
    if manifest.is_file():
        names = []
        for line in manifest.read_text(encoding="utf-8").splitlines()[1:]:
            fields = line.split("\t")
            if fields and fields[0] and (path / fields[0]).is_file():
                names.append(path / fields[0])
        if names:
            return names
    return sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))


def expand_inputs(inputs: list[str], corpora_dir: str | None = None) -> list[tuple[str | None, list[Path]]]:
    """Each argument -> (set name or None, files).  A file stands alone; a directory or a corpus
    set name becomes a set."""
    groups = []
    for arg in inputs:
        p = Path(arg)
        if p.is_file():
            groups.append((None, [p]))
        elif p.is_dir():
            groups.append((str(p), _dir_files(p)))
        else:
            files = _resolve_set(arg, corpora_dir)
            if files is None:
                raise SetError(f"{arg}: no such file, directory or corpus set")
            groups.append((arg, files))
    return groups


def set_summary(name: str, results: list[dict]) -> dict:
    """Totals over a set: bytes-weighted bpc (total compressed bits / total bytes) per method,
    the unweighted mean of the files' bpc, and position-weighted entropies."""
    total = sum(r["bytes"] for r in results)
    methods = {"order2_adaptive": lambda r: r["order2_adaptive"]["bits"] / 8,
               "nncompress_code_length": lambda r: r["nncompress"]["code_length_bits"] / 8,
               "nncompress": lambda r: r["nncompress"]["compressed_bytes"]}
    for key in ("gzip", "xz", "paq"):
        if all(r["reference"].get(key) for r in results):
            methods[key] = lambda r, key=key: r["reference"][key]["bytes"]
    out = {"name": name, "files": [r["name"] for r in results], "bytes": total, "methods": {}}
    for key, size in methods.items():
        sizes = [size(r) for r in results]
        per_file = [8 * s / r["bytes"] for s, r in zip(sizes, results) if r["bytes"]]
        out["methods"][key] = {"bytes": sum(sizes), "bpc": _bpc(sum(sizes), total),
                               "mean_file_bpc": sum(per_file) / len(per_file) if per_file else None}
    entropy = []
    for k in range(len(results[0]["entropy"]) if results else 0):
        rows = [r["entropy"][k] for r in results if r["entropy"][k]["positions"]]
        positions = sum(row["positions"] for row in rows)
        h = sum(row["bits_per_byte"] * row["positions"] for row in rows) / positions if positions else None
        entropy.append({"order": k, "bits_per_byte": h, "note": "per-file entropies, position-weighted"})
    out["entropy"] = entropy
    return out


def analyze_paths(inputs: list[str], level: int = DEFAULT_LEVEL, *, references: bool = True,
                  keep_costs: bool = False, corpora_dir: str | None = None, log=None) -> dict:
    """Analyse files, directories and corpus sets (see `expand_inputs`); a directory or a set
    also gets a `set_summary`."""
    groups = expand_inputs(inputs, corpora_dir)
    files, sets = [], []
    for set_name, paths in groups:
        results = []
        for path in paths:
            if log:
                log(f"analyzing {path} ({path.stat().st_size:,} bytes) ...")
            r = analyze_file(path, level, references=references, keep_costs=keep_costs)
            if set_name:
                r["set"] = set_name
            results.append(r)
        files += results
        if set_name:
            sets.append(set_summary(set_name, results))
    return {"level": level, "files": files, "sets": sets}


# ------------------------------------------------------------------------------------------------
# Text report
# ------------------------------------------------------------------------------------------------

def _f(x, fmt_="{:.3f}") -> str:
    return "-" if x is None else fmt_.format(x)


def format_report(report: dict) -> str:
    files = report["files"]
    lines = []
    width = max([len(r["name"]) for r in files] + [len(s["name"]) for s in report["sets"]] + [8])
    norder = len(files[0]["entropy"]) if files else 0
    lines.append(f"Empirical conditional entropy H(X | k previous bytes), bits per byte "
                 f"(lower bounds; optimistic for high k on small files)")
    head = f"{'file':<{width}} {'bytes':>10} {'distinct':>8} " + " ".join(f"{'H' + str(k):>6}" for k in range(norder))
    head += f" {'once@' + str(norder - 1):>7}"
    lines.append(head)
    for r in files:
        row = f"{r['name']:<{width}} {r['bytes']:>10,} {r['distinct_bytes']:>8} "
        row += " ".join(f"{_f(e['bits_per_byte']):>6}" for e in r["entropy"])
        frac = r["entropy"][-1]["single_context_fraction"] if r["entropy"] else None
        row += f" {_f(frac, '{:.1%}'):>7}"
        lines.append(row)
    for s in report["sets"]:
        row = f"{'[' + s['name'] + ']':<{width}} {s['bytes']:>10,} {'':>8} "
        row += " ".join(f"{_f(e['bits_per_byte']):>6}" for e in s["entropy"])
        lines.append(row)
    lines.append(f"  once@{norder - 1}: share of bytes whose order-{norder - 1} context occurs "
                 f"only once in the file (they count as 0 bits in H{norder - 1}).")
    lines.append("")
    level = files[0]["nncompress"]["level"] if files else report["level"]
    lines.append(f"Code length, bits per byte (adaptive: what a decoder could actually do)")
    cols = [("order-2 KT", lambda r: r["order2_adaptive"]["bpc"]),
            ("gzip -9", lambda r: (r["reference"].get("gzip") or {}).get("bpc")),
            ("xz -9e", lambda r: (r["reference"].get("xz") or {}).get("bpc")),
            ("paq9a", lambda r: (r["reference"].get("paq") or {}).get("bpc")),
            (f"nnc -{level} ideal", lambda r: r["nncompress"]["code_length_bpc"]),
            (f"nnc -{level} .nnc", lambda r: r["nncompress"]["compressed_bpc"])]
    lines.append(f"{'file':<{width}} {'bytes':>10} " + " ".join(f"{c:>12}" for c, _ in cols)
                 + f" {'nnc bytes':>10}")
    for r in files:
        lines.append(f"{r['name']:<{width}} {r['bytes']:>10,} "
                     + " ".join(f"{_f(fn(r)):>12}" for _, fn in cols)
                     + f" {r['nncompress']['compressed_bytes']:>10,}")
    keys = ["order2_adaptive", "gzip", "xz", "paq", "nncompress_code_length", "nncompress"]
    for s in report["sets"]:
        m = s["methods"]
        lines.append(f"{'[' + s['name'] + ']':<{width}} {s['bytes']:>10,} "
                     + " ".join(f"{_f((m.get(k) or {}).get('bpc')):>12}" for k in keys)
                     + f" {m['nncompress']['bytes']:>10,}")
        lines.append(f"{'  mean of files':<{width}} {'':>10} "
                     + " ".join(f"{_f((m.get(k) or {}).get('mean_file_bpc')):>12}" for k in keys))
    lines.append(f"  nnc ideal: sum of -log2 P(byte) under the model (the compressor's own code "
                 f"path); nnc .nnc: the real file, header and framing included.")
    if any(r["reference"] and r["reference"].get("paq") is None for r in files):
        lines.append("  paq9a skipped: install the 'paq' package to include it.")
    if report["sets"]:
        lines.append("  [set] rows: total compressed bits / total bytes; 'mean of files': "
                     "unweighted average of the files' bpc.")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# Learning-curve plot
# ------------------------------------------------------------------------------------------------

def moving_average(values: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(end positions, mean of values over the `window` bytes ending there)."""
    n = values.shape[0]
    window = max(1, min(window, n))
    if n == 0:
        return np.zeros(0), np.zeros(0)
    csum = np.concatenate([[0.0], np.cumsum(values)])
    avg = (csum[window:] - csum[:-window]) / window
    return np.arange(window, n + 1), avg


def auto_window(n: int) -> int:
    return int(min(5000, max(50, n // 100)))


def write_plot(results: list[dict], out: str, window: int | None = None, max_files: int = 8) -> str:
    """PNG learning curves: moving-average bits per byte vs position, nncompress and the adaptive
    order-2 baseline, one panel per file (results need keep_costs=True)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in results if r["bytes"]][:max_files]
    if len([r for r in results if r["bytes"]]) > max_files:
        print(f"nncompress analyze: plotting the first {max_files} files only", file=sys.stderr)
    if not shown:
        raise ValueError("nothing to plot (empty files)")
    fig, axes = plt.subplots(len(shown), 1, figsize=(9, 3.6 * len(shown)), squeeze=False)
    for ax, r in zip(axes[:, 0], shown):
        w = window or auto_window(r["bytes"])
        level = r["nncompress"]["level"]
        for key, label, color in [("nncompress", f"nncompress -{level} (RNNME, online)", "C3"),
                                  ("order2", "adaptive order-2 (KT estimator)", "C0")]:
            x, y = moving_average(r["costs"][key], w)
            step = max(1, x.shape[0] // 4000)  # a few thousand points are plenty for a line
            ax.plot(x[::step], y[::step], color=color, linewidth=1.0, label=label)
        for key, label, style in [("gzip", "gzip -9", ":"), ("xz", "xz -9e", "--"), ("paq", "paq9a", "-.")]:
            ref = r["reference"].get(key)
            if ref:
                ax.axhline(ref["bpc"], color="0.45", linestyle=style, linewidth=0.9,
                           label=f"{label} (whole file, {ref['bpc']:.2f})")
        ax.set_xlim(0, r["bytes"])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("position in file (bytes)")
        ax.set_ylabel(f"bits per byte (mean of last {w:,} bytes)")
        ax.set_title(f"{r['name']}: learning curve ({r['bytes']:,} bytes; nncompress "
                     f"{r['nncompress']['code_length_bpc']:.3f} bpc overall)")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# ------------------------------------------------------------------------------------------------
# Surprisal page
# ------------------------------------------------------------------------------------------------

# Colour bins by cost in bits (upper edges), light to dark.
BIN_EDGES = (0.25, 0.5, 1, 2, 3, 4, 6, 8, 12)
BIN_COLOURS = ("#ffffff", "#fff7bc", "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02",
               "#993404", "#662506", "#3f007d")


def _bin(cost: float) -> int:
    for i, edge in enumerate(BIN_EDGES):
        if cost < edge:
            return i
    return len(BIN_EDGES)


def byte_label(b: int) -> str:
    """A short, safe label for one byte value in tooltips."""
    if b == 0x20:
        return "␣"
    if 0x21 <= b <= 0x7E:
        return chr(b)
    return {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}.get(b, f"\\x{b:02x}")


def _utf8_len(data: bytes, i: int) -> int:
    """Length of the valid UTF-8 character starting at data[i], or 0 if none does."""
    b = data[i]
    if b < 0x80:
        return 1
    width = 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF else 4 if 0xF0 <= b <= 0xF4 else 0
    if not width or i + width > len(data):
        return 0
    try:
        data[i : i + width].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    return width


def _unsafe_char(ch: str) -> bool:
    """Characters shown escaped: controls, format characters (e.g. bidi overrides), line and
    paragraph separators, surrogates, private use and unassigned code points."""
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def char_groups(data: bytes) -> list[tuple[int, int, str, str]]:
    """Split bytes into display groups (start, end, kind, text): kind 'char' (one UTF-8
    character, text already HTML-escaped), 'newline' (LF or CR LF), 'tab', or 'escape'
    (a control byte, a byte that is not valid UTF-8, or an unsafe code point, shown as \\xNN
    / \\uNNNN)."""
    groups = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if b == 0x0A:
            groups.append((i, i + 1, "newline", ""))
            i += 1
        elif b == 0x0D and i + 1 < n and data[i + 1] == 0x0A:
            groups.append((i, i + 2, "newline", ""))
            i += 2
        elif b == 0x09:
            groups.append((i, i + 1, "tab", "\t"))
            i += 1
        else:
            width = _utf8_len(data, i)
            if width == 0:
                groups.append((i, i + 1, "escape", f"\\x{b:02x}"))
                i += 1
                continue
            ch = data[i : i + width].decode("utf-8")
            if _unsafe_char(ch):
                text = f"\\x{ord(ch):02x}" if ord(ch) < 0x100 and width == 1 else f"\\u{ord(ch):04x}"
                groups.append((i, i + width, "escape", text))
            else:
                groups.append((i, i + width, "char", html.escape(ch, quote=True)))
            i += width
    return groups


def _pct(p: float) -> str:
    pct = 100 * p
    return f"{pct:.0f}%" if pct >= 9.95 else f"{pct:.1f}%" if pct >= 0.095 else "<0.1%"


_PAGE_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:62em;
color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.15em .5em;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
.text{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:14px;
white-space:pre-wrap;word-wrap:break-word;border:1px solid #ccc;padding:.8em;line-height:1.5;
background:#fff}
.text i{font-style:normal}
.text i:hover{outline:1px solid #000}
.e{font-size:.8em;border:1px dotted #555;border-radius:2px}
.nl{font-size:.75em;opacity:.8}
.legend span{display:inline-block;min-width:4.2em;text-align:center;padding:.1em .3em;
font-family:ui-monospace,monospace;font-size:.85em;border:1px solid #ddd}
.note{color:#555;font-size:.9em}
"""


def _css_bins() -> str:
    rules = []
    for i, colour in enumerate(BIN_COLOURS):
        fg = "#fff" if i >= 6 else "#000"
        rules.append(f".c{i}{{background:{colour};color:{fg}}}")
    return "\n".join(rules)


def _legend() -> str:
    parts = []
    lows = (0,) + BIN_EDGES
    for i in range(len(BIN_COLOURS)):
        label = f"{lows[i]:g}–{BIN_EDGES[i]:g}" if i < len(BIN_EDGES) else f"≥ {lows[i]:g}"
        parts.append(f'<span class="c{i}">{label}</span>')
    return ('<p class="legend">Cost in bits per character: ' + "".join(parts) + "</p>")


def _numbers_table(r: dict) -> str:
    nn = r["nncompress"]
    rows = [("size", f"{r['bytes']:,} bytes"), ("distinct byte values", str(r["distinct_bytes"]))]
    for e in r["entropy"]:
        frac = e["single_context_fraction"]
        extra = f" ({frac:.1%} of bytes have a context seen once)" if e["order"] >= 2 and frac else ""
        rows.append((f"H(X | {e['order']} previous bytes)", f"{_f(e['bits_per_byte'])} bpc{extra}"))
    rows.append(("adaptive order-2 (KT estimator)", f"{_f(r['order2_adaptive']['bpc'])} bpc"))
    for key, label in [("gzip", "gzip -9 (zlib)"), ("xz", "xz -9e (lzma)"), ("paq", "PAQ (paq9a)")]:
        ref = r["reference"].get(key)
        rows.append((label, f"{_f(ref['bpc'])} bpc ({ref['bytes']:,} bytes)" if ref else "not run"))
    rows.append((f"nncompress -{nn['level']}, ideal code length",
                 f"{_f(nn['code_length_bpc'])} bpc ({nn['code_length_bits'] / 8:,.0f} bytes)"))
    rows.append((f"nncompress -{nn['level']}, real .nnc file",
                 f"{_f(nn['compressed_bpc'])} bpc ({nn['compressed_bytes']:,} bytes)"))
    body = "".join(f"<tr><td>{html.escape(a)}</td><td>{html.escape(b)}</td></tr>" for a, b in rows)
    return f"<table><tr><th>measure (whole file)</th><th>value</th></tr>{body}</table>"


def surprisal_html(r: dict, limit: int = DEFAULT_HTML_LIMIT, params: ModelParams | None = None) -> str:
    """The coloured-text section for one analysed file (needs keep_costs=True)."""
    data = r["data"]
    costs = r["costs"]["nncompress"]
    groups = [g for g in char_groups(data[: limit + 4]) if g[1] <= limit]
    shown = groups[-1][1] if groups else 0
    _, top_bytes, top_p = top_predictions(data[:shown], r["nncompress"]["level"] or DEFAULT_LEVEL, params)
    out = []
    for start, end, kind, text in groups:
        total = float(costs[start:end].sum())
        if end - start == 1:
            tip = f"{byte_label(data[start])}: {total:.2f} bits"
        else:
            tip = (f"{total:.2f} bits (" + " + ".join(
                f"{byte_label(data[k])} {costs[k]:.2f}" for k in range(start, end)) + ")")
        tip += "\ntop-5: " + ", ".join(f"{byte_label(int(b))} {_pct(float(p))}"
                                       for b, p in zip(top_bytes[start], top_p[start]))
        tip = html.escape(tip, quote=True)
        cls = f"c{_bin(total)}"
        if kind == "newline":
            out.append(f'<i class="{cls} nl" title="{tip}">↵</i>\n')
        elif kind == "escape":
            out.append(f'<i class="{cls} e" title="{tip}">{html.escape(text)}</i>')
        else:
            out.append(f'<i class={cls} title="{tip}">{text}</i>')
    cut = (f"Showing the first {shown:,} of {r['bytes']:,} bytes; the numbers above cover the "
           f"whole file." if shown < r["bytes"] else f"Showing all {r['bytes']:,} bytes.")
    return (f"<h2>{html.escape(r['name'])}</h2>\n{_numbers_table(r)}\n"
            f'<p class="note">{html.escape(HIGH_ORDER_NOTE)}</p>\n'
            f'<p class="note">{cut} Each character is coloured by its cost −log2 P under '
            f"nncompress -{r['nncompress']['level']} as it compresses the file (the model learns "
            f"as it goes); a multi-byte UTF-8 character by the sum of its bytes. Hover for the "
            f"cost and the model's five most likely bytes before it. ↵ marks a line end, "
            f"\\xNN a byte that is a control code or not valid UTF-8.</p>\n"
            f'<div class="text">{"".join(out)}</div>\n')


def write_html(results: list[dict], out: str, limit: int = DEFAULT_HTML_LIMIT) -> str:
    sections = [surprisal_html(r, limit) for r in results]
    title = "nncompress surprisal: " + ", ".join(r["name"] for r in results)
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f"<title>{html.escape(title)}</title>\n<style>{_PAGE_CSS}{_css_bins()}</style></head>\n"
        f"<body>\n<h1>{html.escape(title)}</h1>\n{_legend()}\n" + "".join(sections)
        + "</body></html>\n"
    )
    Path(out).write_text(page, encoding="utf-8")
    return out


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nncompress analyze",
        description="Entropy analysis of files, directories or corpus sets: empirical "
                    "conditional entropies, adaptive baselines, reference compressors and "
                    "nncompress's own per-byte code lengths.",
        epilog=HIGH_ORDER_NOTE,
    )
    parser.add_argument("inputs", nargs="+", metavar="FILE|DIR|SET")
    parser.add_argument("-l", "--level", type=int, default=DEFAULT_LEVEL, choices=range(1, 10),
                        metavar="N", help=f"nncompress level 1..9 (default {DEFAULT_LEVEL})")
    parser.add_argument("--json", metavar="OUT", help="write all numbers as JSON ('-': stdout)")
    parser.add_argument("--plot", metavar="OUT.png", help="learning-curve plot (PNG)")
    parser.add_argument("--html", metavar="OUT.html", help="self-contained page, text coloured by cost")
    parser.add_argument("--html-limit", type=int, default=DEFAULT_HTML_LIMIT, metavar="BYTES",
                        help=f"bytes of each file shown in the page (default {DEFAULT_HTML_LIMIT:,})")
    parser.add_argument("--window", type=int, default=0, metavar="N",
                        help="moving-average window of the plot in bytes (default: auto)")
    parser.add_argument("--corpora", metavar="DIR",
                        help="where to find the files of corpus sets (see 'nncompress bench')")
    parser.add_argument("--no-reference", action="store_true", help="skip gzip, xz and PAQ")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    return parser


def main(argv=None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly, as other tools do
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.html_limit < 1 or args.window < 0:
        print("nncompress analyze: --html-limit must be >= 1 and --window >= 0", file=sys.stderr)
        return 1
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    keep = bool(args.plot or args.html)
    try:
        report = analyze_paths(args.inputs, args.level, references=not args.no_reference,
                               keep_costs=keep, corpora_dir=args.corpora, log=log)
    except SetError as exc:
        print(f"nncompress analyze: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"nncompress analyze: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if not report["files"]:
        print("nncompress analyze: no files to analyse", file=sys.stderr)
        return 1
    if args.json != "-":
        print(format_report(report))
    if args.json:
        text = json.dumps({"level": report["level"], "files": [_json_ready(r) for r in report["files"]],
                           "sets": report["sets"]}, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    if args.plot:
        write_plot(report["files"], args.plot, args.window or None)
        if log:
            log(f"wrote {args.plot}")
    if args.html:
        write_html(report["files"], args.html, args.html_limit)
        if log:
            log(f"wrote {args.html}")
    return 0
