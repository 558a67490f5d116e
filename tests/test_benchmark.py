"""`nncompress bench`: every column, round-trip flags, skipped comparators, cache reuse.  No timing
assertions; workers are real subprocesses, so this is kept to a few tiny runs."""

import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import textwrap

import pytest

from nncompress import benchmark
from nncompress.benchmark import report as bench_report


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    a = folder / "a.txt"
    b = folder / "b.txt"
    a.write_bytes(b"It was the best of times, it was the worst of times.\n" * 40)
    b.write_bytes(bytes(range(256)) + b"mostly text, some binary\n" * 20)
    return a, b


@pytest.fixture(scope="module")
def bench_run(tiny_files, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    paths = {"json": out / "r.json", "md": out / "r.md", "png": out / "r.png"}
    argv = [str(p) for p in tiny_files] + ["--with", "zlib,bz2", "--levels", "1", "--min-time", "0",
                                          "--json", str(paths["json"]), "--markdown", str(paths["md"]),
                                          "--plot", str(paths["png"]), "-q"]
    return argv, paths


def test_bench_every_column(bench_run, tiny_files, capsys):
    argv, paths = bench_run
    assert benchmark.main(argv) == 0
    text = capsys.readouterr().out
    for column in benchmark.FILE_COLUMNS + ["mean bpc", "peak MiB"]:
        assert column in text
    report = json.loads(paths["json"].read_text())
    rows = report["results"]
    assert [(r["file"], r["compressor"]) for r in rows] == [
        (f, c) for f in ("a.txt", "b.txt") for c in ("gzip", "bzip2", "nnc-1")]
    sizes = {p.name: p.stat().st_size for p in tiny_files}
    for row in rows:
        assert row["roundtrip"] == "ok" and row["error"] is None
        assert row["bytes"] == sizes[row["file"]]
        assert 0 < row["compressed"] and row["bpc"] == pytest.approx(8 * row["compressed"] / row["bytes"])
        for key in ("comp_s", "decomp_s", "comp_kbs", "decomp_kbs", "comp_peak_mib", "decomp_peak_mib",
                    "comp_reps", "decomp_reps"):
            assert row[key] is not None and row[key] > 0, key
    nnc = [r for r in rows if r["compressor"] == "nnc-1"]
    assert all(r["warmup_s"] is not None for r in nnc)
    import nncompress

    for r, path in zip(nnc, tiny_files):  # measured at the level its name says (round 6)
        assert r["compressed"] == len(nncompress.compress(path.read_bytes(), 1))
    for r in rows:  # the launcher's whole-process peak includes the worker's state after loading its codec
        assert r["comp_peak_mib"] >= r["comp_base_mib"] and r["decomp_peak_mib"] >= r["decomp_base_mib"]
    # each worker carries only its own codec: a zlib worker never loads numba, whose kernels
    # alone put an nncompress worker's baseline above any zlib worker's peak
    gzip_peak = max(max(r["comp_peak_mib"], r["decomp_peak_mib"]) for r in rows if r["compressor"] == "gzip")
    assert gzip_peak < min(r["comp_base_mib"] for r in nnc)
    totals = [t for t in report["totals"] if t["group"] == "files"]
    assert {t["compressor"] for t in totals} == {"gzip", "bzip2", "nnc-1"}
    for t in totals:
        assert t["complete"] and t["roundtrip"] == "ok" and t["original"] == sum(sizes.values())
        assert t["compressed"] == sum(r["compressed"] for r in rows if r["compressor"] == t["compressor"])
    assert report["meta"]["cpu"] and report["meta"]["cores"] and "numba" in report["meta"]["packages"]
    assert report["method"] == bench_report.METHOD
    md = paths["md"].read_text()
    assert "| file | compressor | bytes | compressed | bpc |" in md and "round trip" in md
    assert md.count("| ok |") >= len(rows) + len(totals)
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _fake_compressor(tmp_path, corrupt: bool) -> str:
    script = tmp_path / ("fake-bad" if corrupt else "fake-good")
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""\
        import sys
        mode, src, dst = sys.argv[1:4]
        data = open(src, "rb").read()
        if mode == "-d" and {corrupt!r}:
            data = data[:-1] + bytes([data[-1] ^ 1])
        open(dst, "wb").write(data)
        """))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_external_and_failed_round_trip_shown(tiny_files, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NNC_CMIX", _fake_compressor(tmp_path, corrupt=True))
    monkeypatch.setenv("NNC_LSTM_COMPRESS", _fake_compressor(tmp_path, corrupt=False))
    out = tmp_path / "r.json"
    status = benchmark.main([str(tiny_files[0]), "--with", "cmix,lstm-compress", "--levels", "none",
                             "--min-time", "0", "--json", str(out), "-q"])
    assert status == 1  # a failed round trip makes the run fail ...
    text = capsys.readouterr().out
    assert "FAILED" in text  # ... and is shown in the table
    rows = {r["compressor"]: r for r in json.loads(out.read_text())["results"]}
    assert rows["cmix"]["roundtrip"] == "FAILED" and rows["cmix"]["compressed"] == tiny_files[0].stat().st_size
    assert rows["lstm-compress"]["roundtrip"] == "ok" and rows["lstm-compress"]["comp_peak_mib"] > 0
    # the failure's reason in the row and its own section in the Markdown (round 6)
    assert rows["cmix"]["error"] == "decompressed output differs from the original"
    assert rows["lstm-compress"]["error"] is None
    md = tmp_path / "r.md"
    assert benchmark.main([str(tiny_files[0]), "--with", "cmix", "--levels", "none", "--min-time", "0",
                           "--markdown", str(md), "-q"]) == 1
    assert "## Failed round trips\n" in md.read_text()


def test_broken_worker_reported(tiny_files):
    broken = benchmark.Comparator("broken", "broken", {"type": "python", "codec": "nope"})
    row = benchmark.measure(tiny_files[0], tiny_files[0].read_bytes(), broken, min_time=0)
    assert row["roundtrip"] == "error" and "unknown codec" in row["error"]
    assert "error: compress" in bench_report._file_cells({"file": "a", "bytes": 1} | row)[-1]


def test_missing_comparators_skipped_with_note(monkeypatch, capsys, tiny_files):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyppmd" else real(name, *a))
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("NNC_PAQ8PX", raising=False)
    comps = {c.key: c for c in benchmark.select_comparators("ppmd,paq8px,zlib")}
    assert list(comps) == ["ppmd6", "ppmd16", "paq8px", "gzip"]  # the order asked, aliases expanded
    assert not comps["ppmd6"].available and "not installed" in comps["ppmd6"].note
    assert not comps["paq8px"].available and "NNC_PAQ8PX" in comps["paq8px"].note
    assert benchmark.main([str(tiny_files[0]), "--with", "ppmd,zlib", "--levels", "none",
                           "--min-time", "0", "-q"]) == 0
    text = capsys.readouterr().out
    assert "skipped" in text and "gzip -9" in text
    with pytest.raises(ValueError, match="unknown compressor"):
        benchmark.select_comparators("gzip,nosuch")


def test_cache_reuse_and_incomplete_totals(tiny_files, tmp_path):
    files = [benchmark.file_info(p) for p in tiny_files]
    gzip = benchmark.select_comparators("gzip")[0]
    groups = {"both": [f.name for f in files]}
    first = benchmark.run([(files[0], [gzip]), (files[1], [])], groups, min_time=0, progress=False)
    total = first.totals()[0]
    assert not total["complete"] and total["bpc"] is None and total["roundtrip"].startswith("incomplete")
    cache_path = tmp_path / "comparators.json"
    assert benchmark.save_cache(cache_path, first) == 1
    cache = benchmark.load_cache(cache_path)
    second = benchmark.run([(f, [gzip]) for f in files], groups, cache=cache, min_time=0, progress=False)
    assert [r["cached"] for r in second.results] == [True, False]
    assert second.results[0]["compressed"] == first.results[0]["compressed"]
    assert second.totals()[0]["complete"]


def test_targets_sets_and_errors(corpora, capsys):
    files, groups = benchmark.bench_files(["grammar.lsp", "xargs.1"], str(corpora))
    assert [f.name for f in files] == ["grammar.lsp", "xargs.1"]
    assert groups == {"grammar.lsp": ["grammar.lsp"], "xargs.1": ["xargs.1"]}
    assert files[0].sha256 == hashlib.sha256((corpora / "grammar.lsp").read_bytes()).hexdigest()
    assert benchmark.main(["no-such-thing", "-q"]) == 1
    assert "no-such-thing: no such file, directory or corpus set" in capsys.readouterr().err
    assert benchmark.main(["--list"]) == 0
    assert "canterbury" in capsys.readouterr().out


def test_run_bench_script_cache_and_render(corpora, tmp_path, monkeypatch):
    run_bench = _bench_script("run_bench")
    out, cache = tmp_path / "out", tmp_path / "comparators.json"
    monkeypatch.setenv("NNC_CORPORA", str(corpora))  # as `make bench` finds them
    common = ["--files", "grammar.lsp,xargs.1", "--levels", "none",
              "--min-time", "0", "--out", str(out), "-q"]
    assert run_bench.main(common + ["--with", "zlib", "--save-comparators", str(cache)]) == 0
    assert len(json.loads(cache.read_text())["entries"]) == 2
    assert run_bench.main(common + ["--with", "zlib,bz2", "--reuse-comparators", str(cache),
                                    "--provisional", "test"]) == 0
    report = json.loads((out / "results.json").read_text())
    assert [r["cached"] for r in report["results"]] == [True, False, True, False]
    # no path of this machine in the results: files by catalog name, the cache as given
    assert [f["path"] for f in report["files"]] == ["grammar.lsp", "xargs.1"]
    assert str(corpora) not in json.dumps(report)
    md = (out / "RESULTS.md").read_text()
    assert "PROVISIONAL" in md and "2 comparator rows" in md and "Command: `python bench/run_bench.py" in md
    assert run_bench.main(["--render-only", "--out", str(out)]) == 0
    assert (out / "RESULTS.md").read_text() == md


def test_single_files_group_and_duplicates(tiny_files, tmp_path):
    other = tmp_path / "a.txt"  # same base name as tiny_files[0], different file
    other.write_bytes(b"another a.txt\n")
    files, groups = benchmark.bench_files([str(tiny_files[0]), str(other), str(tiny_files[0])])
    assert [f.name for f in files] == ["a.txt", str(other)]  # measured once each, told apart
    assert groups == {"files": ["a.txt", str(other)]}


def test_worker_is_a_module_that_loads_no_kernels(tiny_files, tmp_path):
    """The worker runs as `python -m nncompress.benchmark.worker` and imports only its codec."""
    request = {"spec": {"type": "python", "codec": "zlib", "args": {"level": 9}}, "op": "compress",
               "src": str(tiny_files[0]), "dst": str(tmp_path / "out"), "min_time": 0}
    probe = ("import runpy, sys; sys.argv = ['worker', sys.argv[1]]\n"
             "try:\n    runpy.run_module('nncompress.benchmark.worker', run_name='__main__')\n"
             "except SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
             "print('numba loaded' if 'numba' in sys.modules else 'numba not loaded')")
    done = subprocess.run([sys.executable, "-c", probe, json.dumps(request)], capture_output=True, text=True,
                          check=True)
    result, verdict = done.stdout.strip().splitlines()
    assert json.loads(result)["reps"] >= 1 and verdict == "numba not loaded"
    assert (tmp_path / "out").read_bytes() == __import__("zlib").compress(tiny_files[0].read_bytes(), 9)


def test_plot_without_matplotlib_refused_before_measuring(tiny_files, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what `import matplotlib` sees when it is absent
    from nncompress.benchmark import command

    monkeypatch.setattr(command, "run", lambda *a, **k: pytest.fail("measured before refusing"))
    out = tmp_path / "r.json"
    assert benchmark.main([str(tiny_files[0]), "--with", "zlib", "--levels", "none", "--json", str(out),
                           "--plot", str(tmp_path / "r.png"), "-q"]) == 1
    assert "matplotlib is not installed" in capsys.readouterr().err and not out.exists()


def test_every_public_name_resolves():
    for name in benchmark.__all__:
        assert getattr(benchmark, name) is not None, name
    assert callable(benchmark.measure) and callable(benchmark.run) and callable(benchmark.main)


def _bench_script(name):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tune_script_rows_are_code_lengths(sample_text, tmp_path, capsys):
    from nncompress.analysis import code_lengths
    from nncompress.presets import params_for_level

    tune = _bench_script("tune")
    src = tmp_path / "sample.txt"
    src.write_bytes(sample_text[:3000])
    assert tune.main(["--level", "1", f"{src}:1200", "--variant", "", "--variant", "mixer_lr=3"]) == 0
    table = capsys.readouterr().out.split("| variant |")[1].splitlines()
    assert table[0].strip() == "sample.txt:1200 | KB/s | KB/CPU-s | MiB |"
    expected = {"base": params_for_level(1), "mixer_lr=3": tune.make_params(1, "mixer_lr=3")}
    assert expected["mixer_lr=3"].mixer_lr == 3 != expected["base"].mixer_lr
    for line in table[2:]:
        tag, bpc = [c.strip() for c in line.strip("|").split("|")][:2]
        bits = code_lengths(sample_text[:1200], params=expected[tag])
        assert float(bpc) == pytest.approx(bits.sum() / 1200, abs=1e-4)
    with pytest.raises(ValueError, match="NAME=VALUE"):
        tune.parse_overrides("no_such_field=1")
    assert tune.main([str(tmp_path / "missing.txt")]) == 1


def test_rnnme_model_row(tiny_files, tmp_path):
    """branch neural2: --models cm,rnnme adds a row for the RNNME network alone, round-tripped."""
    out = tmp_path / "r.json"
    assert benchmark.main([str(tiny_files[0]), "--with", "none", "--levels", "1", "--models",
                           "cm,rnnme", "--min-time", "0", "--json", str(out), "-q"]) == 0
    rows = json.loads(out.read_text())["results"]
    assert [r["compressor"] for r in rows] == ["nnc-1", "nnc-rnnme"]
    assert all(r["roundtrip"] == "ok" and r["error"] is None for r in rows)
    import nncompress

    data = tiny_files[0].read_bytes()  # each row measures its own model (round 6)
    assert [r["compressed"] for r in rows] == [len(nncompress.compress(data, 1)),
                                               len(nncompress.compress(data, model="rnnme"))]
    assert benchmark.main([str(tiny_files[0]), "--models", "lstm", "-q"]) == 1


def test_totals_row_shows_every_figure_and_counts_files():
    """Round 6 of the mutation review (bench/MUTATION.md 2f): a totals row's cells, each from
    its own field, and the file count's plural."""
    row = {"label": "nnc-1", "files": 2, "original": 12345, "compressed": 4321, "bpc": 2.8001,
           "mean_bpc": 2.95, "comp_kbs": 150.4, "decomp_kbs": 42.25, "peak_mib": 33.4, "roundtrip": "ok"}
    assert bench_report._total_cells(row) == ["nnc-1", "2", "12,345", "4,321", "2.800", "2.950", "150",
                                              "42.2", "33", "ok"]
    assert bench_report.files_label(1) == "1 file" and bench_report.files_label(2) == "2 files"
    assert bench_report.files_label(0) == "0 files"


def test_a_cluster_worker_measures_the_bytes_it_was_sent_in_a_folder_it_removes(tmp_path, monkeypatch):
    """`bench --cluster`: the file travels with the task; the worker measures those bytes under
    the file's name and removes its copy (round 6 of the mutation review)."""
    import tempfile

    from nncompress.benchmark import measurement
    from nncompress.comparators import select_comparators

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    comparator = select_comparators("gzip")[0]
    data = b"shipped to a worker\n" * 300
    row = measurement.measure_shipped("/on/the/client/doc.txt", data, comparator, min_time=0, timeout=120)
    assert row["roundtrip"] == "ok" and row["error"] is None
    assert 0 < row["compressed"] < len(data) and row["bpc"] == pytest.approx(8 * row["compressed"] / len(data))
    assert os.listdir(tmp_path) == []  # the worker's copy and the measurement's files are gone


# -- round 7 of the mutation review (bench/MUTATION.md 2g): the measuring code in process ----------

ROW_KEYS = {"compressor", "label", "version", "compressed", "bpc", "comp_s", "decomp_s", "comp_kbs",
            "decomp_kbs", "comp_reps", "decomp_reps", "comp_peak_mib", "decomp_peak_mib", "comp_base_mib",
            "decomp_base_mib", "warmup_s", "roundtrip", "error", "cached", "measured"}


@pytest.fixture
def in_process_worker(monkeypatch):
    """`measurement._spawn` replaced by the worker's own `measure_one`, run in this process, with a
    fixed peak (3,072 KiB) for the launcher's figure; the requests it was given are kept.  A hook
    may answer a request instead (an error, say)."""
    from nncompress.benchmark import measurement, worker

    calls = {"requests": [], "answer": None}

    def spawn(request, timeout):
        calls["requests"].append(dict(request, timeout=timeout))
        if calls["answer"] is not None:
            answer = calls["answer"](request)
            if answer is not None:
                return answer, 0
        try:
            return worker.measure_one(json.loads(json.dumps(request))), 3072
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}, 0

    monkeypatch.setattr(measurement, "_spawn", spawn)
    return calls


