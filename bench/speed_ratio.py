#!/usr/bin/env python3
"""Relative model speed on a shared machine: several configurations measured in turn, rounds
interleaved, the best CPU time of each kept.

    python bench/speed_ratio.py alice29.txt:60000 --config "6" --config "9" \\
        --config "6 run_inputs=1" --rounds 3

A config is a level followed by ModelParams overrides (as bench/tune.py takes them).  On a loaded
machine wall-clock KB/s says little; interleaving the configurations and keeping each one's fastest
round makes their ratio usable: speed(new) on a quiet machine ~ speed(reference) x
cpu(reference) / cpu(new), with the reference's quiet-machine speed taken from bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from tune import WARMUP, load_files, make_params  # noqa: E402

from nncompress.analysis import code_lengths  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE[:N]")
    parser.add_argument("--config", action="append", required=True, metavar="'LEVEL NAME=VALUE ...'")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--corpora", metavar="DIR")
    args = parser.parse_args(argv)
    (label, data), = load_files([args.file], args.corpora)[:1]
    configs = []
    for text in args.config:
        level, _, overrides = text.strip().partition(" ")
        configs.append((text, make_params(int(level), overrides)))
    for _, params in configs:
        code_lengths(WARMUP, params=params)  # compile or load the kernels
    best = {text: float("inf") for text, _ in configs}
    bpc = {}
    print(f"{label}, {len(data)} bytes; load average {os.getloadavg()[0]:.2f}", flush=True)
    for _ in range(args.rounds):
        for text, params in configs:
            t0 = time.process_time()
            bits = code_lengths(data, params=params)
            best[text] = min(best[text], time.process_time() - t0)
            bpc[text] = float(bits.sum()) / len(data)
    reference = best[configs[0][0]]
    print(f"load average at the end {os.getloadavg()[0]:.2f}\n")
    print("| config | bpc | best CPU-s | KB/CPU-s | time vs first |")
    print("|---|---:|---:|---:|---:|")
    for text, _ in configs:
        print(f"| {text} | {bpc[text]:.4f} | {best[text]:.2f} | {len(data) / 1024 / best[text]:.0f} "
              f"| {best[text] / reference:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
