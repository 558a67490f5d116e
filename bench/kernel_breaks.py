#!/usr/bin/env python3
"""Break each model component on purpose, in a temporary copy of the package, and show that the
twin / golden / determinism tests catch it (bench/MUTATION.md records a run).

    python bench/kernel_breaks.py              # every break
    python bench/kernel_breaks.py apm rnn      # some of them
    python bench/kernel_breaks.py --list

Each break is one (file, old text, new text) edit, so retargeting it after a refactor (the
kernels are being split into per-component modules) means changing a path and maybe the
surrounding text, nothing else.  `old` must occur exactly once in the file, otherwise the break
reports "not applied" and fails loudly rather than testing the unbroken code.

Each run copies nncompress/, tests/ and bench/fuzz.py to a temporary directory without any
__pycache__ and gives numba a fresh cache directory: numba's on-disk cache does not notice a
changed callee in another module, so a stale cache could hide the break.  Every break therefore
pays one full kernel compile; the whole list takes several CPU minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "nncompress/model/"  # one kernel module per component (see docs/ARCHITECTURE.md)

# The tests that must catch a kernel break, as separate pytest runs tried in order until one
# fails: golden archives (exact bytes; fast), then the twin (the numba kernels against the
# pure-Python reference, probabilities and state).
TESTS = [["tests/test_golden.py", "-k", "not generic"], ["tests/test_reference.py"]]
# host vs generic CPU on probabilities and float state (compiles the kernels once more)
CROSS_TARGET = [["tests/test_determinism.py", "-k", "models_agree"]]

# name: (component, file, old, new, tests)
BREAKS = {
    "hashing": ("context hashing: the sparse 'bytes 1 and 3 back' context drops byte 3", MODEL + "contexts.py",
                "h = hash2(kind, c4 & 0xFF00FF)", "h = hash2(kind, c4 & 0xFF)", TESTS),
    "states": ("bit-history states: one transition of state table variant 2 (the presets') "
               "discounts differently", "nncompress/model/statetable.py",
               "    if n <= 3:\n        return 2\n    return n // 2 + 1",
               "    if n <= 3:\n        return 2\n    return n // 2", TESTS),
    "adaptive-map": ("adaptive probability maps: the counter's step shift", MODEL + "histories.py",
                     "v = p[k] + (((target - p[k]) >> 6) * recip[n[k]] >> 10)",
                     "v = p[k] + (((target - p[k]) >> 6) * recip[n[k]] >> 9)", TESTS),
    "match": ("match model: the ring-buffer staleness guard dropped", MODEL + "match.py",
              "if cand > 0 and pos - cand < hmask:", "if cand > 0:", TESTS),
    "mixer": ("mixer: weight update rounding (+2^17 -> 0)", MODEL + "mixer.py",
              "w = mixw[row, i] + ((inputs[j, i] * err + (1 << 17)) >> 18)",
              "w = mixw[row, i] + ((inputs[j, i] * err) >> 18)", TESTS),
    "apm": ("APM/SSE: interpolation update rate", MODEL + "apm.py",
            "table[row, lo + 1] += ((target - table[row, lo + 1]) * w) >> (7 + rate)",
            "table[row, lo + 1] += ((target - table[row, lo + 1]) * w) >> (6 + rate)", TESTS),
    "rnn": ("recurrent network: fastmath={'contract'} (FMA) in the kernels' options (the float "
            "code is the RNN's)", MODEL + "jit.py",
            'OPTIONS = dict(fastmath=False,', 'OPTIONS = dict(fastmath={"contract"},',
            TESTS + CROSS_TARGET),
    "rnnme": ("byte-level RNN with maximum-entropy features (rnnme): Adam's denominator doubles "
              "its epsilon", MODEL + "rnnme_ops.py",
              "w[i] += (lr * mi) / (np.sqrt(vi) + eps)", "w[i] += (lr * mi) / (np.sqrt(vi) + eps + eps)",
              [["tests/test_rnnme.py", "-k", "twin"]]),
    "lstm": ("the expert's LSTM cell (rnnme_lstm): the cell error skips the forget gate on its way "
             "back", MODEL + "rnnme_lstm.py", "dcn[k] = dc * f", "dcn[k] = dc",
             [["tests/test_rnnme.py", "-k", "twin"]]),
}


def copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    shutil.copytree(ROOT / "nncompress", dest / "nncompress", ignore=ignore)
    shutil.copytree(ROOT / "tests", dest / "tests", ignore=ignore)
    (dest / "bench").mkdir()
    shutil.copy2(ROOT / "bench" / "fuzz.py", dest / "bench" / "fuzz.py")
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")


def run_break(name: str, timeout: int) -> dict:
    component, path, old, new, tests = BREAKS[name]
    with tempfile.TemporaryDirectory(prefix=f"nnc-break-{name}-") as tmp:
        dest = Path(tmp)
        copy_tree(dest)
        target = dest / path
        text = target.read_text()
        if text.count(old) != 1:
            return dict(name=name, component=component, result="NOT APPLIED (retarget the edit)",
                        seconds=0.0, caught_by="")
        target.write_text(text.replace(old, new))
        env = dict(os.environ, PYTHONPATH=str(dest), NUMBA_CACHE_DIR=str(dest / "numba-cache"),
                   PYTHONDONTWRITEBYTECODE="1")
        env.pop("NUMBA_CPU_NAME", None)
        started = time.perf_counter()
        for group in tests:
            try:
                proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p",
                                       "no:cacheprovider", *group], cwd=dest, env=env,
                                      capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return dict(name=name, component=component, result="TIMEOUT", seconds=timeout,
                            caught_by=" ".join(group))
            failed = [line.split(" ")[1] for line in proc.stdout.splitlines()
                      if line.startswith("FAILED ")]
            if proc.returncode == 1 and failed:
                return dict(name=name, component=component, result="caught",
                            seconds=time.perf_counter() - started, caught_by=failed[0])
            if proc.returncode != 0:
                return dict(name=name, component=component,
                            result=f"ERROR (pytest exit {proc.returncode})",
                            seconds=time.perf_counter() - started, caught_by=proc.stdout[-500:])
        return dict(name=name, component=component, result="SURVIVED",
                    seconds=time.perf_counter() - started, caught_by="")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"breaks to run (default: all of {', '.join(BREAKS)})")
    parser.add_argument("--list", action="store_true", help="list the breaks and exit")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per break")
    args = parser.parse_args(argv)
    if args.list:
        found_all = True
        for name, (component, path, old, *_rest) in BREAKS.items():
            found = (ROOT / path).read_text().count(old) == 1
            found_all &= found
            print(f"{name:13} {path:34} {'edit found' if found else 'NOT FOUND':10} {component}")
        return 0 if found_all else 1
    unknown = [n for n in args.names if n not in BREAKS]
    if unknown:
        parser.error(f"unknown break(s): {', '.join(unknown)}")
    ok = True
    print(f"{'break':13} {'result':9} {'seconds':>7}  caught by")
    for name in args.names or list(BREAKS):
        row = run_break(name, args.timeout)
        ok &= row["result"] == "caught"
        print(f"{row['name']:13} {row['result']:9} {row['seconds']:7.0f}  {row['caught_by']}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
