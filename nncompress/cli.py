"""Command line in the style of gzip / xz / zstd.

    nncompress [-d|-t|-l] [-c] [-k|--rm] [-f] [-o FILE] [-1..-9] [-v|-q] [FILE...]
    nncompress compress|decompress|test|list [options] FILE...     (aliases)
    nncompress bench|analyze|demo ...                              (tools)

Like zstd (and unlike gzip) the input is kept unless --rm is given, because compressing is slow
and the user's data is worth more than the disk space.  Output goes to a temporary file in the
destination directory that is renamed into place only when complete.  Exit status: 0 success,
1 error, 2 warning (as gzip and xz).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import stat
import sys
import tempfile
import time
from contextlib import contextmanager

from . import __version__
from . import format as fmt
from .api import NNCompressor
from .codec import StreamDecoder
from .format import NNCError
from .model.params import ModelParams
from .presets import DEFAULT_LEVEL

SUFFIX = ".nnc"
READ_CHUNK = 1 << 16
EXIT_OK, EXIT_ERROR, EXIT_WARNING = 0, 1, 2
TOOLS = ("bench", "analyze", "demo")
ALIASES = {"compress": [], "decompress": ["-d"], "test": ["-t"], "list": ["-l"]}


class Interrupted(Exception):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Warn(Exception):
    """A file was skipped for a reason gzip treats as a warning (exit status 2)."""


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


def write_all(sink, data) -> None:
    """sink.write(data), insisting on every byte.

    A buffered writer may accept part of a large write and report the short count instead of the
    error (a pipe whose reader went away does this); writing the rest surfaces the error."""
    view = memoryview(data)
    while view:
        count = sink.write(view)
        if not count:
            raise OSError(errno.EIO, "write made no progress")
        view = view[count:]


def _is_special(path: str) -> bool:
    """An existing output that is a device or a pipe (/dev/null, a FIFO): written in place."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISBLK(mode)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nncompress",
        description="Neural text compressor (online RNNME model + range coder). "
                    "With no FILE, or when FILE is -, read standard input.",
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
                      help="list sizes, bpc, level and format version of archives")
    parser.add_argument("-c", "--stdout", "--to-stdout", action="store_true",
                        help="write to standard output, keep input files")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the (single) result to FILE")
    keep = parser.add_mutually_exclusive_group()
    keep.add_argument("-k", "--keep", action="store_true", help="keep input files (default)")
    keep.add_argument("--rm", action="store_true",
                      help="delete each input file after its output is written and verified")
    parser.add_argument("-f", "--force", action="store_true",
                        help="overwrite existing output files; write compressed data to a terminal")
    for level in range(1, 10):
        parser.add_argument(f"-{level}", dest="level", action="store_const", const=level,
                            help=argparse.SUPPRESS)
    parser.add_argument("--level", type=int, choices=range(1, 10), metavar="1..9",
                        help=f"compression level, also -1 .. -9 (default {DEFAULT_LEVEL}); "
                             "higher is smaller and slower")
    parser.add_argument("--json", action="store_true", help="with -l: machine-readable output")
    add_parallel_options(parser)
    parser.add_argument("-S", "--suffix", default=SUFFIX, help=f"suffix (default {SUFFIX})")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="store_true", help="report sizes and speed")
    verbosity.add_argument("-q", "--quiet", action="store_true", help="suppress warnings")
    parser.add_argument("-V", "--version", action="version",
                        version=f"nncompress {__version__} (format {fmt.FORMAT_VERSION})")
    parser.add_argument("files", nargs="*", metavar="FILE")
    return parser


