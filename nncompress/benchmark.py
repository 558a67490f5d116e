"""`nncompress bench`: nncompress against standard and context-mixing compressors.

    nncompress bench [FILE|DIR|SET ...] [--with NAMES] [--levels 1,6,9] [--corpora DIR]
                     [--json OUT] [--markdown OUT] [--plot OUT.png]
    nncompress bench fetch [SET ...] [--dest DIR] [--base-url URL]
    nncompress bench --list

SET is a corpus set of ``corpora/sets.tsv`` (canterbury, calgary, enwik8_1M, large, utf8, all);
its files are found and SHA-256-checked by :mod:`nncompress.corpora`.

Method (also written into every report):

* Every (file, compressor) pair is measured in two fresh worker processes, one compressing and
  one decompressing; data passes between them through temporary files.  The decompressed
  output is compared byte for byte with the original in this process, and the result
  ("ok", "FAILED" or "error: ...") is always shown.
* Sizes are whole containers (zlib, bzip2, xz, zstd frame, brotli stream, raw PPMd stream,
  zpaq archive, paq9a stream, .nnc file); bpc = 8 x compressed bytes / original bytes.
* Speed is single-threaded (zstd, zpaq and the numba kernels are pinned to one thread) and warm:
  the timed call is repeated until it has run for at least ``--min-time`` seconds (at most
  ``MAX_REPS`` times) and the fastest repetition is kept.  For nncompress the worker first
  compresses and decompresses a few bytes at the same level, which compiles or loads the numba
  kernels; that time is reported separately ("warm-up s") and is not in the speed.
  KB/s means 1024 bytes of *original* data per second, for both directions.
* Peak memory is the peak resident set size (ru_maxrss) of the worker process, read with
  ``os.wait4`` - the per-child form of ``getrusage(RUSAGE_CHILDREN)``, which on Linux includes the
  worker's own children (external compressors) - by a bare launcher process that starts the
  worker (see ``_LAUNCHER``: on Linux ru_maxrss counts the pre-exec address space, so the worker is
  not forked from this large process).  It is the whole process: the interpreter and
  imported modules count (a bare worker is about 10 MiB; numpy + numba about 100 MiB).  tracemalloc
  would miss numpy buffers and numba's allocations.
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--worker":
    # Run as a script (a measuring worker): keep the package folder off sys.path, put the
    # repository root on it, and import nothing heavy before the codec is known.
    import os as _os

    sys.path[0] = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

DEFAULT_MIN_TIME = 0.3
MAX_REPS = 25
DEFAULT_TIMEOUT = 4 * 3600
PPMD_MEM = 256 << 20
WARMUP_TEXT = b"nncompress warm-up: compile or load the numba kernels before timing. " * 4
KB = 1024
MIB = 1024 * 1024


# ==================================================================================================
# Worker side: runs in a fresh interpreter, measures one operation.
# ==================================================================================================

def python_codec(name: str, args: dict | None = None):
    """(compress, decompress) callables for an in-process codec (ImportError if not installed)."""
    args = args or {}
    if name == "zlib":
        import zlib
        return (lambda d: zlib.compress(d, args.get("level", 9))), zlib.decompress
    if name == "bz2":
        import bz2
        return (lambda d: bz2.compress(d, args.get("level", 9))), bz2.decompress
    if name == "lzma":
        import lzma
        preset = args.get("preset", 9) | (lzma.PRESET_EXTREME if args.get("extreme", True) else 0)
        return (lambda d: lzma.compress(d, preset=preset)), lzma.decompress
    if name == "zstd":
        import zstandard
        compressor = zstandard.ZstdCompressor(level=args["level"], threads=0)
        decompressor = zstandard.ZstdDecompressor()
        return compressor.compress, decompressor.decompress
    if name == "brotli":
        import brotli
        return (lambda d: brotli.compress(d, quality=args.get("quality", 11))), brotli.decompress
    if name == "ppmd":
        import pyppmd
        kw = dict(max_order=args["order"], mem_size=args.get("mem", PPMD_MEM), variant=args.get("variant", "I"))
        return (lambda d: pyppmd.compress(d, **kw)), (lambda d: pyppmd.decompress(d, **kw))
    if name == "zpaq":
        import zpaq
        return ((lambda d: zpaq.compress(d, level=args.get("level", 5), threads=1)),
                (lambda d: zpaq.decompress(d, threads=1)))
    if name == "paq9a":
        import paq
        return paq.compress, paq.decompress
    raise ValueError(f"unknown codec {name!r}")


def _worker(request: dict) -> dict:
    import resource

    spec, op = request["spec"], request["op"]
    min_time, max_reps = request.get("min_time", DEFAULT_MIN_TIME), request.get("max_reps", MAX_REPS)
    result: dict = {"warmup_s": None}
    external = spec["type"] == "external"
    if spec["type"] == "nncompress":
        import nncompress

        level = spec["level"]
        t0 = time.perf_counter()
        nncompress.decompress(nncompress.compress(WARMUP_TEXT, level))
        result["warmup_s"] = time.perf_counter() - t0
        funcs = (lambda d: nncompress.compress(d, level)), nncompress.decompress
    elif not external:
        funcs = python_codec(spec["codec"], spec.get("args", {}))
    result["baseline_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    if external:
        command = [part.format(exe=spec["exe"], input=request["src"], output=request["dst"])
                   for part in spec[op]]
        while True:
            if os.path.exists(request["dst"]):
                os.unlink(request["dst"])
            t0 = time.perf_counter()
            done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
            times.append(time.perf_counter() - t0)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} exited with status {done.returncode}: "
                                   f"{done.stderr.decode(errors='replace').strip()[-300:]}")
            if not os.path.exists(request["dst"]):
                raise RuntimeError(f"{' '.join(command)} wrote no output file")
            if sum(times) >= min_time or len(times) >= max_reps:
                break
    else:
        function = funcs[0] if op == "compress" else funcs[1]
        with open(request["src"], "rb") as f:
            data = f.read()
        while True:
            out = None
            t0 = time.perf_counter()
            out = function(data)
            times.append(time.perf_counter() - t0)
            if sum(times) >= min_time or len(times) >= max_reps:
                break
        with open(request["dst"], "wb") as f:
            f.write(out)
    result.update(seconds=min(times), reps=len(times), total_s=sum(times),
                  self_rss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  children_rss_kib=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return result


def _worker_main(argv) -> int:
    request = json.loads(argv[0])
    try:
        result = _worker(request)
    except BaseException as exc:  # report, never hang the parent
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps(result))
    return 0


# ==================================================================================================
# Comparators
# ==================================================================================================

@dataclass
class Comparator:
    key: str
    label: str
    spec: dict
    version: str = ""
    available: bool = True
    note: str = ""


def _dist_version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


# key, label, codec, args, module, distribution
_PYTHON = [
    ("gzip", "gzip -9 (zlib)", "zlib", {"level": 9}, "zlib", None),
    ("bzip2", "bzip2 -9", "bz2", {"level": 9}, "bz2", None),
    ("xz", "xz -9e (lzma)", "lzma", {"preset": 9, "extreme": True}, "lzma", None),
    ("zstd19", "zstd -19", "zstd", {"level": 19}, "zstandard", "zstandard"),
    ("zstd22", "zstd --ultra -22", "zstd", {"level": 22}, "zstandard", "zstandard"),
    ("brotli", "brotli -11", "brotli", {"quality": 11}, "brotli", "brotli"),
    ("ppmd6", "PPMd var.I -o6 256 MiB", "ppmd", {"order": 6, "mem": PPMD_MEM}, "pyppmd", "pyppmd"),
    ("ppmd16", "PPMd var.I -o16 256 MiB", "ppmd", {"order": 16, "mem": PPMD_MEM}, "pyppmd", "pyppmd"),
    ("zpaq5", "zpaq -m5", "zpaq", {"level": 5}, "zpaq", "zpaq"),
    ("paq9a", "paq9a", "paq9a", {}, "paq", "paq"),
]

# key, label, environment variable, executable names, compress and decompress argument templates
EXTERNAL = [
    ("paq8px", "paq8px -8", "NNC_PAQ8PX", ["paq8px"],
     ["{exe}", "-8", "{input}", "{output}"], ["{exe}", "-d", "{input}", "{output}"]),
    ("cmix", "cmix", "NNC_CMIX", ["cmix"],
     ["{exe}", "-c", "{input}", "{output}"], ["{exe}", "-d", "{input}", "{output}"]),
    ("lstm-compress", "lstm-compress", "NNC_LSTM_COMPRESS", ["lstm-compress"],
     ["{exe}", "-c", "{input}", "{output}"], ["{exe}", "-d", "{input}", "{output}"]),
]

ALIASES = {
    "zlib": ["gzip"], "gz": ["gzip"], "bz2": ["bzip2"], "lzma": ["xz"], "zstd": ["zstd19", "zstd22"],
    "ppmd": ["ppmd6", "ppmd16"], "zpaq": ["zpaq5"], "paq": ["paq9a"], "lstm": ["lstm-compress"],
}
ALL_KEYS = [row[0] for row in _PYTHON] + [row[0] for row in EXTERNAL]


def _python_comparator(row) -> Comparator:
    import importlib.util
    import zlib

    key, label, codec, args, module, dist = row
    spec = {"type": "python", "codec": codec, "args": args}
    if importlib.util.find_spec(module) is None:
        hint = {"paq": "make install-bench"}.get(module, f"pip install {dist}")
        return Comparator(key, label, spec, available=False,
                          note=f"skipped: Python package '{dist}' is not installed ({hint})")
    if module == "zlib":
        version = f"zlib {zlib.ZLIB_RUNTIME_VERSION}"
    elif dist:
        version = f"{dist} {_dist_version(dist)}"
    else:
        version = f"Python {sys.version.split()[0]} {module}"
    return Comparator(key, label, spec, version=version)


def _external_comparator(row) -> Comparator:
    key, label, env, names, compress_args, decompress_args = row
    exe = os.environ.get(env) or next(filter(None, (shutil.which(name) for name in names)), None)
    spec = {"type": "external", "exe": exe or "", "compress": compress_args, "decompress": decompress_args}
    if not exe:
        return Comparator(key, label, spec, available=False,
                          note=f"skipped: '{names[0]}' not found on PATH (or set {env}=/path/to/it)")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        return Comparator(key, label, spec, available=False, note=f"skipped: {env}={exe} is not an executable")
    return Comparator(key, label, spec, version=f"{os.path.basename(exe)} ({exe})")


def nncompress_comparator(level: int) -> Comparator:
    from . import FORMAT_VERSION, __version__

    return Comparator(f"nnc-{level}", f"nncompress -{level}", {"type": "nncompress", "level": level},
                      version=f"nncompress {__version__} (format {FORMAT_VERSION})")


def select_comparators(names: str | list[str] | None = None) -> list[Comparator]:
    """Comparators by name (None or 'all': every known one); unavailable ones carry a note."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names or names == ["all"]:
        keys = ALL_KEYS
    else:
        keys = []
        for name in names:
            if name in ("none",):
                continue
            expanded = ALIASES.get(name.lower(), [name.lower()])
            for key in expanded:
                if key not in ALL_KEYS:
                    raise ValueError(f"unknown compressor {name!r} (known: {', '.join(ALL_KEYS + sorted(ALIASES))})")
                if key not in keys:
                    keys.append(key)
    out = []
    for key in keys:
        row = next((r for r in _PYTHON if r[0] == key), None)
        out.append(_python_comparator(row) if row else _external_comparator(next(r for r in EXTERNAL if r[0] == key)))
    return out


