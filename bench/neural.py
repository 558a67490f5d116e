"""Experiments with the RNNME expert (nncompress/model/rnnme.py); results go to bench/NEURAL.md.

Corpora are found through NNC_CORPORA (a folder holding the shared files by name).  Run from the
repository root, e.g.

    NNC_CORPORA=/path/to/corpora python bench/neural.py pure alice29.txt book2 enwik8_1M
    python bench/neural.py sweep alice29.txt --grid '{"hidden": [32, 64, 128]}'
    python bench/neural.py sweep book2 --bytes 300000 --base '{"me_bits": 22}' --grid '{"bptt": [4, 8, 16]}'
    python bench/neural.py roundtrip paper1 --bytes 20000
    python bench/neural.py mix alice29.txt book2 --level 9

pure       bpc of the expert alone (sum of -log2 P(byte)), bzip2 -9 beside it, KB/s
sweep      one line per configuration of a grid over RNNMEParams fields (one field at a time
           unless --product), on top of --base
roundtrip  a real range-coder round trip (coder.NibbleEncoder / NibbleDecoder) driven by the
           expert, decoded by a fresh expert: proves the kernels are deterministic end to end
mix        estimate of the expert's value inside the context-mixing model: the level's own
           per-node bit probabilities and the expert's (summed over the leaves under each node)
           are combined by a small online logistic mixer (weights selected by node, plus an
           APM-free bias), and the bpc against the level alone is reported

Speed figures depend on the machine's load: each line records `uptime`'s 1-minute load.
"""

from __future__ import annotations

import argparse
import bz2
import itertools
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nncompress.model.rnnme import RNNME, RNNMEParams  # noqa: E402


def load(name: str, nbytes: int | None) -> bytes:
    folder = os.environ.get("NNC_CORPORA")
    if not folder:
        raise SystemExit("set NNC_CORPORA to the folder that holds the corpora")
    with open(os.path.join(folder, name), "rb") as f:
        data = f.read()
    return data[:nbytes] if nbytes else data


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def expert_bpc(data: bytes, params: RNNMEParams) -> tuple[float, float, float]:
    """(bpc, KB/s wall clock, KB per CPU second: less sensitive to a loaded machine)."""
    RNNME(params).run(b"compile")  # keep compilation out of the timing
    model = RNNME(params)
    start, cpu = time.perf_counter(), time.process_time()
    probs = model.run(data)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    return (float(-np.log2(probs).sum() / len(data)), len(data) / seconds / 1000,
            len(data) / max(cpu_seconds, 1e-9) / 1000)


def bzip2_bpc(data: bytes) -> float:
    return len(bz2.compress(data, 9)) * 8 / len(data)


def cmd_pure(args) -> None:
    params = RNNMEParams(**json.loads(args.base))
    print(f"params: {json.dumps(params.describe())}")
    print("| file | bytes | RNNME bpc | bzip2 -9 bpc | KB/s | KB/CPU-s | load |")
    print("|---|---|---|---|---|---|---|")
    for name in args.files:
        data = load(name, args.bytes)
        bpc, speed, cpu_speed = expert_bpc(data, params)
        print(f"| {name} | {len(data)} | {bpc:.4f} | {bzip2_bpc(data):.4f} | {speed:.1f} | "
              f"{cpu_speed:.1f} | {load_average():.2f} |", flush=True)


def cmd_sweep(args) -> None:
    base = json.loads(args.base)
    grid = json.loads(args.grid)
    if args.product:
        keys = list(grid)
        configs = [dict(zip(keys, values)) for values in itertools.product(*grid.values())]
    else:
        configs = [{key: value} for key, values in grid.items() for value in values]
    data = load(args.file, args.bytes)
    print(f"file {args.file}, {len(data)} bytes; base {json.dumps(base)}")
    print("| change | bpc | KB/s | KB/CPU-s | load |")
    print("|---|---|---|---|---|")
    for change in configs:
        kw = dict(base, **change)
        if "orders" in kw:
            kw["orders"] = tuple(kw["orders"])
        bpc, speed, cpu_speed = expert_bpc(data, RNNMEParams(**kw))
        print(f"| {json.dumps(change)} | {bpc:.4f} | {speed:.1f} | {cpu_speed:.1f} | "
              f"{load_average():.2f} |", flush=True)