def test_a_measured_row_holds_every_figure_of_both_workers(in_process_worker, tmp_path, monkeypatch):
    import tempfile
    import zlib

    from nncompress.benchmark import measurement
    from nncompress.benchmark.report import rate

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gzip = benchmark.select_comparators("gzip")[0]
    data = b"a row of figures, " * 200
    src = tmp_path / "in.txt"
    src.write_bytes(data)
    row = measurement.measure(src, data, gzip, min_time=0, timeout=77)
    assert set(row) == ROW_KEYS
    first, second = in_process_worker["requests"]
    assert first["op"] == "compress" and second["op"] == "decompress"
    assert first["src"] == str(src) and second["src"] == first["dst"] != second["dst"]
    for request in (first, second):
        assert request["spec"] == gzip.spec and request["min_time"] == 0 and request["timeout"] == 77
        assert request["max_reps"] == benchmark.MAX_REPS
    assert row["compressor"] == "gzip" and row["label"] == gzip.label and row["version"] == gzip.version
    assert row["compressed"] == len(zlib.compress(data, 9))
    assert row["bpc"] == 8 * row["compressed"] / len(data)
    assert row["comp_reps"] == row["decomp_reps"] == 1
    assert row["comp_peak_mib"] == row["decomp_peak_mib"] == 3.0
    assert row["comp_base_mib"] > 1 and row["decomp_base_mib"] > 1 and row["warmup_s"] is None
    assert row["comp_s"] > 0 and row["comp_kbs"] == rate(len(data), row["comp_s"])
    assert row["decomp_s"] > 0 and row["decomp_kbs"] == rate(len(data), row["decomp_s"])
    assert row["roundtrip"] == "ok" and row["error"] is None and row["cached"] is False
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", row["measured"])
    assert os.listdir(tmp_path) == ["in.txt"]  # the workers' folder is removed
    folder = os.path.dirname(first["dst"])
    assert os.path.basename(folder).startswith("nncbench-") and os.path.dirname(folder) == str(tmp_path)
    assert (first["dst"], second["dst"]) == (os.path.join(folder, "packed"), os.path.join(folder, "unpacked"))
    assert row["comp_base_mib"] < 100_000 and row["decomp_base_mib"] < 100_000  # MiB, not KiB x 1024
    # nncompress: its warm-up time; an empty file: no bpc
    nnc = benchmark.nncompress_comparator(1)
    row = measurement.measure(src, data, nnc, min_time=0)
    assert row["roundtrip"] == "ok" and 0 < row["warmup_s"] < 60
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    row = measurement.measure(empty, b"", gzip, min_time=0)
    assert row["roundtrip"] == "ok" and row["bpc"] is None and row["compressed"] > 0


def test_a_row_whose_compression_fails_keeps_every_field_empty(in_process_worker, tmp_path):
    """A failed compression gives the same columns as a measured row, every figure None (a stray
    key would be a column of its own in the JSON)."""
    from nncompress.benchmark import measurement

    in_process_worker["answer"] = lambda request: {"error": "no space"} if request["op"] == "compress" else None
    gzip = benchmark.select_comparators("gzip")[0]
    src = tmp_path / "in.txt"
    src.write_bytes(b"x" * 100)
    row = measurement.measure(src, b"x" * 100, gzip, min_time=0)
    assert set(row) == ROW_KEYS and len(in_process_worker["requests"]) == 1
    assert row["error"] == "compress: no space" and row["roundtrip"] == "error"
    assert all(row[key] is None for key in ROW_KEYS - {"compressor", "label", "version", "roundtrip",
                                                       "error", "cached", "measured"})
    # a failed decompression keeps the compression's figures
    in_process_worker["requests"].clear()
    in_process_worker["answer"] = lambda request: {"error": "bad"} if request["op"] == "decompress" else None
    row = measurement.measure(src, b"x" * 100, gzip, min_time=0)
    assert row["error"] == "decompress: bad" and row["roundtrip"] == "error" and set(row) == ROW_KEYS
    assert row["compressed"] > 0 and row["comp_reps"] == 1 and row["decomp_reps"] is None
    assert row["decomp_s"] is None and row["decomp_kbs"] is None and row["decomp_peak_mib"] is None
    # output that differs from the input
    in_process_worker["answer"] = None
    fake = benchmark.Comparator("fake", "fake", {"type": "python", "codec": "zlib"})
    row = measurement.measure(src, b"y" * 100, fake, min_time=0)
    assert row["roundtrip"] == "FAILED" and row["error"] == "decompressed output differs from the original"
    assert row["decomp_reps"] == 1 and row["decomp_kbs"] is not None


