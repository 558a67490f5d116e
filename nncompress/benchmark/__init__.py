"""`nncompress bench`: nncompress against standard and context-mixing compressors.

    nncompress bench [FILE|DIR|SET ...] [--with NAMES] [--levels 1,6,9] [--corpora DIR]
                     [--json OUT] [--markdown OUT] [--plot OUT.png]
    nncompress bench fetch [SET ...] [--dest DIR] [--base-url URL]
    nncompress bench --list

FILE|DIR|SET is resolved by :mod:`nncompress.targets` (the same rule as `nncompress analyze`); a
SET is a corpus set of the shipped catalog (canterbury, calgary, enwik8_1M, large, utf8, all),
its files found and SHA-256-checked by :mod:`nncompress.corpora`.

Rooms: :mod:`.targets` (the files and groups of a run), :mod:`.worker` (one timed operation in a
fresh interpreter, ``python -m nncompress.benchmark.worker``), :mod:`.measurement` (spawning workers,
peak memory, the row cache, the machine description), :mod:`.report` (totals, tables, JSON),
:mod:`.plot` (the chart), :mod:`.command` (the command line).  The compressors themselves are
:mod:`nncompress.comparators`, shared with `analyze` and `demo`.

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
  worker (see ``measurement._LAUNCHER``: on Linux ru_maxrss counts the pre-exec address space, so the worker is
  not forked from this large process).  It is the whole process: the interpreter and
  imported modules count (a bare worker is about 10 MiB; numpy + numba about 100 MiB).  tracemalloc
  would miss numpy buffers and numba's allocations.
"""

import importlib

# Names are imported from their rooms on first use (PEP 562), so that starting the worker
# (`python -m nncompress.benchmark.worker`, which imports this package first) loads nothing but
# the worker and its codec: every MiB imported here would show in each comparator's peak memory.
_ROOMS = {
    "comparators": ["ALIASES", "ALL_KEYS", "Comparator", "nncompress_comparator", "parse_levels",
                    "python_codec", "select_comparators"],
    "command": ["build_parser", "main"],
    "measurement": ["DEFAULT_TIMEOUT", "cache_key", "cpu_model", "load_cache", "measure", "run", "save_cache",
                "system_info"],
    "report": ["FILE_COLUMNS", "METHOD", "TOTAL_COLUMNS", "Report", "aggregate", "format_markdown",
               "format_text", "report_from_json", "write_outputs"],
    "targets": ["BenchFile", "bench_files", "file_info"],
    "worker": ["DEFAULT_MIN_TIME", "MAX_REPS"],
}
_WHERE = {name: room for room, names in _ROOMS.items() for name in names}
__all__ = list(_WHERE)


def __getattr__(name: str):
    room = _WHERE.get(name)
    if room is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    package = __name__.rpartition(".")[0] if room == "comparators" else __name__
    value = getattr(importlib.import_module(f"{package}.{room}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
