"""`nncompress bench`: every column, round-trip flags, skipped comparators, cache reuse.  No timing
assertions; workers are real subprocesses, so this is kept to a few tiny runs."""

import hashlib
import json
import os
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
