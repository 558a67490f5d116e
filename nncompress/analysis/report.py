"""Per-file and per-set analysis, as JSON-ready dicts, and the text report."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from .. import targets
from ..comparators import reference_codecs
from ..model.params import ModelParams
from ..presets import DEFAULT_LEVEL
from .costs import model_pass, resolve_params
from .entropy import HIGH_ORDER_NOTE, MAX_ORDER, as_array, entropy_details, order2_code_lengths

# result key -> comparator key (nncompress.comparators)
REFERENCES = {"gzip": "gzip", "xz": "xz", "paq": "paq9a"}
# only PAQ's binding is optional; the others are in the standard library, but a Python built
# without lzma has no xz, and its note must not blame PAQ
SKIPPED_NOTES = {"paq": "PAQ skipped: the 'paq' package (paq9a) is not installed."}


def _bpc(nbytes, n) -> float | None:
    return 8.0 * nbytes / n if n else None



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
    costs, nnc_size = model_pass(data, level, params)
    model_seconds = time.perf_counter() - t0
    o2 = order2_code_lengths(data)
    level_used, params_used = resolve_params(level, params)
    bits = float(costs.sum())
    result = {
        "name": name or (os.path.basename(path) if path else "<bytes>"),
        "path": path,
        "bytes": n,
        "distinct_bytes": int(np.unique(as_array(data)).shape[0]),
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
        codecs = reference_codecs(list(REFERENCES.values()))
        for key, comparator_key in REFERENCES.items():
            fn = codecs[comparator_key]
            if fn is None:
                ref[key] = None
                result["notes"].append(SKIPPED_NOTES.get(key, f"{comparator_key} skipped: not available."))
                continue
            size = len(fn(data))
            ref[key] = {"bytes": size, "bpc": _bpc(size, n)}
    if keep_costs:
        result["costs"] = {"nncompress": costs, "order2": o2}
        result["data"] = data
    return result


def json_ready(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("costs", "data")}


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
                  keep_costs: bool = False, corpora_dir: str | None = None, log=None,
                  client=None) -> dict:
    """Analyse files, directories and corpus sets (resolved by `nncompress.targets.resolve`, the
    rule `nncompress bench` uses); a directory or a set also gets a `set_summary`.  With a
    dask.distributed ``client`` every file is analysed on the cluster (its bytes travel with the
    task), all at once; the report is the same."""
    resolved = [(target.set, list(target.files)) for target in targets.resolve(inputs, corpora_dir)]
    futures = {}
    if client is not None:
        for _, paths in resolved:
            for path in paths:
                if path not in futures:
                    futures[path] = client.submit(analyze_file, path.read_bytes(), level, name=path.name,
                                                  references=references, keep_costs=keep_costs, pure=False)
    files, sets = [], []
    for set_name, paths in resolved:
        results = []
        for path in paths:
            if log:
                log(f"analyzing {path} ({path.stat().st_size:,} bytes){' on the cluster' if futures else ''} ...")
            if futures:
                r = dict(futures[path].result(), path=str(path))
            else:
                r = analyze_file(path, level, references=references, keep_costs=keep_costs)
            if set_name:
                r["set"] = set_name
            results.append(r)
        files += results
        if set_name:
            sets.append(set_summary(set_name, results))
    return {"level": level, "files": files, "sets": sets}


def fmt_number(x, fmt_="{:.3f}") -> str:
    return "-" if x is None else fmt_.format(x)


def format_report(report: dict) -> str:
    files = report["files"]
    lines = []
    width = max([len(r["name"]) for r in files] + [len(s["name"]) for s in report["sets"]] + [8])
    norder = len(files[0]["entropy"]) if files else 0
    lines.append("Empirical conditional entropy H(X | k previous bytes), bits per byte "
                 "(lower bounds; optimistic for high k on small files)")
    head = f"{'file':<{width}} {'bytes':>10} {'distinct':>8} " + " ".join(f"{'H' + str(k):>6}" for k in range(norder))
    head += f" {'once@' + str(norder - 1):>7}"
    lines.append(head)
    for r in files:
        row = f"{r['name']:<{width}} {r['bytes']:>10,} {r['distinct_bytes']:>8} "
        row += " ".join(f"{fmt_number(e['bits_per_byte']):>6}" for e in r["entropy"])
        frac = r["entropy"][-1]["single_context_fraction"] if r["entropy"] else None
        row += f" {fmt_number(frac, '{:.1%}'):>7}"
        lines.append(row)
    for s in report["sets"]:
        row = f"{'[' + s['name'] + ']':<{width}} {s['bytes']:>10,} {'':>8} "
        row += " ".join(f"{fmt_number(e['bits_per_byte']):>6}" for e in s["entropy"])
        lines.append(row)
    lines.append(f"  once@{norder - 1}: share of bytes whose order-{norder - 1} context occurs "
                 f"only once in the file (they count as 0 bits in H{norder - 1}).")
    lines.append("")
    level = files[0]["nncompress"]["level"] if files else report["level"]
    lines.append("Code length, bits per byte (adaptive: what a decoder could actually do)")
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
                     + " ".join(f"{fmt_number(fn(r)):>12}" for _, fn in cols)
                     + f" {r['nncompress']['compressed_bytes']:>10,}")
    keys = ["order2_adaptive", "gzip", "xz", "paq", "nncompress_code_length", "nncompress"]
    for s in report["sets"]:
        m = s["methods"]
        lines.append(f"{'[' + s['name'] + ']':<{width}} {s['bytes']:>10,} "
                     + " ".join(f"{fmt_number((m.get(k) or {}).get('bpc')):>12}" for k in keys)
                     + f" {m['nncompress']['bytes']:>10,}")
        lines.append(f"{'  mean of files':<{width}} {'':>10} "
                     + " ".join(f"{fmt_number((m.get(k) or {}).get('mean_file_bpc')):>12}" for k in keys))
    lines.append("  nnc ideal: sum of -log2 P(byte) under the model (the compressor's own code "
                 "path); nnc .nnc: the real file, header and framing included.")
    if any(r["reference"] and r["reference"].get("paq") is None for r in files):
        lines.append("  paq9a skipped: install the 'paq' package to include it.")
    if report["sets"]:
        lines.append("  [set] rows: total compressed bits / total bytes; 'mean of files': "
                     "unweighted average of the files' bpc.")
    return "\n".join(lines)

