"""cli.main and the Runner's setup in process (mutation testing, issue 9): the subcommand/file
clash, the arguments a run gets, the signal handlers it installs and gives back, how an
interruption or a closed pipe ends it, and the parallel engine it makes and closes.  The
subprocess tests (test_reliability_cli.py) show the same from outside; mutmut can only map
tests that call main() in its own process.  Nothing here compresses more than a few bytes."""

import errno
import os
import signal
import stat
import sys

import pytest

from nncompress import DEFAULT_LEVEL, cli, cluster, parallel
from nncompress.cli import main
from nncompress.cli_io import Interrupted
from nncompress.format import DEFAULT_SEGMENT_SIZE


@pytest.fixture
def handlers():
    """SIGTERM and SIGHUP set to known handlers before the test, put back after it."""
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}

    def mine(signum, frame):  # pragma: no cover - never delivered
        pass

    signal.signal(signal.SIGTERM, mine)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield mine
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def run_recorded(monkeypatch, argv, action=lambda: 0):
    seen = []

    def fake_run(self):
        seen.append((self.args, signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)))
        return action()

    monkeypatch.setattr(cli.Runner, "run", fake_run)
    return main(argv), seen


# -- what main hands the run --

def test_the_run_gets_the_parsed_arguments_and_its_status_is_the_exit_status(monkeypatch, handlers):
    status, seen = run_recorded(monkeypatch, ["-3", "a", "b"], lambda: 2)
    assert status == 2
    [(args, _, _)] = seen
    assert (args.level, args.mode, args.files, args.params) == (3, None, ["a", "b"], None)
    _, seen = run_recorded(monkeypatch, ["x"])
    assert seen[0][0].level == DEFAULT_LEVEL == 6  # no level given: the default, set on args
    _, seen = run_recorded(monkeypatch, ["--model", "rnnme", "x"])
    assert seen[0][0].params is not None and seen[0][0].params.rnnme_hidden > 0
    _, seen = run_recorded(monkeypatch, ["test", "-v", "x"])  # an alias: its flags, then the rest
    assert (seen[0][0].mode, seen[0][0].verbose, seen[0][0].files) == ("test", True, ["x"])


def test_argv_defaults_to_the_command_line(monkeypatch, handlers):
    monkeypatch.setattr(sys, "argv", ["nncompress", "-d", "from-argv"])
    _, seen = run_recorded(monkeypatch, None)
    assert (seen[0][0].mode, seen[0][0].files) == ("decompress", ["from-argv"])


@pytest.mark.parametrize("make", ["file", "dangling link"])
def test_a_subcommand_that_is_also_a_file_is_refused_word_for_word(make, tmp_path, monkeypatch, capsys,
                                                                   handlers):
    monkeypatch.chdir(tmp_path)
    if make == "file":
        (tmp_path / "list").write_bytes(b"x")
    else:
        os.symlink("nowhere", tmp_path / "list")
    status, seen = run_recorded(monkeypatch, ["list", "y"])
    assert status == 1 and not seen
    assert capsys.readouterr().err == (
        "nncompress: 'list' is a subcommand and also a file here: write 'nncompress -- list' or "
        "'./list' for the file, or run the subcommand from another directory\n")


def test_a_directory_named_like_a_subcommand_is_no_clash(tmp_path, monkeypatch, capsys, handlers):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "list").mkdir()
    status, seen = run_recorded(monkeypatch, ["list", "y"])
    assert status == 0 and seen[0][0].mode == "list" and seen[0][0].files == ["y"]
    assert capsys.readouterr().err == ""


# -- signals: installed for the run, given back after it --

def test_sigterm_and_sighup_clean_up_during_the_run_and_are_given_back(monkeypatch, handlers):
    _, seen = run_recorded(monkeypatch, ["x"])
    assert seen[0][1:] == (cli._raise_interrupted, cli._raise_interrupted)
    assert signal.getsignal(signal.SIGTERM) is handlers
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


def test_an_ignored_signal_stays_ignored(monkeypatch, handlers):
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup
    _, seen = run_recorded(monkeypatch, ["x"])
    assert seen[0][1:] == (cli._raise_interrupted, signal.SIG_IGN)
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) is handlers


def _raise(exc):
    def action():
        raise exc
    return action


@pytest.mark.parametrize("exc, status, message", [
    (Interrupted(signal.SIGTERM), 128 + 15, "nncompress: interrupted by SIGTERM; partial output removed\n"),
    (Interrupted(signal.SIGHUP), 128 + 1, "nncompress: interrupted by SIGHUP; partial output removed\n"),
    (KeyboardInterrupt(), 128 + 2, "nncompress: interrupted; partial output removed\n"),
])
def test_an_interrupted_run_says_so_and_exits_128_plus_the_signal(exc, status, message, monkeypatch,
                                                                  capsys, handlers):
    assert run_recorded(monkeypatch, ["x"], _raise(exc))[0] == status
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", message)
    assert signal.getsignal(signal.SIGTERM) is handlers  # given back on the way out too
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


def _lowest_free_descriptor():
    fd = os.dup(0)
    os.close(fd)
    return fd