def parse_levels(text: str | None) -> list[int]:
    if text is None or text.strip().lower() in ("", "none", "0"):
        return []
    levels = []
    for part in text.split(","):
        level = int(part)
        if not 1 <= level <= 9:
            raise ValueError(f"nncompress level must be 1..9, not {level}")
        if level not in levels:
            levels.append(level)
    return levels


# ==================================================================================================
# Measuring
# ==================================================================================================

THIS_FILE = os.path.abspath(__file__)


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
    command = [sys.executable, "-S", "-c", _LAUNCHER, sys.executable, THIS_FILE, "--worker", json.dumps(request)]
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


def _rate(size: int, seconds) -> float | None:
    return size / KB / seconds if seconds else None


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
        row["comp_kbs"] = _rate(len(data), row["comp_s"])
        result, peak = _spawn(dict(common, op="decompress", src=str(packed), dst=str(unpacked)), timeout)
        if "error" in result:
            row["error"] = f"decompress: {result['error']}"
            return row
        row.update(decomp_s=result["seconds"], decomp_reps=result["reps"], decomp_peak_mib=peak / KB,
                   decomp_base_mib=result["baseline_rss_kib"] / KB)
        row["decomp_kbs"] = _rate(len(data), row["decomp_s"])
        row["roundtrip"] = "ok" if unpacked.read_bytes() == data else "FAILED"
        if row["roundtrip"] != "ok":
            row["error"] = "decompressed output differs from the original"
        return row
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ==================================================================================================
# Running a plan and summarising it
# ==================================================================================================

