"""Measuring: each (file, comparator) pair in two fresh worker processes, with peak memory read
per process; a comparator-row cache; the machine description written into reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..comparators import Comparator, dist_version
from .report import KB, METHOD, Report, fmt_value, rate
from .targets import BenchFile
from .worker import DEFAULT_MIN_TIME, MAX_REPS

DEFAULT_TIMEOUT = 4 * 3600
WORKER = [sys.executable, "-m", "nncompress.benchmark.worker"]

# A tiny launcher between this (large) process and each worker.  On Linux a process's ru_maxrss
# starts from the peak RSS of the address space it had before exec, so a worker forked straight
# from a process holding numba would report that process's memory; the launcher (a bare
# interpreter, -S: no site-packages) starts the worker and reports os.wait4's ru_maxrss for it.
_LAUNCHER = (
    "import os, sys\n"
    "pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "sys.stdout.flush()\n"
    "print('{\"launcher_maxrss_kib\": %d, \"status\": %d}' % (usage.ru_maxrss, os.waitstatus_to_exitcode(status)))\n"
)


def _spawn(request: dict, timeout: float) -> tuple[dict, int]:
    """Run one worker through the launcher; return its JSON result and its peak RSS in KiB."""
    env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    command = [sys.executable, "-S", "-c", _LAUNCHER, *WORKER, json.dumps(request)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return {"error": f"timed out after {timeout:.0f} s"}, 0
        out.seek(0)
        err.seek(0)
        lines = out.read().decode(errors="replace").strip().splitlines()
        try:
            launcher = json.loads(lines[-1])
            result = json.loads(lines[-2])
        except (IndexError, ValueError):
            tail = err.read().decode(errors="replace").strip()[-400:]
            return {"error": f"worker failed (exit status {proc.returncode}): {tail}"}, 0
        if "error" not in result and launcher["status"] != 0:
            result = {"error": f"worker exited with status {launcher['status']}"}
        return result, launcher["launcher_maxrss_kib"]



def measure(path: Path, data: bytes, comparator: Comparator, *, min_time: float = DEFAULT_MIN_TIME,
            timeout: float = DEFAULT_TIMEOUT) -> dict:
    """Compress and decompress one file with one comparator in fresh workers; a result row."""
    row = {"compressor": comparator.key, "label": comparator.label, "version": comparator.version,
           "compressed": None, "bpc": None, "comp_s": None, "decomp_s": None, "comp_kbs": None,
           "decomp_kbs": None, "comp_reps": None, "decomp_reps": None, "comp_peak_mib": None,
           "decomp_peak_mib": None, "comp_base_mib": None, "decomp_base_mib": None, "warmup_s": None,
           "roundtrip": "error", "error": None, "cached": False,
           "measured": time.strftime("%Y-%m-%d %H:%M:%S")}
    tmp = Path(tempfile.mkdtemp(prefix="nncbench-"))
    try:
        packed, unpacked = tmp / "packed", tmp / "unpacked"
        common = {"spec": comparator.spec, "min_time": min_time, "max_reps": MAX_REPS}
        result, peak = _spawn(dict(common, op="compress", src=str(path), dst=str(packed)), timeout)
        if "error" in result:
            row["error"] = f"compress: {result['error']}"
            return row
        row.update(compressed=packed.stat().st_size, comp_s=result["seconds"], comp_reps=result["reps"],
                   comp_peak_mib=peak / KB, comp_base_mib=result["baseline_rss_kib"] / KB,
                   warmup_s=result["warmup_s"])
        row["bpc"] = 8 * row["compressed"] / len(data) if data else None
        row["comp_kbs"] = rate(len(data), row["comp_s"])
        result, peak = _spawn(dict(common, op="decompress", src=str(packed), dst=str(unpacked)), timeout)
        if "error" in result:
            row["error"] = f"decompress: {result['error']}"
            return row
        row.update(decomp_s=result["seconds"], decomp_reps=result["reps"], decomp_peak_mib=peak / KB,
                   decomp_base_mib=result["baseline_rss_kib"] / KB)
        row["decomp_kbs"] = rate(len(data), row["decomp_s"])
        row["roundtrip"] = "ok" if unpacked.read_bytes() == data else "FAILED"
        if row["roundtrip"] != "ok":
            row["error"] = "decompressed output differs from the original"
        return row
    finally:
        shutil.rmtree(tmp, ignore_errors=True)



def measure_shipped(name: str, data: bytes, comparator: Comparator, min_time: float, timeout: float) -> dict:
    """`measure` on a cluster worker: the file travels with the task (a worker on another machine
    cannot read the client's path), is written to the worker's temporary folder and measured there."""
    tmp = Path(tempfile.mkdtemp(prefix="nncbench-in-"))
    try:
        path = tmp / Path(name).name
        path.write_bytes(data)
        return measure(path, data, comparator, min_time=min_time, timeout=timeout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cache_key(sha256: str, comparator: Comparator) -> str:
    return f"{sha256}:{comparator.key}:{comparator.version}"


def load_cache(path) -> dict[str, dict]:
    with open(path, encoding="utf-8") as f:
        blob = json.load(f)
    return {entry["key"]: entry["row"] for entry in blob.get("entries", [])}


def save_cache(path, report: Report, keep=lambda comparator: comparator.spec["type"] != "nncompress",
               meta: dict | None = None) -> int:
    """Write the rows of the comparators ``keep`` accepts, keyed by file SHA-256, compressor and version."""
    by_key = {c.key: c for c in report.comparators}
    sha = {f.name: f.sha256 for f in report.files}
    entries = []
    for row in report.results:
        comparator = by_key.get(row["compressor"])
        if comparator is None or not keep(comparator) or row.get("roundtrip") != "ok":
            continue
        entries.append({"key": cache_key(sha[row["file"]], comparator), "row": row})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"meta": meta or report.meta, "method": METHOD, "entries": entries}, f, indent=1)
        f.write("\n")
    return len(entries)


def run(plan: list[tuple[BenchFile, list[Comparator]]], groups: dict[str, list[str]], *,
        cache: dict[str, dict] | None = None, min_time: float = DEFAULT_MIN_TIME,
        timeout: float = DEFAULT_TIMEOUT, progress: bool = True, meta: dict | None = None,
        client=None) -> Report:
    """Measure every (file, comparator) of the plan; rows found in ``cache`` are reused.  With a
    dask.distributed ``client`` the measurements run on its workers, all submitted at once and
    collected in plan order (the report is the same shape; speeds are the workers')."""
    comparators: dict[str, Comparator] = {}
    for _, comps in plan:
        for c in comps:
            comparators.setdefault(c.key, c)
    report = Report([f for f, _ in plan], groups, list(comparators.values()), meta=dict(meta or {}))
    jobs = [(f, c) for f, comps in plan for c in comps if c.available]
    bar = None
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(jobs), file=sys.stderr, unit="run", leave=False, dynamic_ncols=True)
    remote = _submit_all(client, jobs, cache, min_time, timeout) if client is not None else {}
    try:
        data_cache: tuple[str, bytes] | None = None
        for index, (bench_file, comparator) in enumerate(jobs, 1):
            if bar is not None:
                bar.set_description(f"{bench_file.name} {comparator.label}")
            hit = cache.get(cache_key(bench_file.sha256, comparator)) if cache else None
            if hit is not None:
                row = dict(hit, cached=True, label=comparator.label)
            elif client is not None:
                row = remote[index].result()
            else:
                if data_cache is None or data_cache[0] != str(bench_file.path):
                    data_cache = (str(bench_file.path), bench_file.path.read_bytes())
                row = measure(bench_file.path, data_cache[1], comparator, min_time=min_time, timeout=timeout)
            row = {"file": bench_file.name, "bytes": bench_file.bytes} | row
            report.results.append(row)
            if bar is not None:
                bar.update()
            elif progress:
                print(f"[{index}/{len(jobs)}] {bench_file.name:<18} {comparator.label:<20} "
                      f"{fmt_value(row['bpc'], '.3f'):>6} bpc  {row['roundtrip']}{'  (cached)' if row['cached'] else ''}",
                      file=sys.stderr, flush=True)
    finally:
        if bar is not None:
            bar.close()
        if remote:
            client.cancel([f for f in remote.values() if not f.done()])
    if hasattr(os, "getloadavg"):
        report.meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    return report



def _submit_all(client, jobs, cache, min_time, timeout) -> dict:
    """Every uncached job as a task: {job index (1-based): future}."""
    futures = {}
    for index, (bench_file, comparator) in enumerate(jobs, 1):
        if cache and cache_key(bench_file.sha256, comparator) in cache:
            continue
        futures[index] = client.submit(measure_shipped, bench_file.name, bench_file.path.read_bytes(),
                                       comparator, min_time, timeout, pure=False)
    return futures


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def system_info(comparators: list[Comparator] = ()) -> dict:
    import platform

    packages = {}
    for dist in ("nncompress", "numpy", "numba", "llvmlite", "constriction", "zstandard", "brotli",
                 "pyppmd", "zpaq", "paq", "matplotlib"):
        version = dist_version(dist)
        if version:
            packages[dist] = version
    import zlib

    packages["zlib"] = zlib.ZLIB_RUNTIME_VERSION
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "loadavg": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "packages": packages,
        "externals": {c.key: c.version for c in comparators if c.spec.get("type") == "external" and c.available},
    }


