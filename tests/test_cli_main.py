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
        run_recorded(monkeypatch, ["x"])  # whatever main loads on first use, loaded before counting
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

    run_recorded(monkeypatch, ["x"])  # whatever main loads on first use, loaded before counting
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


# -- Runner.transform: what each path is given (the bytes are compared with the library's) --

TEXT = b"".join(b"line %05d: the quick brown fox jumps over the lazy dog\n" % i for i in range(200))  # 11,200


@pytest.fixture
def doc(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "doc.txt"
    path.write_bytes(TEXT)
    return path


@pytest.fixture
def progress_seen(monkeypatch):
    """Runner.progress replaced: records (total, name) and the sum of the updates of each bar."""
    seen = []

    def fake_progress(self, total, name):
        from contextlib import contextmanager

        @contextmanager
        def bar():
            entry = [total, name, 0]
            seen.append(entry)

            def update(n):
                entry[2] += n

            yield update

        return bar()

    monkeypatch.setattr(cli.Runner, "progress", fake_progress)
    return seen


@pytest.fixture(params=["one process", "engine"])
def path_taken(request, monkeypatch):
    """Both of transform's paths: the block-streaming one, and the segment engine's (here a
    SerialEngine standing in for -T's pool, so everything stays in this process)."""
    if request.param == "engine":
        engines = []

        def engine(self):
            if not engines:
                engines.append(parallel.SerialEngine())
            return engines[0]

        monkeypatch.setattr(cli.Runner, "engine", engine)
    return request.param


def test_each_path_writes_the_librarys_bytes_and_counts_them(doc, path_taken, progress_seen, capsys):
    import nncompress

    assert main(["-1", "-v", "-k", str(doc)]) == 0
    packed = (doc.parent / "doc.txt.nnc").read_bytes()
    assert packed == nncompress.compress(TEXT, 1)  # a regular file: the model sized to it
    assert capsys.readouterr().err.startswith(f"{doc}: compressed: {len(TEXT)} -> {len(packed)} bytes, ")
    assert progress_seen == [[len(TEXT), "doc.txt", len(TEXT)]]
    progress_seen.clear()
    os.unlink(doc)
    assert main(["-d", "-v", str(doc) + ".nnc"]) == 0
    assert doc.read_bytes() == TEXT
    assert f": decompressed: {len(TEXT)} -> {len(packed)} bytes, " in capsys.readouterr().err
    assert progress_seen == [[len(TEXT), "doc.txt.nnc", len(TEXT)]]  # the total the archive records
    progress_seen.clear()
    assert main(["-t", "-v", str(doc) + ".nnc"]) == 0
    assert f": ok: {len(TEXT)} -> {len(packed)} bytes, " in capsys.readouterr().err
    assert progress_seen == [[len(TEXT), "doc.txt.nnc", len(TEXT)]]


def test_each_path_takes_the_level_the_segment_size_and_the_model(doc, path_taken, monkeypatch):
    import nncompress
    from nncompress import presets
    from nncompress.model.params import ModelParams

    assert main(["-2", "-f", "--segment-size", "4K", str(doc)]) == 0
    assert (doc.parent / "doc.txt.nnc").read_bytes() == nncompress.compress(TEXT, 2, segment_size=4096)
    # a model given as parameters (what --model rnnme gives; a small context-mixing one here,
    # so nothing new is compiled): a level-0 header, whatever the level
    custom = ModelParams(contexts=(1, 2), table_bits=12, history_bits=12, match_bits=10)
    monkeypatch.setattr(presets, "parse_model", lambda spec: custom)
    assert main(["-f", "-o", "m.nnc", str(doc)]) == 0
    assert (doc.parent / "m.nnc").read_bytes() == nncompress.compress(TEXT, params=custom)


def test_standard_input_is_coded_without_a_declared_size(doc, path_taken, progress_seen, monkeypatch):
    """A pipe's length is unknown until its end: no size is declared, so the model is not fitted
    to it (the same bytes as the streaming API without a size), and progress has no total."""
    import io

    import nncompress

    class Stdin:
        buffer = io.BytesIO(TEXT)

    monkeypatch.setattr(sys, "stdin", Stdin())
    assert main(["-1", "-o", "piped.nnc"]) == 0
    streaming = nncompress.NNCompressor(1)
    assert (doc.parent / "piped.nnc").read_bytes() == streaming.compress(TEXT) + streaming.flush()
    assert progress_seen == [[None, "-", len(TEXT)]]
    progress_seen.clear()
    Stdin.buffer = io.BytesIO((doc.parent / "piped.nnc").read_bytes())
    assert main(["-d", "-o", "back"]) == 0
    assert (doc.parent / "back").read_bytes() == TEXT
    assert progress_seen == [[None, "-", len(TEXT)]]


def test_the_first_run_announces_the_compile_from_the_work_itself(doc, monkeypatch, capsys, make_stderr_a_terminal):
    make_stderr_a_terminal()
    monkeypatch.setattr(cli, "kernels_cached", lambda: False)
    assert main(["-1", "-k", str(doc)]) == 0
    assert capsys.readouterr().err == "nncompress: compiling kernels (first run only)...\n"


def test_several_files_on_an_engine_are_prefetched_whole_and_the_results_used(tmp_path, monkeypatch):
    """-T with several files: small files (up to a segment, inclusive) go to the engine ahead
    and their results are written; a larger one is coded in segments as it is read."""
    import nncompress

    made, taken = [], []

    class Counting(parallel.FilePrefetcher):
        def __init__(self, engine, names, mode, limit, **options):
            made.append((list(names), mode, limit, options))
            super().__init__(engine, names, mode, limit, **options)

        def take(self, name, data):
            out = super().take(name, data)
            taken.append((os.path.basename(name), len(data), out is not None))
            return out

    monkeypatch.setattr(parallel, "FilePrefetcher", Counting)
    monkeypatch.setattr(cli.Runner, "engine", lambda self: self._engine or parallel.SerialEngine())
    monkeypatch.chdir(tmp_path)
    sizes = {"a": 4096, "b": 300, "c": 4097}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(TEXT[:size])
    assert main(["-2", "--segment-size", "4K", "a", "b", "c"]) == 0
    assert made == [(["a", "b", "c"], "compress", 4096, dict(level=2, params=None))]
    assert taken == [("a", 4096, True), ("b", 300, True)]  # c is over a segment: not asked for
    for name, size in sizes.items():
        assert (tmp_path / f"{name}.nnc").read_bytes() == nncompress.compress(TEXT[:size], 2, segment_size=4096)
        os.unlink(tmp_path / name)
    made.clear()
    taken.clear()
    assert main(["-d", "--segment-size", "4K", "a.nnc", "b.nnc", "c.nnc"]) == 0
    assert made[0][:3] == (["a.nnc", "b.nnc", "c.nnc"], "decompress", 4096)
    assert [name for name, _, used in taken if used] == ["a.nnc", "b.nnc", "c.nnc"]  # archives are small
    for name, size in sizes.items():
        assert (tmp_path / name).read_bytes() == TEXT[:size]


# -- round 6 of the mutation review (bench/MUTATION.md 2f) --

def test_two_workers_are_already_a_pool(monkeypatch):
    monkeypatch.setattr(parallel, "plan_workers", lambda *a: 2)
    engine = runner(["-T", "2"]).engine()
    assert isinstance(engine, parallel.LocalEngine) and engine.slots == 2
    monkeypatch.setattr(parallel, "plan_workers", lambda *a: 1)
    assert runner(["-T", "2"]).engine() is None  # one worker: this process, no pool


def test_only_a_regular_file_declares_its_size(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1234)
    assert cli.Runner.declared_size(os.stat(path)) == 1234
    read_end, write_end = os.pipe()
    try:
        assert cli.Runner.declared_size(os.fstat(read_end)) is None
    finally:
        os.close(read_end)
        os.close(write_end)
    assert cli.Runner.declared_size(os.stat(tmp_path)) is None
    assert cli.Runner.declared_size(None) is None


def test_the_progress_bar_gets_the_total_the_name_and_whether_stderr_is_a_terminal(
        monkeypatch, make_stderr_a_terminal):
    from nncompress import cli_progress

    asked = []
    monkeypatch.setattr(cli_progress, "progress_bar", lambda total, name, show: asked.append((total, name, show)))
    make_stderr_a_terminal()
    runner([]).progress(5000, "doc.txt")
    runner(["-q"]).progress(None, "-")
    assert asked == [(5000, "doc.txt", True), (None, "-", False)]


def test_a_prefetched_result_is_used_once_and_a_changed_file_is_coded_from_what_was_read(tmp_path, monkeypatch):
    """A prefetched result is used as it is (no second coding); a file that changed after it was
    sent ahead is coded from the bytes read to compare it; a small file is read up to one byte
    past a segment, not whole."""
    import nncompress

    jobs, reads = [], {}
    real_job = parallel.compress_job
    monkeypatch.setattr(parallel, "compress_job", lambda data, *a: jobs.append(len(data)) or real_job(data, *a))
    monkeypatch.setattr(cli.Runner, "engine", lambda self: self._engine or parallel.SerialEngine())

    class Changing(parallel.FilePrefetcher):
        def take(self, name, data):
            out = super().take(name, data)
            if name == "a":  # b was sent ahead with its old bytes: now it changes
                (tmp_path / "b").write_bytes(TEXT[1000:1250])
            return out

    monkeypatch.setattr(parallel, "FilePrefetcher", Changing)
    real_open = open

    class Recorded:
        def __init__(self, name):
            self.inner, self.asked = real_open(name, "rb"), reads.setdefault(os.path.basename(name), [])

        def read(self, size=-1):
            self.asked.append(size)
            return self.inner.read(size)

        def close(self):
            self.inner.close()

    monkeypatch.setattr(cli, "open", lambda name, mode: Recorded(name), raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").write_bytes(TEXT[:4096])
    (tmp_path / "b").write_bytes(TEXT[:300])
    assert main(["-2", "--segment-size", "4K", "a", "b"]) == 0
    assert jobs == [4096, 300, 250]  # a and b sent ahead; a's result used, b coded again as read
    assert reads["a"][0] == reads["b"][0] == 4097
    assert (tmp_path / "a.nnc").read_bytes() == nncompress.compress(TEXT[:4096], 2, segment_size=4096)
    assert (tmp_path / "b.nnc").read_bytes() == nncompress.compress(TEXT[1000:1250], 2, segment_size=4096)


def test_each_path_declares_a_regular_files_size_to_the_coder(doc, path_taken, monkeypatch):
    """The model is sized to a regular file (what compress() declares): the size given to the
    segment pipeline or the streaming compressor, whatever the input's length against a block."""
    seen = []
    real_stream, real_compressor = parallel.compress_stream, cli.NNCompressor

    def stream(*args, **kwargs):
        seen.append(("stream", kwargs["size"], kwargs["segment_size"]))
        return real_stream(*args, **kwargs)

    def compressor(level, progress=None, **options):
        seen.append(("compressor", options))
        return real_compressor(level, progress, **options)

    monkeypatch.setattr(parallel, "compress_stream", stream)
    monkeypatch.setattr(cli, "NNCompressor", compressor)
    assert main(["-1", "-f", str(doc)]) == 0
    assert main(["-1", "-f", "--segment-size", "8K", str(doc)]) == 0
    if path_taken == "engine":
        assert seen == [("stream", len(TEXT), DEFAULT_SEGMENT_SIZE), ("stream", len(TEXT), 8192)]
    else:  # the default segment size is left to the library's default
        assert seen == [("compressor", {"size": len(TEXT)}), ("compressor", {"size": len(TEXT), "segment_size": 8192})]


def test_decompressing_on_an_engine_stops_at_the_first_damaged_segment(doc, path_taken, capsys):
    import io

    import nncompress
    from nncompress import segments

    archive = nncompress.compress(TEXT, 1, segment_size=4096)
    table = segments.index_segments(io.BytesIO(archive))
    damaged = bytearray(archive)
    for entry in table[1:]:
        damaged[entry.offset + entry.compressed_size // 2] ^= 0x55  # a payload byte of segments 1 and 2
    packed = doc.parent / "d.nnc"
    packed.write_bytes(bytes(damaged))
    assert main(["-d", str(packed)]) == 1
    err = capsys.readouterr().err
    if path_taken == "engine":  # (-t names every damaged segment; -d stops at the first)
        # which check catches the damage first (the coder's or the block checksum) is the coding's
        assert err.startswith(f"nncompress: {packed}: segment 1 (at byte {table[1].offset} of the "
                              "archive): corrupt archive: ") and err.count("\n") == 1
    assert not (doc.parent / "d").exists()


def test_the_verbose_count_is_every_byte_written_over_several_segments(doc, path_taken, capsys, monkeypatch):
    import nncompress

    monkeypatch.setattr(cli, "READ_CHUNK", 100)  # (the one-process path) several reads each way

    assert main(["-1", "-v", "-f", "--segment-size", "4K", str(doc)]) == 0
    packed = (doc.parent / "doc.txt.nnc").read_bytes()
    assert packed == nncompress.compress(TEXT, 1, segment_size=4096)
    assert f": compressed: {len(TEXT)} -> {len(packed)} bytes, " in capsys.readouterr().err
    os.unlink(doc)
    assert main(["-d", "-v", str(doc) + ".nnc"]) == 0
    assert doc.read_bytes() == TEXT
    assert f": decompressed: {len(TEXT)} -> {len(packed)} bytes, " in capsys.readouterr().err
