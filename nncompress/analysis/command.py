"""`nncompress analyze` on the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .. import cluster
from ..corpora import CorpusError
from ..errors import NNCError
from ..plotting import PlotUnavailable, require_matplotlib
from ..presets import DEFAULT_LEVEL
from .entropy import HIGH_ORDER_NOTE
from .page import DEFAULT_HTML_LIMIT, write_html
from .plot import write_plot
from .report import analyze_paths, format_report, json_ready
from ..cli_args import Parser as UsageParser  # usage errors exit 1, as gzip and xz


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(
        prog="nncompress analyze",
        description="Entropy analysis of files, directories or corpus sets: empirical "
                    "conditional entropies, adaptive baselines, reference compressors and "
                    "nncompress's own per-byte code lengths.",
        epilog=HIGH_ORDER_NOTE + "  Targets follow the rule of 'nncompress bench': an existing file "
               "stands alone; a folder is a set of its files; any other name is a corpus set or a "
               "catalog file, found in --corpora, $NNC_CORPORA or the fetch cache.",
    )
    parser.add_argument("inputs", nargs="+", metavar="FILE|DIR|SET")
    parser.add_argument("-l", "--level", type=int, default=DEFAULT_LEVEL, choices=range(1, 10),
                        metavar="N", help=f"nncompress level 1..9 (default {DEFAULT_LEVEL})")
    parser.add_argument("--json", metavar="OUT", help="write all numbers as JSON ('-': stdout)")
    parser.add_argument("--plot", metavar="OUT.png", help="learning-curve plot (PNG; needs matplotlib)")
    parser.add_argument("--html", metavar="OUT.html", help="self-contained page, text coloured by cost")
    parser.add_argument("--html-limit", type=int, default=DEFAULT_HTML_LIMIT, metavar="BYTES",
                        help=f"bytes of each file shown in the page (default {DEFAULT_HTML_LIMIT:,})")
    parser.add_argument("--window", type=int, default=0, metavar="N",
                        help="moving-average window of the plot in bytes (default: auto)")
    parser.add_argument("--corpora", metavar="DIR",
                        help="folder holding the corpus files (else $NNC_CORPORA, else the cache "
                             "'nncompress bench fetch' writes to)")
    parser.add_argument("--no-reference", action="store_true", help="skip gzip, xz and PAQ")
    parser.add_argument("--cluster", metavar="ADDRESS",
                        help="analyse the files on a dask.distributed cluster (e.g. tcp://host:8786; "
                             "default $NNC_CLUSTER); each file's bytes travel with its job")
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
    if args.plot:
        # refuse now, not after minutes of analysis (and before any --json or --html is written)
        try:
            require_matplotlib()
        except PlotUnavailable as exc:
            print(f"nncompress analyze: --plot: {exc}", file=sys.stderr)
            return 1
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    keep = bool(args.plot or args.html)
    try:
        with cluster.connected(cluster.address_from(args.cluster)) as client:
            report = analyze_paths(args.inputs, args.level, references=not args.no_reference,
                                   keep_costs=keep, corpora_dir=args.corpora, log=log, client=client)
    except (CorpusError, NNCError) as exc:
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
        text = json.dumps({"level": report["level"], "files": [json_ready(r) for r in report["files"]],
                           "sets": report["sets"]}, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    if args.html:
        write_html(report["files"], args.html, args.html_limit)
        if log:
            log(f"wrote {args.html}")
    if args.plot:
        write_plot(report["files"], args.plot, args.window or None)
        if log:
            log(f"wrote {args.plot}")
    return 0
