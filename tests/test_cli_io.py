"""The command line's file rules on their own (nncompress.cli_io): what an output is called and
which inputs are taken.  No compression happens here, so every case is cheap."""

import argparse
import io
import os
import stat

import pytest

from nncompress import NNCError, cli_io
from nncompress.cli_io import Warn, check_input, output_name


def options(**given):
    values = dict(output=None, stdout=False, suffix=".nnc", force=False)
    values.update(given)
    return argparse.Namespace(**values)


def test_output_names():
    assert output_name("a.txt", "compress", options()) == "a.txt.nnc"
    assert output_name("a.txt", "compress", options(suffix=".z")) == "a.txt.z"
    assert output_name("a.txt.nnc", "decompress", options()) == "a.txt"
    assert output_name("dir/a.nnc", "decompress", options()) == "dir/a"
    assert output_name("a.z", "decompress", options(suffix=".z")) == "a"
    assert output_name("a.txt", "compress", options(output="out.bin")) == "out.bin"
    assert output_name("a.txt.nnc", "decompress", options(output="out")) == "out"
    # standard output: -c, -o -, standard input, and -t (which writes nothing)
    for name, mode, given in (("a.txt", "compress", dict(stdout=True)),
                              ("a.txt", "compress", dict(output="-")),
                              ("-", "compress", {}), ("-", "decompress", {}),
                              ("a.txt.nnc", "test", dict(output="x")),
                              ("a.txt", "test", {})):
        assert output_name(name, mode, options(**given)) is None, (name, mode, given)


@pytest.mark.parametrize("name, mode, message", [
    ("a.txt.nnc", "compress", "already has .nnc suffix -- unchanged"),
    ("a.txt", "decompress", "unknown suffix -- ignored"),
    (".nnc", "decompress", "unknown suffix -- ignored"),
    ("a.nncx", "decompress", "unknown suffix -- ignored"),
])
def test_names_that_are_skipped(name, mode, message):
    with pytest.raises(Warn) as skipped:
        output_name(name, mode, options())
    assert str(skipped.value) == message


class _Stdin:
    def __init__(self, tty: bool):
        self.buffer = io.BytesIO()
        self.buffer.isatty = lambda: tty


def test_standard_input_is_refused_only_when_a_tty_would_be_decoded(monkeypatch):
    monkeypatch.setattr(cli_io.sys, "stdin", _Stdin(tty=True))
    for mode in ("decompress", "test", "list"):
        with pytest.raises(NNCError) as refused:
            check_input("-", mode, options(), to_stdout=True)
        assert str(refused.value) == "compressed data not read from a terminal (use -f to force)"
        assert check_input("-", mode, options(force=True), to_stdout=True) is None
    assert check_input("-", "compress", options(), to_stdout=True) is None
    monkeypatch.setattr(cli_io.sys, "stdin", _Stdin(tty=False))
    assert check_input("-", "decompress", options(), to_stdout=True) is None
    monkeypatch.setattr(cli_io.sys, "stdin", None)
    with pytest.raises(OSError) as closed:
        check_input("-", "compress", options(), to_stdout=True)
    assert closed.value.errno == 9 and closed.value.strerror == "Bad file descriptor"


def test_inputs_taken_and_skipped(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"12345")
    info = check_input(str(path), "compress", options(), to_stdout=False)
    assert info.st_size == 5 and stat.S_ISREG(info.st_mode)
    with pytest.raises(NNCError) as missing:
        check_input(str(tmp_path / "missing"), "compress", options(), to_stdout=False)
    assert str(missing.value) == "no such file or directory"
    with pytest.raises(Warn) as directory:
        check_input(str(tmp_path), "compress", options(), to_stdout=False)
    assert str(directory.value) == "is a directory -- ignored"
    with pytest.raises(Warn) as device:
        check_input(os.devnull, "compress", options(), to_stdout=False)
    assert str(device.value) == "not a regular file -- ignored"


@pytest.mark.parametrize("bits, word", [(stat.S_ISUID, "set-user-ID"),
                                        (stat.S_ISUID | stat.S_ISGID, "set-user-ID"),
                                        (stat.S_ISGID, "set-group-ID"),
                                        (stat.S_ISVTX, "sticky")])
def test_special_bits_skip_a_file_output_only(tmp_path, bits, word):
    path = tmp_path / "a.txt"
    path.write_bytes(b"12345")
    os.chmod(path, 0o644 | bits)
    with pytest.raises(Warn) as skipped:
        check_input(str(path), "compress", options(), to_stdout=False)
    assert str(skipped.value) == (f"is {word} -- ignored (use -f to process it; the output gets "
                                  "only the permission bits)")
    # to standard output nothing loses the bits; -f takes the file anyway
    for given, to_stdout in ((options(), True), (options(force=True), False)):
        assert check_input(str(path), "compress", given, to_stdout).st_mode & bits == bits


def test_output_error_names_its_output_and_keeps_the_reason():
    error = cli_io.OutputError("out.nnc", OSError(28, "No space left on device"))
    assert (error.name, str(error)) == ("out.nnc", "No space left on device")
    assert str(cli_io.OutputError("out.nnc", OSError("plain"))) == "plain"