class _LazyFuture:
    def __init__(self, work):
        self.work, self.value, self.taken = work, None, False

    def result(self):
        if not self.taken:
            self.value, self.taken = self.work(), True
        return self.value

    def done(self):
        return self.taken


class _FakeClient:
    """A dask.distributed client's two calls `run` makes; a task runs when its result is asked."""

    def __init__(self):
        self.submitted, self.cancelled = [], []

    def submit(self, fn, *args, **kwargs):
        self.submitted.append((fn, args, kwargs))
        return _LazyFuture(lambda: fn(*args))

    def cancel(self, futures):
        self.cancelled.append(list(futures))


def test_a_cluster_run_takes_each_row_from_its_task_in_plan_order(in_process_worker, tiny_files):
    """`bench --cluster`: every uncached job is submitted before any result is read (the file's
    bytes travel with it), the rows come back in plan order, cached rows are not submitted."""
    from nncompress.benchmark import measurement

    files = [benchmark.file_info(p) for p in tiny_files]
    gzip, bzip2 = benchmark.select_comparators("gzip,bz2")
    cache = {measurement.cache_key(files[0].sha256, bzip2): {"compressor": "bzip2", "compressed": 1, "bpc": 0.5,
                                                              "roundtrip": "ok", "cached": False, "label": "old"}}
    client = _FakeClient()
    report = measurement.run([(f, [gzip, bzip2]) for f in files], {"g": [f.name for f in files]},
                             cache=cache, min_time=0, timeout=55, progress=False, client=client)
    assert [(args[0], args[2].key) for _, args, _ in client.submitted] == [
        ("a.txt", "gzip"), ("b.txt", "gzip"), ("b.txt", "bzip2")]
    for (fn, args, kwargs), f in zip(client.submitted, [files[0], files[1], files[1]]):
        assert fn is measurement.measure_shipped and kwargs == {"pure": False}
        assert args[1] == f.path.read_bytes() and args[3:] == (0, 55)
    rows = report.results
    assert [(r["file"], r["compressor"], r["cached"]) for r in rows] == [
        ("a.txt", "gzip", False), ("a.txt", "bzip2", True), ("b.txt", "gzip", False), ("b.txt", "bzip2", False)]
    assert rows[1]["label"] == bzip2.label and rows[1]["compressed"] == 1
    assert [r["bytes"] for r in rows] == [files[0].bytes] * 2 + [files[1].bytes] * 2
    for row, f in zip([rows[0], rows[2]], files):
        assert row["roundtrip"] == "ok" and row["compressed"] == len(__import__("zlib").compress(
            f.path.read_bytes(), 9))
    assert client.cancelled == [[]]  # every task was collected: nothing left to cancel
    # each task measured with the run's minimum time and timeout, in a folder of its own
    assert {(r["min_time"], r["timeout"]) for r in in_process_worker["requests"]} == {(0, 55)}
    shipped = [r["src"] for r in in_process_worker["requests"] if r["op"] == "compress"]
    assert [os.path.basename(p) for p in shipped] == ["a.txt", "b.txt", "b.txt"]
    assert all(os.path.basename(os.path.dirname(p)).startswith("nncbench-in-") for p in shipped)


def test_a_cluster_run_cancels_what_it_did_not_collect(in_process_worker, tiny_files):
    from nncompress.benchmark import measurement

    files = [benchmark.file_info(p) for p in tiny_files]
    gzip = benchmark.select_comparators("gzip")[0]
    client = _FakeClient()
    in_process_worker["answer"] = lambda request: (_ for _ in ()).throw(KeyboardInterrupt) \
        if request["src"].endswith("b.txt") else None
    with pytest.raises(KeyboardInterrupt):
        measurement.run([(f, [gzip]) for f in files], {"g": [f.name for f in files]}, min_time=0,
                        progress=False, client=client)
    assert len(client.submitted) == 2 and len(client.cancelled) == 1
    (left,) = client.cancelled
    assert len(left) == 1 and not left[0].done()


def test_run_without_a_cluster_reads_each_file_once_and_reports_progress(in_process_worker, tiny_files,
                                                                         monkeypatch, capsys):
    from pathlib import Path

    from nncompress.benchmark import measurement

    reads = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self.name) or real(self))
    files = [benchmark.file_info(p) for p in tiny_files]
    reads.clear()
    monkeypatch.setattr(os, "getloadavg", lambda: (1.23456, 2.5, 0.004))
    gzip, bzip2 = benchmark.select_comparators("gzip,bz2")
    unavailable = benchmark.Comparator("gone", "gone", {"type": "python", "codec": "zlib"}, available=False)
    report = measurement.run([(files[0], [gzip, bzip2, unavailable]), (files[1], [gzip])],
                             {"g": [f.name for f in files]}, min_time=0, timeout=9, meta={"m": 1})
    assert reads.count("a.txt") == 1 and reads.count("b.txt") == 1
    assert [(r["file"], r["compressor"]) for r in report.results] == [
        ("a.txt", "gzip"), ("a.txt", "bzip2"), ("b.txt", "gzip")]
    assert [c.key for c in report.comparators] == ["gzip", "bzip2", "gone"]
    assert all(request["timeout"] == 9 and request["min_time"] == 0 for request in in_process_worker["requests"])
    assert report.meta["m"] == 1 and report.meta["loadavg_end"] == [1.23, 2.5, 0.0]
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3
    assert re.fullmatch(r"\[1/3\] a\.txt {14}gzip -9 \(zlib\) {7} *\d\.\d{3} bpc  ok", err[0])
    assert err[2].startswith("[3/3] b.txt ")
    cached = measurement.run([(files[0], [gzip])], {}, cache={measurement.cache_key(files[0].sha256, gzip):
                                                               dict(report.results[0])}, min_time=0)
    assert cached.results[0]["cached"] and capsys.readouterr().err.endswith("ok  (cached)\n")
    measurement.run([(files[0], [gzip])], {}, min_time=0, progress=False)
    assert capsys.readouterr().err == ""


def test_the_worker_times_repeated_calls_and_writes_the_output(tmp_path):
    import zlib

    from nncompress.benchmark import worker

    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(b"worker " * 500)
    request = {"spec": {"type": "python", "codec": "zlib", "args": {"level": 1}}, "op": "compress",
               "src": str(src), "dst": str(dst), "min_time": 1e9, "max_reps": 3}
    result = worker.measure_one(request)
    assert dst.read_bytes() == zlib.compress(src.read_bytes(), 1)
    assert result["reps"] == 3 and result["warmup_s"] is None
    assert 0 < result["seconds"] <= result["total_s"] / 3 * 1.0000001 and result["total_s"] < 5
    assert result["self_rss_kib"] >= result["baseline_rss_kib"] > 1000 and result["children_rss_kib"] >= 0
    request.update(op="decompress", src=str(dst), dst=str(tmp_path / "back"), min_time=0)
    del request["max_reps"]
    assert worker.measure_one(request)["reps"] == 1
    assert (tmp_path / "back").read_bytes() == src.read_bytes()
    request.pop("min_time")  # the defaults: at least DEFAULT_MIN_TIME, at most MAX_REPS calls
    result = worker.measure_one(request)
    assert result["reps"] == worker.MAX_REPS or result["total_s"] >= worker.DEFAULT_MIN_TIME


def test_the_worker_runs_an_external_program_until_the_time_is_up(tmp_path):
    from nncompress.benchmark import worker

    good = _fake_compressor(tmp_path, corrupt=False)
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(b"external " * 50)
    spec = {"type": "external", "exe": good, "compress": ["{exe}", "-c", "{input}", "{output}"],
            "decompress": ["{exe}", "-d", "{input}", "{output}"]}
    request = {"spec": spec, "op": "compress", "src": str(src), "dst": str(dst), "min_time": 1e9, "max_reps": 2}
    result = worker.measure_one(request)
    assert result["reps"] == 2 and dst.read_bytes() == src.read_bytes() and result["warmup_s"] is None
    assert 0 < result["seconds"] <= result["total_s"] / 2
    # a program that fails, or that writes nothing, is an error naming the command
    failing = tmp_path / "failing"
    failing.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('x' * 500 + 'disk full')\nsys.exit(3)\n")
    failing.chmod(0o755)
    request.update(spec=dict(spec, exe=str(failing)), min_time=0)
    with pytest.raises(RuntimeError) as info:
        worker.measure_one(request)
    assert str(info.value) == f"{failing} -c {src} {dst} exited with status 3: {'x' * 291}disk full"
    assert not dst.exists()  # the old output was removed before the run
    silent = tmp_path / "silent"
    silent.write_text(f"#!{sys.executable}\n")
    silent.chmod(0o755)
    request.update(spec=dict(spec, exe=str(silent), compress=["{exe}", "{output}"]))
    with pytest.raises(RuntimeError, match=re.escape(f"{silent} {dst} wrote no output file")):
        worker.measure_one(request)