@dataclass
class BenchFile:
    name: str
    path: Path
    bytes: int
    sha256: str


@dataclass
class Report:
    files: list[BenchFile]
    groups: dict[str, list[str]]
    comparators: list[Comparator]
    results: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def totals(self) -> list[dict]:
        return aggregate(self)

    def to_json(self) -> dict:
        return {
            "meta": self.meta,
            "method": METHOD,
            "comparators": [{k: v for k, v in asdict(c).items() if k != "spec"} | {"spec": c.spec}
                            for c in self.comparators],
            "files": [{"name": f.name, "path": str(f.path), "bytes": f.bytes, "sha256": f.sha256}
                      for f in self.files],
            "groups": self.groups,
            "results": self.results,
            "totals": self.totals(),
        }


def report_from_json(blob: dict) -> Report:
    """Rebuild a Report from ``Report.to_json()`` output (to re-render tables and charts)."""
    comparators = [Comparator(c["key"], c["label"], c.get("spec", {}), c.get("version", ""),
                              c.get("available", True), c.get("note", "")) for c in blob["comparators"]]
    files = [BenchFile(f["name"], Path(f["path"]), f["bytes"], f["sha256"]) for f in blob["files"]]
    return Report(files, blob["groups"], comparators, list(blob["results"]), dict(blob.get("meta", {})))


