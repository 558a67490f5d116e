"""Command line in the style of gzip / xz / zstd.

    nncompress [-d|-t|-l] [-c] [-k|--rm] [-f] [-o FILE] [-1..-9] [-v|-q] [FILE...]
    nncompress compress|decompress|test|list [options] FILE...     (aliases)
    nncompress bench|analyze|demo ...                              (tools)

A subcommand is recognised only as the first argument; `--` ends options and subcommands
(`nncompress -- test` compresses the file named test), and a first argument that names both a
subcommand and an existing file is refused with that hint.

Like zstd (and unlike gzip) the input is kept unless --rm is given, because compressing is slow
and the user's data is worth more than the disk space.  Output goes to a temporary file in the
destination directory that is placed under its name only when complete (never over an existing
file without -f); the output keeps the input's permission bits (never setuid, setgid or sticky),
modification time and, when run as root, owner, as gzip and xz do.  Exit status: 0 success,
1 error (usage errors too, as gzip, xz and zstd), 2 warning (a file skipped, as gzip and xz).

The command line talks to the library only through nncompress.api, imported on first use so that
--help and --version answer without loading numba.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import stat
import sys
import time
from contextlib import contextmanager

from . import DEFAULT_LEVEL, FORMAT_VERSION, NNCError, __version__
from .coder_backend import coder_description
from .outputs import (_is_special, copy_metadata, descriptor_of, place_no_clobber,  # noqa: F401
                      write_all)

SUFFIX = ".nnc"
READ_CHUNK = 1 << 16
EXIT_OK, EXIT_ERROR, EXIT_WARNING = 0, 1, 2
TOOLS = ("bench", "analyze", "demo")
ALIASES = {"compress": [], "decompress": ["-d"], "test": ["-t"], "list": ["-l"]}
SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX
STDIN_NAME, STDOUT_NAME = "(stdin)", "(stdout)"


class Interrupted(BaseException):
    """SIGTERM/SIGHUP as an exception.  A BaseException, like KeyboardInterrupt, so that no
    library's `except Exception` swallows it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Warn(Exception):
    """A file was skipped for a reason gzip treats as a warning (exit status 2)."""


class OutputError(Exception):
    """An error on the output side: the message names the output, not only the input."""

    def __init__(self, name: str, error: OSError):
        super().__init__(error.strerror or str(error))
        self.name = name


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


def say(message: str) -> None:
    """One line on standard error; nothing if it is closed (print would fall back to stdout,
    which may be the output file)."""
    if sys.stderr is not None:
        print(message, file=sys.stderr)


def std_stream(which: str):
    """sys.stdin / sys.stdout as binary, or EBADF when the caller closed it (`<&-`, `>&-`)."""
    stream = getattr(sys, which)
    if stream is None:
        raise OSError(errno.EBADF, "Bad file descriptor")
    return getattr(stream, "buffer", stream)


