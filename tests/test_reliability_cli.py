"""The command line under stress: damaged input, unreadable and clobberable files, full disks,
closed pipes, signals, --rm: one line per problem, no traceback, no data loss, no temporary
file left behind.  (The library's side: test_reliability_api.py.)"""

import contextlib
import glob
import io
import os
import pwd
import random
import signal
import subprocess
import sys
import tempfile
import time

import pytest

import nncompress
from nncompress.cli import main, write_all
from nncompress.format import NNCError
from test_reliability_api import DATA, ShortWriter


@pytest.fixture(scope="module")
def archive():
    return nncompress.compress(DATA, 1, block_size=100)


def cli(*args, stdin=None, stdout=subprocess.PIPE, cwd=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "nncompress", *map(str, args)], stdin=stdin,
                          stdout=stdout, stderr=subprocess.PIPE, cwd=cwd, timeout=timeout)


def temp_files(directory):
    return glob.glob(os.path.join(str(directory), ".nnc-*"))


def one_line_error(stderr: bytes, name) -> str:
    text = stderr.decode()
    assert "Traceback" not in text and "Exception ignored" not in text, text
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert lines[0].startswith(f"nncompress: {name}: "), text
    return lines[0]


# -- command line: damaged input -------------------------------------------------------------


def test_cli_damaged_archive_one_line_no_output(tmp_path, archive):
    bad = tmp_path / "bad.txt.nnc"
    blob = bytearray(archive)
    blob[-30] ^= 4
    bad.write_bytes(bytes(blob))
    result = cli("-d", bad)
    assert result.returncode == 1
    one_line_error(result.stderr, bad)
    assert not (tmp_path / "bad.txt").exists() and not temp_files(tmp_path)


def test_cli_each_file_reported_others_processed(tmp_path, archive, capsys):
    good = tmp_path / "good.nnc"
    good.write_bytes(archive)
    bad = tmp_path / "bad.nnc"
    bad.write_bytes(archive[:50])
    garbage = tmp_path / "garbage.nnc"
    garbage.write_bytes(b"hello, not an archive")
    (tmp_path / "adir.nnc").mkdir()
    missing = tmp_path / "missing.nnc"
    status = main(["-d", str(missing), str(tmp_path / "adir.nnc"), str(bad), str(garbage), str(good)])
    err = capsys.readouterr().err
    assert status == 1
    assert (tmp_path / "good").read_bytes() == DATA
    for path in (missing, tmp_path / "adir.nnc", bad, garbage):
        assert f"nncompress: {path}: " in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 4
    assert not (tmp_path / "bad").exists() and not (tmp_path / "garbage").exists()
    assert not temp_files(tmp_path)
    # a directory alone is a warning (exit 2), as in gzip
    assert main([str(tmp_path / "adir.nnc")]) == 2


