"""The Dask engine (issue 13) on a LocalCluster of two worker processes on 127.0.0.1."""

import io
import os
import signal

import pytest

import nncompress
from nncompress.cli import main

distributed = pytest.importorskip("distributed")
from nncompress import cluster  # noqa: E402

SEG = 4096


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as local, distributed.Client(local) as c:
        yield c


@pytest.fixture(scope="module")
def text(sample_text):
    return sample_text[:18_000]


@pytest.fixture(scope="module")
def archive(text):
    return nncompress.compress(text, 1, segment_size=SEG)  # one process, the reference bytes


def test_cluster_writes_the_local_bytes_both_ways(client, text, archive):
    assert nncompress.compress(text, 1, segment_size=SEG, client=client) == archive
    assert nncompress.decompress(archive, client=client) == text
    sink = io.BytesIO()
    cluster.decompress_file(client, io.BytesIO(archive), sink)
    assert sink.getvalue() == text


def test_cli_cluster_option_and_environment(client, text, archive, tmp_path, monkeypatch):
    src = tmp_path / "doc"
    src.write_bytes(text)
    address = client.scheduler.address
    assert main(["-1", "--segment-size", str(SEG), "--cluster", address, str(src)]) == 0
    assert (tmp_path / "doc.nnc").read_bytes() == archive
    monkeypatch.setenv(cluster.ENV_VAR, address)
    assert main(["-d", "-f", str(tmp_path / "doc.nnc")]) == 0
    assert src.read_bytes() == text
    assert main(["-t", str(tmp_path / "doc.nnc")]) == 0


def test_damaged_segment_on_the_cluster(client, archive, capsys, tmp_path):
    damaged = bytearray(archive)
    damaged[len(archive) // 2] ^= 0x10
    with pytest.raises(nncompress.NNCError, match=r"segments damaged \(\d+ verified\)"):
        cluster.decompress_file(client, io.BytesIO(bytes(damaged)), None, verify_all=True)


def test_killed_worker_changes_nothing(client, sample_text):
    """A worker is killed in the middle of the job: Dask re-runs its segments elsewhere and the
    archive is byte-identical to the one-process archive."""
    data = (sample_text * 2)[:40_000]  # 10 segments
    expected = nncompress.compress(data, 1, segment_size=SEG)
    pids = client.run(os.getpid)
    killed = []

    def kill_one_worker(_done):
        if not killed:
            # the first segment is back, the next ones are running on both workers
            victim = sorted(pids.values())[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    sink = io.BytesIO()
    cluster.compress_file(client, io.BytesIO(data), sink, level=1, segment_size=SEG,
                          progress=kill_one_worker)
    assert killed
    assert sink.getvalue() == expected
    client.wait_for_workers(2, timeout=120)  # the nanny restarts it, for the other tests


def test_bench_and_analyze_fan_out_to_the_cluster(client, text, tmp_path, capsys):
    """`bench --cluster` and `analyze --cluster` run their jobs on the workers (the file travels
    with the job) and report what a local run reports: the same sizes and bpc."""
    import json

    from nncompress.analysis.command import main as analyze_main
    from nncompress.benchmark.command import main as bench_main

    src = tmp_path / "doc.txt"
    src.write_bytes(text[:6000])
    address = client.scheduler.address
    runs = {}
    for where, extra in (("local", []), ("cluster", ["--cluster", address])):
        out = tmp_path / f"bench-{where}.json"
        assert bench_main([str(src), "--with", "gzip", "--levels", "1", "--min-time", "0", "-q",
                           "--json", str(out), *extra]) == 0
        rows = json.loads(out.read_text())["results"]
        runs[where] = sorted((r["compressor"], r["compressed"], r["roundtrip"]) for r in rows)
    assert runs["cluster"] == runs["local"]
    assert len(runs["local"]) == 2 and all(rt == "ok" for _, _, rt in runs["local"])
    capsys.readouterr()

    reports = {}
    for where, extra in (("local", []), ("cluster", ["--cluster", address])):
        out = tmp_path / f"analyze-{where}.json"
        assert analyze_main([str(src), "-l", "1", "--no-reference", "-q", "--json", str(out), *extra]) == 0
        (entry,) = json.loads(out.read_text())["files"]
        reports[where] = (entry["name"], entry["path"], entry["nncompress"]["compressed_bytes"],
                          entry["nncompress"]["code_length_bits"], entry["entropy"])
    assert reports["cluster"] == reports["local"]
