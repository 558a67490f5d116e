"""The command line under attack (issue 14) and its rough edges (issue 15 items 2, 3, 9-14)."""

import errno
import io
import json
import os
import pty
import stat
import subprocess
import sys
import time

import pytest

import nncompress
from nncompress import cli, outputs
from nncompress.cli import main

DATA = b"Safety: an archive is placed whole, with the input's bits, or not at all.\n" * 40
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def run_cli(*args, shell_prefix="", stdin=None, stdout=subprocess.PIPE, cwd=None, timeout=120):
    """nncompress in a child process; shell_prefix (e.g. 'ulimit -v ...;') runs before it, and
    args may carry shell redirections such as '>&-'."""
    command = " ".join([shell_prefix, f"'{sys.executable}' -m nncompress", *args])
    return subprocess.run(command, shell=True, executable="/bin/bash", stdin=stdin,
                          stdout=stdout, stderr=subprocess.PIPE, cwd=cwd, timeout=timeout)


def clean_error(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text and "Exception ignored" not in text, text
    assert len(text.strip().splitlines()) == 1, text
    return text


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(DATA)
    return path


# -- item 1: setuid, setgid, sticky; owner --------------------------------------------------

@pytest.mark.parametrize("bits, word", [(stat.S_ISUID, "set-user-ID"), (stat.S_ISGID, "set-group-ID"),
                                        (stat.S_ISVTX, "sticky")])
def test_special_bits_input_is_skipped_without_force(src, tmp_path, capsys, bits, word):
    os.chmod(src, 0o755 | bits)
    assert main(["-1", str(src)]) == 2
    assert word in capsys.readouterr().err
    assert not (tmp_path / "in.txt.nnc").exists()


@pytest.mark.parametrize("mode", ["compress", "decompress"])
def test_output_never_gets_special_bits(src, tmp_path, mode):
    if mode == "decompress":
        packed = tmp_path / "p.nnc"
        packed.write_bytes(nncompress.compress(DATA, 1))
        src, out, flags = packed, tmp_path / "p", ["-d"]
    else:
        out, flags = tmp_path / "in.txt.nnc", ["-1"]
    os.chmod(src, 0o4755 | stat.S_ISGID)
    assert main([*flags, "-f", str(src)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o755


@pytest.mark.skipif(not IS_ROOT, reason="giving a file away needs root")
def test_root_restores_owner_like_gzip(src, tmp_path):
    os.chown(src, 12345, 23456)
    assert main(["-1", str(src)]) == 0
    info = os.stat(tmp_path / "in.txt.nnc")
    assert (info.st_uid, info.st_gid) == (12345, 23456)
    assert main(["-1", "-n", "-o", str(tmp_path / "n.nnc"), str(src)]) == 0
    assert os.stat(tmp_path / "n.nnc").st_uid == os.geteuid()


# -- item 9: modes and times ----------------------------------------------------------------

def test_mtime_is_kept_and_no_name_opts_out(src, tmp_path):
    os.utime(src, (1_000_000_000, 1_000_000_000))
    assert main(["-1", str(src)]) == 0
    assert os.stat(tmp_path / "in.txt.nnc").st_mtime == 1_000_000_000
    (tmp_path / "in.txt").unlink()
    assert main(["-d", str(tmp_path / "in.txt.nnc")]) == 0
    assert os.stat(tmp_path / "in.txt").st_mtime == 1_000_000_000
    assert main(["-1", "-n", "-o", str(tmp_path / "n.nnc"), str(src)]) == 0
    assert abs(os.stat(tmp_path / "n.nnc").st_mtime - time.time()) < 600


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_output_from_stdin_follows_the_umask(src, tmp_path, umask):
    out = tmp_path / "from-stdin.nnc"
    with open(src, "rb") as f:
        result = run_cli("-1", "-o", str(out), shell_prefix=f"umask {umask:03o};", stdin=f)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o666 & ~umask


# -- item 2: outputs through links to descriptors and devices --------------------------------

@pytest.mark.parametrize("target", ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"])
def test_link_to_stdout_writes_to_the_redirected_file(src, tmp_path, target):
    if not os.path.exists(target):
        pytest.skip(f"no {target}")
    link = tmp_path / "out-link"
    os.symlink(target, link)
    result_file = tmp_path / "redirected"
    with open(result_file, "wb") as out:
        result = run_cli("-1", "-f", "--rm", "-o", str(link), str(src), stdout=out)
    assert os.path.islink(link) and os.readlink(link) == target  # not replaced by a file
    assert nncompress.decompress(result_file.read_bytes()) == DATA  # the data arrived
    assert src.read_bytes() == DATA  # --rm did not delete the input it cannot verify
    assert result.returncode == 2 and b"input kept" in result.stderr


def test_dev_stdout_appends_to_an_appending_redirection(src, tmp_path):
    result_file = tmp_path / "log"
    result_file.write_bytes(b"HEAD")
    with open(result_file, "ab") as out:
        result = run_cli("-1", "-o", "/dev/stdout", str(src), stdout=out)
    assert result.returncode == 0, result.stderr
    blob = result_file.read_bytes()
    assert blob.startswith(b"HEAD") and nncompress.decompress(blob[4:]) == DATA


def test_link_to_a_fifo_writes_into_the_fifo(src, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    os.symlink(fifo, link)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        assert main(["-1", "-f", "-o", str(link), str(src)]) == 0
        out, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()
    assert nncompress.decompress(out) == DATA and os.path.islink(link) and fifo.is_fifo()


def test_descriptor_resolution():
    assert outputs.descriptor_of("/dev/stdout") == 1
    assert outputs.descriptor_of("/dev/fd/2") == 2
    assert outputs.descriptor_of(f"/proc/{os.getpid()}/fd/0") == 0
    assert outputs.descriptor_of("/proc/1/fd/1") is None or os.getpid() == 1
    assert outputs.descriptor_of("/tmp") is None
    assert outputs.descriptor_of("relative-name-that-does-not-exist") is None


# -- item 3: closed standard streams, memory limits -----------------------------------------

@pytest.mark.parametrize("args, where", [
    (["-1", "-c", "{src}", ">&-"], "(stdout)"),
    (["-d", "-c", "{packed}", ">&-"], "(stdout)"),
    (["-l", "{packed}", ">&-"], "(stdout)"),
    (["-1", "-c", "<&-"], "(stdin)"),
    (["-d", "-c", "<&-"], "(stdin)"),
])
def test_closed_standard_streams_are_clean_errors(src, tmp_path, args, where):
    packed = tmp_path / "p.nnc"
    packed.write_bytes(nncompress.compress(DATA, 1))
    args = [a.format(src=src, packed=packed) for a in args]
    result = run_cli(*args, stdout=None if ">&-" in args else subprocess.PIPE)
    assert result.returncode == 1
    text = clean_error(result.stderr)
    assert where in text and "Bad file descriptor" in text


def test_closed_stderr_never_puts_messages_into_the_output(tmp_path):
    out = tmp_path / "out"
    with open(out, "wb") as f:
        result = run_cli("-d", "-c", str(tmp_path / "missing.nnc"), "2>&-", stdout=f)
    assert result.returncode == 1 and out.read_bytes() == b""


def test_compressing_under_a_memory_limit_is_a_clean_error(src):
    result = run_cli("-9", "-c", str(src), shell_prefix="ulimit -v 1000000;", timeout=300)
    if result.returncode == 0:
        pytest.skip("level 9 fits in 1 GB of address space here")
    assert result.returncode == 1
    assert "not enough memory" in clean_error(result.stderr)


# -- item 4: -l ------------------------------------------------------------------------------

def test_list_refuses_devices_and_fifos_without_reading(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    result = run_cli("-l", "/dev/zero", str(fifo), shell_prefix="ulimit -v 2000000;", timeout=60)
    assert result.returncode == 2
    assert result.stderr.decode().count("not a regular file") == 2


def test_list_reads_stdin_as_a_stream(tmp_path):
    with open("/dev/zero", "rb") as zero:
        result = run_cli("-l", shell_prefix="ulimit -v 2000000;", stdin=zero, timeout=60)
    assert result.returncode == 1 and "bad magic" in clean_error(result.stderr)


def test_list_shows_ratio_and_totals(tmp_path, capsys):
    a, b = tmp_path / "a.nnc", tmp_path / "b.nnc"
    a.write_bytes(nncompress.compress(DATA, 1))
    b.write_bytes(nncompress.compress(DATA[:500], 1) + nncompress.compress(b"xyz", 1))
    assert main(["-l", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "ratio" in lines[0]
    assert "totals: 3 streams in 2 files" in lines[-1]
    total_packed = a.stat().st_size + b.stat().st_size
    assert lines[-1].split()[:2] == [str(total_packed), str(len(DATA) + 503)]
    assert f"{a.stat().st_size / len(DATA):.3f}" in lines[1]
    assert main(["-l", "--json", str(a)]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["ratio"] == round(a.stat().st_size / len(DATA), 4)


# -- item 8: filesystems without hard links --------------------------------------------------

def _no_links(monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", refuse)


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "exclusive-create"])
def test_placement_without_hard_links(src, tmp_path, monkeypatch, renameat2):
    _no_links(monkeypatch)
    results = []
    real = outputs._renameat2_noreplace

    def spy(a, b):
        results.append(real(a, b) if renameat2 else False)
        return results[-1]

    monkeypatch.setattr(outputs, "_renameat2_noreplace", spy)
    assert main(["-1", str(src)]) == 0
    assert nncompress.decompress((tmp_path / "in.txt.nnc").read_bytes()) == DATA
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".nnc-")] == []
    assert results and (results[0] or not renameat2 or not sys.platform.startswith("linux"))
    # still no clobbering: a file that appears while the work is done is kept
    temp = tmp_path / "temp"
    temp.write_bytes(b"new")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    with pytest.raises(FileExistsError):
        outputs.place_no_clobber(str(temp), str(victim))
    assert victim.read_bytes() == b"precious" and temp.exists()
    outputs.place_no_clobber(str(temp), str(tmp_path / "fresh"))
    assert (tmp_path / "fresh").read_bytes() == b"new" and not temp.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_renameat2_places_refuses_and_reports(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative names: resolved against the working directory
    temp, destination = tmp_path / "temp", tmp_path / "dest"
    temp.write_bytes(b"new")
    assert outputs._renameat2_noreplace("temp", "dest") is True
    assert destination.read_bytes() == b"new" and not temp.exists()
    temp.write_bytes(b"newer")
    with pytest.raises(FileExistsError) as exists:
        outputs._renameat2_noreplace("temp", "dest")
    assert (exists.value.errno, exists.value.strerror, exists.value.filename) == \
        (errno.EEXIST, os.strerror(errno.EEXIST), "dest")
    assert destination.read_bytes() == b"new" and temp.read_bytes() == b"newer"
    # any other failure is an error naming the destination, never "unsupported" (False)
    with pytest.raises(OSError) as missing:
        outputs._renameat2_noreplace("missing", "other")
    assert (missing.value.errno, missing.value.strerror, missing.value.filename) == \
        (errno.ENOENT, os.strerror(errno.ENOENT), "other")


class _Libc:
    """A C library whose renameat2 fails with the given errno."""

    def __init__(self, error):
        self.error = error

    def renameat2(self, *args):
        import ctypes

        ctypes.set_errno(self.error)
        return -1


@pytest.mark.parametrize("error", [errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP])
def test_renameat2_unsupported_means_fall_back(tmp_path, monkeypatch, error):
    import ctypes

    monkeypatch.setattr(ctypes, "CDLL", lambda *args, **kwargs: _Libc(error))
    (tmp_path / "temp").write_bytes(b"new")
    assert outputs._renameat2_noreplace(str(tmp_path / "temp"), str(tmp_path / "dest")) is False


def test_renameat2_missing_means_fall_back_and_other_errors_raise(tmp_path, monkeypatch):
    import ctypes

    temp, destination = str(tmp_path / "temp"), str(tmp_path / "dest")
    monkeypatch.setattr(ctypes, "CDLL", lambda *args, **kwargs: _Libc(errno.EIO))
    with pytest.raises(OSError) as failed:
        outputs._renameat2_noreplace(temp, destination)
    assert (failed.value.errno, failed.value.filename) == (errno.EIO, destination)

    def no_library(*args, **kwargs):
        raise OSError("no C library")

    monkeypatch.setattr(ctypes, "CDLL", no_library)
    assert outputs._renameat2_noreplace(temp, destination) is False
    monkeypatch.setattr(ctypes, "CDLL", lambda *args, **kwargs: type("NoRename", (), {})())
    assert outputs._renameat2_noreplace(temp, destination) is False
    monkeypatch.setattr(outputs.sys, "platform", "darwin")  # not Linux: never tried
    monkeypatch.setattr(ctypes, "CDLL", lambda *args, **kwargs: pytest.fail("tried"))
    assert outputs._renameat2_noreplace(temp, destination) is False


@pytest.mark.parametrize("answer", [0, None], ids=["zero", "none"])
def test_a_write_that_makes_no_progress_is_an_error(answer):
    class Stuck:
        def write(self, data):
            return answer

    with pytest.raises(OSError) as stuck:
        outputs.write_all(Stuck(), b"data")
    assert (stuck.value.errno, stuck.value.strerror) == (errno.EIO, "write made no progress")


# -- issue 15 items 2, 3: start-up ----------------------------------------------------------

@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_do_not_load_numba(flag):
    code = ("import sys\nfrom nncompress.cli import main\n"
            "try:\n    main([%r])\nexcept SystemExit:\n    pass\n"
            "print('numba' in sys.modules, 'nncompress.codec' in sys.modules)" % flag)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert result.stdout.decode().splitlines()[-1] == "False False"


def test_first_run_says_it_is_compiling(monkeypatch, capsys, make_stderr_a_terminal):
    runner = cli.Runner(cli.build_parser().parse_args([]))
    make_stderr_a_terminal()
    monkeypatch.setattr(cli, "kernels_cached", lambda: False)
    runner.announce_compile()
    runner.announce_compile()  # once per run
    assert capsys.readouterr().err.count("compiling kernels (first run only)") == 1
    quiet = cli.Runner(cli.build_parser().parse_args(["-q"]))
    quiet.announce_compile()
    monkeypatch.setattr(cli, "kernels_cached", lambda: True)
    cli.Runner(cli.build_parser().parse_args([])).announce_compile()
    assert capsys.readouterr().err == ""


def test_kernels_cached_sees_a_numba_cache_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "kernels.step-1.py311.nbi").write_bytes(b"")
    assert cli.kernels_cached()


@pytest.mark.parametrize("cache_dir, model_dir, spec_found, expected", [
    ("x.nbi", "", True, True),  # NUMBA_CACHE_DIR alone holds the index
    ("", "x.nbi", True, True),  # the model's own folder alone (__pycache__ below it)
    (None, "x.nbi", True, True),  # no NUMBA_CACHE_DIR at all
    (None, "x.nbc", True, False),  # data files without an index are not a cache
    ("x.NBI", "x.py", True, False),
    ("x.nbi", "", False, True),  # the model package not found: NUMBA_CACHE_DIR still counts
    (None, "", False, False),
])
def test_kernels_cached_looks_in_both_places_for_an_index(tmp_path, monkeypatch, cache_dir, model_dir,
                                                          spec_found, expected):
    """Round 6 (bench/MUTATION.md 2f): NUMBA_CACHE_DIR and the model package's folder are both
    searched, at any depth, for numba's index files (.nbi) only."""
    import importlib.util
    import types

    from nncompress import cli_progress

    def folder(name, content):
        path = tmp_path / name
        (path / "__pycache__").mkdir(parents=True)
        if content:
            (path / "__pycache__" / content).write_bytes(b"")
        return str(path)

    if cache_dir is None:
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    else:
        monkeypatch.setenv("NUMBA_CACHE_DIR", folder("cache", cache_dir))
    model = types.SimpleNamespace(submodule_search_locations=[folder("model", model_dir)])
    asked = []
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: asked.append(name) or (model if spec_found else None))
    assert cli_progress.kernels_cached() is expected
    assert asked == ["nncompress.model"]


# -- issue 15 items 9-14: the rough edges -------------------------------------------------------

@pytest.mark.parametrize("argv", [["--bogus"], ["--level", "12"], ["-d", "-t"], ["bench", "--bogus"],
                                  ["analyze"], ["analyze", "x", "--bogus"], ["demo", "--bogus"],
                                  ["bench", "fetch", "--bogus"]])
def test_usage_errors_exit_1_like_gzip_xz_zstd(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file named like a subcommand here
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 1
    assert "usage" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["test", "list", "compress", "decompress", "bench", "analyze", "demo"])
def test_subcommand_name_that_is_also_a_file_is_refused(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(DATA)
    assert main([name]) == 1
    assert f"nncompress -- {name}" in capsys.readouterr().err
    assert not (tmp_path / f"{name}.nnc").exists()


def test_double_dash_ends_options_and_subcommands(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "test").write_bytes(DATA)
    (tmp_path / "-9").write_bytes(DATA)
    assert main(["-1", "--", "test", "-9"]) == 0
    assert nncompress.decompress((tmp_path / "test.nnc").read_bytes()) == DATA
    assert nncompress.decompress((tmp_path / "-9.nnc").read_bytes()) == DATA


def test_output_side_errors_name_the_output(src, tmp_path, capsys):
    missing = tmp_path / "nodir" / "x.nnc"
    assert main(["-1", "-o", str(missing), str(src)]) == 1
    err = capsys.readouterr().err
    assert f"cannot write {missing}" in err and "No such file or directory" in err


def test_decompress_refuses_a_terminal_on_stdin():
    controller, terminal = pty.openpty()
    try:
        result = subprocess.run([sys.executable, "-m", "nncompress", "-d"], stdin=terminal,
                                capture_output=True, timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    assert result.returncode == 1
    assert "not read from a terminal" in clean_error(result.stderr)


def test_decompression_progress_total_is_the_original_size(tmp_path):
    packed = tmp_path / "p.nnc"
    packed.write_bytes(nncompress.compress(DATA, 1, block_size=500) + nncompress.compress(b"ab", 1))
    with open(packed, "rb") as f:
        assert cli.Runner.original_size(f) == len(DATA) + 2
        assert f.tell() == 0
    damaged = tmp_path / "d.nnc"
    damaged.write_bytes(packed.read_bytes()[:-3])
    with open(damaged, "rb") as f:
        assert cli.Runner.original_size(f) is None and f.tell() == 0


def test_progress_counts_up_to_the_total(tmp_path, monkeypatch):
    packed = tmp_path / "p.nnc"
    packed.write_bytes(nncompress.compress(DATA * 3, 1, block_size=1000))
    seen = {}

    def fake_progress(self, total, name):
        from contextlib import contextmanager

        @contextmanager
        def context():
            seen["total"] = total
            seen["done"] = 0

            def update(n):
                seen["done"] += n

            yield update

        return context()

    monkeypatch.setattr(cli.Runner, "progress", fake_progress)
    assert main(["-t", str(packed)]) == 0
    assert seen == {"total": len(DATA) * 3, "done": len(DATA) * 3}


def test_fast_and_best_aliases(capsys):
    parser = cli.build_parser()
    assert parser.parse_args(["--fast"]).level == 1
    assert parser.parse_args(["--best"]).level == 9
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--fast" in help_text and "--best" in help_text
    assert "1-2, 3-5, 6, 7, 8 and 9" in help_text


@pytest.mark.skipif(not IS_ROOT, reason="needs a file of another group")
def test_group_bits_not_given_to_another_group(src, tmp_path):
    """-n (or a group the caller cannot set): group bits only as strict as the others' (xz)."""
    os.chown(src, -1, 23456)
    os.chmod(src, 0o664)
    assert main(["-1", "-n", "-o", str(tmp_path / "n.nnc"), str(src)]) == 0
    assert stat.S_IMODE(os.stat(tmp_path / "n.nnc").st_mode) == 0o644


def test_rm_with_stdout_or_test_is_ignored_like_zstd(src, tmp_path):
    packed = tmp_path / "p.nnc"
    packed.write_bytes(nncompress.compress(DATA, 1))
    assert main(["-t", "--rm", str(packed)]) == 0
    assert packed.exists()


def test_compressed_data_not_written_to_a_terminal_through_o(src):
    controller, terminal = pty.openpty()
    try:
        tty_path = os.ttyname(terminal)
        result = subprocess.run([sys.executable, "-m", "nncompress", "-1", "-o", tty_path, str(src)],
                                capture_output=True, timeout=120)
    finally:
        os.close(controller)
        os.close(terminal)
    assert result.returncode == 1 and "terminal" in clean_error(result.stderr)


# -- every message of the file loop, word for word (mutation testing found them unasserted) ----

def test_every_file_message_exactly(src, tmp_path, capsys, monkeypatch):
    def run(*argv):
        status = main(list(argv))
        return status, capsys.readouterr().err

    name = str(src)
    archive = tmp_path / "in.txt.nnc"
    archive.write_bytes(b"placeholder")
    assert run("-1", name) == (1, f"nncompress: {name}: {archive} already exists (use -f to overwrite)\n")
    assert archive.read_bytes() == b"placeholder"  # nothing was clobbered
    assert run("-1", str(archive)) == (
        2, f"nncompress: {archive}: already has .nnc suffix -- unchanged\n")
    monkeypatch.chdir(tmp_path)
    for undecodable in (name, ".nnc"):  # (a name that is only the suffix has no stem)
        open(undecodable, "ab").close()
        assert run("-d", undecodable) == (2, f"nncompress: {undecodable}: unknown suffix -- ignored\n")
    assert run("-1", str(tmp_path)) == (2, f"nncompress: {tmp_path}: is a directory -- ignored\n")
    assert run("-1", "-c", os.devnull) == (2, f"nncompress: {os.devnull}: not a regular file -- ignored\n")
    missing = str(tmp_path / "missing")
    assert run("-1", missing) == (1, f"nncompress: {missing}: no such file or directory\n")
    assert run("-1", "-o", "x", name, name) == (
        1, "nncompress: -o: only one input file may be given with --output\n")
    assert run("-1", "-f", "-o", name, name) == (
        1, f"nncompress: {name}: input and output are the same file ({name})\n")
    os.chmod(src, 0o644 | stat.S_ISUID)
    assert run("-1", "-o", str(tmp_path / "suid.nnc"), name) == (
        2, f"nncompress: {name}: is set-user-ID -- ignored (use -f to process it; the output "
           "gets only the permission bits)\n")
    os.chmod(src, 0o644)
    # --rm into a device: nothing on disk to verify, so the input stays (a warning)
    assert run("-1", "--rm", "-o", os.devnull, name) == (
        2, f"nncompress: {name}: output is not a regular file -- input kept\n")
    assert src.read_bytes() == DATA
    # -q hides warnings, not the status; an error outranks a warning in either order
    assert run("-q", "-1", str(tmp_path)) == (2, "")
    assert run("-1", missing, str(tmp_path))[0] == 1
    assert run("-1", str(tmp_path), missing)[0] == 1

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(cli, "NNCompressor", no_memory)
    os.unlink(archive)
    assert run("-4", name) == (1, f"nncompress: {name}: not enough memory for level 4 (try a lower level)\n")
    packed = tmp_path / "p.nnc"
    packed.write_bytes(nncompress.compress(DATA, 1))
    monkeypatch.setattr(cli.Runner, "transform", lambda *args: no_memory())
    assert run("-d", str(packed)) == (1, f"nncompress: {packed}: not enough memory\n")


def test_verbose_report_line(src, tmp_path, capsys):
    import re

    line = r"{}: {}: (\d+) -> (\d+) bytes, (\d+\.\d\d\d) bpc, (\d+\.\d) KB/s, (\d+\.\d\d) s\n"
    started = time.perf_counter()
    assert main(["-1", "-v", str(src)]) == 0
    took = time.perf_counter() - started
    packed_size = (tmp_path / "in.txt.nnc").stat().st_size
    match = re.fullmatch(line.format(re.escape(str(src)), "compressed"), capsys.readouterr().err)
    assert match and (int(match[1]), int(match[2])) == (len(DATA), packed_size)
    assert match[3] == f"{8 * packed_size / len(DATA):.3f}"
    seconds = float(match[5])  # the time of this file's work: within the call's own
    assert seconds <= took + 0.01
    if seconds >= 0.1:  # (below, the rounded figure is too coarse to divide by)
        assert abs(float(match[4]) - len(DATA) / 1024 / seconds) <= 0.1 * len(DATA) / 1024 / seconds
    archive = str(tmp_path / "in.txt.nnc")
    for flags, verb in ((["-t"], "ok"), (["-d", "-f"], "decompressed")):
        assert main([*flags, "-v", archive]) == 0
        match = re.fullmatch(line.format(re.escape(archive), verb), capsys.readouterr().err)
        assert match and (int(match[1]), int(match[2])) == (len(DATA), packed_size)
    assert main(["-1", "-f", str(src)]) == 0 and capsys.readouterr().err == ""  # not without -v


def test_output_is_written_to_a_hidden_temporary_beside_it(src, tmp_path, monkeypatch):
    """Same directory (so placing it is one link or rename on one filesystem), a name that
    says what it is and that `ls` hides, gone afterwards."""
    import re

    seen = []
    transform = cli.Runner.transform

    def look_while_writing(self, *args, **kwargs):
        seen.append(sorted(os.listdir(tmp_path)))
        return transform(self, *args, **kwargs)

    monkeypatch.setattr(cli.Runner, "transform", look_while_writing)
    assert main(["-1", str(src)]) == 0
    (names,) = seen
    assert len(names) == 2 and names[0] != "in.txt" and names[1] == "in.txt"
    assert re.fullmatch(r"\.nnc-[^/]+\.tmp", names[0])
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "in.txt.nnc"]


def test_metadata_rules_without_compressing(tmp_path):
    """copy_metadata on its own: from standard input the umask decides (and stays as it was);
    from a file of a group the output is not in, group and others get only what both had."""
    out = tmp_path / "out"
    out.write_bytes(b"")
    for umask, expected in ((0o027, 0o640), (0o002, 0o664)):
        previous = os.umask(umask)
        try:
            outputs.copy_metadata(str(out), None)
            assert outputs._umask() == umask and outputs._umask() == umask  # read, not changed
        finally:
            os.umask(previous)
        assert stat.S_IMODE(out.stat().st_mode) == expected
    src = tmp_path / "in"
    src.write_bytes(b"")
    os.utime(src, ns=(1_000_000_000_000_000_000, 1_234_567_890_000_000_000))
    outputs.copy_metadata(str(out), os.stat(src))  # by default the time comes along
    assert out.stat().st_mtime_ns == 1_234_567_890_000_000_000
    if not IS_ROOT:
        return
    os.chown(src, -1, 23456)
    for mode, expected in ((0o745, 0o744), (0o664, 0o644), (0o777, 0o777), (0o640, 0o600)):
        os.chmod(src, mode)
        outputs.copy_metadata(str(out), os.stat(src), keep_time_and_owner=False)
        assert out.stat().st_gid != 23456
        assert stat.S_IMODE(out.stat().st_mode) == expected, oct(mode)


def test_relative_links_resolve_from_their_own_directory(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    os.symlink("/dev/stdout", tmp_path / "sub" / "out")
    os.symlink("sub/out", tmp_path / "link")  # relative to tmp_path, not to the working directory
    monkeypatch.chdir("/")
    assert outputs.descriptor_of(str(tmp_path / "link")) == 1
    os.symlink("missing", tmp_path / "dangling")
    assert outputs.descriptor_of(str(tmp_path / "dangling")) is None


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("mode", ["compress", "decompress"])
def test_a_device_that_refuses_the_data_is_named(src, tmp_path, capsys, mode):
    """In process (the subprocess tests cover the same from outside): the error names the input
    and the device, and says why."""
    name = str(src)
    if mode == "decompress":  # output larger than a write buffer: refused while coding
        name = str(tmp_path / "p.nnc")
        with open(name, "wb") as f:
            f.write(nncompress.compress(DATA * 8, 1))
    flags = ["-1"] if mode == "compress" else ["-d"]
    assert main([*flags, "-o", "/dev/full", name]) == 1
    assert capsys.readouterr().err == \
        f"nncompress: {name}: cannot write /dev/full: {os.strerror(errno.ENOSPC)}\n"


@pytest.mark.parametrize("where", ["write", "fsync", "place"])
def test_a_failing_output_file_is_named_and_leaves_nothing(src, tmp_path, monkeypatch, capsys, where):
    def fail(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    target = {"write": (cli, "write_all"), "fsync": (cli.os, "fsync"),
              "place": (cli, "place_no_clobber")}[where]
    monkeypatch.setattr(*target, fail)
    out = tmp_path / "out.nnc"
    assert main(["-1", "-o", str(out), str(src)]) == 1
    assert capsys.readouterr().err == \
        f"nncompress: {src}: cannot write {out}: {os.strerror(errno.ENOSPC)}\n"
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]


def test_an_output_that_appears_meanwhile_is_not_clobbered(src, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out.nnc"
    transform = cli.Runner.transform

    def someone_else_writes_it(self, *args, **kwargs):
        out.write_bytes(b"theirs")
        return transform(self, *args, **kwargs)

    monkeypatch.setattr(cli.Runner, "transform", someone_else_writes_it)
    assert main(["-1", "-o", str(out), str(src)]) == 1
    assert capsys.readouterr().err == \
        f"nncompress: {src}: {out} already exists (use -f to overwrite)\n"
    assert out.read_bytes() == b"theirs" and sorted(os.listdir(tmp_path)) == ["in.txt", "out.nnc"]


def test_a_device_whose_close_fails_is_named():
    class CloseFails(io.BytesIO):
        failed = False

        def close(self):
            if not self.failed:
                self.failed = True
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            super().close()

    runner = cli.Runner(cli.build_parser().parse_args(["-1"]))
    sink = CloseFails()
    with pytest.raises(cli.OutputError) as failed:
        runner._write_into(sink, io.BytesIO(DATA), None, "in.txt", "/dev/x")
    assert (failed.value.name, str(failed.value)) == ("/dev/x", os.strerror(errno.EIO))
    assert nncompress.decompress(sink.getvalue()) == DATA  # everything was written before


# -- standard output in process (Runner.process's to-stdout branch; mutation round 3) ---------

class _Stdout:
    """Stands in for sys.stdout: std_stream takes its .buffer, which may claim to be a terminal."""

    def __init__(self, tty=False):
        self.buffer = io.BytesIO()
        self.buffer.isatty = lambda: tty


def test_standard_output_in_process(src, tmp_path, capsys, monkeypatch):
    def run(*argv, tty=False, stdout=True):
        out = _Stdout(tty) if stdout else None
        monkeypatch.setattr(sys, "stdout", out)
        status = main(list(argv))
        return status, capsys.readouterr().err, out.buffer.getvalue() if out else None

    name = str(src)
    status, err, archive = run("-1", "-c", "--rm", name)
    assert (status, err) == (0, "") and nncompress.decompress(archive) == DATA
    assert src.read_bytes() == DATA and sorted(os.listdir(tmp_path)) == ["in.txt"]  # --rm ignored, no file
    packed = tmp_path / "p.nnc"
    packed.write_bytes(archive)
    assert run("-d", "-c", str(packed)) == (0, "", DATA)
    # -t writes nothing, and does not even need a standard output
    assert run("-t", str(packed)) == (0, "", b"")
    assert run("-t", str(packed), stdout=False) == (0, "", None)
    # compressed data is not sent to a terminal unless forced; decompressed data is
    assert run("-1", "-c", name, tty=True) == (
        1, f"nncompress: {name}: compressed data not written to a terminal (use -f to force)\n", b"")
    status, err, forced = run("-1", "-c", "-f", name, tty=True)
    assert (status, err, forced) == (0, "", archive)
    assert run("-d", "-c", str(packed), tty=True) == (0, "", DATA)
    # a closed standard output (`>&-`) is named as the output that failed
    assert run("-1", "-c", name, stdout=False) == (
        1, f"nncompress: {name}: cannot write (stdout): Bad file descriptor\n", None)
    # to standard output the set-user-ID bit does not matter: no file is made that could carry it
    os.chmod(src, 0o644 | stat.S_ISUID)
    assert run("-1", "-c", name)[:2] == (0, "")
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "p.nnc"]


def test_standard_input_to_a_named_output_in_process(tmp_path, capsys, monkeypatch):
    """From standard input, with -o: -f replaces the output, --rm has nothing to delete, and a
    file that happens to be called '-' is neither compared with the output nor deleted."""
    class Stdin:
        def __init__(self, data):
            self.buffer = io.BytesIO(data)
            self.buffer.isatty = lambda: False

    monkeypatch.chdir(tmp_path)
    (tmp_path / "out.nnc").write_bytes(b"old")
    monkeypatch.setattr(sys, "stdin", Stdin(DATA))
    assert main(["-1", "-f", "-o", "out.nnc", "-"]) == 0  # no file '-' to compare with
    assert capsys.readouterr().err == ""
    assert nncompress.decompress((tmp_path / "out.nnc").read_bytes()) == DATA
    (tmp_path / "-").write_bytes(b"not the input")
    (tmp_path / "out.nnc").write_bytes(b"old")
    stdin = Stdin(DATA)
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["-1", "-f", "--rm", "-o", "out.nnc", "-"]) == 0
    assert capsys.readouterr().err == ""
    assert not stdin.buffer.closed  # standard input is the caller's: read, never closed
    assert nncompress.decompress((tmp_path / "out.nnc").read_bytes()) == DATA
    assert (tmp_path / "-").read_bytes() == b"not the input"


def test_output_to_an_open_descriptor_appends_in_process(src, tmp_path, capsys):
    """-o /dev/fd/N writes through descriptor N as the shell opened it (here for appending,
    `>>`): what the file held stays, and no file replaces the link."""
    target = tmp_path / "log"
    target.write_bytes(b"HEAD")
    with open(target, "ab") as held:
        status = main(["-1", "-o", f"/dev/fd/{held.fileno()}", str(src)])
    assert (status, capsys.readouterr().err) == (0, "")
    blob = target.read_bytes()
    assert blob[:4] == b"HEAD" and nncompress.decompress(blob[4:]) == DATA
    assert src.read_bytes() == DATA


def test_output_to_descriptor_1_flushes_standard_output_first(src, capfdbinary, monkeypatch):
    """-o /dev/stdout (descriptor 1) bypasses sys.stdout's buffer: what Python still buffers
    for it goes out first, so the bytes arrive in order."""
    flushes = []

    class Stdout:
        buffer = io.BytesIO()
        buffer.flush = lambda: flushes.append("stdout")

    monkeypatch.setattr(sys, "stdout", Stdout())
    assert main(["-1", "-o", "/dev/fd/1", str(src)]) == 0
    captured = capfdbinary.readouterr()
    assert flushes == ["stdout"] and captured.err == b""
    assert nncompress.decompress(captured.out) == DATA


def test_a_device_or_descriptor_that_cannot_be_opened_is_named(src, tmp_path, capsys, monkeypatch):
    name = str(src)

    def refuse_devnull(path, *args, **kwargs):
        if path == os.devnull:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return open(path, *args, **kwargs)

    monkeypatch.setattr(cli, "open", refuse_devnull, raising=False)
    assert main(["-1", "-o", os.devnull, name]) == 1
    assert capsys.readouterr().err == f"nncompress: {name}: cannot write {os.devnull}: Permission denied\n"
    monkeypatch.undo()

    def no_descriptors(fd):
        raise OSError(errno.EMFILE, "Too many open files")

    with open(tmp_path / "log", "ab") as held:
        target = f"/dev/fd/{held.fileno()}"
        monkeypatch.setattr(os, "dup", no_descriptors)
        status = main(["-1", "-o", target, name])
        monkeypatch.undo()
    assert (status, capsys.readouterr().err) == (
        1, f"nncompress: {name}: cannot write {target}: Too many open files\n")
    assert (tmp_path / "log").read_bytes() == b"" and src.read_bytes() == DATA


def test_every_file_opened_is_closed(src, tmp_path, monkeypatch):
    """Runner.process closes the inputs it opened (and only those: standard input stays open,
    test_standard_input_to_a_named_output_in_process)."""
    opened = []

    def tracking_open(*args, **kwargs):
        handle = open(*args, **kwargs)
        opened.append(handle)
        return handle

    monkeypatch.setattr(cli, "open", tracking_open, raising=False)
    assert main(["-1", str(src)]) == 0
    assert main(["-d", "-f", str(tmp_path / "in.txt.nnc")]) == 0
    assert main(["-t", str(tmp_path / "in.txt.nnc")]) == 0
    assert len(opened) >= 3 and all(handle.closed for handle in opened)


def test_a_standard_output_or_descriptor_that_fails_is_named(src, tmp_path, capsys, monkeypatch):
    name = str(src)

    def no_space(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    for failing in ("write", "flush"):
        out = _Stdout()
        setattr(out.buffer, failing, no_space)
        monkeypatch.setattr(sys, "stdout", out)
        assert main(["-1", "-c", name]) == 1
        assert capsys.readouterr().err == \
            f"nncompress: {name}: cannot write (stdout): No space left on device\n"
    # a descriptor the shell opened for reading only (`3<file`): writing through it fails
    with open(tmp_path / "log", "wb"):
        pass
    with open(tmp_path / "log", "rb") as held:
        target = f"/dev/fd/{held.fileno()}"
        assert main(["-1", "-o", target, name]) == 1
    assert capsys.readouterr().err == f"nncompress: {name}: cannot write {target}: Bad file descriptor\n"


def test_verbose_report_figures_with_a_known_clock(src, tmp_path, capsys, monkeypatch):
    """The -v line's arithmetic, word for word: Runner.process reads the clock twice per file."""
    from types import SimpleNamespace

    ticks = iter([1000.0, 1000.0078125, 7.0, 7.0, 50.0, 50.25])  # 2**-7 s: 370 KB/s exactly
    monkeypatch.setattr(cli, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    assert main(["-1", "-v", str(src)]) == 0
    packed = (tmp_path / "in.txt.nnc").stat().st_size
    assert capsys.readouterr().err == (
        f"{src}: compressed: {len(DATA)} -> {packed} bytes, {8 * packed / len(DATA):.3f} bpc, "
        f"370.0 KB/s, 0.01 s\n")
    assert len(DATA) == 370 * 1024 // 128  # (a large speed, so that /1025 would show)
    # no measurable time: speed 0, not a division by zero
    assert main(["-1", "-v", "-f", str(src)]) == 0
    assert capsys.readouterr().err.endswith(" bpc, 0.0 KB/s, 0.00 s\n")
    # an empty input: 0 bpc, not a division by zero
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert main(["-1", "-v", str(empty)]) == 0
    size = (tmp_path / "empty.nnc").stat().st_size
    assert capsys.readouterr().err == f"{empty}: compressed: 0 -> {size} bytes, 0.000 bpc, 0.0 KB/s, 0.25 s\n"


def test_no_file_means_standard_input_named_stdin(capsys, monkeypatch):
    class Stdin:
        def __init__(self, data):
            self.buffer = io.BytesIO(data)
            self.buffer.isatty = lambda: False

    out = _Stdout()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stdin", Stdin(DATA))
    assert main(["-1"]) == 0 and capsys.readouterr().err == ""
    assert nncompress.decompress(out.buffer.getvalue()) == DATA
    # messages about standard input call it (stdin)
    monkeypatch.setattr(sys, "stdin", Stdin(b"not an archive"))
    assert main(["-d"]) == 1
    assert capsys.readouterr().err == "nncompress: (stdin): not an nncompress archive (bad magic)\n"


def test_an_os_error_without_strerror_keeps_its_text(src, capsys, monkeypatch):
    def odd(self, name):
        raise OSError("the disk went away")

    monkeypatch.setattr(cli.Runner, "process", odd)
    assert main(["-1", str(src)]) == 1
    assert capsys.readouterr().err == f"nncompress: {src}: the disk went away\n"


def test_the_engine_is_aborted_only_when_the_run_is(src, tmp_path, capsys, monkeypatch):
    """Runner.run closes the -T / --cluster engine normally after its files, and with
    abort=True (workers stopped, not waited for) when an interruption cuts the run short."""
    from nncompress import parallel

    closed = []
    engine = object()

    def engine_in_reserve(self):
        self._engine = engine  # held, as after -T; the files themselves are done here
        return None

    monkeypatch.setattr(cli.Runner, "engine", engine_in_reserve)
    monkeypatch.setattr(parallel, "close_engine", lambda held, abort: closed.append((held, abort)))
    second = tmp_path / "second.txt"
    second.write_bytes(DATA)
    assert main(["-1", str(src), str(second)]) == 0
    assert closed == [(engine, False)]
    closed.clear()

    def interrupted(self, name):
        self.engine()
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.Runner, "process", interrupted)
    assert main(["-1", "-f", str(src), str(second)]) != 0
    assert closed == [(engine, True)]
    capsys.readouterr()


# -- round 6 of the mutation review (bench/MUTATION.md 2f) --

def test_a_special_bits_input_may_go_to_standard_output(src, capsys, monkeypatch):
    """-c writes no file that could lose the bits, so a set-user-ID input is compressed."""
    os.chmod(src, 0o4755)
    out = _Stdout()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["-1", "-c", str(src)]) == 0
    assert capsys.readouterr().err == ""
    assert nncompress.decompress(out.buffer.getvalue()) == DATA


def test_only_compressed_data_is_refused_from_a_terminal(capsys, monkeypatch):
    class Stdin:
        buffer = io.BytesIO(DATA)

    Stdin.buffer.isatty = lambda: True
    out = _Stdout()
    monkeypatch.setattr(sys, "stdin", Stdin())
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["-1", "-c"]) == 0  # text typed at a terminal may be compressed
    assert nncompress.decompress(out.buffer.getvalue()) == DATA
    assert main(["-d", "-c"]) == 1
    assert capsys.readouterr().err == \
        "nncompress: (stdin): compressed data not read from a terminal (use -f to force)\n"


def test_compressed_data_to_a_terminal_is_refused_word_for_word():
    class Terminal:
        def isatty(self):
            return True

    def refusal(argv):
        try:
            cli.Runner(cli.build_parser().parse_args(argv))._refuse_terminal(Terminal())
        except nncompress.NNCError as exc:
            return str(exc)

    assert refusal(["-1"]) == "compressed data not written to a terminal (use -f to force)"
    assert refusal(["-1", "-f"]) is None and refusal(["-d"]) is None