@contextlib.contextmanager
def unprivileged():
    """Run the block with the effective uid and gid of `nobody` when we are root (CI is), so that
    file permissions apply; the real uid stays root, which lets the block end by switching back."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        yield
        return
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root and there is no 'nobody' user to drop to")
    os.setegid(nobody.pw_gid)
    os.seteuid(nobody.pw_uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def test_cli_unreadable_file(capsys):
    # a directory every user can use (pytest's tmp_path is private to root)
    with tempfile.TemporaryDirectory() as directory:
        os.chmod(directory, 0o777)
        secret = os.path.join(directory, "secret.txt")
        other = os.path.join(directory, "other.txt")
        for path, data in ((secret, b"x" * 100), (other, b"y" * 100)):
            with open(path, "wb") as f:
                f.write(data)
        os.chmod(secret, 0)
        os.chmod(other, 0o644)
        nncompress.compress(b"warm", 1)  # kernels loaded before dropping privileges
        with unprivileged():
            status = main(["-1", secret, other])
        assert status == 1
        err = capsys.readouterr().err
        assert err == f"nncompress: {secret}: Permission denied\n"
        assert os.path.exists(other + ".nnc") and not os.path.exists(secret + ".nnc")
        assert not temp_files(directory)


def test_cli_never_clobbers_without_force(tmp_path, archive):
    src = tmp_path / "a.txt"
    src.write_bytes(DATA)
    target = tmp_path / "a.txt.nnc"
    target.write_bytes(b"precious")
    assert main(["-1", str(src)]) == 1
    assert target.read_bytes() == b"precious"
    assert main(["-1", "-f", str(src)]) == 0  # -f overwrites
    assert nncompress.decompress(target.read_bytes()) == DATA
    # decompressing onto an existing file
    packed = tmp_path / "b.nnc"
    packed.write_bytes(archive)
    (tmp_path / "b").write_bytes(b"also precious")
    assert main(["-d", str(packed)]) == 1
    assert (tmp_path / "b").read_bytes() == b"also precious"
    # a dangling symlink is an existing name too
    os.symlink(tmp_path / "nowhere", tmp_path / "c")
    (tmp_path / "c.nnc").write_bytes(archive)
    assert main(["-d", str(tmp_path / "c.nnc")]) == 1
    assert os.path.islink(tmp_path / "c")
    assert not temp_files(tmp_path)


def test_cli_refuses_input_as_its_own_output(tmp_path, capsys):
    src = tmp_path / "same.txt"
    src.write_bytes(DATA)
    assert main(["-1", "-f", "--rm", "-o", str(src), str(src)]) == 1
    assert "same file" in capsys.readouterr().err
    assert src.read_bytes() == DATA


def test_cli_output_to_a_fifo_or_dev_null_writes_in_place(tmp_path):
    src = tmp_path / "a.txt"
    src.write_bytes(DATA)
    assert main(["-1", "-o", os.devnull, str(src)]) == 0
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        assert main(["-1", "-f", "-o", str(fifo), str(src)]) == 0
        out, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()
    assert nncompress.decompress(out) == DATA
    assert fifo.is_fifo()  # not replaced by a regular file
    assert src.read_bytes() == DATA


# -- command line: full disks and closed pipes -----------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("mode", ["compress", "decompress"])
def test_cli_dev_full(tmp_path, archive, mode):
    src = tmp_path / ("a.txt" if mode == "compress" else "a.nnc")
    src.write_bytes(DATA if mode == "compress" else archive)
    flag = "-1" if mode == "compress" else "-d"
    with open("/dev/full", "wb") as full:
        result = cli(flag, "-c", src, stdout=full)
    assert result.returncode == 1
    assert "No space left on device" in one_line_error(result.stderr, src)
    # -o /dev/full: written in place (a device), so the same clean error
    result = cli(flag, "-o", "/dev/full", src)
    assert result.returncode == 1
    assert "No space left on device" in one_line_error(result.stderr, src)
    assert src.exists() and not temp_files(tmp_path)


def test_short_writes_are_completed():
    sink = ShortWriter()
    write_all(sink, b"0123456789" * 10)
    assert bytes(sink.data) == b"0123456789" * 10


def test_short_write_then_error_is_not_success():
    class Breaks(ShortWriter):
        def write(self, b):
            if self.data:
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(b)

    with pytest.raises(BrokenPipeError):
        write_all(Breaks(), b"x" * 100)


@pytest.fixture(scope="module")
def large_input(tmp_path_factory, sample_text):
    """~2 MB: text with random binary runs mixed in."""
    rng = random.Random(3)
    parts = []
    size = 0
    while size < 2_000_000:
        part = sample_text[rng.randrange(10_000):][: rng.randrange(2000, 9000)] if rng.random() < 0.7 \
            else rng.randbytes(rng.randrange(100, 3000))
        parts.append(part)
        size += len(part)
    path = tmp_path_factory.mktemp("large") / "large.bin"
    path.write_bytes(b"".join(parts))
    return path


@pytest.fixture(scope="module")
def slow_archive(tmp_path_factory, large_input):
    """An archive that takes several seconds to decode at level 1."""
    path = tmp_path_factory.mktemp("slow") / "slow.bin.nnc"
    path.write_bytes(nncompress.compress(large_input.read_bytes()[:150_000], 1, block_size=1 << 16))
    return path


def test_cli_closed_pipe_is_clean(slow_archive):
    result = subprocess.run(
        f"'{sys.executable}' -m nncompress -dc '{slow_archive}' | head -c 10",
        shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300,
        executable="/bin/bash")
    assert len(result.stdout) == 10
    err = result.stderr.decode()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert len(err.strip().splitlines()) <= 1


def _default_signal_handlers():
    # A runner started in the background or under nohup hands its children SIGINT/SIGHUP
    # ignored, and the CLI rightly respects an ignored SIGHUP; test the interactive case.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _interrupt(args, directory, signum, expect_tmp=True):
    proc = subprocess.Popen([sys.executable, "-m", "nncompress", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_default_signal_handlers)
    deadline = time.monotonic() + 120
    while not temp_files(directory):  # the run is under way once its temporary file exists
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_during_compression_leaves_no_trace(tmp_path, large_input, signum):
    src = tmp_path / "large.bin"
    src.write_bytes(large_input.read_bytes())
    status, err = _interrupt(["-1", src], tmp_path, signum)
    assert status == 128 + signum, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert src.read_bytes() == large_input.read_bytes()
    assert not (tmp_path / "large.bin.nnc").exists() and not temp_files(tmp_path)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_during_decompression_leaves_no_trace(tmp_path, slow_archive, signum):
    src = tmp_path / "slow.bin.nnc"
    src.write_bytes(slow_archive.read_bytes())
    status, err = _interrupt(["-d", "--rm", src], tmp_path, signum)
    assert status == 128 + signum, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert src.read_bytes() == slow_archive.read_bytes()  # --rm did not run
    assert not (tmp_path / "slow.bin").exists() and not temp_files(tmp_path)


# -- streaming ------------------------------------------------------------------------------


def test_cli_streams_in_bounded_reads(monkeypatch):
    """stdin -> stdout in READ_CHUNK pieces; output appears before the input ends."""
    from nncompress import cli as cli_module

    class Source(io.RawIOBase):
        def __init__(self, total):
            self.left = total
            self.reads = []

        def readable(self):
            return True

        def read(self, n=-1):
            assert 0 < n <= cli_module.READ_CHUNK  # never "read everything"
            n = min(n, self.left, 4096)  # a pipe hands over a little at a time
            self.left -= n
            self.reads.append(n)
            return random.Random(self.left).randbytes(n)  # incompressible: blocks are big

    class Sink:
        def __init__(self, source):
            self.source = source
            self.first_write_at = None
            self.data = bytearray()

        def write(self, b):
            if self.first_write_at is None and len(b) > 100:
                self.first_write_at = len(self.source.reads)
            self.data += b
            return len(b)

    monkeypatch.setattr(cli_module, "NNCompressor",
                        lambda level, progress=None: nncompress.NNCompressor(level, block_size=1 << 14))
    runner = cli_module.Runner(cli_module.build_parser().parse_args(["-1"]))
    source = Source(60_000)
    sink = Sink(source)
    runner.transform(source, sink, None, "-")
    assert sink.first_write_at is not None and sink.first_write_at < len(source.reads) // 2
    packed = bytes(sink.data)
    assert len(nncompress.decompress(packed)) == 60_000

    class Chunked:  # the compressed side, a little at a time
        def __init__(self):
            self.reads = []
            self.stream = io.BytesIO(packed)

        def read(self, n):
            assert 0 < n <= cli_module.READ_CHUNK
            self.reads.append(n)
            return self.stream.read(min(n, 64))

    runner = cli_module.Runner(cli_module.build_parser().parse_args(["-d"]))
    source = Chunked()
    out = Sink(source)
    runner.transform(source, out, None, "-")
    assert len(out.data) == 60_000
    assert out.first_write_at is not None and out.first_write_at < len(source.reads) // 2


# -- --rm: the input goes only after the archive was verified --------------------------------


def test_cli_rm_keeps_input_when_verification_fails(tmp_path, monkeypatch, capsys):
    """Damage the new archive between writing and verifying: --rm must keep the input."""
    from nncompress import cli as cli_module

    src = tmp_path / "a.txt"
    src.write_bytes(DATA)
    write = cli_module.Runner.write_atomically

    def write_then_damage(self, source, destination, size, name):
        result = write(self, source, destination, size, name)
        blob = bytearray(open(destination, "rb").read())
        blob[len(blob) // 2] ^= 0x40
        with open(destination, "wb") as f:
            f.write(blob)
        return result

    monkeypatch.setattr(cli_module.Runner, "write_atomically", write_then_damage)
    assert main(["-1", "--rm", str(src)]) == 1
    assert src.read_bytes() == DATA
    err = capsys.readouterr().err
    assert err.startswith(f"nncompress: {src}: ") and "Traceback" not in err


def test_cli_rm_keeps_input_when_the_archive_holds_other_data(tmp_path, monkeypatch, capsys):
    """A sound archive of other data (the verifier answers False, no decoding error): the
    input stays, and the message says so word for word."""
    from nncompress import cli as cli_module

    src = tmp_path / "a.txt"
    src.write_bytes(DATA)
    write = cli_module.Runner.write_atomically

    def write_then_replace(self, source, destination, size, name):
        result = write(self, source, destination, size, name)
        with open(destination, "wb") as f:
            f.write(nncompress.compress(DATA[:-1], 1))
        return result

    monkeypatch.setattr(cli_module.Runner, "write_atomically", write_then_replace)
    assert main(["-1", "--rm", str(src)]) == 1
    assert src.read_bytes() == DATA
    assert capsys.readouterr().err == \
        f"nncompress: {src}: verification of the new archive failed; input kept\n"


def test_cli_rm_runs_the_verification(tmp_path, monkeypatch, capsys):
    """--rm calls the verifier, and a failed verification (whatever its cause) keeps the input."""
    from nncompress import cli as cli_module

    calls = []

    def failing_verify(self, archive, original):
        calls.append((archive, original))
        raise NNCError("verification of the new archive failed; input kept")

    monkeypatch.setattr(cli_module.Runner, "verify_archive", failing_verify)
    src = tmp_path / "a.txt"
    src.write_bytes(DATA)
    assert main(["-1", "--rm", str(src)]) == 1
    assert calls == [(str(tmp_path / "a.txt.nnc"), str(src))]
    assert src.read_bytes() == DATA
    assert "input kept" in capsys.readouterr().err
