#!/usr/bin/env python3
"""Model tuning: nncompress's ideal code length (bpc) on corpus files, for a preset and variants of it.

    python bench/tune.py alice29.txt paper1 news:150000                   # level 6, the default
    python bench/tune.py --level 9 --set mixer_lr=2 alice29.txt paper1     # the preset with an override
    python bench/tune.py --level 9 alice29.txt paper1 news:150000 \\
        --variant "mixer_lr=2" --variant "mixer_lr=3 mixer_lr_boost=24"    # a grid: one row per variant

FILE is anything `nncompress analyze` takes (a path, a folder, a corpus set or a catalog file name,
found and SHA-256-checked through --corpora, NNC_CORPORA or the fetch cache); FILE:N takes the first N
bytes of each of its files.  A parameter is a ModelParams field (nncompress/model/params.py) and a
Python literal: `contexts=(1,2,3,4,6,32)`, `mixer_lr=2`; a variant is space-separated parameters
applied on top of the base (--level, then --set).

bpc is `nncompress.analysis.code_lengths`: the cost of every byte under the predictions the real
encoder codes (the .nnc payload is within a few bytes of it; header and framing are not counted).
KB/s is that model pass after a warm-up that compiles or loads the numba kernels; MiB is
`codec.model_memory` (the model's tables, not the interpreter).  Speeds are noisy on a shared machine:
the load average is printed at the start and the end, note it beside any speed you record.

Output: one line per (variant, file) as it is measured, then a Markdown table (one row per variant)
to paste into bench/TUNING.md.  --jobs N measures N variants at once in separate processes (faster
on a free machine; the speeds then disturb each other).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from nncompress import targets
from nncompress.analysis import code_lengths
from nncompress.codec import model_memory
from nncompress.corpora import CorpusError
from nncompress.model.params import ModelParams
from nncompress.presets import DEFAULT_LEVEL, params_for_level

WARMUP = b"warm up the numba kernels before timing " * 8


def parse_overrides(text: str) -> dict:
    """'mixer_lr=2 contexts=(1,2,3)' -> {'mixer_lr': 2, 'contexts': (1, 2, 3)}."""
    known = {f.name for f in dataclasses.fields(ModelParams)}
    out = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or key not in known:
            raise ValueError(f"{item!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(known))}")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError(f"{item!r}: the value is not a Python literal") from None
    return out


def make_params(level: int, *overrides: str) -> ModelParams:
    params = params_for_level(level)
    for text in overrides:
        params = dataclasses.replace(params, **parse_overrides(text))
    return params.validate()


def load_files(specs: list[str], corpora_dir=None) -> list[tuple[str, bytes]]:
    """[(label, data)]: every file of every FILE[:N] argument."""
    out = []
    for spec in specs:
        name, _, prefix = spec.rpartition(":") if spec.rpartition(":")[2].isdigit() else (spec, "", "")
        for target in targets.resolve([name], corpora_dir):
            for path in target.files:
                data = Path(path).read_bytes()
                label = Path(path).name
                if prefix:
                    data, label = data[: int(prefix)], f"{label}:{prefix}"
                out.append((label, data))
    return out


def measure(params: ModelParams, files: list[tuple[str, bytes]], tag: str = "", log=print) -> list[dict]:
    """bpc and KB/s of every file under `params` (one process, files in order)."""
    code_lengths(WARMUP, params=params)
    rows = []
    for label, data in files:
        t0, c0 = time.perf_counter(), time.process_time()
        bits = code_lengths(data, params=params)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        row = {"file": label, "bytes": len(data), "bpc": float(bits.sum()) / len(data) if data else None,
               "kbs": len(data) / 1024 / seconds if seconds > 0 else None,
               "cpu_kbs": len(data) / 1024 / cpu if cpu > 0 else None, "cpu_s": cpu}
        rows.append(row)
        if log:
            bpc = f"{row['bpc']:.4f}" if row["bpc"] is not None else "-"
            log(f"{tag or 'base':<32} {label:<20} {bpc} bpc {row['kbs'] or 0:7.1f} KB/s "
                f"{row['cpu_kbs'] or 0:7.1f} KB/CPU-s {cpu:7.2f} CPU-s", flush=True)
    return rows


def _measure_variant(job):
    params, files, tag = job
    return measure(params, files, tag)


def markdown(results: list[tuple[str, ModelParams, list[dict]]]) -> str:
    files = [row["file"] for row in results[0][2]] if results else []
    lines = ["| variant | " + " | ".join(files) + " | KB/s | KB/CPU-s | MiB |",
             "|---|" + "---:|" * (len(files) + 3)]
    for tag, params, rows in results:
        speeds = [r["kbs"] for r in rows if r["kbs"]]
        cells = [f"{r['bpc']:.4f}" if r["bpc"] is not None else "-" for r in rows]
        speed = f"{min(speeds):.0f}-{max(speeds):.0f}" if speeds else "-"
        # CPU time is what a shared machine's load disturbs least: the whole run's bytes / CPU-s
        cpu = sum(r["cpu_s"] for r in rows if r["cpu_s"])
        cpu_speed = f"{sum(r['bytes'] for r in rows) / 1024 / cpu:.0f}" if cpu > 0 else "-"
        lines.append(f"| {tag or 'base'} | " + " | ".join(cells)
                     + f" | {speed} | {cpu_speed} | {model_memory(params) / 2**20:.0f} |")
    return "\n".join(lines)


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE[:N]")
    parser.add_argument("--level", type=int, default=DEFAULT_LEVEL, choices=range(1, 10), metavar="1..9",
                        help=f"the preset the runs start from (default {DEFAULT_LEVEL})")
    parser.add_argument("--set", dest="base", action="append", default=[], metavar="'NAME=VALUE ...'",
                        help="parameters changed in every run")
    parser.add_argument("--variant", action="append", default=[], metavar="'NAME=VALUE ...'",
                        help="one row per variant (default: the base alone)")
    parser.add_argument("--corpora", metavar="DIR", help="folder holding the corpus files")
    parser.add_argument("--jobs", type=int, default=1, help="variants measured at once (default 1)")
    args = parser.parse_args(argv)
    try:
        files = load_files(args.files, args.corpora)
        variants = [(tag, make_params(args.level, *args.base, tag)) for tag in (args.variant or [""])]
    except (CorpusError, ValueError, OSError) as exc:
        print(f"tune: {exc}", file=sys.stderr)
        return 1
    print(f"level {args.level}{' + ' + ' '.join(args.base) if args.base else ''}; load average {_load()}")
    jobs = [(params, files, tag) for tag, params in variants]
    if args.jobs > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            measured = list(pool.map(_measure_variant, jobs))
    else:
        measured = [_measure_variant(job) for job in jobs]
    print(f"load average at the end {_load()}\n")
    print(markdown([(tag, params, rows) for (tag, params), rows in zip(variants, measured)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