def test_counting_reader():
    counted = cli_io._Counting(io.BytesIO(b"0123456789"))
    assert counted.count == 0
    assert counted.read(4) == b"0123" and counted.read() == b"456789" and counted.read(3) == b""
    assert counted.count == 10


def test_interrupted_names_the_signal_and_say_needs_stderr(monkeypatch, capsys):
    import signal

    interrupted = cli_io.Interrupted(signal.SIGTERM)
    assert (str(interrupted), interrupted.signum) == ("SIGTERM", signal.SIGTERM)
    assert isinstance(interrupted, BaseException) and not isinstance(interrupted, Exception)
    cli_io.say("one line")
    assert capsys.readouterr() == ("", "one line\n")
    monkeypatch.setattr(cli_io.sys, "stderr", None)
    cli_io.say("nowhere")  # no stderr: nothing, and never standard output
    assert capsys.readouterr().out == ""


def test_standard_streams_as_binary(monkeypatch):
    text = io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(cli_io.sys, "stdout", text)
    assert cli_io.std_stream("stdout") is text.buffer
    binary = io.BytesIO()  # already binary (no .buffer): used as it is
    monkeypatch.setattr(cli_io.sys, "stdout", binary)
    assert cli_io.std_stream("stdout") is binary


def test_the_signal_handler_raises_interrupted():
    import signal

    with pytest.raises(cli_io.Interrupted) as raised:
        cli_io._raise_interrupted(signal.SIGHUP, None)
    assert raised.value.signum == signal.SIGHUP and str(raised.value) == "SIGHUP"


# -- _guard_closed_stdio: a closed 0, 1 or 2 is occupied by /dev/null opened the wrong way --
# In process (mutmut credits only these): each test closes real standard descriptors and puts
# them back in `finally`; pytest's own capture keeps working on the restored descriptors.

def _devnull_opened_for(fd):
    """'r' or 'w' when fd is /dev/null opened read-only / write-only, else what it is."""
    import fcntl

    info, null = os.fstat(fd), os.stat(os.devnull)
    if (info.st_rdev, stat.S_ISCHR(info.st_mode)) != (null.st_rdev, True):
        return "not /dev/null"
    access = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    return {os.O_RDONLY: "r", os.O_WRONLY: "w"}.get(access, "read-write")


def _lowest_free_descriptor():
    probe = os.open(os.devnull, os.O_RDONLY)
    os.close(probe)
    return probe


def _with_closed(fds, check):
    """Close fds (a subset of 0, 1, 2), run the guard and check(), then restore them."""
    saved = {fd: os.dup(fd) for fd in fds}
    try:
        lowest_before = _lowest_free_descriptor()
        for fd in fds:
            os.close(fd)
        cli_io._guard_closed_stdio()
        check()
        # the guard leaves no descriptor of its own behind
        assert _lowest_free_descriptor() == lowest_before
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)


@pytest.mark.parametrize("fds", [(0,), (1,), (2,), (0, 1, 2), (1, 2)])
def test_a_closed_standard_descriptor_becomes_dev_null_the_wrong_way_round(fds):
    before = {fd: os.fstat(fd) for fd in (0, 1, 2) if fd not in fds}

    def check():
        for fd in fds:
            assert _devnull_opened_for(fd) == ("w" if fd == 0 else "r"), fd
        for fd, info in before.items():  # the open ones are left as they were
            assert (os.fstat(fd).st_dev, os.fstat(fd).st_ino) == (info.st_dev, info.st_ino)

    _with_closed(fds, check)


def test_nothing_is_opened_when_no_standard_descriptor_is_closed(monkeypatch):
    opened = []
    monkeypatch.setattr(os, "open", lambda *a, **k: opened.append(a))
    cli_io._guard_closed_stdio()
    assert opened == []


def test_a_descriptor_that_cannot_be_guarded_does_not_stop_the_others(monkeypatch):
    """/dev/null refused once (EMFILE, ENOENT in a chroot...): 0 stays closed and the next
    open lands on 0, not on 1, so it must be moved to 1 and its own number given back."""
    real_open, calls = os.open, []

    def open_refusing_first(path, flags, *rest):
        calls.append((path, flags))
        if len(calls) == 1:
            raise OSError(24, "Too many open files")
        return real_open(path, flags, *rest)

    saved = {fd: os.dup(fd) for fd in (0, 1)}
    try:
        lowest_before = _lowest_free_descriptor()
        os.close(0)
        os.close(1)
        monkeypatch.setattr(os, "open", open_refusing_first)
        cli_io._guard_closed_stdio()
        monkeypatch.setattr(os, "open", real_open)
        assert calls == [(os.devnull, os.O_WRONLY), (os.devnull, os.O_RDONLY)]
        assert _devnull_opened_for(1) == "r"
        assert _lowest_free_descriptor() == 0  # 0 given back, still closed
        os.dup2(saved[0], 0)
        assert _lowest_free_descriptor() == lowest_before
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
