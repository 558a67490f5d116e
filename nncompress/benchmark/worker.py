"""The measuring worker: one operation (compress or decompress) of one comparator on one file,
in a fresh interpreter, so that its peak memory is its own.

    python -m nncompress.benchmark.worker '{"spec": ..., "op": "compress", "src": ..., "dst": ...}'

Prints one JSON line: the fastest time of the repeated call and the process's own ru_maxrss
figures, or {"error": ...}.  It imports nothing heavy before the codec is known (the package's
public names are lazy), so a gzip worker does not carry numba's memory.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

from ..comparators import python_codec

DEFAULT_MIN_TIME = 0.3
MAX_REPS = 25
WARMUP_TEXT = b"nncompress warm-up: compile or load the numba kernels before timing. " * 4


def _nncompress_codec(level: int, result: dict, model: str | None = None):
    import nncompress

    options = {"model": model} if model else {}  # branch neural2: --model rnnme
    level = level or nncompress.DEFAULT_LEVEL
    t0 = time.perf_counter()
    nncompress.decompress(nncompress.compress(WARMUP_TEXT, level, **options))
    result["warmup_s"] = time.perf_counter() - t0
    return (lambda d: nncompress.compress(d, level, **options)), nncompress.decompress


def _run_external(spec: dict, request: dict, op: str, min_time: float, max_reps: int) -> list[float]:
    command = [part.format(exe=spec["exe"], input=request["src"], output=request["dst"]) for part in spec[op]]
    times: list[float] = []
    while True:
        if os.path.exists(request["dst"]):
            os.unlink(request["dst"])
        t0 = time.perf_counter()
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited with status {done.returncode}: "
                               f"{done.stderr.decode(errors='replace').strip()[-300:]}")
        if not os.path.exists(request["dst"]):
            raise RuntimeError(f"{' '.join(command)} wrote no output file")
        if sum(times) >= min_time or len(times) >= max_reps:
            return times


def measure_one(request: dict) -> dict:
    spec, op = request["spec"], request["op"]
    min_time, max_reps = request.get("min_time", DEFAULT_MIN_TIME), request.get("max_reps", MAX_REPS)
    result: dict = {"warmup_s": None}
    external = spec["type"] == "external"
    if spec["type"] == "nncompress":
        funcs = _nncompress_codec(spec["level"], result, spec.get("model"))
    elif not external:
        funcs = python_codec(spec["codec"], spec.get("args", {}))
    result["baseline_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if external:
        times = _run_external(spec, request, op, min_time, max_reps)
    else:
        function = funcs[0] if op == "compress" else funcs[1]
        with open(request["src"], "rb") as f:
            data = f.read()
        times = []
        while True:
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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        result = measure_one(json.loads(argv[0]))
    except BaseException as exc:  # report, never hang the parent
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
