"""Ablation of the RNNME expert (issue 11): each file compressed through the real API (container
included) at level 9 with the expert (the preset) and without it (the same parameters, expert
off), and by the pure RNNME model (`pure`: tanh cell, `pure-lstm`: LSTM cell); bpc, KB/s and KB per CPU second both ways, peak memory (the
worker process's maximum resident set).  One worker process per measurement, `-j N` at once.

    NNC_CORPORA=/path/to/corpora python bench/rnnme_ablation.py -j 2 alice29.txt book2 \
        --variants with,without,pure --decompress enwik8_1M

Lines are printed as Markdown table rows as measurements finish (then sorted at the end).
--decompress FILE,...: also time decompression for these files (the others: compress only,
decompression costs the same model work).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import subprocess
import sys

WORKER = r"""
import dataclasses, json, os, resource, sys, time
import nncompress
from nncompress.presets import params_for_level, rnnme_params
name, variant, level, decompress = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == '1'
data = open(os.path.join(os.environ['NNC_CORPORA'], name), 'rb').read()
p = params_for_level(level)
if variant == 'without':
    off = {f: 0 for f in p.extension_names() if f.startswith('rnnme_')}
    p = dataclasses.replace(p, mixer_select=p.mixer_select & ~(1 << 8), **off)
elif variant == 'pure':
    p = rnnme_params()
elif variant == 'pure-lstm':
    p = rnnme_params(cell=1)
nncompress.decompress(nncompress.compress(b'warm-up: compile or load the kernels. ' * 8, params=p))
w, c = time.perf_counter(), time.process_time()
archive = nncompress.compress(data, params=p)
cw, cc = time.perf_counter() - w, time.process_time() - c
out = dict(file=name, variant=variant, bytes=len(data), compressed=len(archive),
           bpc=8 * len(archive) / len(data), c_kbs=len(data) / 1000 / cw, c_cpu=len(data) / 1000 / cc)
if decompress:
    w, c = time.perf_counter(), time.process_time()
    assert nncompress.decompress(archive) == data
    dw, dc = time.perf_counter() - w, time.process_time() - c
    out.update(d_kbs=len(data) / 1000 / dw, d_cpu=len(data) / 1000 / dc)
out['peak_mib'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out['load'] = os.getloadavg()[0]
print(json.dumps(out))
"""


def measure(name: str, variant: str, level: int, decompress: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", WORKER, name, variant, str(level),
                           "1" if decompress else "0"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def row(r: dict) -> str:
    d = f"{r['d_kbs']:.1f} | {r['d_cpu']:.1f}" if "d_kbs" in r else " | "
    return (f"| {r['file']} | {r['bytes']} | {r['variant']} | {r['bpc']:.4f} | {r['c_kbs']:.1f} | "
            f"{r['c_cpu']:.1f} | {d} | {r['peak_mib']:.0f} | {r['load']:.1f} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("--level", type=int, default=9)
    parser.add_argument("--variants", default="with,without")
    parser.add_argument("--decompress", default="", help="files whose decompression is timed too")
    parser.add_argument("--json", help="append every result to this JSON-lines file")
    args = parser.parse_args(argv)
    timed = set(filter(None, args.decompress.split(",")))
    jobs = [(name, variant) for name in args.files for variant in args.variants.split(",")]
    print("| file | bytes | variant | bpc | compress KB/s | KB/CPU-s | decompress KB/s | KB/CPU-s "
          "| peak MiB | load |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(measure, name, variant, args.level, name in timed): (name, variant)
                   for name, variant in jobs}
        for future in concurrent.futures.as_completed(futures):
            r = future.result()
            results.append(r)
            print(row(r), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")
    print("\nsorted, with the expert's gain (without - with):\n")
    by_key = {(r["file"], r["variant"]): r for r in results}
    for name in args.files:
        for variant in args.variants.split(","):
            if (name, variant) in by_key:
                r = by_key[(name, variant)]
                gain = ""
                if variant == "with" and (name, "without") in by_key:
                    gain = f" gain {by_key[(name, 'without')]['bpc'] - r['bpc']:.4f}"
                print(row(r) + gain)


if __name__ == "__main__":
    main()