def test_a_broken_pipe_is_one_line_and_stdout_goes_to_dev_null(tmp_path, monkeypatch, capsys, handlers):
    """The reader went away: exit 1 with 'broken pipe', and standard output's descriptor is
    pointed at /dev/null (write-only) so the interpreter's last flush cannot fail again."""
    fd = os.open(tmp_path / "stdout", os.O_WRONLY | os.O_CREAT)

    class FakeStdout:
        def fileno(self):
            return fd

        def write(self, text):
            return len(text)

        def flush(self):
            pass

    try:
        free = _lowest_free_descriptor()
        monkeypatch.setattr(sys, "stdout", FakeStdout())
        assert run_recorded(monkeypatch, ["x"], _raise(BrokenPipeError(errno.EPIPE, "Broken pipe")))[0] == 1
        monkeypatch.undo()
        assert capsys.readouterr().err == "nncompress: broken pipe\n"
        now = os.fstat(fd)
        assert stat.S_ISCHR(now.st_mode) and now.st_rdev == os.stat(os.devnull).st_rdev
        import fcntl

        assert fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
        assert _lowest_free_descriptor() == free  # the /dev/null descriptor was closed
    finally:
        os.close(fd)


@pytest.mark.parametrize("stdout", [None, "no fileno"])
def test_a_broken_pipe_without_a_real_stdout_is_still_one_line(stdout, monkeypatch, capsys, handlers):
    class NoFileno:
        def write(self, text):
            return len(text)

    free = _lowest_free_descriptor()
    monkeypatch.setattr(sys, "stdout", None if stdout is None else NoFileno())
    status, _ = run_recorded(monkeypatch, ["x"], _raise(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    monkeypatch.undo()
    assert status == 1 and capsys.readouterr().err == "nncompress: broken pipe\n"
    assert _lowest_free_descriptor() == free


# -- the Runner's setup --

@pytest.fixture(autouse=True)
def no_cluster_from_the_environment(monkeypatch):
    monkeypatch.delenv(cluster.ENV_VAR, raising=False)


def runner(argv):
    args = cli.build_parser().parse_args(argv)
    args.params = None
    return cli.Runner(args)


def test_a_new_runner(monkeypatch):
    fresh = runner([])
    assert (fresh.mode, fresh.level, fresh.params, fresh.status) == ("compress", DEFAULT_LEVEL, None, 0)
    assert runner(["-d", "-2"]).mode == "decompress" and runner(["-2"]).level == 2
    bare = cli.build_parser().parse_args([])  # args made without main(): no params attribute
    assert cli.Runner(bare).params is None
    # nothing made yet: the engine is asked for on first use
    made = []
    monkeypatch.setattr(parallel, "plan_workers", lambda *a: made.append(a) or 1)
    assert fresh.engine() is None and len(made) == 1
    assert fresh.engine() is None and len(made) == 1  # "no engine" is remembered too


def test_the_engine_is_planned_from_the_options_and_made_once(monkeypatch):
    from nncompress.presets import params_for_level

    planned = []
    monkeypatch.setattr(parallel, "plan_workers", lambda *a: planned.append(a) or 3)
    run = runner(["-2", "-T", "5", "--segment-size", "64K"])
    engine = run.engine()
    assert isinstance(engine, parallel.LocalEngine) and engine.slots == 3
    assert planned == [(5, params_for_level(2), 64 << 10)]
    assert run.engine() is engine and len(planned) == 1
    custom = runner(["-T", "0"])
    custom.params = params_for_level(1)
    custom.engine()
    assert planned[-1] == (0, params_for_level(1), DEFAULT_SEGMENT_SIZE)
    run.close_engine(False)
    assert run._engine is None


def test_a_cluster_address_makes_a_dask_engine_on_that_client(monkeypatch):
    connected, closed = [], []

    class Client:
        def close(self):
            closed.append(self)

    class FakeDaskEngine:
        def __init__(self, client):
            self.client = client

        def close(self):
            closed.append(self)

    monkeypatch.setattr(cluster, "connect", lambda address: connected.append(address) or Client())
    monkeypatch.setattr(cluster, "DaskEngine", FakeDaskEngine)
    monkeypatch.setattr(parallel, "plan_workers", lambda *a: pytest.fail("no local plan with a cluster"))
    run = runner(["--cluster", "tcp://10.0.0.1:8786"])
    engine = run.engine()
    assert connected == ["tcp://10.0.0.1:8786"] and isinstance(engine, FakeDaskEngine)
    assert isinstance(engine.client, Client) and run.engine() is engine
    run.close_engine(False)
    assert closed == [engine, engine.client]  # the engine, then the client it was made on


def test_close_engine_closes_what_was_made_and_forgets_it(monkeypatch):
    calls = []
    monkeypatch.setattr(parallel, "close_engine", lambda engine, abort=False: calls.append((engine, abort)))

    class Prefetch:
        def close(self):
            calls.append("prefetch")

    run = runner(["-T", "2"])
    run.close_engine(True)  # nothing made: nothing to close
    assert calls == []
    engine = parallel.LocalEngine(2)
    run._engine, run._prefetch = engine, Prefetch()
    run.close_engine(True)
    assert calls == ["prefetch", (engine, True)]
    assert (run._engine, run._prefetch, run._client) == (None, None, None)
    calls.clear()
    run._engine = engine
    run.close_engine(False)
    assert calls == [(engine, False)]
    run._engine = False  # "one process": nothing to close
    run.close_engine(True)
    assert calls == [(engine, False)]
