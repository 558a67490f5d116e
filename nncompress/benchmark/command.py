"""`nncompress bench` on the command line."""

from __future__ import annotations

import argparse
import sys

from .. import corpora
from ..comparators import (ALL_KEYS, nncompress_comparator, nncompress_model_comparator,
                           parse_levels, select_comparators)
from ..errors import NNCError
from ..plotting import PlotUnavailable, require_matplotlib
from .measurement import DEFAULT_TIMEOUT, run, system_info
from .report import METHOD, files_label, format_text, write_outputs
from .targets import bench_files
from .worker import DEFAULT_MIN_TIME
from ..cli_args import Parser as UsageParser  # usage errors exit 1, as gzip and xz


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(
        prog="nncompress bench",
        description="Compare nncompress with gzip, bzip2, xz, zstd, brotli, PPMd, zpaq, paq9a and any "
                    "paq8px / cmix / lstm-compress on PATH: size, bpc, speed, peak memory, verified round "
                    "trips.  'nncompress bench fetch --help' downloads the corpora.",
        epilog="Targets: an existing file stands alone; a folder is a set of its files (those its "
               "MANIFEST.tsv lists, else every non-hidden file in it); any other name is a corpus set "
               "or a file of the catalog, found in --corpora, $NNC_CORPORA or the fetch cache.  "
               "Method: " + METHOD)
    parser.add_argument("targets", nargs="*", metavar="FILE|DIR|SET",
                        help="files, folders (their files) or corpus sets (default: canterbury)")
    parser.add_argument("--with", dest="with_", metavar="NAMES", default="all",
                        help=f"comma-separated comparators (default all): {', '.join(ALL_KEYS)}; "
                             "aliases zlib, bz2, lzma, zstd, ppmd, zpaq, paq; 'none' for nncompress only")
    parser.add_argument("--levels", default="6", help="nncompress levels, e.g. 1,6,9 (default 6; 'none' to skip)")
    parser.add_argument("--models", default="cm",
                        help="nncompress models: cm (the levels) and/or rnnme (the RNNME network "
                             "alone, a row of its own), e.g. cm,rnnme (default cm)")
    parser.add_argument("--corpora", metavar="DIR",
                        help=f"folder holding the corpus files (else ${corpora.ENV}, else the cache "
                             "'nncompress bench fetch' writes to)")
    parser.add_argument("--json", metavar="OUT", help="write every result as JSON")
    parser.add_argument("--markdown", metavar="OUT", help="write the tables as Markdown")
    parser.add_argument("--plot", metavar="OUT.png", help="write a bpc vs KB/s chart (PNG; needs matplotlib)")
    parser.add_argument("--min-time", type=float, default=DEFAULT_MIN_TIME,
                        help=f"repeat each timed call until this many seconds (default {DEFAULT_MIN_TIME})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds allowed per worker")
    parser.add_argument("--list", action="store_true", help="list corpus sets and comparators, then exit")
    parser.add_argument("--cluster", metavar="ADDRESS",
                        help="run the measurements on a dask.distributed cluster (e.g. tcp://host:8786; "
                             "default $NNC_CLUSTER): files travel with the jobs; speeds and memory are "
                             "the workers', so give each worker a core of its own")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on standard error")
    return parser


def list_all(corpora_dir) -> int:
    catalog = corpora.load_catalog()
    print("corpus sets (the catalog shipped with nncompress; see corpora/README.md):")
    for name in corpora.set_names(catalog):
        entries = corpora.set_files(name, catalog)
        print(f"  {name:<12} {files_label(len(entries)):>8}, {sum(e.bytes for e in entries):>10,} bytes")
    print("searched in: " + ", ".join(str(d) for d in corpora.search_dirs(corpora_dir)))
    print("comparators:")
    for c in select_comparators(None):
        print(f"  {c.key:<14} {c.label:<22} {c.version if c.available else c.note}")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "fetch":
        return corpora.fetch_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.list:
        return list_all(args.corpora)
    try:
        if args.plot:
            require_matplotlib()
        comparators = select_comparators(args.with_)
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        unknown = set(models) - {"cm", "rnnme"}
        if unknown:
            raise ValueError(f"unknown model(s) {', '.join(sorted(unknown))} (cm, rnnme)")
        if "cm" in models:
            comparators += [nncompress_comparator(level) for level in parse_levels(args.levels)]
        if "rnnme" in models:
            comparators.append(nncompress_model_comparator("rnnme"))
        files, groups = bench_files(args.targets or ["canterbury"], args.corpora)
    except (ValueError, corpora.CorpusError, PlotUnavailable) as exc:
        print(f"nncompress bench: {exc}", file=sys.stderr)
        return 1
    if not comparators:
        print("nncompress bench: nothing to run (no comparators and no levels)", file=sys.stderr)
        return 1
    meta = system_info(comparators) | {"command": "nncompress bench " + " ".join(argv)}
    from .. import cluster  # only now: it imports the codec, which the measuring parent never needs

    address = cluster.address_from(args.cluster)
    try:
        with cluster.connected(address) as client:
            if client is not None:
                meta["cluster"] = address
            report = run([(f, comparators) for f in files], groups, min_time=args.min_time,
                         timeout=args.timeout, progress=not args.quiet, meta=meta, client=client)
    except NNCError as exc:
        print(f"nncompress bench: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(format_text(report))
    preamble = (f"# nncompress bench\n\n{meta['date']}; {meta['cpu']}, {meta['cores']} cores; "
                f"Python {meta['python']}\n\n`{meta['command']}`\n")
    write_outputs(report, json_path=args.json, markdown_path=args.markdown, plot_path=args.plot, preamble=preamble)
    return 0 if all(r["roundtrip"] == "ok" for r in report.results) else 1
