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

import os
import signal
import sys
import time

from . import DEFAULT_LEVEL, NNCError
from . import cli_io, cli_progress, listing
# the names below are part of this module's face (tests and tools reach them as cli.X)
from .cli_args import (ALIASES, EXIT_ERROR, EXIT_OK, EXIT_WARNING, SUFFIX, TOOLS,  # noqa: F401
                       Parser, add_parallel_options, build_parser, run_tool)
from .cli_io import (SPECIAL_BITS, STDIN_NAME, STDOUT_NAME, Interrupted, OutputError,  # noqa: F401
                     Warn, _Counting, _guard_closed_stdio, _raise_interrupted, say, std_stream)
from .cli_progress import kernels_cached  # tests patch cli.kernels_cached: looked up here
from .outputs import (_is_special, copy_metadata, descriptor_of, place_no_clobber,  # noqa: F401
                      write_all)

READ_CHUNK = 1 << 16


def NNCompressor(level: int, progress=None, **options):  # noqa: N802  (a seam tests replace)
    """api.NNCompressor, imported on first use."""
    from .api import NNCompressor as compressor

    return compressor(level, progress=progress, **options)


class Runner:
    def __init__(self, args):
        self.args = args
        self.mode = args.mode or "compress"
        self.level = args.level or DEFAULT_LEVEL
        self.params = getattr(args, "params", None)  # --model rnnme: the expert alone
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

    def progress(self, total, name):
        """Context manager giving a progress callback, or None (cli_progress.progress_bar)."""
        return cli_progress.progress_bar(total, name, show=self._on_terminal())

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
                                                level=self.level, params=self.params)
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
                workers = parallel.plan_workers(self.args.threads,
                                                self.params or params_for_level(self.level),
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
        """Destination path, or None for standard output (cli_io.output_name)."""
        return cli_io.output_name(name, self.mode, self.args)

    def check_input(self, name: str, to_stdout: bool):
        """stat of a usable input file (None for standard input), else Warn / NNCError."""
        return cli_io.check_input(name, self.mode, self.args, to_stdout)


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
                done_in, done_out = self._write_into(sink, source, info, name, destination)
            elif special:
                # a device or pipe: there is no file to replace atomically (and renaming a
                # temporary file over /dev/null would replace the device), so write into it
                try:
                    sink = open(destination, "wb")
                except OSError as exc:
                    raise OutputError(destination, exc) from None
                done_in, done_out = self._write_into(sink, source, info, name, destination)
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

    def _write_into(self, sink, source, info, name: str, destination: str):
        """Code into an already open sink (a descriptor or a device) and flush it."""
        try:
            self._refuse_terminal(sink)
            done = self.transform(source, sink, info, name, destination)
            self._flush(sink, destination)
        except BaseException:
            # close() flushes again and fails the same way: that second error must not
            # replace the first, which names the output
            try:
                sink.close()
            except OSError:
                pass
            raise
        try:
            sink.close()
        except OSError as exc:
            raise OutputError(destination, exc) from None
        return done

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
                                                    params=self.params,
                                                    segment_size=self.args.segment_size, progress=update,
                                                    size=self.declared_size(info))
                return parallel.decompress_stream(source, sink, engine or parallel.SerialEngine(),
                                                  verify_all=self.mode == "test", progress=update)
        if self.mode == "compress":
            from .format import DEFAULT_SEGMENT_SIZE

            options = {} if self.args.segment_size == DEFAULT_SEGMENT_SIZE else \
                {"segment_size": self.args.segment_size}
            if self.declared_size(info) is not None:  # a regular file: the model is sized to it
                options["size"] = self.declared_size(info)
            with self.progress(size, os.path.basename(name)) as update:
                if self.params is not None:
                    options["params"] = self.params
                compressor = NNCompressor(self.level, progress=update, **options)
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
    def declared_size(info) -> int | None:
        """The input's size when it is a regular file (sizes the model to it); None for a pipe,
        a terminal or a device, whose length is unknown until its end."""
        import stat

        return info.st_size if info is not None and stat.S_ISREG(info.st_mode) else None

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
        listing.list_archives(self, files)


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
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.level is None:
        args.level = DEFAULT_LEVEL
    try:  # branch neural2: --model (None: the level's context mixing)
        from .presets import parse_model

        args.params = parse_model(args.model)
    except ValueError as exc:
        parser.error(f"--model: {exc}")
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
            target = sys.stdout.fileno()  # first: without a stdout, nothing is opened to leak
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, target)
            finally:
                os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        say("nncompress: broken pipe")
        return EXIT_ERROR
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
