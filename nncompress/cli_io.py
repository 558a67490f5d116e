"""The command line's side of files and streams: its exceptions, messages on standard error,
standard input/output as binary streams, and the rules for which inputs are taken and what their
outputs are called (gzip-style suffix handling)."""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys

from . import NNCError

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


class _Counting:
    """A reader that counts what passed through it."""

    def __init__(self, source):
        self._source = source
        self.count = 0

    def read(self, size=-1):
        data = self._source.read(size)
        self.count += len(data)
        return data


# -- which inputs are taken, what their outputs are called --

def output_name(name: str, mode: str, args) -> str | None:
    """Destination path, or None for standard output."""
    if mode == "test":
        return None
    if args.output:
        return None if args.output == "-" else args.output
    if args.stdout or name == "-":
        return None
    suffix = args.suffix
    if mode == "compress":
        if name.endswith(suffix):
            raise Warn(f"already has {suffix} suffix -- unchanged")
        return name + suffix
    if not name.endswith(suffix) or len(name) == len(suffix):
        raise Warn("unknown suffix -- ignored")
    return name[: -len(suffix)]


def check_input(name: str, mode: str, args, to_stdout: bool):
    """stat of a usable input file (None for standard input), else Warn / NNCError."""
    if name == "-":
        stdin = std_stream("stdin")
        if mode != "compress" and not args.force and stdin.isatty():
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
    if info.st_mode & SPECIAL_BITS and not to_stdout and not args.force:
        # as gzip and xz: the output would silently lose these bits (it never gets them)
        what = ("set-user-ID" if info.st_mode & stat.S_ISUID else
                "set-group-ID" if info.st_mode & stat.S_ISGID else "sticky")
        raise Warn(f"is {what} -- ignored (use -f to process it; the output gets only "
                   "the permission bits)")
    return info