METHOD = ("Each (file, compressor) pair runs in two fresh worker processes (compress, decompress); "
          "the output is compared byte for byte with the original. bpc = 8 x compressed bytes / "
          "original bytes, container included. Speeds are single-threaded and warm: the fastest of "
          f"repeated calls totalling at least the minimum time (at most {MAX_REPS} calls), in KB/s "
          "of original data (1 KB = 1024 bytes); nncompress first compresses and decompresses a few "
          "bytes to compile or load its numba kernels, reported as warm-up s. Peak memory is the "
          "worker's peak resident set size (ru_maxrss from os.wait4, i.e. getrusage of that child, "
          "including its own children, read by a bare launcher process so that the benchmark's own "
          "memory does not leak in), interpreter and imported modules included.")


def file_info(path: Path, name: str | None = None) -> BenchFile:
    import hashlib

    data = path.read_bytes()
    return BenchFile(name or path.name, path, len(data), hashlib.sha256(data).hexdigest())


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
        timeout: float = DEFAULT_TIMEOUT, progress: bool = True, meta: dict | None = None) -> Report:
    """Measure every (file, comparator) of the plan; rows found in ``cache`` are reused."""
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
    try:
        data_cache: tuple[str, bytes] | None = None
        for index, (bench_file, comparator) in enumerate(jobs, 1):
            if bar is not None:
                bar.set_description(f"{bench_file.name} {comparator.label}")
            hit = cache.get(cache_key(bench_file.sha256, comparator)) if cache else None
            if hit is not None:
                row = dict(hit, cached=True, label=comparator.label)
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
                      f"{_fmt(row['bpc'], '.3f'):>6} bpc  {row['roundtrip']}{'  (cached)' if row['cached'] else ''}",
                      file=sys.stderr, flush=True)
    finally:
        if bar is not None:
            bar.close()
    if hasattr(os, "getloadavg"):
        report.meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    return report