def test_the_worker_warms_nncompress_up_and_reports_errors_as_one_json_line(tmp_path, capsys):
    import nncompress
    from nncompress.benchmark import worker

    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(b"warm and timed " * 40)
    request = {"spec": {"type": "nncompress", "level": 1}, "op": "compress", "src": str(src), "dst": str(dst),
               "min_time": 0}
    assert worker.main([json.dumps(request)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["warmup_s"] > 0 and result["reps"] == 1
    assert dst.read_bytes() == nncompress.compress(src.read_bytes(), 1)
    request["spec"] = {"type": "nncompress", "level": 0}  # 0: the default level
    worker.measure_one(request)
    assert dst.read_bytes() == nncompress.compress(src.read_bytes(), nncompress.DEFAULT_LEVEL)
    request["spec"] = {"type": "python", "codec": "nope"}
    assert worker.main([json.dumps(request)]) == 1
    assert json.loads(capsys.readouterr().out) == {"error": "ValueError: unknown codec 'nope'"}
    assert worker.main(["{"]) == 1 and json.loads(capsys.readouterr().out)["error"].startswith("JSONDecodeError")


def _sample_report():
    """Five files in five groups: a cached row, a failed and an errored round trip, a file with no
    rows, an unavailable comparator, a set whose better compressor comes second, a '|' in a name."""
    from pathlib import Path

    from nncompress.benchmark.report import Report
    from nncompress.benchmark.targets import BenchFile
    from nncompress.comparators import Comparator

    files = [BenchFile("a.txt", Path("/x/a.txt"), 1000, "aa"), BenchFile("b|c.bin", Path("/x/b"), 3000, "bb"),
             BenchFile("lone.txt", Path("/x/lone.txt"), 200, "cc"), BenchFile("c.txt", Path("/x/c.txt"), 512, "dd"),
             BenchFile("d.txt", Path("/x/d.txt"), 100, "ee")]
    comps = [Comparator("gzip", "gzip -9 (zlib)", {"type": "python"}, "zlib 1.3"),
             Comparator("nnc-1", "nncompress -1", {"type": "nncompress", "level": 1}, "nncompress 2"),
             Comparator("paq8px", "paq8px -8", {"type": "external"}, available=False, note="skipped: not on PATH")]
    SIZES = {"a.txt": 1000, "b|c.bin": 3000, "lone.txt": 200, "c.txt": 512, "d.txt": 100}
    def row(f, c, label, compressed, comp_s, decomp_s, cp, dp, warm=None, trip="ok", error=None, cached=False, version="v"):
        return {"file": f, "bytes": SIZES[f], "compressor": c, "label": label,
                "version": version, "compressed": compressed, "bpc": None if compressed is None else 8 * compressed / SIZES[f],
                "comp_s": comp_s, "decomp_s": decomp_s, "comp_kbs": None if comp_s is None else SIZES[f] / 1024 / comp_s,
                "decomp_kbs": None if decomp_s is None else SIZES[f] / 1024 / decomp_s,
                "comp_peak_mib": cp, "decomp_peak_mib": dp, "warmup_s": warm, "roundtrip": trip, "error": error, "cached": cached}
    results = [row("a.txt", "gzip", "gzip -9 (zlib)", 400, 0.001, 0.0005, 10.2, 9.6, cached=True, version="zlib 1.3"),
               row("a.txt", "nnc-1", "nncompress -1", 250, 0.05, 0.06, 120.4, 118.0, warm=1.234, version="nncompress 2"),
               row("b|c.bin", "gzip", "gzip -9 (zlib)", 1500, 0.002, 0.001, 11.0, 9.0, version="zlib 1.3"),
               row("b|c.bin", "nnc-1", "nncompress -1", 900, 0.1, None, 125.0, None, warm=0.5, trip="error", error="decompress: boom", version="nncompress 2"),
               row("lone.txt", "gzip", "gzip -9 (zlib)", 150, 0.0001, 0.0001, 10.0, 9.5, trip="FAILED", error="decompressed output differs from the original", version="zlib 1.3"),
               row("c.txt", "gzip", "gzip -9 (zlib)", 300, 0.004, 0.002, None, 8.0, version="zlib 1.3"),
               row("c.txt", "nnc-1", "nncompress -1", 100, 0.5, 0.25, 0.0, 0.0, warm=0.005, version="nncompress 2"),
               ]
    groups = {"set": ["a.txt", "b|c.bin"], "files": ["lone.txt"], "more": ["c.txt"], "part": ["c.txt", "d.txt"],
              "empty": ["d.txt"]}
    rep = Report(files, groups, comps, results, {"cpu": "x"})
    return rep


SAMPLE_TEXT = r"""paq8px -8: skipped: not on PATH

file      compressor      bytes  compressed    bpc  comp KB/s  decomp KB/s  comp MiB  decomp MiB  warm-up s  round trip
--------  --------------  -----  ----------  -----  ---------  -----------  --------  ----------  ---------  -----------------------
a.txt     gzip -9 (zlib)  1,000         400  3.200        977        1,953        10          10             ok (cached)
a.txt     nncompress -1   1,000         250  2.000       19.5         16.3       120         118       1.23  ok
b|c.bin   gzip -9 (zlib)  3,000       1,500  4.000      1,465        2,930        11           9             ok
b|c.bin   nncompress -1   3,000         900  2.400       29.3            -       125           -       0.50  error: decompress: boom
lone.txt  gzip -9 (zlib)    200         150  6.000      1,953        1,953        10          10             FAILED
c.txt     gzip -9 (zlib)    512         300  4.688        125          250         -           8             ok
c.txt     nncompress -1     512         100  1.562        1.0          2.0         0           0       0.01  ok

FAILED round trips:
  b|c.bin, nncompress -1: error - decompress: boom
  lone.txt, gzip -9 (zlib): FAILED - decompressed output differs from the original

set: 2 files, total over the set
compressor      files  original  compressed    bpc  mean bpc  comp KB/s  decomp KB/s  peak MiB  round trip
--------------  -----  --------  ----------  -----  --------  ---------  -----------  --------  ----------
gzip -9 (zlib)      2     4,000       1,900  3.800     3.600      1,302        2,604        11  ok
nncompress -1       2     4,000           -      -         -          -            -       125  FAILED (1)

files: 1 file, total over the set
compressor      files  original  compressed  bpc  mean bpc  comp KB/s  decomp KB/s  peak MiB  round trip
--------------  -----  --------  ----------  ---  --------  ---------  -----------  --------  ----------
gzip -9 (zlib)      1       200           -    -         -          -            -        10  FAILED (1)

more: 1 file, total over the set
compressor      files  original  compressed    bpc  mean bpc  comp KB/s  decomp KB/s  peak MiB  round trip
--------------  -----  --------  ----------  -----  --------  ---------  -----------  --------  ----------
nncompress -1       1       512         100  1.562     1.562        1.0          2.0         -  ok
gzip -9 (zlib)      1       512         300  4.688     4.688        125          250         8  ok

part: 2 files, total over the set
compressor      files  original  compressed  bpc  mean bpc  comp KB/s  decomp KB/s  peak MiB  round trip
--------------  -----  --------  ----------  ---  --------  ---------  -----------  --------  ----------------
gzip -9 (zlib)      2       612           -    -         -          -            -         8  incomplete (1/2)
nncompress -1       2       612           -    -         -          -            -         -  incomplete (1/2)
"""

SAMPLE_MARKDOWN = r"""# pre

line

## Totals per corpus set

Sorted by bpc. *compressed* is the sum over the set's files (how Calgary and Canterbury totals are reported); *bpc* = 8 × compressed / original; *mean bpc* is the unweighted mean of the files' bpc; speeds are total original bytes / total time; *peak MiB* is the largest peak RSS of any run in the set.

### set (2 files: a.txt, b|c.bin)

| compressor | files | original | compressed | bpc | mean bpc | comp KB/s | decomp KB/s | peak MiB | round trip |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
| gzip -9 (zlib) | 2 | 4,000 | 1,900 | 3.800 | 3.600 | 1,302 | 2,604 | 11 | ok |
| nncompress -1 | 2 | 4,000 | - | - | - | - | - | 125 | FAILED (1) |

### files (1 file: lone.txt)

| compressor | files | original | compressed | bpc | mean bpc | comp KB/s | decomp KB/s | peak MiB | round trip |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
| gzip -9 (zlib) | 1 | 200 | - | - | - | - | - | 10 | FAILED (1) |

### more (1 file: c.txt)

| compressor | files | original | compressed | bpc | mean bpc | comp KB/s | decomp KB/s | peak MiB | round trip |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
| nncompress -1 | 1 | 512 | 100 | 1.562 | 1.562 | 1.0 | 2.0 | - | ok |
| gzip -9 (zlib) | 1 | 512 | 300 | 4.688 | 4.688 | 125 | 250 | 8 | ok |

### part (2 files: c.txt, d.txt)

| compressor | files | original | compressed | bpc | mean bpc | comp KB/s | decomp KB/s | peak MiB | round trip |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
| gzip -9 (zlib) | 2 | 612 | - | - | - | - | - | 8 | incomplete (1/2) |
| nncompress -1 | 2 | 612 | - | - | - | - | - | - | incomplete (1/2) |

## Failed round trips

These runs did not give back the original bytes; their sets have no total for that compressor.

* b|c.bin, nncompress -1 (nncompress 2): error - decompress: boom
* lone.txt, gzip -9 (zlib) (zlib 1.3): FAILED - decompressed output differs from the original

## bpc per file

| file | bytes | gzip -9 (zlib) | nncompress -1 |
|---|---:|---:|---:|
| a.txt | 1,000 | 3.200 | 2.000 |
| b\|c.bin | 3,000 | 4.000 | **error** |
| lone.txt | 200 | **FAILED** |  |
| c.txt | 512 | 4.688 | 1.562 |
| d.txt | 100 |  |  |

## Every run

| file | compressor | bytes | compressed | bpc | comp KB/s | decomp KB/s | comp MiB | decomp MiB | warm-up s | round trip |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
| a.txt | gzip -9 (zlib) | 1,000 | 400 | 3.200 | 977 | 1,953 | 10 | 10 |  | ok (cached) |
| a.txt | nncompress -1 | 1,000 | 250 | 2.000 | 19.5 | 16.3 | 120 | 118 | 1.23 | ok |
| b\|c.bin | gzip -9 (zlib) | 3,000 | 1,500 | 4.000 | 1,465 | 2,930 | 11 | 9 |  | ok |
| b\|c.bin | nncompress -1 | 3,000 | 900 | 2.400 | 29.3 | - | 125 | - | 0.50 | error: decompress: boom |
| lone.txt | gzip -9 (zlib) | 200 | 150 | 6.000 | 1,953 | 1,953 | 10 | 10 |  | FAILED |
| c.txt | gzip -9 (zlib) | 512 | 300 | 4.688 | 125 | 250 | - | 8 |  | ok |
| c.txt | nncompress -1 | 512 | 100 | 1.562 | 1.0 | 2.0 | 0 | 0 | 0.01 | ok |

## Method

<METHOD>

Skipped compressors:

* paq8px -8: skipped: not on PATH

Compressor versions:

* gzip -9 (zlib): zlib 1.3
* nncompress -1: nncompress 2
"""


def test_the_text_and_markdown_reports_word_for_word():
    """Every cell, total, note and section of both renderings of a report that has every kind of row
    (round 7 of the mutation review: benchmark/report.py)."""
    rep = _sample_report()
    assert bench_report.format_text(rep) == SAMPLE_TEXT
    assert bench_report.format_markdown(rep, "# pre\n\nline\n\n") == (
        SAMPLE_MARKDOWN.replace("<METHOD>", bench_report.METHOD))
    assert bench_report.format_markdown(rep).startswith("## Totals per corpus set\n\nSorted by bpc.")
    assert "at most 25 calls" in bench_report.METHOD and bench_report.MAX_REPS == 25


def test_the_totals_of_each_group():
    rep = _sample_report()
    totals = {(t["group"], t["compressor"]): t for t in rep.totals()}
    assert list(totals) == [("set", "gzip"), ("set", "nnc-1"), ("files", "gzip"), ("more", "gzip"),
                            ("more", "nnc-1"), ("part", "gzip"), ("part", "nnc-1")]
    assert totals["set", "gzip"] == {
        "group": "set", "compressor": "gzip", "label": "gzip -9 (zlib)", "files": 2, "measured": 2,
        "complete": True, "original": 4000, "compressed": 1900, "bpc": 3.8, "mean_bpc": pytest.approx(3.6),
        "comp_kbs": pytest.approx(4000 / 1024 / 0.003), "decomp_kbs": pytest.approx(4000 / 1024 / 0.0015),
        "peak_mib": 11.0, "roundtrip": "ok"}
    assert totals["set", "nnc-1"] == {
        "group": "set", "compressor": "nnc-1", "label": "nncompress -1", "files": 2, "measured": 2,
        "complete": False, "original": 4000, "compressed": None, "bpc": None, "mean_bpc": None,
        "comp_kbs": None, "decomp_kbs": None, "peak_mib": 125.0, "roundtrip": "FAILED (1)"}
    assert totals["more", "nnc-1"] == {
        "group": "more", "compressor": "nnc-1", "label": "nncompress -1", "files": 1, "measured": 1,
        "complete": True, "original": 512, "compressed": 100, "bpc": 1.5625, "mean_bpc": 1.5625,
        "comp_kbs": 1.0, "decomp_kbs": 2.0, "peak_mib": None, "roundtrip": "ok"}
    assert totals["part", "gzip"]["roundtrip"] == "incomplete (1/2)" and totals["part", "gzip"]["measured"] == 1
    assert totals["part", "gzip"]["original"] == 612 and totals["part", "gzip"]["peak_mib"] == 8.0
    assert bench_report.rate(2048, 2) == 1.0 and bench_report.rate(1, 0) is None
    assert bench_report.rate(1, None) is None


def test_a_report_goes_to_json_and_back(tmp_path):
    rep = _sample_report()
    blob = rep.to_json()
    assert list(blob) == ["meta", "method", "comparators", "files", "groups", "results", "totals"]
    assert blob["meta"] == {"cpu": "x"} and blob["method"] == bench_report.METHOD
    assert blob["comparators"][2] == {"key": "paq8px", "label": "paq8px -8", "version": "", "available": False,
                                      "note": "skipped: not on PATH", "spec": {"type": "external"}}
    assert blob["files"][0] == {"name": "a.txt", "path": "/x/a.txt", "bytes": 1000, "sha256": "aa"}
    assert blob["groups"] == rep.groups and blob["results"] == rep.results and blob["totals"] == rep.totals()
    out = tmp_path / "r.json"
    md = tmp_path / "r.md"
    bench_report.write_outputs(rep, json_path=out, markdown_path=md, preamble="# p\n")
    assert out.read_text().endswith("}\n") and json.loads(out.read_text()) == json.loads(json.dumps(blob))
    assert md.read_text(encoding="utf-8") == bench_report.format_markdown(rep, "# p\n")
    again = bench_report.report_from_json(json.loads(out.read_text()))
    assert again.to_json() == json.loads(json.dumps(blob))
    assert [c.available for c in again.comparators] == [True, True, False]
    assert again.files[1].path == __import__("pathlib").Path("/x/b") and again.meta == {"cpu": "x"}
    bare = json.loads(out.read_text())
    del bare["meta"]
    for c in bare["comparators"]:
        for key in ("spec", "version", "available", "note"):
            del c[key]
    rebuilt = bench_report.report_from_json(bare)
    assert rebuilt.meta == {} and [(c.spec, c.version, c.available, c.note) for c in rebuilt.comparators] == [
        ({}, "", True, "")] * 3
    bench_report.write_outputs(rep)  # nothing asked, nothing written


def test_the_comparator_cache_keeps_only_good_rows_of_the_comparators_asked(tmp_path):
    from nncompress.benchmark import measurement

    rep = _sample_report()
    rep.results.append(dict(rep.results[0], compressor="gone"))  # a row of no known comparator
    path = tmp_path / "cache.json"
    assert measurement.save_cache(path, rep) == 3  # gzip's ok rows; nnc-1 is never cached by default
    text = path.read_text(encoding="utf-8")
    blob = json.loads(text)
    assert text.endswith("]\n}\n") and blob["meta"] == {"cpu": "x"} and blob["method"] == bench_report.METHOD
    assert [e["key"] for e in blob["entries"]] == ["aa:gzip:zlib 1.3", "bb:gzip:zlib 1.3", "dd:gzip:zlib 1.3"]
    assert blob["entries"][0]["row"] == rep.results[0]
    assert measurement.load_cache(path) == {e["key"]: e["row"] for e in blob["entries"]}
    assert measurement.save_cache(path, rep, keep=lambda c: c.key == "nnc-1", meta={"m": 2}) == 2
    blob = json.loads(path.read_text())
    assert blob["meta"] == {"m": 2} and [e["key"] for e in blob["entries"]] == [
        "aa:nnc-1:nncompress 2", "dd:nnc-1:nncompress 2"]
    path.write_text('{"meta": {}}')
    assert measurement.load_cache(path) == {}


def test_the_machine_description(monkeypatch):
    import platform
    import zlib

    from nncompress.benchmark import measurement

    try:
        lines = open("/proc/cpuinfo", encoding="utf-8").read().splitlines()
        expected = next(line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("model name"))
    except (OSError, StopIteration):
        expected = None
    if expected is not None:
        assert measurement.cpu_model() == expected

    def no_file(*args, **kwargs):
        raise OSError("no /proc")

    monkeypatch.setattr(measurement, "open", no_file, raising=False)
    assert measurement.cpu_model() == (platform.processor() or platform.machine())
    monkeypatch.setattr(measurement, "open", lambda *a, **k: io.StringIO(
        "processor\t: 0\nModel Name\t:  Weird: CPU 3:2 \nmodel name\t: second\n"), raising=False)
    assert measurement.cpu_model() == "Weird: CPU 3:2"
    monkeypatch.setattr(measurement, "open", lambda *a, **k: io.StringIO("processor\t: 0\n"), raising=False)
    assert measurement.cpu_model() == (platform.processor() or platform.machine())
    monkeypatch.undo()
    external = benchmark.Comparator("ext", "ext", {"type": "external"}, version="ext 1")
    gone = benchmark.Comparator("gone", "gone", {"type": "external"}, version="x", available=False)
    info = measurement.system_info([external, gone] + benchmark.select_comparators("gzip"))
    assert list(info) == ["date", "cpu", "cores", "platform", "python", "loadavg", "packages", "externals"]
    assert info["externals"] == {"ext": "ext 1"} and info["cores"] == os.cpu_count()
    assert info["cpu"] == measurement.cpu_model() and info["python"] == sys.version.split()[0]
    assert info["platform"] == platform.platform() and len(info["loadavg"]) == 3
    assert info["packages"]["zlib"] == zlib.ZLIB_RUNTIME_VERSION
    from nncompress.comparators import dist_version

    named = ("nncompress", "numpy", "numba", "llvmlite", "constriction", "zstandard", "brotli", "pyppmd", "zpaq",
             "paq", "matplotlib")
    assert info["packages"] == {d: dist_version(d) for d in named if dist_version(d)} | {
        "zlib": zlib.ZLIB_RUNTIME_VERSION}
    assert info["packages"]["numpy"] == __import__("numpy").__version__
    assert info["packages"]["numba"] and "nosuchpackage" not in info["packages"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+", info["date"])
    assert measurement.system_info()["externals"] == {}
    monkeypatch.setattr(os, "getloadavg", lambda: (1.23456, 2.5, 0.004))
    assert measurement.system_info()["loadavg"] == [1.23, 2.5, 0.0]
    monkeypatch.delattr(os, "getloadavg")  # a platform without it
    assert measurement.system_info()["loadavg"] is None


def test_spawn_reads_the_workers_line_and_the_launchers_peak(monkeypatch, tmp_path):
    """`_spawn` with stand-in workers (bare interpreters): the request reaches the worker as its
    argument, the environment pins every library to one thread, the launcher's peak comes back;
    a worker that prints no JSON, exits non-zero after its line, or outlives the timeout is an
    error row, each word for word."""
    from nncompress.benchmark import measurement

    def worker(code):
        monkeypatch.setattr(measurement, "WORKER", [sys.executable, "-S", "-c", code])

    worker("import json, os, sys\n"
           "keys = ['OMP_NUM_THREADS', 'NUMBA_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS',"
           " 'PYTHONUNBUFFERED', 'MARK']\n"
           "print('noise before the result')\n"
           "print(json.dumps({'request': json.loads(sys.argv[1]), 'env': {k: os.environ.get(k) for k in keys},"
           " 'stdin': os.path.samestat(os.fstat(0), os.stat(os.devnull)), 'session': os.getsid(0)}))")
    monkeypatch.setenv("MARK", "kept")
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)  # the benchmark's standard input is a pipe: the worker must not inherit it
    try:
        result, peak = measurement._spawn({"op": "compress", "n": 1}, timeout=60)
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)
    assert result.pop("session") != os.getsid(0)  # a session of its own: the timeout kills it whole
    assert result == {"request": {"op": "compress", "n": 1}, "stdin": True,
                      "env": {"OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                              "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "MARK": "kept"}}
    assert 1000 < peak < 200_000  # KiB: a bare interpreter
    worker("import sys; print('not json'); sys.stderr.write('e' * 500 + 'the end')")
    assert measurement._spawn({}, timeout=60) == (
        {"error": "worker failed (exit status 0): " + "e" * 393 + "the end"}, 0)
    worker("import sys; print('not json'); sys.stderr.write('oops')")
    assert measurement._spawn({}, timeout=60) == ({"error": "worker failed (exit status 0): oops"}, 0)
    worker("import sys; sys.stdout.buffer.write(b'\\xff\\n{\"a\": 1}\\n'); sys.stderr.buffer.write(b'\\xfe')")
    assert measurement._spawn({}, timeout=60)[0] == {"a": 1}  # undecodable bytes around the line are no matter
    worker("import sys; sys.stdout.buffer.write(b'\\xff'); sys.stderr.buffer.write(b'bad \\xfe')")
    assert measurement._spawn({}, timeout=60) == ({"error": "worker failed (exit status 0): bad \ufffd"}, 0)
    worker("print('{\"seconds\": 1}'); raise SystemExit(3)")
    result, peak = measurement._spawn({}, timeout=60)
    assert result == {"error": "worker exited with status 3"} and peak > 1000
    worker("print('{\"error\": \"its own\"}'); raise SystemExit(1)")
    assert measurement._spawn({}, timeout=60)[0] == {"error": "its own"}
    worker("import os, signal, time\n"  # a worker deaf to every signal it may ignore: killed all the same
           "for name in ('SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR1', 'SIGUSR2', 'SIGALRM', 'SIGQUIT', 'SIGPIPE'):\n"
           "    signal.signal(getattr(signal, name), signal.SIG_IGN)\n"
           "open(os.environ['MARK'], 'w').write(str(os.getpid()))\n"
           "time.sleep(30)")
    monkeypatch.setenv("MARK", str(tmp_path / "started"))
    assert measurement._spawn({}, timeout=1.4) == ({"error": "timed out after 1 s"}, 0)
    status = f"/proc/{(tmp_path / 'started').read_text()}/status"
    for _ in range(100):  # the worker is killed with its launcher (a zombie until init reaps it)
        if not os.path.exists(status) or "\tZ (zombie)" in open(status).read():
            break
        __import__("time").sleep(0.02)
    else:
        pytest.fail("the worker outlived its timeout")


def test_the_command_line_in_process(in_process_worker, tiny_files, tmp_path, monkeypatch, capsys):
    """`nncompress bench` end to end with the workers in process: what is measured (comparators,
    levels, models, targets), where the report goes, the exit status, the cluster option."""
    import contextlib

    from nncompress import cluster
    from nncompress.benchmark import command

    a = str(tiny_files[0])
    js, md = tmp_path / "r.json", tmp_path / "r.md"
    monkeypatch.delenv("NNC_CLUSTER", raising=False)
    assert command.main([a, "--with", "zlib", "--levels", "none", "--min-time", "0", "--timeout", "7",
                         "--json", str(js), "--markdown", str(md), "-q"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("file   compressor      bytes") and "files: 1 file, total over the set" in out
    report = json.loads(js.read_text())
    assert [(r["file"], r["compressor"]) for r in report["results"]] == [("a.txt", "gzip")]
    assert {r["min_time"] for r in in_process_worker["requests"]} == {0.0}
    assert {r["timeout"] for r in in_process_worker["requests"]} == {7.0}
    meta = report["meta"]
    assert meta["command"] == f"nncompress bench {a} --with zlib --levels none --min-time 0 --timeout 7 " \
                              f"--json {js} --markdown {md} -q"
    assert "cluster" not in meta and meta["cpu"] and "loadavg_end" in meta
    assert md.read_text().startswith(f"# nncompress bench\n\n{meta['date']}; {meta['cpu']}, {meta['cores']} cores; "
                                     f"Python {meta['python']}\n\n`{meta['command']}`\n\n## Totals per corpus set\n")
    # levels and models: the nnc rows, in that order; progress lines without -q
    in_process_worker["requests"].clear()
    assert command.main([a, "--with", "none", "--levels", "1", "--min-time", "0", "--json", str(js)]) == 0
    assert [r["compressor"] for r in json.loads(js.read_text())["results"]] == ["nnc-1"]
    assert capsys.readouterr().err.startswith("[1/1] a.txt ")
    assert {r["min_time"] for r in in_process_worker["requests"]} == {0.0}
    # defaults: --min-time, --timeout, --levels 6, --with all (whatever is installed here)
    seen = {}
    monkeypatch.setattr(command, "run", lambda plan, groups, **kw: seen.update(plan=plan, groups=groups, **kw)
                        or benchmark.Report([], {}, []))
    monkeypatch.setattr(command, "bench_files", lambda targets, corpora_dir: seen.update(
        targets=targets, corpora_dir=corpora_dir) or ([], {}))
    assert command.main([]) == 0
    assert seen["targets"] == ["canterbury"] and seen["corpora_dir"] is None
    assert seen["min_time"] == benchmark.DEFAULT_MIN_TIME and seen["timeout"] == benchmark.DEFAULT_TIMEOUT
    assert seen["progress"] is True and seen["client"] is None and seen["plan"] == []
    assert command.main(["x", "y", "--corpora", "D", "--with", "gzip", "--levels", "1,9", "--models", "rnnme,cm"]) == 0
    assert seen["targets"] == ["x", "y"] and seen["corpora_dir"] == "D"
    monkeypatch.setattr(command, "bench_files", lambda targets, corpora_dir: ([benchmark.file_info(tiny_files[0])],
                                                                             {"files": ["a.txt"]}))
    assert command.main([a, "--with", "gzip", "--levels", "1,9", "--models", "rnnme,cm", "-q"]) == 0
    assert [c.key for c in seen["plan"][0][1]] == ["gzip", "nnc-1", "nnc-9", "nnc-rnnme"]
    assert seen["progress"] is False and seen["groups"] == {"files": ["a.txt"]}
    assert command.main([a, "--with", "all", "--levels", "none", "--models", " cm , "]) == 0
    assert [c.key for c in seen["plan"][0][1]] == benchmark.ALL_KEYS

    # a cluster: the client reaches `run`, its address the report
    class Client:
        pass

    client = Client()
    opened = []

    @contextlib.contextmanager
    def connected(address):
        opened.append(address)
        yield client if address else None

    monkeypatch.setattr(cluster, "connected", connected)
    monkeypatch.setenv("NNC_CLUSTER", "tcp://127.0.0.1:1")
    assert command.main([a, "--with", "gzip", "--levels", "none", "-q"]) == 0
    assert opened == ["tcp://127.0.0.1:1"] and seen["client"] is client and seen["meta"]["cluster"] == "tcp://127.0.0.1:1"
    assert command.main([a, "--with", "gzip", "--levels", "none", "--cluster", "tcp://127.0.0.1:2", "-q"]) == 0
    assert opened[-1] == "tcp://127.0.0.1:2"

    @contextlib.contextmanager
    def unreachable(address):
        raise benchmark_nncerror("cannot reach the cluster at " + address)
        yield

    monkeypatch.setattr(cluster, "connected", unreachable)
    capsys.readouterr()
    assert command.main([a, "--with", "gzip", "--levels", "none", "-q"]) == 1
    assert capsys.readouterr() == ("", "nncompress bench: cannot reach the cluster at tcp://127.0.0.1:1\n")


def benchmark_nncerror(message):
    from nncompress.errors import NNCError

    return NNCError(message)


def test_the_command_lines_refusals_word_for_word(in_process_worker, tiny_files, tmp_path, capsys, monkeypatch):
    from nncompress.benchmark import command

    a = str(tiny_files[0])
    cases = [
        ([a, "--models", "lstm,gru,cm"], "nncompress bench: unknown model(s) gru, lstm (cm, rnnme)\n"),
        ([a, "--with", "nosuch"], "nncompress bench: unknown compressor 'nosuch' (known: "),
        ([a, "--with", "none", "--levels", "none"], "nncompress bench: nothing to run (no comparators and no levels)\n"),
        ([a, "--with", "none", "--models", "rnnme", "--levels", "1", "--models", "", "-q"],
         "nncompress bench: nothing to run (no comparators and no levels)\n"),
        ([str(tmp_path / "missing")], f"nncompress bench: {tmp_path / 'missing'}: no such file, directory or corpus set"),
        ([a, "--levels", "12"], "nncompress bench: "),
    ]
    for argv, message in cases:
        assert command.main(argv) == 1, argv
        out, err = capsys.readouterr()
        assert out == "" and err.startswith(message), (argv, err)
    assert in_process_worker["requests"] == []
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert command.main([a, "--with", "zlib", "--levels", "none", "--plot", str(tmp_path / "p.png")]) == 1
    assert capsys.readouterr().err.startswith("nncompress bench: matplotlib is not installed")
    # a failed round trip: the report is still written, the exit status is 1
    monkeypatch.setattr(command, "run", lambda plan, groups, **kw: benchmark.Report(
        [], {}, [], [{"file": "a", "bytes": 1, "compressor": "x", "label": "x", "version": "", "compressed": None,
                      "bpc": None, "comp_kbs": None, "decomp_kbs": None, "comp_peak_mib": None,
                      "decomp_peak_mib": None, "warmup_s": None, "roundtrip": "error", "error": "boom"}]))
    js = tmp_path / "failed.json"
    assert command.main([a, "--with", "zlib", "--levels", "none", "--json", str(js), "-q"]) == 1
    assert json.loads(js.read_text())["results"][0]["error"] == "boom"


def test_the_list_of_sets_and_comparators(capsys, tmp_path, monkeypatch):
    from nncompress import corpora
    from nncompress.benchmark import command

    monkeypatch.setenv("NNC_CORPORA", str(tmp_path))
    assert command.main(["--list", "--corpora", str(tmp_path / "c")]) == 0
    lines = capsys.readouterr().out.splitlines()
    catalog = corpora.load_catalog()
    names = corpora.set_names(catalog)
    assert lines[0] == "corpus sets (the catalog shipped with nncompress; see corpora/README.md):"
    for line, name in zip(lines[1:], names):
        entries = corpora.set_files(name, catalog)
        label = f"{len(entries)} file" + ("" if len(entries) == 1 else "s")
        assert line == f"  {name:<12} {label:>8}, {sum(e.bytes for e in entries):>10,} bytes"
    rest = lines[1 + len(names):]
    assert rest[0] == f"searched in: {tmp_path / 'c'}" and rest[1] == "comparators:"
    comparators = command.select_comparators(None)
    assert rest[2:] == [f"  {c.key:<14} {c.label:<22} {c.version if c.available else c.note}" for c in comparators]
    assert command.main(["--list"]) == 0
    assert f"searched in: {tmp_path}\n" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", ["nncompress-bench", "--list", "--corpora", str(tmp_path / "d")])
    assert command.main() == 0  # the arguments of the program
    assert f"searched in: {tmp_path / 'd'}\n" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        command.main(["fetch", "--help"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("usage: nncompress bench fetch")


def test_the_worker_warms_up_and_times_the_level_and_model_asked(tmp_path, monkeypatch, capsys):
    """The warm-up compiles what the timed call runs: the same level and model (round 7)."""
    import time

    import nncompress
    from nncompress.benchmark import worker

    calls = []
    real_compress, real_decompress = nncompress.compress, nncompress.decompress
    monkeypatch.setattr(nncompress, "compress", lambda data, *a, **k: calls.append(("c", len(data), a, k))
                        or real_compress(data, 1))
    monkeypatch.setattr(nncompress, "decompress", lambda blob: calls.append(("d",)) or real_decompress(blob))
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(b"model and level " * 10)
    request = {"spec": {"type": "nncompress", "level": 3, "model": "rnnme"}, "op": "compress", "src": str(src),
               "dst": str(dst), "min_time": 0}
    started = time.perf_counter()
    result = worker.measure_one(request)
    elapsed = time.perf_counter() - started
    n = len(worker.WARMUP_TEXT)
    assert calls == [("c", n, (3,), {"model": "rnnme"}), ("d",), ("c", 160, (3,), {"model": "rnnme"})]
    assert 0 < result["warmup_s"] < elapsed and 0 < result["seconds"] < elapsed
    calls.clear()
    request["spec"] = {"type": "nncompress", "level": 2}
    worker.measure_one(request)
    assert calls == [("c", n, (2,), {}), ("d",), ("c", 160, (2,), {})]
    # run as a program: the request is its first argument
    monkeypatch.setattr(sys, "argv", ["worker", json.dumps(request)])
    assert worker.main() == 0 and json.loads(capsys.readouterr().out)["reps"] == 1


def test_an_external_program_gets_no_terminal_and_its_error_text_is_kept(tmp_path, capfd):
    """Standard input is /dev/null and standard output discarded, even when the benchmark's own
    are something else; a failing program's error text is decoded whatever its bytes."""
    import time

    from nncompress.benchmark import worker

    program = tmp_path / "prog"
    program.write_text(f"#!{sys.executable}\n" + textwrap.dedent("""\
        import os, sys
        same = os.path.samestat(os.fstat(0), os.stat(os.devnull))
        print("chatter on standard output")
        open(sys.argv[1], "w").write("stdin is /dev/null" if same else "stdin inherited")
        """))
    program.chmod(0o755)
    spec = {"type": "external", "exe": str(program), "compress": ["{exe}", "{output}"]}
    request = {"spec": spec, "op": "compress", "src": str(tmp_path / "in"), "dst": str(tmp_path / "out"),
               "min_time": 0}
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)  # the benchmark's standard input is a pipe here
    try:
        started = time.perf_counter()
        result = worker.measure_one(request)
        elapsed = time.perf_counter() - started
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)
    assert (tmp_path / "out").read_text() == "stdin is /dev/null"
    assert "chatter" not in capfd.readouterr().out
    assert 0 < result["seconds"] <= result["total_s"] < elapsed
    failing = tmp_path / "failing"
    failing.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.buffer.write(b'bad \\xff byte')\nsys.exit(2)\n")
    failing.chmod(0o755)
    request["spec"] = dict(spec, exe=str(failing))
    with pytest.raises(RuntimeError) as info:
        worker.measure_one(request)
    assert str(info.value).endswith("exited with status 2: bad \ufffd byte")


def test_the_comparator_cache_is_read_as_utf_8_whatever_the_locale(tmp_path):
    """JSON is UTF-8 (RFC 8259): a cache file holding raw UTF-8 (as any other JSON writer may
    leave it) loads under the C locale without UTF-8 mode (round 7: `load_cache` 2)."""
    path = tmp_path / "cache.json"
    entries = {"aa:gzip:v\u00e9": {"file": "f\u00e9", "label": "gzip \u00e9", "roundtrip": "ok"}}
    path.write_bytes(json.dumps({"meta": {}, "entries": [{"key": k, "row": v} for k, v in entries.items()]},
                                ensure_ascii=False).encode("utf-8"))
    probe = "import sys; from nncompress.benchmark import measurement; print(ascii(measurement.load_cache(sys.argv[1])))"
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    done = subprocess.run([sys.executable, "-c", probe, str(path)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout == ascii(entries) + "\n"


def test_an_empty_report_and_the_speed_and_value_formats():
    assert [bench_report._speed(v) for v in (None, 0, 99.94, 99.96, 100, 1234.5)] == [
        "-", "0.0", "99.9", "100.0", "100", "1,234"]
    assert bench_report.fmt_value(None, ".3f") == "-" and bench_report.fmt_value(None, ".3f", "") == ""
    assert bench_report.fmt_value(1234.5, ",") == "1,234.5" and bench_report.fmt_value(0, ".2f", "") == "0.00"
    empty = benchmark.Report([], {"g": []}, [])
    assert empty.totals() == []
    assert bench_report.format_text(empty) == (
        "file  compressor  bytes  compressed  bpc  comp KB/s  decomp KB/s  comp MiB  decomp MiB  warm-up s  round trip\n"
        "----  ----------  -----  ----------  ---  ---------  -----------  --------  ----------  ---------  ----------\n")
    md = bench_report.format_markdown(empty)
    assert "## Failed round trips" not in md and "Skipped compressors" not in md and "###" not in md
    assert md.endswith("## Method\n\n" + bench_report.METHOD + "\n\nCompressor versions:\n\n")
    assert "| file | bytes |\n|---|---:|\n\n## Every run\n" in md


def test_totals_skip_unavailable_and_unmeasured_comparators_but_not_the_ones_after():
    rep = _sample_report()
    gone, gzip, nnc = rep.comparators[2], rep.comparators[0], rep.comparators[1]
    rep.comparators = [gone, nnc, gzip]  # nnc-1 has no row in "files"; gzip, after it, has
    totals = [(t["group"], t["compressor"]) for t in rep.totals()]
    assert totals == [("set", "nnc-1"), ("set", "gzip"), ("files", "gzip"), ("more", "nnc-1"), ("more", "gzip"),
                      ("part", "nnc-1"), ("part", "gzip")]
    rep.groups = {"empty": rep.groups.pop("empty"), **rep.groups}  # a group without rows first
    md = bench_report.format_markdown(rep)
    assert [line for line in md.splitlines() if line.startswith("### ")] == [
        "### set (2 files: a.txt, b|c.bin)", "### files (1 file: lone.txt)", "### more (1 file: c.txt)",
        "### part (2 files: c.txt, d.txt)"]


def test_write_outputs_plots_the_report_and_writes_the_markdown_as_utf_8(tmp_path, monkeypatch):
    """Round 7: the chart gets the report and the path; without a preamble the Markdown starts
    with its first section; its "×" is written as UTF-8 whatever the locale; the JSON keeps each
    comparator's fields in order, spec last; several skipped compressors, one a line."""
    from nncompress.benchmark import plot

    drawn = []
    monkeypatch.setattr(plot, "plot", lambda report, path: drawn.append((report, path)))
    rep = _sample_report()
    md = tmp_path / "r.md"
    bench_report.write_outputs(rep, markdown_path=md, plot_path=tmp_path / "r.png")
    assert drawn == [(rep, tmp_path / "r.png")]
    assert md.read_text(encoding="utf-8").startswith("## Totals per corpus set\n")
    assert list(rep.to_json()["comparators"][0]) == ["key", "label", "version", "available", "note", "spec"]
    rep.comparators.append(benchmark.Comparator("cmix", "cmix", {}, available=False, note="skipped: no cmix"))
    assert bench_report.format_text(rep).startswith("paq8px -8: skipped: not on PATH\ncmix: skipped: no cmix\n\nfile ")
    probe = textwrap.dedent("""\
        import locale, sys
        from nncompress.benchmark import report
        assert locale.getpreferredencoding(False).lower() in ("ascii", "ansi_x3.4-1968")
        report.write_outputs(report.Report([], {}, []), markdown_path=sys.argv[1])
        """)
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    done = subprocess.run([sys.executable, "-c", probe, str(md)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "*bpc* = 8 × compressed / original" in md.read_text(encoding="utf-8")


def test_the_package_names_what_it_has_and_refuses_the_rest():
    names = dir(benchmark)
    assert names == sorted(names) and set(benchmark.__all__) <= set(names)
    assert {"importlib", "__getattr__", "__dir__"} <= set(names)  # its own globals too
    with pytest.raises(AttributeError, match=r"^module 'nncompress\.benchmark' has no attribute 'nosuch'$"):
        benchmark.nosuch  # noqa: B018


def test_bench_files_takes_the_corpora_folder_given_and_every_file_after_a_repeat(corpora, tiny_files, tmp_path,
                                                                                  monkeypatch):
    monkeypatch.delenv("NNC_CORPORA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the fetch cache: empty
    files, groups = benchmark.bench_files(["grammar.lsp"], str(corpora))
    assert [f.name for f in files] == ["grammar.lsp"] and groups == {"grammar.lsp": ["grammar.lsp"]}
    a, b = (str(p) for p in tiny_files)
    files, groups = benchmark.bench_files([a, a, b])
    assert [f.name for f in files] == ["a.txt", "b.txt"] and groups == {"files": ["a.txt", "b.txt"]}


def _parser_spec(parser):
    return (parser.prog, parser.description, parser.epilog,
            [(action.option_strings, action.dest, action.metavar, action.default, action.nargs,
              getattr(action.type, "__name__", action.type), list(action.choices) if action.choices else None,
              action.help) for action in parser._actions])


BENCH_PARSER = (
    'nncompress bench',
    ('Compare nncompress with gzip, bzip2, xz, zstd, brotli, PPMd, zpaq, paq9a and any paq8px / cmix / '
     "lstm-compress on PATH: size, bpc, speed, peak memory, verified round trips.  'nncompress bench fetch "
     "--help' downloads the corpora."),
    ('Targets: an existing file stands alone; a folder is a set of its files (those its MANIFEST.tsv lists, '
     'else every non-hidden file in it); any other name is a corpus set or a file of the catalog, found in '
     '--corpora, $NNC_CORPORA or the fetch cache.  Method: ') + bench_report.METHOD,
    [
        (['-h', '--help'], 'help', None, '==SUPPRESS==', 0, None, None,
         'show this help message and exit'),
        ([], 'targets', 'FILE|DIR|SET', None, '*', None, None,
         'files, folders (their files) or corpus sets (default: canterbury)'),
        (['--with'], 'with_', 'NAMES', 'all', None, None, None,
         ('comma-separated comparators (default all): gzip, bzip2, xz, zstd19, zstd22, brotli, ppmd6, '
          'ppmd16, zpaq5, paq9a, paq8px, cmix, lstm-compress; aliases zlib, bz2, lzma, zstd, ppmd, zpaq, '
          "paq; 'none' for nncompress only")),
        (['--levels'], 'levels', None, '6', None, None, None,
         "nncompress levels, e.g. 1,6,9 (default 6; 'none' to skip)"),
        (['--models'], 'models', None, 'cm', None, None, None,
         ('nncompress models: cm (the levels) and/or rnnme (the RNNME network alone, a row of its own), e.g. '
          'cm,rnnme (default cm)')),
        (['--corpora'], 'corpora', 'DIR', None, None, None, None,
         ("folder holding the corpus files (else $NNC_CORPORA, else the cache 'nncompress bench fetch' "
          'writes to)')),
        (['--json'], 'json', 'OUT', None, None, None, None,
         'write every result as JSON'),
        (['--markdown'], 'markdown', 'OUT', None, None, None, None,
         'write the tables as Markdown'),
        (['--plot'], 'plot', 'OUT.png', None, None, None, None,
         'write a bpc vs KB/s chart (PNG; needs matplotlib)'),
        (['--min-time'], 'min_time', None, 0.3, None, 'float', None,
         'repeat each timed call until this many seconds (default 0.3)'),
        (['--timeout'], 'timeout', None, 14400, None, 'float', None,
         'seconds allowed per worker'),
        (['--list'], 'list', None, False, 0, None, None,
         'list corpus sets and comparators, then exit'),
        (['--cluster'], 'cluster', 'ADDRESS', None, None, None, None,
         ('run the measurements on a dask.distributed cluster (e.g. tcp://host:8786; default $NNC_CLUSTER): '
          "files travel with the jobs; speeds and memory are the workers', so give each worker a core of its "
          'own')),
        (['-q', '--quiet'], 'quiet', None, False, 0, None, None,
         'no progress on standard error'),
    ])

ANALYZE_PARSER = (
    'nncompress analyze',
    ('Entropy analysis of files, directories or corpus sets: empirical conditional entropies, adaptive '
     "baselines, reference compressors and nncompress's own per-byte code lengths."),
    ("H_k is the empirical entropy of a byte given the k bytes before it, from the file's own counts: a "
     'lower bound no adaptive coder reaches; for k >= 2 on small files it is optimistic (contexts seen once '
     "cost nothing).  Targets follow the rule of 'nncompress bench': an existing file stands alone; a folder "
     'is a set of its files; any other name is a corpus set or a catalog file, found in --corpora, '
     '$NNC_CORPORA or the fetch cache.'),
    [
        (['-h', '--help'], 'help', None, '==SUPPRESS==', 0, None, None,
         'show this help message and exit'),
        ([], 'inputs', 'FILE|DIR|SET', None, '+', None, None,
         None),
        (['-l', '--level'], 'level', 'N', 6, None, 'int', [1, 2, 3, 4, 5, 6, 7, 8, 9],
         'nncompress level 1..9 (default 6)'),
        (['--json'], 'json', 'OUT', None, None, None, None,
         "write all numbers as JSON ('-': stdout)"),
        (['--plot'], 'plot', 'OUT.png', None, None, None, None,
         'learning-curve plot (PNG; needs matplotlib)'),
        (['--html'], 'html', 'OUT.html', None, None, None, None,
         'self-contained page, text coloured by cost'),
        (['--html-limit'], 'html_limit', 'BYTES', 20000, None, 'int', None,
         'bytes of each file shown in the page (default 20,000)'),
        (['--window'], 'window', 'N', 0, None, 'int', None,
         'moving-average window of the plot in bytes (default: auto)'),
        (['--corpora'], 'corpora', 'DIR', None, None, None, None,
         ("folder holding the corpus files (else $NNC_CORPORA, else the cache 'nncompress bench fetch' "
          'writes to)')),
        (['--no-reference'], 'no_reference', None, False, 0, None, None,
         'skip gzip, xz and PAQ'),
        (['--cluster'], 'cluster', 'ADDRESS', None, None, None, None,
         ('analyse the files on a dask.distributed cluster (e.g. tcp://host:8786; default $NNC_CLUSTER); '
          "each file's bytes travel with its job")),
        (['-q', '--quiet'], 'quiet', None, False, 0, None, None,
         'no progress messages'),
    ])


def test_the_command_lines_options_and_help_word_for_word():
    """Round 7: every option of `nncompress bench` and `nncompress analyze`, its name, default,
    type, choices and help text (the help's own wrapping is argparse's)."""
    from nncompress.analysis import command as analyze
    from nncompress.benchmark import command as bench

    for parser, (prog, description, epilog, actions) in [(bench.build_parser(), BENCH_PARSER),
                                                         (analyze.build_parser(), ANALYZE_PARSER)]:
        got = _parser_spec(parser)
        assert got[:3] == (prog, description, epilog)
        assert got[3] == actions


def test_bench_plot_option_draws_the_report(in_process_worker, tiny_files, tmp_path, monkeypatch):
    from nncompress.benchmark import command, plot

    drawn = []
    monkeypatch.setattr(plot, "plot", lambda report, path: drawn.append((report.results[0]["compressor"], path)))
    png = str(tmp_path / "r.png")
    assert command.main([str(tiny_files[0]), "--with", "zlib", "--levels", "none", "--min-time", "0", "--plot", png,
                         "-q"]) == 0
    assert drawn == [("gzip", png)]


@pytest.fixture
def drawn_figures(monkeypatch):
    """Each figure a chart saves, with where and at what resolution (nothing written: fast)."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    saved = []
    real_savefig = Figure.savefig

    def record(fig, path, **kw):
        saved.append((fig, path, kw))
        if path == "render.png":  # drawn for real (in memory): an invalid style fails only here
            png = io.BytesIO()
            real_savefig(fig, png, **kw)
            saved.append(png.getvalue())

    monkeypatch.setattr(Figure, "savefig", record)
    return saved


def test_the_bench_chart_shows_each_complete_total_in_its_sets_panel(drawn_figures):
    """Which points, in which panel, on which axes, with which labels; the legend names every
    available comparator in the colours of its points; the figure is saved once and closed."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.markers import MarkerStyle

    from nncompress.benchmark import plot

    rep = _sample_report()
    plot.plot(rep, "render.png", title="T")
    [(fig, path, kw), png] = drawn_figures
    assert path == "render.png" and kw == {"dpi": 110} and not plt.fignum_exists(fig.number)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    totals = {(t["group"], t["compressor"]): t for t in rep.totals()}
    axes = fig.axes
    assert len(axes) == 2  # only "set" and "more" have a complete total; one row of two panels
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in axes] == [(1, 2)] * 2
    legend_colours = {}
    [legend] = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["gzip -9 (zlib)", "nncompress -1"]
    assert legend._ncols == 2
    legend_markers = {}
    for handle, marker in zip(legend.legend_handles, "os"):
        legend_colours[handle.get_label()] = handle.get_color()
        legend_markers[handle.get_label()] = marker
        assert handle.get_marker() == marker and handle.get_linestyle() == "None"
        assert handle.get_markersize() == (11 if handle.get_label().startswith("nncompress") else 8)
    for ax, group, comps, title in [(axes[0], "set", ["gzip"], "set (2 files)"),
                                    (axes[1], "more", ["gzip", "nnc-1"], "more (1 file)")]:
        assert ax.get_title() == title and ax.axison
        assert ax.get_xscale() == "log" and ax.get_yscale() == "linear"
        assert ax.get_xlabel() == "compression speed (KB/s, log scale)"
        assert ax.get_ylabel() == "bits per character (bpc)"
        points = ax.collections
        assert [p.get_label() for p in points] == [totals[(group, c)]["label"] for c in comps]
        for p, c in zip(points, comps):
            t = totals[(group, c)]
            assert p.get_offsets().tolist() == [[t["comp_kbs"], t["bpc"]]]
            assert p.get_sizes().tolist() == [130 if c.startswith("nnc-") else 60]
            assert tuple(p.get_facecolor()[0]) == tuple(legend_colours[t["label"]])
            style = MarkerStyle(legend_markers[t["label"]])  # each point has its legend entry's marker
            assert np.array_equal(p.get_paths()[0].vertices,
                                  style.get_path().transformed(style.get_transform()).vertices)
    assert fig._suptitle.get_text() == ("T: bits per character vs compression speed, per corpus set "
                                        "(lower = smaller, right = faster)")
    assert len({tuple(c) for c in legend_colours.values()}) == 2


def test_the_bench_chart_grid_hides_spare_panels_and_falls_back_to_the_first_set(drawn_figures):
    from nncompress.benchmark import plot

    rep = _sample_report()
    rep.groups = {"g1": ["a.txt"], "g2": ["c.txt"], "g3": ["a.txt", "c.txt"], "g4": ["a.txt"]}
    plot.plot(rep, "four.png")
    fig = drawn_figures[-1][0]
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in fig.axes] == [(2, 3)] * 6
    assert [ax.axison for ax in fig.axes] == [True] * 4 + [False] * 2
    assert [ax.get_title() for ax in fig.axes[:4]] == ["g1 (1 file)", "g2 (1 file)", "g3 (2 files)", "g4 (1 file)"]
    assert [len(ax.collections) for ax in fig.axes] == [2, 2, 2, 2, 0, 0]
    assert fig._suptitle.get_text().startswith("nncompress bench: ")
    rep.groups = {"none": ["lone.txt"], "other": ["d.txt"]}  # no complete total anywhere
    plot.plot(rep, "empty.png")
    fig = drawn_figures[-1][0]
    assert len(fig.axes) == 1 and fig.axes[0].get_title() == "none (1 file)" and not fig.axes[0].collections


def test_the_bench_chart_leaves_out_totals_without_a_bpc_or_a_speed(drawn_figures):
    """A point needs both coordinates: a total with no speed (or a speed of 0, which a log axis
    cannot show) or no bpc is not drawn."""
    from nncompress.benchmark import plot

    rep = _sample_report()
    rep.groups = {"set": ["a.txt"]}
    base = {"group": "set", "label": "x", "bpc": 2.0, "comp_kbs": 10.0}
    rows = [base | {"compressor": "gzip", "label": "gzip -9 (zlib)"},
            base | {"compressor": "nnc-1", "comp_kbs": None}, base | {"compressor": "nnc-1", "comp_kbs": 0.0},
            base | {"compressor": "nnc-1", "bpc": None}]
    rep.totals = lambda: rows
    plot.plot(rep, "p.png")
    [ax] = drawn_figures[-1][0].axes
    assert [p.get_offsets().tolist() for p in ax.collections] == [[[10.0, 2.0]]]