def _guard_closed_stdio() -> None:
    """A closed descriptor 0, 1 or 2 would be reused by the next open() (a temporary file could
    become 'standard output').  Like xz, occupy it with /dev/null opened the wrong way round,
    so that any use of it fails with EBADF instead of writing into something else."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                new = os.open(os.devnull, os.O_WRONLY if fd == 0 else os.O_RDONLY)
            except OSError:
                continue
            if new != fd:
                os.dup2(new, fd)
                os.close(new)


# -- arguments ----------------------------------------------------------------------------

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
                             "higher is smaller and slower. Four models: 1-2, 3-5, 6-8 and 9 "
                             "(levels within a group are the same model)")
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


def kernels_cached() -> bool:
    """Whether numba has compiled kernels cached for the model (without importing it)."""
    from importlib.util import find_spec

    places = [os.environ["NUMBA_CACHE_DIR"]] if os.environ.get("NUMBA_CACHE_DIR") else []
    spec = find_spec("nncompress.model")
    if spec is not None and spec.submodule_search_locations:
        places += list(spec.submodule_search_locations)
    for place in places:
        for _, _, names in os.walk(place):
            if any(name.endswith(".nbi") for name in names):
                return True
    return False


def NNCompressor(level: int, progress=None, **options):  # noqa: N802  (a seam tests replace)
    """api.NNCompressor, imported on first use."""
    from .api import NNCompressor as compressor

    return compressor(level, progress=progress, **options)


class _Counting:
    """A reader that counts what passed through it."""

    def __init__(self, source):
        self._source = source
        self.count = 0

    def read(self, size=-1):
        data = self._source.read(size)
        self.count += len(data)
        return data


def add_parallel_options(parser) -> None:
    """-T, --segment-size, --cluster (issue 13: parallel.py, cluster.py, segments.py)."""
    from .format import DEFAULT_SEGMENT_SIZE, parse_size

    group = parser.add_argument_group(
        "parallel work",
        "Input is cut into independent segments (a fresh model each, a small cost in size), so "
        "segments can be coded at once and read back from any segment's start; inputs up to one "
        "segment are unaffected.  The archive does not depend on -T or --cluster.  Memory: each "
        "worker holds one model (about 34 MiB at -1, 126 MiB at -6, 470 MiB at -9) plus about 3 "
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


class Runner:
    def __init__(self, args):
        self.args = args
        self.mode = args.mode or "compress"
        self.level = args.level or DEFAULT_LEVEL
        self.status = EXIT_OK
        self._announced_compile = False
        self._engine = None  # parallel.py engine, made on first use (a pool or a Dask client)
        self._client = None
        self._prefetch = None  # many files: small ones sent to the workers ahead (parallel.py)

    # -- messages --
    def error(self, name: str, message: str) -> None:
        say(f"nncompress: {name}: {message}")
        self.status = EXIT_ERROR

    def warn(self, name: str, message: str) -> None:
        if not self.args.quiet:
            say(f"nncompress: {name}: {message}")
        self.status = max(self.status, EXIT_WARNING) if self.status != EXIT_ERROR else self.status

    def verbose(self, message: str) -> None:
        if self.args.verbose:
            say(message)

    def _on_terminal(self) -> bool:
        return sys.stderr is not None and sys.stderr.isatty() and not self.args.quiet

    def announce_compile(self) -> None:
        """The first run compiles the kernels for ~20 s: say so rather than sit silent."""
        if self._announced_compile or not self._on_terminal():
            return
        self._announced_compile = True
        if not kernels_cached():
            say("nncompress: compiling kernels (first run only)...")

    @contextmanager
    def progress(self, total, name):
        show = self._on_terminal() and (total is None or total > 1 << 16)
        if not show:
            yield None
            return
        from tqdm import tqdm

        with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=name,
                  file=sys.stderr, leave=False) as bar:
            yield bar.update

    # -- the work --
    def run(self) -> int:
        # load the library (numba, kernels) before any output file exists: an interruption
        # during the import then leaves nothing to clean up
        from . import api  # noqa: F401

        files = self.args.files or ["-"]
        if self.args.output and len(files) > 1:
            self.error("-o", "only one input file may be given with --output")
            return self.status
        if self.mode == "list":
            self.list_files(files)
            return self.status
        aborted = True
        try:
            if len(files) > 1 and self.mode in ("compress", "decompress") and self.engine():
                from .parallel import FilePrefetcher

                self._prefetch = FilePrefetcher(self.engine(), files, self.mode, self.args.segment_size,
                                                level=self.level)
            for name in files:
                shown = STDIN_NAME if name == "-" else name
                try:
                    self.process(name)
                except Warn as exc:
                    self.warn(shown, str(exc))
                except NNCError as exc:
                    self.error(shown, str(exc))
                except OutputError as exc:
                    # named after the input being processed, and the output that failed
                    self.error(shown, f"cannot write {exc.name}: {exc}")
                except BrokenPipeError:
                    raise
                except MemoryError:
                    self.error(shown, f"not enough memory for level {self.level} (try a lower "
                                      "level)" if self.mode == "compress" else "not enough memory")
                except OSError as exc:
                    self.error(shown, exc.strerror or str(exc))
            aborted = False
        finally:
            self.close_engine(aborted)
        return self.status

    # -- parallel work (parallel.py) --
    def engine(self):
        """The engine for -T / --cluster, or None when one process does the work as before."""
        if self._engine is None:
            from . import cluster, parallel
            from .presets import params_for_level

            address = cluster.address_from(self.args.cluster)
            if address:
                self._client = cluster.connect(address)
                self._engine = cluster.DaskEngine(self._client)
            else:
                workers = parallel.plan_workers(self.args.threads, params_for_level(self.level),
                                                self.args.segment_size)
                self._engine = parallel.LocalEngine(workers) if workers > 1 else False
        return self._engine or None

    def close_engine(self, aborted: bool) -> None:
        if self._prefetch is not None:
            self._prefetch.close()
            self._prefetch = None
        if self._engine:
            from .parallel import close_engine

            close_engine(self._engine, aborted)
        if self._client is not None:
            self._client.close()
        self._engine = self._client = None

    def output_name(self, name: str) -> str | None:
        """Destination path, or None for standard output."""
        if self.mode == "test":
            return None
        if self.args.output:
            return None if self.args.output == "-" else self.args.output
        if self.args.stdout or name == "-":
            return None
        suffix = self.args.suffix
        if self.mode == "compress":
            if name.endswith(suffix):
                raise Warn(f"already has {suffix} suffix -- unchanged")
            return name + suffix
        if not name.endswith(suffix) or len(name) == len(suffix):
            raise Warn("unknown suffix -- ignored")
        return name[: -len(suffix)]

    def check_input(self, name: str, to_stdout: bool):
        """stat of a usable input file (None for standard input), else Warn / NNCError."""
        if name == "-":
            stdin = std_stream("stdin")
            if self.mode != "compress" and not self.args.force and stdin.isatty():
                raise NNCError("compressed data not read from a terminal (use -f to force)")
            return None
        try:
            info = os.stat(name)
        except FileNotFoundError:
            raise NNCError("no such file or directory") from None
        if stat.S_ISDIR(info.st_mode):
            raise Warn("is a directory -- ignored")
        if not stat.S_ISREG(info.st_mode):
            raise Warn("not a regular file -- ignored")
        if info.st_mode & SPECIAL_BITS and not to_stdout and not self.args.force:
            # as gzip and xz: the output would silently lose these bits (it never gets them)
            what = ("set-user-ID" if info.st_mode & stat.S_ISUID else
                    "set-group-ID" if info.st_mode & stat.S_ISGID else "sticky")
            raise Warn(f"is {what} -- ignored (use -f to process it; the output gets only "
                       "the permission bits)")
        return info

    def process(self, name: str) -> None:
        destination = self.output_name(name)
        to_stdout = destination is None and self.mode != "test"
        info = self.check_input(name, to_stdout)
        descriptor = None
        special = False
        if to_stdout:
            try:
                stdout = std_stream("stdout")
            except OSError as exc:
                raise OutputError(STDOUT_NAME, exc) from None
            if self.mode == "compress" and stdout.isatty() and not self.args.force:
                raise NNCError("compressed data not written to a terminal (use -f to force)")
        elif destination is not None:
            descriptor = descriptor_of(destination)
            special = descriptor is not None or _is_special(destination)
            if name != "-" and os.path.exists(destination) and os.path.samefile(name, destination):
                raise NNCError(f"input and output are the same file ({destination})")
            if not special and os.path.lexists(destination) and not self.args.force:
                raise NNCError(f"{destination} already exists (use -f to overwrite)")
        source = std_stream("stdin") if name == "-" else open(name, "rb")
        started = time.perf_counter()
        try:
            if destination is None:
                sink = None if self.mode == "test" else std_stream("stdout")
                done_in, done_out = self.transform(source, sink, info, name, STDOUT_NAME)
                if sink is not None:
                    self._flush(sink, STDOUT_NAME)
            elif descriptor is not None:
                # write through to the descriptor itself: no truncation of what it already
                # holds (`>>`), no new file in place of the link
                try:
                    if descriptor == 1:
                        std_stream("stdout").flush()
                    sink = os.fdopen(os.dup(descriptor), "wb")
                except OSError as exc:
                    raise OutputError(destination, exc) from None
                with sink:
                    self._refuse_terminal(sink)
                    done_in, done_out = self.transform(source, sink, info, name, destination)
                    self._flush(sink, destination)
            elif special:
                # a device or pipe: there is no file to replace atomically (and renaming a
                # temporary file over /dev/null would replace the device), so write into it
                try:
                    sink = open(destination, "wb")
                except OSError as exc:
                    raise OutputError(destination, exc) from None
                with sink:
                    self._refuse_terminal(sink)
                    done_in, done_out = self.transform(source, sink, info, name, destination)
                    self._flush(sink, destination)
            else:
                done_in, done_out = self.write_atomically(source, destination, info, name)
        finally:
            if name != "-":
                source.close()
        self.report(name, done_in, done_out, time.perf_counter() - started)
        if self.args.rm and name != "-" and destination is not None:
            # (to standard output, or with -t, --rm is ignored, as zstd does)
            if special:
                # a device, pipe or descriptor: nothing on disk could be verified in its place
                self.warn(name, "output is not a regular file -- input kept")
                return
            if self.mode == "compress":
                self.verify_archive(destination, name)
            os.unlink(name)

    def _refuse_terminal(self, sink) -> None:
        if self.mode == "compress" and not self.args.force and sink.isatty():
            raise NNCError("compressed data not written to a terminal (use -f to force)")

    @staticmethod
    def _flush(sink, output_name: str) -> None:
        try:
            sink.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(output_name, exc) from None

    def write_atomically(self, source, destination: str, info, name: str):
        import tempfile

        directory = os.path.dirname(os.path.abspath(destination))
        try:
            handle, temp = tempfile.mkstemp(dir=directory, prefix=".nnc-", suffix=".tmp")
        except OSError as exc:
            raise OutputError(destination, exc) from None
        try:
            with os.fdopen(handle, "wb") as sink:
                result = self.transform(source, sink, info, name, destination)
                try:
                    sink.flush()
                    os.fsync(sink.fileno())
                except OSError as exc:
                    raise OutputError(destination, exc) from None
            copy_metadata(temp, info, keep_time_and_owner=not self.args.no_name)
            try:
                if self.args.force:
                    os.replace(temp, destination)
                else:
                    place_no_clobber(temp, destination)
            except FileExistsError:
                raise NNCError(f"{destination} already exists (use -f to overwrite)") from None
            except OSError as exc:
                raise OutputError(destination, exc) from None
            temp = None
            return result
        finally:
            if temp is not None and os.path.exists(temp):
                os.unlink(temp)

    def transform(self, source, sink, info, name: str, output_name: str = STDOUT_NAME):
        """Stream source to sink (None: discard); returns (bytes read, bytes written)."""
        from . import api

        written = 0
        counted = _Counting(source)

        def put(data):
            try:
                write_all(sink, data)
            except BrokenPipeError:
                raise
            except OSError as exc:
                raise OutputError(output_name, exc) from None

        self.announce_compile()
        size = info.st_size if info is not None else None
        engine = self.engine()
        if engine is not None or self.mode == "test":
            # segments in parallel (-T, --cluster), and -t, which checks every segment even
            # after a damaged one (parallel.py)
            from . import parallel

            if self.mode != "compress":  # progress counts decoded bytes against the recorded size
                size = self.original_size(source) if info is not None else None
            with self.progress(size, os.path.basename(name)) as update:
                if self._prefetch is not None and info is not None and info.st_size <= self.args.segment_size:
                    data = source.read(self.args.segment_size + 1)
                    out = self._prefetch.take(name, data)
                    if out is not None:  # the whole file was done by a worker ahead of time
                        if sink is not None:
                            put(out)
                        return len(data), len(out)
                    source = parallel.Prepended(data, source)
                if self.mode == "compress":
                    return parallel.compress_stream(source, sink, engine, level=self.level,
                                                    segment_size=self.args.segment_size, progress=update)
                return parallel.decompress_stream(source, sink, engine or parallel.SerialEngine(),
                                                  verify_all=self.mode == "test", progress=update)
        if self.mode == "compress":
            from .format import DEFAULT_SEGMENT_SIZE

            segmenting = {} if self.args.segment_size == DEFAULT_SEGMENT_SIZE else \
                {"segment_size": self.args.segment_size}
            with self.progress(size, os.path.basename(name)) as update:
                compressor = NNCompressor(self.level, progress=update, **segmenting)
                while chunk := counted.read(READ_CHUNK):
                    out = compressor.compress(chunk)
                    written += len(out)
                    put(out)
                out = compressor.flush()
                written += len(out)
                put(out)
        else:
            total = self.original_size(source) if info is not None else None
            with self.progress(total, os.path.basename(name)) as update:
                for out in api.iter_decompress(counted, chunk_size=READ_CHUNK, progress=update):
                    written += len(out)
                    if sink is not None:
                        put(out)
        return counted.count, written

    @staticmethod
    def original_size(source) -> int | None:
        """The decompressed size recorded in an archive file (progress total), read from its
        block frames; None if they cannot be read (the decoder then reports why)."""
        from . import api

        try:
            size = sum(s.uncompressed_size for s in api.list_streams(source))
        except (NNCError, OSError, ValueError):
            size = None
        try:
            source.seek(0)
        except (OSError, ValueError):
            return None
        return size

    def verify_archive(self, archive: str, original: str) -> None:
        """Before --rm deletes the input: decode the archive and compare checksums."""
        from . import api

        with open(archive, "rb") as packed, open(original, "rb") as raw:
            if not api.verify(packed, raw):
                raise NNCError("verification of the new archive failed; input kept")

    def report(self, name: str, done_in: int, done_out: int, seconds: float) -> None:
        if not self.args.verbose:
            return
        raw, packed = (done_in, done_out) if self.mode == "compress" else (done_out, done_in)
        bpc = 8 * packed / raw if raw else 0.0
        speed = raw / 1024 / seconds if seconds > 0 else 0.0
        verb = {"compress": "compressed", "decompress": "decompressed", "test": "ok"}[self.mode]
        self.verbose(f"{name}: {verb}: {raw} -> {packed} bytes, {bpc:.3f} bpc, "
                     f"{speed:.1f} KB/s, {seconds:.2f} s")

    def list_files(self, files) -> None:
        from . import api

        rows = []
        for name in files:
            shown = STDIN_NAME if name == "-" else name
            try:
                self.check_input(name, to_stdout=True)
                source = std_stream("stdin") if name == "-" else open(name, "rb")
                try:
                    for s in api.list_streams(source):
                        rows.append({
                            "file": name,
                            "compressed": s.compressed_size,
                            "uncompressed": s.uncompressed_size,
                            "ratio": round(s.ratio, 4) if s.ratio is not None else None,
                            "bpc": (round(8 * s.compressed_size / s.uncompressed_size, 4)
                                    if s.uncompressed_size else None),
                            "level": s.level,
                            "format_version": s.format_version,
                            "blocks": s.blocks,
                            "crc32": f"{s.crc32:08x}",
                            "params": s.params.describe(),
                        })
                finally:
                    if name != "-":
                        source.close()
            except Warn as exc:
                self.warn(shown, str(exc))
            except (NNCError, ValueError) as exc:
                self.error(shown, str(exc))
            except OSError as exc:
                self.error(shown, exc.strerror or str(exc))
        try:
            out = std_stream("stdout")
            write_all(out, self.listing(rows).encode())
            out.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.error(STDOUT_NAME, exc.strerror or str(exc))

    def listing(self, rows) -> str:
        if self.args.json:
            import json

            return json.dumps(rows, indent=2) + "\n"
        if not rows:
            return ""
        lines = [f"{'compressed':>12} {'uncompressed':>12} {'ratio':>6} {'bpc':>7} {'level':>6} "
                 f"{'version':>7}  name"]

        def line(compressed, uncompressed, level, version, name):
            ratio = f"{compressed / uncompressed:.3f}" if uncompressed else "-"
            bpc = f"{8 * compressed / uncompressed:.3f}" if uncompressed else "-"
            lines.append(f"{compressed:>12} {uncompressed:>12} {ratio:>6} {bpc:>7} {level:>6} "
                         f"{version:>7}  {name}")

        for row in rows:
            line(row["compressed"], row["uncompressed"], str(row["level"] or "custom"),
                 row["format_version"], row["file"])
        if len(rows) > 1:
            files = len({row["file"] for row in rows})
            line(sum(r["compressed"] for r in rows), sum(r["uncompressed"] for r in rows), "",
                 "", f"(totals: {len(rows)} streams in {files} file{'s' * (files != 1)})")
        return "\n".join(lines) + "\n"


def run_tool(name: str, argv) -> int:
    if name == "bench":
        from .benchmark import main as tool
    elif name == "analyze":
        from .analysis import main as tool
    else:
        from .demo import main as tool
    return tool(argv)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _guard_closed_stdio()
    if argv and (argv[0] in TOOLS or argv[0] in ALIASES):
        if os.path.lexists(argv[0]) and not os.path.isdir(argv[0]):
            say(f"nncompress: '{argv[0]}' is a subcommand and also a file here: write "
                f"'nncompress -- {argv[0]}' or './{argv[0]}' for the file, or run the "
                "subcommand from another directory")
            return EXIT_ERROR
        if argv[0] in TOOLS:
            return run_tool(argv[0], argv[1:])
        argv = ALIASES[argv[0]] + argv[1:]
    args = build_parser().parse_args(argv)
    if args.level is None:
        args.level = DEFAULT_LEVEL
    # SIGTERM (kill) and SIGHUP (terminal closed) clean up like Ctrl-C instead of leaving a
    # temporary file behind; a signal the caller set to be ignored stays ignored (nohup)
    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, _raise_interrupted)
    try:
        return Runner(args).run()
    except Interrupted as exc:
        say(f"nncompress: interrupted by {exc}; partial output removed")
        return 128 + exc.signum
    except KeyboardInterrupt:
        say("nncompress: interrupted; partial output removed")
        return 128 + signal.SIGINT
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): not our error to shout about, but not success
        try:
            # and keep the interpreter's final flush of stdout from reporting it again
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        say("nncompress: broken pipe")
        return EXIT_ERROR
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
