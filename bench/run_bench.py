#!/usr/bin/env python3
"""Regenerate bench/RESULTS.md, bench/results.json and bench/results.png from the corpora.

    python bench/run_bench.py                        # everything (what `make bench` runs)
    python bench/run_bench.py --reuse-comparators    # reuse bench/comparators.json, measure nncompress
    python bench/run_bench.py --files alice29.txt,paper1 --levels 1,6 --provisional "..."
    python bench/run_bench.py --levels none --save-comparators --out bench/out   # comparators only

Run it with nncompress importable (`make bench`, or `make install` then `.venv/bin/python bench/run_bench.py`).
Every corpus file of the catalog (corpora/README.md; found and SHA-256-checked as `nncompress bench`
does: --corpora, else NNC_CORPORA - the Makefile sets it to ../shared/corpora - else the fetch
cache), every comparator that is installed,
nncompress at levels 1, 6 and 9 - except the two large files (bible.txt, world192.txt), which get
the default level only (--large-levels).  Runs are one at a time on purpose: speeds are
single-threaded and would disturb each other.

The comparators do not change when the model is tuned, so their rows can be measured once and
cached (--save-comparators, bench/comparators.json); --reuse-comparators takes every cached row
whose file SHA-256, compressor and compressor version match and measures only the rest.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
from pathlib import Path

from nncompress import benchmark, corpora
from nncompress.plotting import PlotUnavailable, require_matplotlib
from nncompress.presets import DEFAULT_LEVEL

HERE = Path(__file__).resolve().parent

LARGE_FILES = ("bible.txt", "world192.txt")
DEFAULT_CACHE = HERE / "comparators.json"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", help="comma-separated corpus file names (default: every file of the catalog)")
    parser.add_argument("--sets", help="comma-separated corpus sets instead of --files")
    parser.add_argument("--levels", default="1,6,9", help="nncompress levels (default 1,6,9; 'none' to skip)")
    parser.add_argument("--large-levels", default=str(DEFAULT_LEVEL),
                        help=f"levels for {' and '.join(LARGE_FILES)} (default {DEFAULT_LEVEL})")
    parser.add_argument("--with", dest="with_", default="all", help="comparators, as `nncompress bench --with`")
    parser.add_argument("--corpora", metavar="DIR", help="folder holding the corpus files")
    parser.add_argument("--reuse-comparators", nargs="?", const=str(DEFAULT_CACHE), metavar="PATH",
                        help=f"reuse cached comparator rows (default {DEFAULT_CACHE.relative_to(HERE.parent)})")
    parser.add_argument("--save-comparators", nargs="?", const=str(DEFAULT_CACHE), metavar="PATH",
                        help="merge this run's comparator rows (not nncompress) into the cache")
    parser.add_argument("--out", default=str(HERE), help="folder for RESULTS.md, results.json, results.png "
                                                         "(default bench/)")
    parser.add_argument("--provisional", metavar="TEXT", help="mark RESULTS.md provisional, with this reason")
    parser.add_argument("--min-time", type=float, default=benchmark.DEFAULT_MIN_TIME,
                        help="repeat each timed call for at least this many seconds")
    parser.add_argument("--render-only", action="store_true",
                        help="measure nothing: rewrite RESULTS.md and results.png from the folder's results.json")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on standard error")
    return parser.parse_args(argv)


def plan_for(args):
    catalog = corpora.load_catalog()
    if args.files:
        names = [n.strip() for n in args.files.split(",") if n.strip()]
        unknown = [n for n in names if n not in catalog]
        if unknown:
            raise SystemExit(f"run_bench: unknown corpus files {unknown} (see corpora/README.md)")
        entries = [catalog[n] for n in catalog if n in names]
    elif args.sets:
        wanted = [s.strip() for s in args.sets.split(",") if s.strip()]
        entries = list({e.name: e for s in wanted for e in corpora.set_files(s, catalog)}.values())
    else:
        entries = list(catalog.values())
    try:
        paths = {e.name: corpora.locate(e, args.corpora) for e in entries}
    except corpora.CorpusError as exc:
        raise SystemExit(f"run_bench: {exc}")
    comparators = benchmark.select_comparators(args.with_)
    levels = {level: benchmark.nncompress_comparator(level) for level in
              benchmark.parse_levels(args.levels) + benchmark.parse_levels(args.large_levels)}
    small = [levels[lv] for lv in benchmark.parse_levels(args.levels)]
    large = [levels[lv] for lv in benchmark.parse_levels(args.large_levels)]
    plan = []
    for e in entries:
        info = benchmark.file_info(paths[e.name])
        plan.append((info, comparators + (large if e.name in LARGE_FILES else small)))
    groups = {}
    for set_name in corpora.set_names(catalog)[:-1]:
        members = [e.name for e in entries if e.set == set_name]
        if members:
            groups[set_name] = members
    if len(groups) > 1:
        groups[corpora.ALL] = [e.name for e in entries]
    return plan, groups, comparators


def _shown(path) -> str:
    """A path as reports show it: relative to the repository when inside it."""
    if not Path(path).is_absolute():
        return str(path)
    path = Path(path).resolve()
    try:
        return str(path.relative_to(HERE.parent))
    except ValueError:
        return str(path)


def preamble(meta: dict, args, cache_meta: dict | None, cached_rows: int) -> str:
    lines = ["# Benchmark results", ""]
    if args.provisional:
        lines += [f"> **PROVISIONAL** - {args.provisional}", ""]
    packages = ", ".join(f"{k} {v}" for k, v in meta["packages"].items())
    lines += [
        f"* Date: {meta['date']}",
        f"* CPU: {meta['cpu']}, {meta['cores']} cores ({meta['platform']}); every run single-threaded",
        f"* Python {meta['python']}; {packages}",
    ]
    if meta.get("externals"):
        lines.append("* External compressors: " + ", ".join(f"{k}: {v}" for k, v in meta["externals"].items()))
    if meta.get("loadavg"):
        end = meta.get("loadavg_end")
        lines.append(f"* Load average (1, 5, 15 min) at start: {', '.join(map(str, meta['loadavg']))}"
                     + (f"; at end: {', '.join(map(str, end))}" if end else "")
                     + " - other work on the machine slows every compressor's measured speed")
    lines.append(f"* Command: `{meta['command']}`")
    if cached_rows:
        source = cache_meta or {}
        lines.append(f"* {cached_rows} comparator rows (marked *cached*) were reused from "
                     f"`{_shown(args.reuse_comparators)}`, measured {source.get('date', '?')} on {source.get('cpu', '?')} "
                     f"with `{source.get('command', '?')}`")
    lines += ["", "Chart: [results.png](results.png); every number: [results.json](results.json).", "",
              "![bpc vs compression speed](results.png)", ""]
    return "\n".join(lines)


def render_only(args) -> int:
    out = Path(args.out)
    with open(out / "results.json", encoding="utf-8") as f:
        report = benchmark.report_from_json(json.load(f))
    meta = report.meta
    original = argparse.Namespace(**vars(args))
    original.provisional = meta.get("provisional", args.provisional)
    original.reuse_comparators = meta.get("comparator_cache_path") or str(DEFAULT_CACHE)
    text = preamble(meta, original, meta.get("comparator_cache"), meta.get("cached_rows", 0))
    benchmark.write_outputs(report, markdown_path=out / "RESULTS.md", plot_path=out / "results.png", preamble=text)
    print(f"run_bench: re-rendered {out / 'RESULTS.md'} and {out / 'results.png'} from results.json", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:  # results.png is always drawn: refuse before hours of measuring, not after
        require_matplotlib()
    except PlotUnavailable as exc:
        raise SystemExit(f"run_bench: {exc}")
    if args.render_only:
        return render_only(args)
    plan, groups, comparators = plan_for(args)
    cache, cache_meta = None, None
    if args.reuse_comparators:
        try:
            cache = benchmark.load_cache(args.reuse_comparators)
            with open(args.reuse_comparators, encoding="utf-8") as f:
                cache_meta = json.load(f).get("meta")
        except FileNotFoundError:
            print(f"run_bench: no cache at {args.reuse_comparators}; measuring every comparator", file=sys.stderr)
        here = (benchmark.cpu_model(), os.cpu_count())
        if cache_meta and (cache_meta.get("cpu"), cache_meta.get("cores")) != here:
            print(f"run_bench: {args.reuse_comparators} was measured on another machine "
                  f"({cache_meta.get('cpu')}, {cache_meta.get('cores')} cores); measuring every comparator",
                  file=sys.stderr)
            cache, cache_meta = None, None
    all_comps = {c.key: c for _, comps in plan for c in comps}
    command = "python bench/run_bench.py" + ("" if not argv else " " + shlex.join(argv))
    meta = benchmark.system_info(list(all_comps.values())) | {"command": command}
    report = benchmark.run(plan, groups, cache=cache, min_time=args.min_time, progress=not args.quiet, meta=meta)
    meta = report.meta
    cached_rows = sum(1 for r in report.results if r.get("cached"))
    report.meta["cached_rows"] = cached_rows
    if cache_meta:
        report.meta["comparator_cache"] = cache_meta
        report.meta["comparator_cache_path"] = _shown(args.reuse_comparators)
    # corpus files are named by their catalog name (their SHA-256 says which bytes): the folder
    # they were read from belongs to this machine, not to the committed results
    report.files = [dataclasses.replace(f, path=Path(f.name)) for f in report.files]
    if args.provisional:
        report.meta["provisional"] = args.provisional
    sys.stdout.write(benchmark.format_text(report))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    benchmark.write_outputs(report, json_path=out / "results.json", markdown_path=out / "RESULTS.md",
                            plot_path=out / "results.png", preamble=preamble(meta, args, cache_meta, cached_rows))
    if args.save_comparators:
        path = Path(args.save_comparators)
        previous = {}
        if path.exists():
            previous = benchmark.load_cache(path)
        merged = benchmark.Report(report.files, report.groups, report.comparators, list(report.results), meta)
        count = benchmark.save_cache(path, merged)
        if previous:  # keep rows for files or comparators this run did not measure
            with open(path, encoding="utf-8") as f:
                blob = json.load(f)
            keys = {e["key"] for e in blob["entries"]}
            blob["entries"] += [{"key": k, "row": r} for k, r in previous.items() if k not in keys]
            with open(path, "w", encoding="utf-8") as f:
                json.dump(blob, f, indent=1)
                f.write("\n")
            count = len(blob["entries"])
        print(f"run_bench: {count} comparator rows in {path}", file=sys.stderr)
    print(f"run_bench: wrote {out / 'RESULTS.md'}, {out / 'results.json'}, {out / 'results.png'}", file=sys.stderr)
    return 0 if all(r["roundtrip"] == "ok" for r in report.results) else 1


if __name__ == "__main__":
    sys.exit(main())