def cmd_roundtrip(args) -> None:
    from nncompress.coder import NibbleDecoder, NibbleEncoder

    params = RNNMEParams(**json.loads(args.base))
    data = load(args.file, args.bytes)
    model = RNNME(params)
    encoder = NibbleEncoder()
    start = time.perf_counter()
    for byte in data:
        hi, lo = byte >> 4, byte & 15
        encoder.encode(np.array([hi]), model.predict_high()[None, :].copy())
        encoder.encode(np.array([lo]), model.predict_low(hi)[None, :].copy())
        model.learn(byte)
    payload = encoder.finish()
    encode_s = time.perf_counter() - start
    model = RNNME(params)
    decoder = NibbleDecoder(payload)
    out = bytearray()
    start = time.perf_counter()
    for _ in range(len(data)):
        hi = decoder.decode(model.predict_high())
        lo = decoder.decode(model.predict_low(hi))
        byte = (hi << 4) | lo
        model.learn(byte)
        out.append(byte)
    decode_s = time.perf_counter() - start
    ok = bytes(out) == data
    print(f"{args.file}: {len(data)} bytes -> {len(payload)} bytes "
          f"({len(payload) * 8 / len(data):.4f} bpc), round trip {'OK' if ok else 'FAILED'}; "
          f"{len(data) / encode_s / 1000:.1f} KB/s encode, {len(data) / decode_s / 1000:.1f} KB/s "
          f"decode (per-nibble Python loop), load {load_average():.2f}")
    if not ok:
        raise SystemExit(1)


