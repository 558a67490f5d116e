"""Scale bench (issue 13): segment-size cost, -T throughput, and the >= 100 MB run.

    NNC_CORPORA=DIR python bench/scale.py input OUT [--repeat K]      build the English input
    python bench/scale.py curve INPUT --levels 1,6 --sizes 1M,4M [-j 2]
    python bench/scale.py threads INPUT --level 6 --segment-size 4M [--threads 1,2] [--cluster-workers 2]
    python bench/scale.py big INPUT --level 1 [--cluster-workers 2] [--skip-local]

`input` concatenates shared corpus files (English first) into one file, repeated K times (K > 1 only
for throughput runs: repeats make bpc meaningless).  `curve` prints, per level, the compressed size
of INPUT as one segment and cut into segments of each size, and the cost in percent: a segment is
one independent stream, so the size at segment size S is the sum of api.compress() over the
S-byte pieces (exactly what `nncompress --segment-size S` writes).  The pieces are spread over -j
processes.  `threads` times `nncompress -T N` both ways, checks the archives are byte-identical
and the round trip exact.  `big` compresses and decompresses INPUT with -T 2 and through a
2-worker LocalCluster, reporting wall time, peak memory per worker and sha256 checks.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

ENGLISH = ["bible.txt", "world192.txt", "enwik8_3M", "book2", "lcet10.txt", "plrabn12.txt", "news",
           "alice29.txt", "asyoulik.txt", "paper1"]


def parse_size(text: str) -> int:
    from nncompress.segments import parse_size as parse

    return parse(text)


def build_input(args) -> None:
    corpora = os.environ.get("NNC_CORPORA")
    if not corpora:
        sys.exit("set NNC_CORPORA to the shared corpora directory")
    parts = [open(os.path.join(corpora, name), "rb").read() for name in ENGLISH]
    with open(args.out, "wb") as f:
        for _ in range(args.repeat):
            for part in parts:
                f.write(part)
    size = os.path.getsize(args.out)
    print(f"{args.out}: {size} bytes = ({' + '.join(ENGLISH)}) x {args.repeat}")


def _compressed_size(job):
    path, start, length, level = job
    from nncompress import api

    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(length)
    began = time.perf_counter()
    size = len(api.compress(data, level, segment_size=None))
    return size, time.perf_counter() - began


def curve(args) -> None:
    total = os.path.getsize(args.input)
    levels = [int(x) for x in args.levels.split(",")]
    sizes = [parse_size(x) for x in args.sizes.split(",")]
    print(f"input {args.input}: {total} bytes; load: {os.getloadavg()}", flush=True)
    context = multiprocessing.get_context("forkserver")
    with cf.ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        for level in levels:
            jobs = {"one": [(args.input, 0, total, level)]}
            for size in sizes:
                if size < total:
                    jobs[size] = [(args.input, s, min(size, total - s), level)
                                  for s in range(0, total, size)]
            futures = {key: [pool.submit(_compressed_size, job) for job in js] for key, js in jobs.items()}
            results = {key: [f.result() for f in fs] for key, fs in futures.items()}
            one = results["one"][0][0]
            print(f"level {level}: one segment {one} bytes, {8 * one / total:.4f} bpc "
                  f"({total / 1024 / results['one'][0][1]:.1f} KB/s)", flush=True)
            for size in sizes:
                if size not in results:
                    print(f"level {level}: segment {size >> 20} MiB >= input: same as one segment",
                          flush=True)
                    continue
                packed = sum(r[0] for r in results[size])
                print(f"level {level}: segment {size >> 20} MiB ({len(results[size])} segments) "
                      f"{packed} bytes, {8 * packed / total:.4f} bpc, cost {100 * (packed / one - 1):+.2f}%",
                      flush=True)
    print(f"load at end: {os.getloadavg()}")


def _timed(cmd, **kw):
    began = time.perf_counter()
    subprocess.run(cmd, check=True, **kw)
    return time.perf_counter() - began


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def threads(args) -> None:
    total = os.path.getsize(args.input)
    exe = [sys.executable, "-m", "nncompress"]
    counts = [int(x) for x in args.threads.split(",")]
    print(f"input {args.input}: {total} bytes, level {args.level}, segment size {args.segment_size}; "
          f"load {os.getloadavg()}", flush=True)
    archives = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            archive = os.path.join(tmp, f"t{n}.nnc")
            seconds = _timed(exe + [f"-{args.level}", "-T", str(n), "--segment-size", args.segment_size,
                                    "-c", args.input], stdout=open(archive, "wb"))
            archives[n] = _sha256(archive)
            print(f"-T {n} compress: {seconds:.1f} s, {total / 1024 / seconds:.1f} KB/s, "
                  f"{os.path.getsize(archive)} bytes, load {os.getloadavg()}", flush=True)
            restored = os.path.join(tmp, f"t{n}.out")
            seconds = _timed(exe + ["-d", "-T", str(n), "-c", archive], stdout=open(restored, "wb"))
            ok = _sha256(restored) == _sha256(args.input)
            print(f"-T {n} decompress: {seconds:.1f} s, {total / 1024 / seconds:.1f} KB/s, "
                  f"round trip {'exact' if ok else 'WRONG'}, load {os.getloadavg()}", flush=True)
            os.unlink(restored)
        print("archives identical:", len(set(archives.values())) == 1, flush=True)
        if args.cluster_workers:
            _cluster_round_trip(args.cluster_workers, args.input, os.path.join(tmp, "cluster.nnc"),
                                os.path.join(tmp, "cluster.out"), level=args.level,
                                local=archives[counts[0]], want=_sha256(args.input),
                                segment_size=args.segment_size)


def big(args) -> None:
    """-T 2 and a 2-worker LocalCluster, both ways, with peak memory and sha256 checks."""
    total = os.path.getsize(args.input)
    exe = [sys.executable, "-m", "nncompress", f"-{args.level}"]
    want = _sha256(args.input)
    print(f"input {args.input}: {total} bytes sha256 {want}; load {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        archive = os.path.join(tmp, "t2.nnc")
        restored = os.path.join(tmp, "t2.out")
        local = None
        if not args.skip_local:
            local = _local_big(args, exe, total, want, archive, restored)
        if not args.cluster_workers:
            return
        _cluster_round_trip(args.cluster_workers, args.input, os.path.join(tmp, "cluster.nnc"), restored,
                            level=args.level, local=local, want=want)


def _local_big(args, exe, total, want, archive, restored):
    """-T 2 both ways through the command line; returns the archive's sha256."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    seconds = _timed(exe + ["-T", "2", "-c", args.input], stdout=open(archive, "wb"))
    print(f"-T 2 compress: {seconds:.0f} s, {total / 1024 / seconds:.1f} KB/s, "
          f"{os.path.getsize(archive)} bytes", flush=True)
    seconds = _timed(exe + ["-d", "-T", "2", "-c", archive], stdout=open(restored, "wb"))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"-T 2 decompress: {seconds:.0f} s, {total / 1024 / seconds:.1f} KB/s, sha256 "
          f"{'verified' if _sha256(restored) == want else 'WRONG'}; largest process peak "
          f"{max(peak, before) >> 10} MiB", flush=True)
    local = _sha256(archive)
    os.unlink(restored)
    return local


