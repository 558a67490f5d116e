#!/usr/bin/env python3
"""Mutation fuzzer for the .nnc decoder: damaged and hostile archives must fail cleanly.

    .venv/bin/python bench/fuzz.py --cases 10000 [--seed 1] [--json result.json]

Every case takes a small valid archive (tiny real and random inputs, level 1 and 3, tiny and
default block sizes), damages it (bit flips, byte overwrites, truncation, insertion, deletion,
duplication, splices, garbage before/after, giant or overflowing length fields, hostile header
parameters with a *recomputed* header checksum) and decodes it, one shot and fed in random
pieces.  A case passes when decoding either raises `NNCError` or returns exactly what the bytes
legitimately encode (a flip in a don't-care bit of a range-coder word, a duplicated whole
stream).  Anything else is counted: `crashes` (any other exception), `hangs` (over the time
limit, enforced with SIGALRM) and `silent` (output that differs from a legitimate one but was
accepted).  tests/test_fuzz.py runs a few hundred cases of the same code in CI.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nncompress  # noqa: E402
from nncompress import format as fmt  # noqa: E402
from nncompress.api import NNDecompressor  # noqa: E402
from nncompress.codec import StreamDecoder  # noqa: E402
from nncompress.format import NNCError  # noqa: E402
from nncompress.segments import compress_segment  # noqa: E402

TEXT = (b"It was the best of times, it was the worst of times, it was the age of wisdom, it was "
        b"the age of foolishness, it was the epoch of belief, it was the epoch of incredulity.\n"
        b"def f(x):\n    return x * 2  # \xc3\xa9t\xc3\xa9\n")


class Hang(BaseException):
    """Raised by SIGALRM when one case runs past the time limit."""


def corpus(seed: int = 0) -> list[tuple[str, bytes, bytes]]:
    """(name, original, archive) for small inputs; archives reused by every case."""
    rng = random.Random(seed)
    inputs = {
        "empty": b"",
        "one": b"a",
        "short": TEXT[:40],
        "text": TEXT,
        "text2x": TEXT * 2,
        "random64": rng.randbytes(64),
        "random300": rng.randbytes(300),
        "bytes256": bytes(range(256)),
        "zeros": b"\0" * 400,
    }
    out = []
    for name, data in inputs.items():
        out.append((f"{name}/1/default", data, nncompress.compress(data, 1)))
        if len(data) > 32:
            out.append((f"{name}/1/bs32", data, nncompress.compress(data, 1, block_size=32)))
    for name in ("text", "random64"):
        out.append((f"{name}/3/bs100", inputs[name], nncompress.compress(inputs[name], 3, block_size=100)))
    # format 1 (what nncompress 0.1 wrote): its decoder is fuzzed too
    for name, block_size in (("empty", fmt.DEFAULT_BLOCK_SIZE), ("text", fmt.DEFAULT_BLOCK_SIZE), ("text", 32)):
        tag = "default" if block_size == fmt.DEFAULT_BLOCK_SIZE else f"bs{block_size}"
        out.append((f"{name}/1/{tag}/v1", inputs[name],
                    compress_segment(inputs[name], 1, None, block_size, format_version=1)))
    return out


def layout(archive: bytes) -> list[tuple[str, int, int]]:
    """Regions of a single-stream archive (format 1 or 2): (name, start, end)."""
    version = archive[4]
    regions = [("magic", 0, 4), ("version", 4, 5)]
    pos = 5
    custom_block = True
    count = None
    if version == 1:
        regions.append(("level", 5, 6))
        pos = 6
    else:
        code, end = fmt.get_varint(archive, pos)
        regions.append(("preset", pos, end))
        pos, custom_block = end, bool(code & 1)
        if code >> 1:
            mask, end = fmt.get_varint(archive, pos)
            regions.append(("override_mask", pos, end))
            pos, count = end, bin(mask).count("1")
    if count is None:
        count, end = fmt.get_varint(archive, pos)
        regions.append(("param_count", pos, end))
        pos = end
    for k in range(count):
        _, end = fmt.get_varint(archive, pos)
        regions.append((f"param{k}", pos, end))
        pos = end
    if custom_block:
        _, end = fmt.get_varint(archive, pos)
        regions.append(("block_size", pos, end))
        pos = end
    regions.append(("header_crc", pos, pos + 4))
    pos += 4
    blocks = 0
    while True:
        code, end = fmt.get_varint(archive, pos)
        raw_len, last = (code, code == 0) if version == 1 else (code >> 1, code & 1)
        if raw_len == 0:
            regions.append(("end_marker", pos, end))
            pos = end
            break
        regions.append(("raw_len", pos, end))
        pos = end
        payload_len, end = fmt.get_varint(archive, pos)
        regions.append(("payload_len", pos, end))
        regions.append(("block_crc", end, end + 4))
        pos = end + 4
        regions.append(("payload", pos, pos + payload_len))
        pos += payload_len
        blocks += 1
        if last:
            break
    if fmt.has_trailer(version, blocks):
        _, end = fmt.get_varint(archive, pos)
        regions.append(("total_len", pos, end))
        regions.append(("total_crc", end, end + 4))
        pos = end + 4
    assert pos == len(archive), "layout() expects exactly one stream"
    return regions


def varint(value: int) -> bytes:
    out = bytearray()
    fmt.put_varint(out, value)
    return bytes(out)


def header_end(archive: bytes) -> int:
    return next(end for name, _, end in layout(archive) if name == "header_crc")


def reseal_header(blob: bytearray, crc_at: int) -> None:
    """Recompute the header checksum so a hostile header passes the CRC (tests validation)."""
    blob[crc_at : crc_at + 4] = fmt.crc32(bytes(blob[:crc_at])).to_bytes(4, "little")


def mutate(rng: random.Random, entries, index: int):
    """One damaged blob: (description, blob, legitimate outputs)."""
    name, data, archive = entries[index]
    regions = layout(archive)
    legit = {data}
    blob = bytearray(archive)
    kind = rng.choice(["flip", "flip", "flip", "overwrite", "overwrite", "truncate", "truncate",
                       "insert", "delete", "duplicate", "zero_run", "splice", "append",
                       "prepend", "giant", "hostile_param", "swap_blocks", "concat_damaged"])
    where = ""
    if kind == "flip":
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            bit = rng.randrange(len(blob) * 8)
            blob[bit // 8] ^= 1 << (bit % 8)
            where += f"{bit},"
    elif kind == "overwrite":
        for _ in range(rng.choice([1, 1, 2, 4])):
            at = rng.randrange(len(blob))
            blob[at] = rng.randrange(256)
            where += f"{at},"
    elif kind == "truncate":
        region = rng.choice(regions)
        cut = rng.randrange(region[1], region[2] + 1) if rng.random() < 0.8 else rng.randrange(len(blob))
        del blob[cut:]
        where = f"{region[0]}@{cut}"
    elif kind == "insert":
        at = rng.randrange(len(blob) + 1)
        blob[at:at] = rng.randbytes(rng.choice([1, 1, 2, 4, 16]))
        where = str(at)
    elif kind == "delete":
        at = rng.randrange(len(blob))
        n = rng.choice([1, 1, 2, 4, 16])
        del blob[at : at + n]
        where = f"{at}+{n}"
    elif kind == "duplicate":
        a = rng.randrange(len(blob))
        b = rng.randrange(a, len(blob)) + 1
        blob[b:b] = blob[a:b]
        where = f"{a}:{b}"
        if (a, b) == (0, len(archive)):
            legit = {data * 2}
    elif kind == "zero_run":
        at = rng.randrange(len(blob))
        n = rng.choice([1, 4, 8, 64])
        blob[at : at + n] = bytes(len(blob[at : at + n]))
        where = f"{at}+{n}"
    elif kind == "splice":  # the front of one archive, the back of another
        other = entries[rng.randrange(len(entries))][2]
        a, b = rng.randrange(len(blob) + 1), rng.randrange(len(other) + 1)
        blob = blob[:a] + other[b:]
        where = f"{a}|{b}"
        if a == len(archive) and b == 0:
            legit = {data + entries[[e[2] for e in entries].index(other)][1]}
    elif kind == "append":  # garbage (or zeros, or a magic prefix) after a valid stream
        tail = rng.choice([rng.randbytes(rng.choice([1, 3, 16])), b"\0", b"\0" * 8, b"NN", fmt.MAGIC,
                           fmt.MAGIC + bytes([fmt.FORMAT_VERSION])])
        blob += tail
        where = tail[:8].hex()
    elif kind == "prepend":  # a valid stream after garbage
        head = rng.choice([rng.randbytes(rng.choice([1, 3, 16])), b"\0", b"NNC", fmt.MAGIC])
        blob[:0] = head
        where = head[:8].hex()
    elif kind == "giant":  # a length or count field replaced by a huge or overflowing varint
        fields = [r for r in regions if r[0] in ("raw_len", "payload_len", "param_count", "block_size",
                                                 "total_len", "end_marker", "preset", "override_mask")]
        field, start, end = rng.choice(fields)
        values = [2**31, 2**32 + 1, 2**63 - 1, 2**64 + 5]
        block_size = fmt.parse_header(archive)[0].block_size
        if field == "raw_len" and block_size <= 4096:
            values.append(block_size)  # the largest legal claim, cheap with tiny blocks
        if field == "param_count":
            values.append(fmt.MAX_PARAMS + 1)
        encoded = rng.choice([varint(rng.choice(values)), b"\xff" * rng.choice([9, 10, 11, 20])])
        blob[start:end] = encoded
        where = f"{field}={encoded.hex()}"
        if field in ("param_count", "block_size", "preset", "override_mask") and rng.random() < 0.7:
            crc_at = header_end(archive) - 4 + len(encoded) - (end - start)
            if crc_at + 4 <= len(blob):
                reseal_header(blob, crc_at)
                where += ",resealed"
    elif kind == "hostile_param":  # a checksum-correct header with out-of-range parameters
        params = [r for r in regions if r[0].startswith("param") and r[0] != "param_count"]
        field, start, end = rng.choice(params or [r for r in regions if r[0] == "preset"])
        value = rng.choice([0, 1, 2, 11, 13, 29, 30, 31, 40, 63, 64, 512, 513, 10**7 + 1, 2**40])
        blob[start:end] = varint(value)
        reseal_header(blob, header_end(archive) - 4 + len(varint(value)) - (end - start))
        where = f"{field}={value}"
    elif kind == "swap_blocks":
        blocks = []
        for k, r in enumerate(regions):
            if r[0] == "raw_len":
                blocks.append((r[1], regions[k + 3][2]))
        if len(blocks) >= 2:
            i, j = sorted(rng.sample(range(len(blocks)), 2))
            (a0, a1), (b0, b1) = blocks[i], blocks[j]
            blob = blob[:a0] + blob[b0:b1] + blob[a1:b0] + blob[a0:a1] + blob[b1:]
            where = f"{i}<->{j}"
        else:
            del blob[-1:]
            where = "single block: truncated instead"
    elif kind == "concat_damaged":  # a good stream followed by a damaged one
        other_name, other_data, other = entries[rng.randrange(len(entries))]
        damaged = bytearray(other)
        damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        blob += damaged
        legit = {data + other_data}  # a flip in a don't-care bit still decodes correctly
        where = other_name
    # a mutation may rebuild another valid archive exactly (a splice of two archives with equal
    # headers at the header boundary): then that archive's data is the right answer
    known = {e[2]: e[1] for e in entries}
    if bytes(blob) in known:
        legit.add(known[bytes(blob)])
    return f"{name}:{kind}:{where}", bytes(blob), legit


def decode_one_shot(blob: bytes) -> bytes:
    return nncompress.decompress(blob)


def decode_pieces(blob: bytes, rng: random.Random) -> bytes:
    """The same bytes fed in random pieces, through the push parser (or NNDecompressor)."""
    if rng.random() < 0.5:
        decoder = StreamDecoder(multi_stream=True)
        out = bytearray()
        pos = 0
        while pos < len(blob):
            step = rng.choice([1, 1, 2, 3, 7, 64])
            out += decoder.feed(blob[pos : pos + step])
            pos += step
        decoder.finish()
        return bytes(out)
    # single stream API: what follows the stream must be reported as unused_data, then decoded
    out = bytearray()
    rest = blob
    while True:
        d = NNDecompressor()
        pos = 0
        while pos < len(rest) and not d.eof:
            step = rng.choice([1, 5, 64])
            out += d.decompress(rest[pos : pos + step])
            pos += step
        if not d.eof:
            raise NNCError("(fuzz) single-stream decoder did not reach eof: truncated")
        rest = d.unused_data + rest[pos:]
        if not rest:
            return bytes(out)
        fmt.parse_header(rest)  # garbage after a stream: NNCError (or NeedMoreData)


def classify(blob: bytes, legit: set, rng: random.Random, time_limit: float) -> tuple[str, str]:
    """('ok'|'error'|'crash'|'hang'|'silent', detail) for one blob, decoded both ways."""
    verdicts = []
    for decode in (decode_one_shot, lambda b: decode_pieces(b, rng)):
        signal.setitimer(signal.ITIMER_REAL, time_limit)
        try:
            out = decode(blob)
            verdict = ("ok", "") if out in legit else ("silent", f"{len(out)} bytes accepted")
        except NNCError as exc:
            verdict = ("error", str(exc))
        except fmt.NeedMoreData:
            verdict = ("error", "truncated")
        except Hang:
            verdict = ("hang", f"over {time_limit} s")
        except BaseException as exc:  # noqa: BLE001 - anything else is the bug we hunt
            if isinstance(exc, KeyboardInterrupt):
                raise
            verdict = ("crash", f"{type(exc).__name__}: {exc}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        verdicts.append(verdict)
    worst = max(verdicts, key=lambda v: ["ok", "error", "silent", "hang", "crash"].index(v[0]))
    if {v[0] for v in verdicts} == {"ok", "error"}:
        # one-shot and piecewise disagree on acceptance (only legal for the single-stream path
        # when the input is exactly a valid stream followed by a truncated one... never here)
        worst = ("crash", f"one-shot and piecewise disagree: {verdicts}")
    return worst


def _on_alarm(signum, frame):
    raise Hang()


def run(cases: int, seed: int = 1, time_limit: float = 30.0, log=None, entries=None) -> dict:
    rng = random.Random(seed)
    entries = entries or corpus(seed)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    counts = Counter()
    kinds = Counter()
    messages = Counter()
    failures = []
    slowest = (0.0, "")
    started = time.perf_counter()
    try:
        for case in range(cases):
            desc, blob, legit = mutate(rng, entries, rng.randrange(len(entries)))
            t0 = time.perf_counter()
            verdict, detail = classify(blob, legit, rng, time_limit)
            took = time.perf_counter() - t0
            slowest = max(slowest, (took, desc))
            counts[verdict] += 1
            if verdict == "error":
                messages[re.sub(r"\d+", "N", detail.split(" (")[0])[:60]] += 1
            kinds[desc.split(":")[1]] += 1
            if verdict in ("crash", "hang", "silent"):
                failures.append({"case": case, "mutation": desc, "verdict": verdict,
                                 "detail": detail, "blob": blob.hex()})
                if log:
                    print(f"case {case}: {verdict}: {desc}: {detail}", file=log, flush=True)
            if log and (case + 1) % 500 == 0:
                print(f"{case + 1} cases, {dict(counts)}, {time.perf_counter() - started:.0f} s",
                      file=log, flush=True)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return {
        "cases": cases,
        "seed": seed,
        "archives": len(entries),
        "decoded_ok": counts["ok"],
        "clean_errors": counts["error"],
        "crashes": counts["crash"],
        "hangs": counts["hang"],
        "silent_garbage": counts["silent"],
        "mutations": dict(kinds),
        "error_messages": dict(messages.most_common()),
        "slowest_case_s": round(slowest[0], 3),
        "slowest_case": slowest[1],
        "seconds": round(time.perf_counter() - started, 1),
        "failures": failures[:50],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds per case (a hang)")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    result = run(args.cases, args.seed, args.time_limit, log=sys.stderr)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    bad = result["crashes"] + result["hangs"] + result["silent_garbage"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