def node_probabilities(dist16: np.ndarray) -> np.ndarray:
    """P(bit = 1) at heap nodes 1..15 of a nibble tree from 16-way distributions (rows)."""
    dist = dist16 / dist16.sum(axis=1, keepdims=True)
    out = np.empty((dist.shape[0], 16), dtype=np.float64)
    for j in range(1, 16):
        depth = j.bit_length() - 1
        prefix = j - (1 << depth)
        width = 16 >> depth  # leaves under node j
        lo = prefix * width
        total = dist[:, lo : lo + width].sum(axis=1)
        ones = dist[:, lo + width // 2 : lo + width].sum(axis=1)
        out[:, j] = ones / np.maximum(total, 1e-300)
    return out


def mix_cost(p_model: np.ndarray, p_expert: np.ndarray, bits: np.ndarray, nodes: np.ndarray,
             lr: float, buckets: int) -> tuple[float, float]:
    """Online 3-input logistic mixer (stretch(p_model), stretch(p_expert), bias) with weights
    selected by node id x the expert's confidence bucket; returns (bits of the model alone, bits
    of the mix).  Analysis only (libm is fine here)."""
    from numba import njit

    @njit(cache=False)
    def run(pm, pe, y, node, lr, buckets):
        w = np.zeros(((node.max() + 1) * buckets, 3))
        w[:, 0] = 1.0
        alone = 0.0
        mixed = 0.0
        for i in range(pm.shape[0]):
            a = min(max(pm[i], 1e-6), 1 - 1e-6)
            b = min(max(pe[i], 1e-6), 1 - 1e-6)
            x0 = np.log(a / (1 - a))
            x1 = np.log(b / (1 - b))
            conf = int(abs(x1) * 0.5)
            row = node[i] * buckets + min(conf, buckets - 1)
            dot = w[row, 0] * x0 + w[row, 1] * x1 + w[row, 2]
            dot = min(max(dot, -30.0), 30.0)
            p = 1.0 / (1.0 + np.exp(-dot))
            p = min(max(p, 1e-6), 1 - 1e-6)
            if y[i]:
                alone -= np.log2(a)
                mixed -= np.log2(p)
            else:
                alone -= np.log2(1 - a)
                mixed -= np.log2(1 - p)
            err = y[i] - p
            w[row, 0] += lr * err * x0
            w[row, 1] += lr * err * x1
            w[row, 2] += lr * err
        return alone, mixed

    return run(p_model, p_expert, bits, nodes, lr, buckets)


def cmd_mix(args) -> None:
    from nncompress.model.predictor import Predictor, bytes_to_nibbles
    from nncompress.presets import params_for_level

    params = RNNMEParams(**json.loads(args.base))
    print(f"expert params: {json.dumps(params.describe())}; level {args.level}; mixer lr "
          f"{args.mix_lr}, {args.buckets} confidence buckets")
    print("| file | bytes | level bpc (model) | expert alone bpc | mixed bpc | gain bpc | expert KB/s |")
    print("|---|---|---|---|---|---|---|")
    for name in args.files:
        data = load(name, args.bytes)
        n = len(data)
        nib = bytes_to_nibbles(data)
        cached = os.path.join(args.cache, f"level{args.level}_{name}_{n}.npy") if args.cache else None
        if cached and os.path.exists(cached):
            level_probs = np.load(cached)
        else:
            level_probs = Predictor(params_for_level(args.level)).predict_known(data)
            if cached:
                np.save(cached, level_probs)
        start = time.perf_counter()
        probs, dists = RNNME(params).run(data, keep_dists=True)
        speed = n / (time.perf_counter() - start) / 1000
        expert_nibbles = dists.reshape(n * 2, 16).astype(np.float64)
        pm = node_probabilities(level_probs)
        pe = node_probabilities(expert_nibbles)
        # the four nodes each nibble passes through, and the bit taken at each
        rows_pm, rows_pe, bits, nodes = [], [], [], []
        idx = np.arange(n * 2)
        j = np.ones(n * 2, dtype=np.int64)
        for depth in range(4):
            bit = (nib >> (3 - depth)) & 1
            rows_pm.append(pm[idx, j])
            rows_pe.append(pe[idx, j])
            bits.append(bit)
            # node id: which nibble (high / low) and node j; the low nibble's also by high nibble
            high = np.repeat(nib[0::2], 2)
            node_id = np.where(idx % 2 == 0, j, 16 + high * 16 + j)
            if args.select_prev_byte:  # weight sets by node x previous byte
                prev = np.repeat(np.concatenate(([0], np.frombuffer(data, np.uint8)[:-1])), 2)
                node_id = node_id * 256 + prev
            nodes.append(node_id)
            j = 2 * j + bit
        order = np.stack([np.arange(n * 2)] * 4, axis=1).reshape(-1)
        stack = lambda parts: np.stack(parts, axis=1).reshape(-1)  # noqa: E731
        p_model, p_expert = stack(rows_pm), stack(rows_pe)
        y, node = stack(bits).astype(np.int64), stack(nodes).astype(np.int64)
        del order
        alone, mixed = mix_cost(p_model, p_expert, y, node, args.mix_lr, args.buckets)
        expert_bpc = float(-np.log2(probs).sum() / n)
        print(f"| {name} | {n} | {alone / n:.4f} | {expert_bpc:.4f} | {mixed / n:.4f} | "
              f"{(alone - mixed) / n:.4f} | {speed:.1f} |", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("pure", "sweep", "roundtrip", "mix"):
        p = sub.add_parser(name)
        if name in ("sweep", "roundtrip"):
            p.add_argument("file")
        else:
            p.add_argument("files", nargs="+")
        p.add_argument("--bytes", type=int, default=None, help="use only this prefix")
        p.add_argument("--base", default="{}", help="RNNMEParams fields as JSON")
        if name == "sweep":
            p.add_argument("--grid", required=True, help='{"field": [values, ...], ...}')
            p.add_argument("--product", action="store_true", help="all combinations")
        if name == "mix":
            p.add_argument("--level", type=int, default=9)
            p.add_argument("--mix-lr", type=float, default=0.002)
            p.add_argument("--select-prev-byte", action="store_true",
                           help="mixer weight sets by node x previous byte")
            p.add_argument("--buckets", type=int, default=1,
                           help="mixer weight sets per node by the expert's confidence")
            p.add_argument("--cache", default=None,
                           help="folder to keep the level's predictions in between runs")
    args = parser.parse_args(argv)
    {"pure": cmd_pure, "sweep": cmd_sweep, "roundtrip": cmd_roundtrip, "mix": cmd_mix}[
        args.command](args)


if __name__ == "__main__":
    main()