def _cluster_round_trip(workers, source_path, archive, restored, *, level, local, want,
                        segment_size=None):
    """Both ways through a LocalCluster of processes on 127.0.0.1; local: the sha256 of the
    archive a local run wrote (None: print the cluster archive's own size and sha256)."""
    from distributed import Client, LocalCluster

    from nncompress import cluster as nnc_cluster

    total = os.path.getsize(source_path)
    extra = {} if segment_size is None else {"segment_size": parse_size(segment_size)}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=None) as lc, Client(lc) as client:
        began = time.perf_counter()
        with open(source_path, "rb") as src, open(archive, "wb") as dst:
            nnc_cluster.compress_file(client, src, dst, level=level, size=total, **extra)  # as the CLI does
        seconds = time.perf_counter() - began
        got = _sha256(archive)
        same = (f"sha256 {got}" if local is None
                else "identical to the local archive" if got == local else "DIFFERENT from the local archive")
        print(f"cluster compress ({workers} workers): {seconds:.0f} s, {total / 1024 / seconds:.1f} KB/s, "
              f"{os.path.getsize(archive)} bytes, {same}; load {os.getloadavg()}", flush=True)
        began = time.perf_counter()
        with open(archive, "rb") as src, open(restored, "wb") as dst:
            nnc_cluster.decompress_file(client, src, dst)
        seconds = time.perf_counter() - began
        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10)
        print(f"cluster decompress: {seconds:.0f} s, {total / 1024 / seconds:.1f} KB/s, sha256 "
              f"{'verified' if _sha256(restored) == want else 'WRONG'}; worker peaks (MiB) "
              f"{sorted(peaks.values())}; load {os.getloadavg()}", flush=True)
        os.unlink(restored)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("input")
    p.add_argument("out")
    p.add_argument("--repeat", type=int, default=1)
    p.set_defaults(run=build_input)
    p = sub.add_parser("curve")
    p.add_argument("input")
    p.add_argument("--levels", default="1,6,9")
    p.add_argument("--sizes", default="1M,4M,16M,64M")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    p.set_defaults(run=curve)
    p = sub.add_parser("threads")
    p.add_argument("input")
    p.add_argument("--level", type=int, default=6)
    p.add_argument("--segment-size", default="4M")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--cluster-workers", type=int, default=0,
                   help="also both ways through a LocalCluster of this many workers, compared with -T")
    p.set_defaults(run=threads)
    p = sub.add_parser("big")
    p.add_argument("input")
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--cluster-workers", type=int, default=2)
    p.add_argument("--skip-local", action="store_true",
                   help="only the cluster pass (its archive's size and sha256 are printed)")
    p.set_defaults(run=big)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