def add_parallel_options(parser) -> None:
    """-T, --segment-size, --cluster (issue 13: parallel.py, cluster.py, segments.py)."""
    from .segments import DEFAULT_SEGMENT_SIZE, parse_size

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
        self._engine = None  # parallel.py engine, made on first use (a pool or a Dask client)
        self._client = None
        self._prefetch = None  # many files: small ones sent to the workers ahead (parallel.py)

    # -- messages --
    def error(self, name: str, message: str) -> None:
        print(f"nncompress: {name}: {message}", file=sys.stderr)
        self.status = EXIT_ERROR

    def warn(self, name: str, message: str) -> None:
        if not self.args.quiet:
            print(f"nncompress: {name}: {message}", file=sys.stderr)
        self.status = max(self.status, EXIT_WARNING) if self.status != EXIT_ERROR else self.status

    def verbose(self, message: str) -> None:
        if self.args.verbose:
            print(message, file=sys.stderr)

    @contextmanager
    def progress(self, total, name):
        show = sys.stderr.isatty() and not self.args.quiet and (total is None or total > 1 << 16)
        if not show:
            yield None
            return
        from tqdm import tqdm

        with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=name,
                  file=sys.stderr, leave=False) as bar:
            yield bar.update

    # -- the work --
    def run(self) -> int:
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
                try:
                    self.process(name)
                except Warn as exc:
                    self.warn(name, str(exc))
                except NNCError as exc:
                    self.error(name, str(exc))
                except BrokenPipeError:
                    raise
                except OSError as exc:
                    self.error(name, exc.strerror or str(exc))
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

    def process(self, name: str) -> None:
        if name != "-":
            try:
                info = os.stat(name)
            except FileNotFoundError:
                raise NNCError("no such file or directory") from None
            if stat.S_ISDIR(info.st_mode):
                raise Warn("is a directory -- ignored")
            if not stat.S_ISREG(info.st_mode):
                raise Warn("not a regular file -- ignored")
            size = info.st_size
        else:
            size = None
        destination = self.output_name(name)
        to_stdout = destination is None and self.mode != "test"
        if to_stdout and self.mode == "compress" and sys.stdout.isatty() and not self.args.force:
            raise NNCError("compressed data not written to a terminal (use -f to force)")
        special = destination is not None and _is_special(destination)
        if destination is not None and not special:
            if name != "-" and os.path.exists(destination) and os.path.samefile(name, destination):
                raise NNCError(f"input and output are the same file ({destination})")
            if os.path.lexists(destination) and not self.args.force:
                raise NNCError(f"{destination} already exists (use -f to overwrite)")
        source = sys.stdin.buffer if name == "-" else open(name, "rb")
        started = time.perf_counter()
        try:
            if destination is None:
                sink = None if self.mode == "test" else sys.stdout.buffer
                done_in, done_out = self.transform(source, sink, size, name)
                if sink is not None:
                    sink.flush()
            elif special:
                # a device or pipe: there is no file to replace atomically (and renaming a
                # temporary file over /dev/null would replace the device), so write into it
                with open(destination, "wb") as sink:
                    done_in, done_out = self.transform(source, sink, size, name)
            else:
                done_in, done_out = self.write_atomically(source, destination, size, name)
        finally:
            if source is not sys.stdin.buffer:
                source.close()
        self.report(name, done_in, done_out, time.perf_counter() - started)
        if self.args.rm and name != "-" and destination is not None and not special:
            if self.mode == "compress":
                self.verify_archive(destination, name)
            os.unlink(name)

    def write_atomically(self, source, destination: str, size, name: str):
        directory = os.path.dirname(os.path.abspath(destination))
        handle, temp = tempfile.mkstemp(dir=directory, prefix=".nnc-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as sink:
                result = self.transform(source, sink, size, name)
                sink.flush()
                os.fsync(sink.fileno())
            if name != "-":
                try:
                    os.chmod(temp, stat.S_IMODE(os.stat(name).st_mode))
                except OSError:
                    pass
            if self.args.force:
                os.replace(temp, destination)
            else:
                os.link(temp, destination)  # fails rather than clobber a file that appeared meanwhile
                os.unlink(temp)
            temp = None
            return result
        finally:
            if temp is not None and os.path.exists(temp):
                os.unlink(temp)

    def transform(self, source, sink, size, name: str):
        """Stream source to sink (None: discard); returns (bytes read, bytes written)."""
        read = written = 0
        with self.progress(size, os.path.basename(name)) as update:
            engine = self.engine()
            if engine is not None or self.mode == "test":
                from . import parallel

                if self._prefetch is not None and size is not None and size <= self.args.segment_size:
                    data = source.read(self.args.segment_size + 1)
                    out = self._prefetch.take(name, data)
                    if out is not None:  # the whole file was done by a worker ahead of time
                        if sink is not None:
                            write_all(sink, out)
                        return len(data), len(out)
                    source = parallel.Prepended(data, source)

                if self.mode == "compress":
                    return parallel.compress_stream(source, sink, engine, level=self.level,
                                                    segment_size=self.args.segment_size, progress=update)
                # -t checks every segment even after a damaged one
                return parallel.decompress_stream(source, sink, engine or parallel.SerialEngine(),
                                                  verify_all=self.mode == "test", progress=update)
            if self.mode == "compress":
                from .segments import DEFAULT_SEGMENT_SIZE

                segmenting = {} if self.args.segment_size == DEFAULT_SEGMENT_SIZE else \
                    {"segment_size": self.args.segment_size}
                compressor = NNCompressor(self.level, progress=update, **segmenting)
                while chunk := source.read(READ_CHUNK):
                    read += len(chunk)
                    out = compressor.compress(chunk)
                    written += len(out)
                    write_all(sink, out)
                out = compressor.flush()
                written += len(out)
                write_all(sink, out)
            else:
                decoder = StreamDecoder(multi_stream=True, progress=update)
                while chunk := source.read(READ_CHUNK):
                    read += len(chunk)
                    out = decoder.feed(chunk)
                    written += len(out)
                    if sink is not None:
                        write_all(sink, out)
                decoder.finish()
        return read, written

    def verify_archive(self, archive: str, original: str) -> None:
        """Before --rm deletes the input: decode the archive and compare checksums."""
        with open(original, "rb") as f:
            crc = 0
            while chunk := f.read(1 << 20):
                crc = fmt.crc32(chunk, crc)
        # an archive of several segments is several streams: check the CRC of all they decode to
        from .parallel import CrcSink, SerialEngine, decompress_stream

        decoded = CrcSink()
        with open(archive, "rb") as f:
            decompress_stream(f, decoded, self.engine() or SerialEngine())
        if decoded.crc != crc:
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
        rows = []
        for name in files:
            try:
                if name == "-":
                    data = sys.stdin.buffer.read()
                else:
                    if os.path.isdir(name):
                        raise Warn("is a directory -- ignored")
                    with open(name, "rb") as f:
                        data = f.read()
                for info in fmt.scan(data):
                    params = ModelParams.from_ints(list(info.header.params))
                    rows.append({
                        "file": name,
                        "compressed": info.compressed_size,
                        "uncompressed": info.raw_size,
                        "bpc": round(8 * info.compressed_size / info.raw_size, 4) if info.raw_size else None,
                        "level": info.header.level or None,
                        "format_version": info.header.version,
                        "blocks": info.blocks,
                        "crc32": f"{info.crc:08x}",
                        "params": params.describe(),
                    })
            except Warn as exc:
                self.warn(name, str(exc))
            except (NNCError, ValueError) as exc:
                self.error(name, str(exc))
            except OSError as exc:
                self.error(name, exc.strerror or str(exc))
        if self.args.json:
            print(json.dumps(rows, indent=2))
            return
        print(f"{'compressed':>12} {'uncompressed':>12} {'bpc':>7} {'level':>5} {'version':>7}  name")
        for row in rows:
            bpc = f"{row['bpc']:.3f}" if row["bpc"] is not None else "-"
            level = str(row["level"] or "custom")
            print(f"{row['compressed']:>12} {row['uncompressed']:>12} {bpc:>7} {level:>5} "
                  f"{row['format_version']:>7}  {row['file']}")


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
    if argv and argv[0] in TOOLS:
        return run_tool(argv[0], argv[1:])
    if argv and argv[0] in ALIASES:
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
        print(f"nncompress: interrupted by {exc}; partial output removed", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("nncompress: interrupted; partial output removed", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): not our error to shout about, but not success
        try:
            # and keep the interpreter's final flush of stdout from reporting it again
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass
        print("nncompress: broken pipe", file=sys.stderr)
        return EXIT_ERROR
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