def aggregate(report: Report) -> list[dict]:
    """Per group and compressor: totals over the group's files (complete only if every file ran)."""
    rows = {(r["file"], r["compressor"]): r for r in report.results}
    sizes = {f.name: f.bytes for f in report.files}
    out = []
    for group, names in report.groups.items():
        for comparator in report.comparators:
            if not comparator.available:
                continue
            found = [rows[(n, comparator.key)] for n in names if (n, comparator.key) in rows]
            if not found:
                continue
            ok = [r for r in found if r["roundtrip"] == "ok"]
            complete = len(ok) == len(names)
            original = sum(sizes[n] for n in names)
            total = sum(r["compressed"] for r in found if r["compressed"] is not None)
            comp_s = sum(r["comp_s"] for r in ok)
            decomp_s = sum(r["decomp_s"] for r in ok)
            peaks = [r["comp_peak_mib"] for r in found if r["comp_peak_mib"]] + \
                    [r["decomp_peak_mib"] for r in found if r["decomp_peak_mib"]]
            failed = len(found) - len(ok)
            out.append({
                "group": group, "compressor": comparator.key, "label": comparator.label,
                "files": len(names), "measured": len(found), "complete": complete,
                "original": original, "compressed": total if complete else None,
                "bpc": 8 * total / original if complete and original else None,
                "mean_bpc": sum(r["bpc"] for r in ok) / len(ok) if complete and ok else None,
                "comp_kbs": _rate(original, comp_s) if complete else None,
                "decomp_kbs": _rate(original, decomp_s) if complete else None,
                "peak_mib": max(peaks) if peaks else None,
                "roundtrip": "ok" if complete else (f"FAILED ({failed})" if failed else
                                                   f"incomplete ({len(found)}/{len(names)})"),
            })
    return out


# ==================================================================================================
# Output
# ==================================================================================================

def _fmt(value, spec: str, empty: str = "-") -> str:
    return empty if value is None else format(value, spec)


