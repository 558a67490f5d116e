"""The RNNME expert inside a level (issue 11, phase 2): bpc of the level's model with variants of
its ModelParams, measured through the coding path itself (`Predictor.predict_known`, the
probabilities the coder uses; no container).  Results go to bench/NEURAL.md.

    NNC_CORPORA=/path/to/corpora python bench/rnnme_level.py alice29.txt book2 --level 9 \
        --bytes 300000 --variants '{"expert": {"@expert": 1}, "expert-H32": {"@expert": 1, "rnnme_hidden": 32}}'

Every variant is a dict of ModelParams fields applied on top of the level; "@expert": 1 first
applies EXPERT (the expert's settings below), "@no_expert": 1 turns the expert off (every
rnnme_* field 0, no RNNME selector), "@no_rnn": 1 removes the old recurrent layer (and
its RNN_SIGNS mixer).  The first line of each file is the level itself; gain = its bpc minus the
variant's.  KB/CPU-s is less sensitive to a loaded machine than KB/s (the `load` column).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nncompress.model.kinds import Selector, selector_mask  # noqa: E402
from nncompress.model.predictor import Predictor, bytes_to_nibbles  # noqa: E402
from nncompress.presets import params_for_level  # noqa: E402

EXPERT = dict(rnnme_hidden=16, rnnme_bptt=8, rnnme_me_bits=22, rnnme_features=0b111111 | 1 << 8,
              rnnme_lr_micro=2000, rnnme_lr_min_micro=300, rnnme_lr_half=100000, rnnme_inputs=1)


def load(name: str, nbytes: int | None) -> bytes:
    folder = os.environ.get("NNC_CORPORA")
    if not folder:
        raise SystemExit("set NNC_CORPORA to the folder that holds the corpora")
    with open(os.path.join(folder, name), "rb") as f:
        data = f.read()
    return data[:nbytes] if nbytes else data


def variant_params(level: int, changes: dict):
    p = params_for_level(level)
    changes = dict(changes)
    if changes.pop("@expert", 0):
        p = dataclasses.replace(p, **EXPERT)
    if changes.pop("@no_expert", 0):  # level 9 without the expert (bench/rnnme_ablation.py's "without")
        off = {f: 0 for f in p.extension_names() if f.startswith("rnnme_")}
        p = dataclasses.replace(p, mixer_select=p.mixer_select & ~selector_mask(Selector.RNNME), **off)
    if changes.pop("@no_rnn", 0):
        mask = p.mixer_select & ~selector_mask(Selector.RNN_SIGNS)
        p = dataclasses.replace(p, rnn_hidden=0, mixer_select=mask)
    if "+selectors" in changes:
        p = dataclasses.replace(p, mixer_select=p.mixer_select | selector_mask(
            *(Selector[name] for name in changes.pop("+selectors"))))
    return dataclasses.replace(p, **changes).validate()


def model_bpc(params, data: bytes) -> tuple[float, float, float, int]:
    """(bpc, KB/s, KB per CPU second, model bytes)."""
    Predictor(params).predict_known(b"compile")  # keep compilation out of the timing
    predictor = Predictor(params)
    wall, cpu = time.perf_counter(), time.process_time()
    probs = predictor.predict_known(data)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    nibbles = bytes_to_nibbles(data)
    p = probs[np.arange(nibbles.shape[0]), nibbles] / probs.sum(axis=1)
    bits = float(-np.log2(p).sum())
    return bits / len(data), len(data) / 1000 / wall, len(data) / 1000 / cpu, predictor.memory_bytes


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--level", type=int, default=9)
    parser.add_argument("--bytes", type=int, default=None, help="use only this prefix")
    parser.add_argument("--variants", default='{"expert": {"@expert": 1}}',
                        help="JSON: name -> ModelParams changes")
    parser.add_argument("--no-base", action="store_true", help="skip the level itself")
    args = parser.parse_args(argv)
    variants = json.loads(args.variants)
    if not args.no_base:
        variants = {"level": {}, **variants}
    print("| file | bytes | level | variant | bpc | gain | KB/s | KB/CPU-s | MiB | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.files:
        data = load(name, args.bytes)
        base = None
        for label, changes in variants.items():
            bpc, speed, cpu_speed, memory = model_bpc(variant_params(args.level, changes), data)
            if label == "level":
                base = bpc
            gain = f"{base - bpc:.4f}" if base is not None and label != "level" else ""
            print(f"| {name} | {len(data)} | {args.level} | {label} | {bpc:.4f} | {gain} | "
                  f"{speed:.1f} | {cpu_speed:.1f} | {memory / 2**20:.0f} | {os.getloadavg()[0]:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
