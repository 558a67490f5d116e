"""The command line's arguments: the gzip/xz/zstd-style parser, the subcommand names and the
exit statuses (0 success, 1 error, usage errors too, 2 warning).

Nothing here loads numba, so that --help and --version answer at once.
"""

from __future__ import annotations

import argparse
import sys

from . import DEFAULT_LEVEL, FORMAT_VERSION, __version__
from .coder_backend import coder_description

SUFFIX = ".nnc"
EXIT_OK, EXIT_ERROR, EXIT_WARNING = 0, 1, 2
TOOLS = ("bench", "analyze", "demo")
ALIASES = {"compress": [], "decompress": ["-d"], "test": ["-t"], "list": ["-l"]}


class Parser(argparse.ArgumentParser):
    def error(self, message):
        # gzip, xz and zstd exit 1 on a usage error (2 means "warning" for them and for us)
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="nncompress",
        description="Neural text compressor (online RNNME model + range coder). "
                    "With no FILE, or when FILE is -, read standard input. "
                    "A subcommand (compress, decompress, test, list, bench, analyze, demo) is "
                    "only recognised first; '--' ends options and subcommands.",
        epilog="tools: 'nncompress bench --help', 'nncompress analyze --help', 'nncompress demo'",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("-z", "--compress", dest="mode", action="store_const", const="compress",
                      help="compress (default)")
    mode.add_argument("-d", "--decompress", "--uncompress", dest="mode", action="store_const",
                      const="decompress", help="decompress")
    mode.add_argument("-t", "--test", dest="mode", action="store_const", const="test",
                      help="decompress and verify, write nothing")
    mode.add_argument("-l", "--list", dest="mode", action="store_const", const="list",
                      help="list sizes, ratio, bpc, level and format version of archives")
    parser.add_argument("-c", "--stdout", "--to-stdout", action="store_true",
                        help="write to standard output, keep input files")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the (single) result to FILE")
    keep = parser.add_mutually_exclusive_group()
    keep.add_argument("-k", "--keep", action="store_true", help="keep input files (default)")
    keep.add_argument("--rm", action="store_true",
                      help="delete each input file after its output is written and verified")
    parser.add_argument("-f", "--force", action="store_true",
                        help="overwrite existing output files; write compressed data to a "
                             "terminal; process setuid, setgid and sticky files")
    parser.add_argument("-n", "--no-name", action="store_true",
                        help="do not give the output the input's modification time and owner")
    for level in range(1, 10):
        parser.add_argument(f"-{level}", dest="level", action="store_const", const=level,
                            help=argparse.SUPPRESS)
    parser.add_argument("--fast", dest="level", action="store_const", const=1, help="same as -1")
    parser.add_argument("--best", dest="level", action="store_const", const=9, help="same as -9")
    parser.add_argument("--level", type=int, choices=range(1, 10), metavar="1..9",
                        help=f"compression level, also -1 .. -9 (default {DEFAULT_LEVEL}); "
                             "higher is smaller and slower. Six models: 1-2, 3-5, 6, 7, 8 and 9 "
                             "(levels within a group are the same model; 9 adds the RNNME expert)")
    parser.add_argument("--model", default="cm", metavar="NAME[,OPT=V...]",
                        help="cm: context mixing at the chosen level (default); rnnme: the RNNME "
                             "network alone, options hidden=64, me=24 (direct-connection table, "
                             "2^me weights), orders=1-6, word=1, bptt=8, cell=tanh (or lstm), "
                             "e.g. --model=rnnme,hidden=32,me=22,cell=lstm")
    parser.add_argument("--json", action="store_true", help="with -l: machine-readable output")
    add_parallel_options(parser)
    parser.add_argument("-S", "--suffix", default=SUFFIX, help=f"suffix (default {SUFFIX})")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="store_true", help="report sizes and speed")
    verbosity.add_argument("-q", "--quiet", action="store_true", help="suppress warnings")
    parser.add_argument("-V", "--version", action="version",
                        version=f"nncompress {__version__} (format {FORMAT_VERSION}; "
                                f"{coder_description()})")
    parser.add_argument("files", nargs="*", metavar="FILE")
    return parser


def add_parallel_options(parser) -> None:
    """-T, --segment-size, --cluster (issue 13: parallel.py, cluster.py, segments.py)."""
    from .format import DEFAULT_SEGMENT_SIZE, parse_size

    group = parser.add_argument_group(
        "parallel work",
        "Input is cut into independent segments (a fresh model each, a small cost in size), so "
        "segments can be coded at once and read back from any segment's start; inputs up to one "
        "segment are unaffected.  The archive does not depend on -T or --cluster.  Memory: each "
        "worker holds one model (about 34 MiB at -1, 404 MiB at -6, about 2,020 MiB at -9) plus about 3 "
        "segments, plus ~150 MiB; -T is lowered to what the available memory holds.")
    group.add_argument("-T", "--threads", type=int, default=1, metavar="N",
                       help="work on N segments at once in N processes, both ways (0: one per core; "
                            "default 1)")
    group.add_argument("--segment-size", type=parse_size, default=DEFAULT_SEGMENT_SIZE, metavar="SIZE",
                       help=f"bytes of input per segment when compressing, e.g. 4M "
                            f"(default {DEFAULT_SEGMENT_SIZE >> 20}M)")
    group.add_argument("--cluster", metavar="ADDRESS",
                       help="send segments to the workers of a Dask scheduler, e.g. tcp://host:8786 "
                            "(default: $NNC_CLUSTER; needs nncompress[cluster])")


def run_tool(name: str, argv) -> int:
    if name == "bench":
        from .benchmark import main as tool
    elif name == "analyze":
        from .analysis import main as tool
    else:
        from .demo import main as tool
    return tool(argv)