def _speed(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


FILE_COLUMNS = ["file", "compressor", "bytes", "compressed", "bpc", "comp KB/s", "decomp KB/s",
                "comp MiB", "decomp MiB", "warm-up s", "round trip"]


def _file_cells(row: dict) -> list[str]:
    trip = row["roundtrip"] if row["roundtrip"] != "error" else f"error: {row['error']}"
    if row.get("cached"):
        trip += " (cached)"
    return [row["file"], row["label"], f"{row['bytes']:,}", _fmt(row["compressed"], ","), _fmt(row["bpc"], ".3f"),
            _speed(row["comp_kbs"]), _speed(row["decomp_kbs"]), _fmt(row["comp_peak_mib"], ".0f"),
            _fmt(row["decomp_peak_mib"], ".0f"), _fmt(row["warmup_s"], ".2f", ""), trip]


TOTAL_COLUMNS = ["compressor", "files", "original", "compressed", "bpc", "mean bpc", "comp KB/s",
                 "decomp KB/s", "peak MiB", "round trip"]


def _total_cells(row: dict) -> list[str]:
    return [row["label"], str(row["files"]), f"{row['original']:,}", _fmt(row["compressed"], ","),
            _fmt(row["bpc"], ".3f"), _fmt(row["mean_bpc"], ".3f"), _speed(row["comp_kbs"]),
            _speed(row["decomp_kbs"]), _fmt(row["peak_mib"], ".0f"), row["roundtrip"]]


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    left = {0, 1} if header[0] == "file" else {0}
    left.add(len(header) - 1)

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _md_table(header: list[str], rows: list[list[str]], right_from: int, last_left: bool = True) -> str:
    align = ["---" if i < right_from or (last_left and i == len(header) - 1) else "---:"
             for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def _files(n: int) -> str:
    return f"{n} file" + ("" if n == 1 else "s")


def _sorted_totals(report: Report, group: str) -> list[dict]:
    rows = [t for t in report.totals() if t["group"] == group]
    return sorted(rows, key=lambda t: (t["bpc"] is None, t["bpc"] or 0))


def skipped_notes(report: Report) -> list[str]:
    return [f"{c.label}: {c.note}" for c in report.comparators if not c.available]


def format_text(report: Report) -> str:
    parts = []
    notes = skipped_notes(report)
    if notes:
        parts.append("\n".join(notes))
    parts.append(_text_table(FILE_COLUMNS, [_file_cells(r) for r in report.results]))
    failures = [r for r in report.results if r["roundtrip"] != "ok"]
    if failures:
        parts.append("FAILED round trips:\n" + "\n".join(
            f"  {r['file']}, {r['label']}: {r['roundtrip']} - {r['error']}" for r in failures))
    for group, names in report.groups.items():
        rows = _sorted_totals(report, group)
        if rows:
            parts.append(f"{group}: {_files(len(names))}, total over the set\n" +
                         _text_table(TOTAL_COLUMNS, [_total_cells(t) for t in rows]))
    return "\n\n".join(parts) + "\n"


def format_markdown(report: Report, preamble: str = "") -> str:
    lines = [preamble.rstrip() + "\n"] if preamble else []
    notes = skipped_notes(report)
    lines.append("## Totals per corpus set\n")
    lines.append("Sorted by bpc. *compressed* is the sum over the set's files (how Calgary and Canterbury "
                 "totals are reported); *bpc* = 8 × compressed / original; *mean bpc* is the unweighted "
                 "mean of the files' bpc; speeds are total original bytes / total time; *peak MiB* is the "
                 "largest peak RSS of any run in the set.\n")
    for group, names in report.groups.items():
        rows = _sorted_totals(report, group)
        if not rows:
            continue
        lines.append(f"### {group} ({_files(len(names))}: {', '.join(names)})\n")
        lines.append(_md_table(TOTAL_COLUMNS, [_total_cells(t) for t in rows], 1) + "\n")
    failures = [r for r in report.results if r["roundtrip"] != "ok"]
    if failures:
        lines.append("## Failed round trips\n")
        lines.append("These runs did not give back the original bytes; their sets have no total for that "
                     "compressor.\n")
        lines += [f"* {r['file']}, {r['label']} ({r['version']}): {r['roundtrip']} - {r['error']}" for r in failures]
        lines.append("")
    lines.append("## bpc per file\n")
    keys = [c for c in report.comparators if c.available]
    by = {(r["file"], r["compressor"]): r for r in report.results}
    matrix = []
    for f in report.files:
        cells = [f.name, f"{f.bytes:,}"]
        for c in keys:
            r = by.get((f.name, c.key))
            cells.append("" if r is None else (_fmt(r["bpc"], ".3f") if r["roundtrip"] == "ok" else f"**{r['roundtrip']}**"))
        matrix.append(cells)
    lines.append(_md_table(["file", "bytes"] + [c.label for c in keys], matrix, 1, last_left=False) + "\n")
    lines.append("## Every run\n")
    lines.append(_md_table(FILE_COLUMNS, [_file_cells(r) for r in report.results], 2) + "\n")
    lines.append("## Method\n")
    lines.append(METHOD + "\n")
    if notes:
        lines.append("Skipped compressors:\n")
        lines += [f"* {n}" for n in notes]
        lines.append("")
    lines.append("Compressor versions:\n")
    lines += [f"* {c.label}: {c.version}" for c in report.comparators if c.available]
    return "\n".join(lines) + "\n"


def plot(report: Report, path, title: str = "nncompress bench") -> None:
    """bpc against compression speed (log x), one point per compressor, one panel per corpus set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [g for g in report.groups if any(t["bpc"] is not None for t in report.totals() if t["group"] == g)]
    if not groups:
        groups = list(report.groups)[:1]
    count = max(1, len(groups))
    cols = min(3, count)
    rows = (count + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows + 0.8), squeeze=False)
    comps = [c for c in report.comparators if c.available]
    markers = "osD^v<>pPX*hH"
    cmap = plt.get_cmap("tab20")
    style = {c.key: (cmap(i % 20), markers[i % len(markers)]) for i, c in enumerate(comps)}
    totals = report.totals()
    for ax, group in zip(axes.flat, groups):
        for t in totals:
            if t["group"] != group or t["bpc"] is None or not t["comp_kbs"]:
                continue
            color, marker = style[t["compressor"]]
            ours = t["compressor"].startswith("nnc-")
            ax.scatter(t["comp_kbs"], t["bpc"], color=color, marker=marker, s=130 if ours else 60, label=t["label"],
                       edgecolors="black", linewidths=0.5, zorder=3)
        ax.set_xscale("log")
        ax.set_xlabel("compression speed (KB/s, log scale)")
        ax.set_ylabel("bits per character (bpc)")
        ax.set_title(f"{group} ({_files(len(report.groups[group]))})")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], linestyle="", marker=style[c.key][1], color=style[c.key][0],
                          markeredgecolor="black", markersize=11 if c.key.startswith("nnc-") else 8,
                          label=c.label) for c in comps]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), frameon=False)
    fig.suptitle(f"{title}: bits per character vs compression speed, per corpus set "
                 "(lower = smaller, right = faster)")
    fig.tight_layout(rect=(0, 0.06 + 0.03 * ((len(handles) - 1) // 5), 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(report: Report, *, json_path=None, markdown_path=None, plot_path=None, preamble: str = "") -> None:
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(report.to_json(), f, indent=1)
            f.write("\n")
    if markdown_path:
        with open(markdown_path, "w", encoding="utf-8") as f:
            f.write(format_markdown(report, preamble))
    if plot_path:
        plot(report, plot_path)


# ==================================================================================================
# Machine description
# ==================================================================================================

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
        version = _dist_version(dist)
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


# ==================================================================================================
# Command line
# ==================================================================================================

def _targets(targets: list[str], corpora_dir) -> tuple[list[BenchFile], dict[str, list[str]]]:
    from . import corpora

    catalog = corpora.load_catalog()
    groups: dict[str, list[Path]] = {}
    for target in targets:
        path = Path(target)
        if path.is_file():
            groups.setdefault("files", []).append(path)
        elif path.is_dir():
            files = sorted(p for p in path.iterdir()
                           if p.is_file() and not p.name.startswith(".") and p.name != "MANIFEST.tsv")
            groups[path.resolve().name or str(path)] = files
        elif corpora.is_set(target, catalog):
            groups[target] = corpora.resolve_set(target, corpora_dir, catalog=catalog)
        else:
            raise corpora.CorpusError(f"{target}: no such file, folder or corpus set "
                                      f"(sets: {', '.join(corpora.set_names(catalog))})")
    seen: dict[Path, BenchFile] = {}
    names: dict[str, Path] = {}
    for paths in groups.values():
        for p in paths:
            key = p.resolve()
            if key in seen:
                continue
            name = p.name if p.name not in names else str(p)
            names[name] = key
            seen[key] = file_info(p, name)
    return list(seen.values()), {g: [seen[p.resolve()].name for p in ps] for g, ps in groups.items()}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nncompress bench",
        description="Compare nncompress with gzip, bzip2, xz, zstd, brotli, PPMd, zpaq, paq9a and any "
                    "paq8px / cmix / lstm-compress on PATH: size, bpc, speed, peak memory, verified round "
                    "trips.  'nncompress bench fetch --help' downloads the corpora.",
        epilog="Method: " + METHOD)
    parser.add_argument("targets", nargs="*", metavar="FILE|DIR|SET",
                        help="files, folders (their files) or corpus sets (default: canterbury)")
    parser.add_argument("--with", dest="with_", metavar="NAMES", default="all",
                        help=f"comma-separated comparators (default all): {', '.join(ALL_KEYS)}; "
                             "aliases zlib, bz2, lzma, zstd, ppmd, zpaq, paq; 'none' for nncompress only")
    parser.add_argument("--levels", default="6", help="nncompress levels, e.g. 1,6,9 (default 6; 'none' to skip)")
    parser.add_argument("--corpora", metavar="DIR", help="folder holding the corpus files (else NNC_CORPORA, "
                                                         "../shared/corpora, ~/.cache/nncompress/corpora)")
    parser.add_argument("--json", metavar="OUT", help="write every result as JSON")
    parser.add_argument("--markdown", metavar="OUT", help="write the tables as Markdown")
    parser.add_argument("--plot", metavar="OUT.png", help="write a bpc vs KB/s chart (PNG)")
    parser.add_argument("--min-time", type=float, default=DEFAULT_MIN_TIME,
                        help=f"repeat each timed call until this many seconds (default {DEFAULT_MIN_TIME})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds allowed per worker")
    parser.add_argument("--list", action="store_true", help="list corpus sets and comparators, then exit")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on standard error")
    return parser


def _list(corpora_dir) -> int:
    from . import corpora

    catalog = corpora.load_catalog()
    print("corpus sets (corpora/sets.tsv):")
    for name in corpora.set_names(catalog):
        entries = corpora.set_files(name, catalog)
        print(f"  {name:<12} {_files(len(entries)):>8}, {sum(e.bytes for e in entries):>10,} bytes")
    print("searched in: " + ", ".join(str(d) for d in corpora.search_dirs(corpora_dir)))
    print("comparators:")
    for c in select_comparators(None):
        print(f"  {c.key:<14} {c.label:<22} {c.version if c.available else c.note}")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "fetch":
        from .corpora import fetch_main

        return fetch_main(argv[1:])
    args = build_parser().parse_args(argv)
    from .corpora import CorpusError

    if args.list:
        return _list(args.corpora)
    try:
        comparators = select_comparators(args.with_)
        comparators += [nncompress_comparator(level) for level in parse_levels(args.levels)]
        files, groups = _targets(args.targets or ["canterbury"], args.corpora)
    except (ValueError, CorpusError) as exc:
        print(f"nncompress bench: {exc}", file=sys.stderr)
        return 1
    if not comparators:
        print("nncompress bench: nothing to run (no comparators and no levels)", file=sys.stderr)
        return 1
    meta = system_info(comparators) | {"command": "nncompress bench " + " ".join(argv)}
    report = run([(f, comparators) for f in files], groups, min_time=args.min_time, timeout=args.timeout,
                 progress=not args.quiet, meta=meta)
    sys.stdout.write(format_text(report))
    preamble = (f"# nncompress bench\n\n{meta['date']}; {meta['cpu']}, {meta['cores']} cores; "
                f"Python {meta['python']}\n\n`{meta['command']}`\n")
    write_outputs(report, json_path=args.json, markdown_path=args.markdown, plot_path=args.plot, preamble=preamble)
    return 0 if all(r["roundtrip"] == "ok" for r in report.results) else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.exit(_worker_main(sys.argv[2:]))
    sys.exit(main())
