"""Run mutmut's mutants against a narrow test selection in one warmed-up process (issue 9).

mutmut runs a clean pass and a coverage pass of the whole selection before the first mutant;
on a machine whose idle share is a few per cent those passes alone took over half an hour.
This driver uses the mutants mutmut generated (``mutmut run`` once, stopped after "Generating
mutants"; or any tree with a ``mutants/`` folder) and, for each mutant, forks from a process that
has already loaded the package and its compiled kernels, sets ``MUTANT_UNDER_TEST`` (mutmut's
trampoline reads it at every call) and runs the given tests with ``pytest -x``: exit 0 =
survived, 1 = killed, killed by the CPU limit = timeout (counted as killed, as mutmut does).

    cd <copy> && python <this> --generate       # mutmut's generation step only, into mutants/
    cd <copy>/mutants && python <this> --tests TESTS... --out results.json MUTANT_NAME_PREFIX...

A prefix selects every mutant whose name starts with it (``nncompress.segments.x_split_streams``);
``@FILE`` names mutants exactly, one a line (a random sample, say).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import sys
import time


def mutant_names(prefixes: list[str]) -> list[str]:
    found = []
    modules = {prefix.split(".x")[0] for prefix in prefixes}
    for module in sorted(modules):
        path = module.replace(".", "/") + ".py"
        if not os.path.exists(path):  # a package: its __init__.py
            path = module.replace(".", "/") + "/__init__.py"
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for name in re.findall(r"^\s*def (x\S*?__mutmut_\d+)\(", text, re.M):
            full = f"{module}.{name}"
            if any(full.startswith(prefix) for prefix in prefixes):
                found.append(full)
    return sorted(set(found), key=lambda n: (n.rsplit("__mutmut_", 1)[0], int(n.rsplit("_", 1)[1])))


def generate() -> int:
    """mutmut's generation step alone (``mutmut run`` without its clean and coverage passes):
    writes ``mutants/`` from the ``[tool.mutmut]`` table of the tree it is run in."""
    from pathlib import Path

    from mutmut import __main__ as mutmut_main

    mutmut_main.set_mutant_under_test("mutant_generation")
    os.makedirs(Path("mutants"), exist_ok=True)
    mutmut_main.copy_src_dir()
    mutmut_main.copy_also_copy_files()
    mutmut_main.setup_source_paths()
    print(mutmut_main.create_mutants(1))
    return 0


def main() -> int:
    if sys.argv[1:] == ["--generate"]:
        return generate()
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", nargs="+", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--cpu-limit", type=int, default=120)
    parser.add_argument("--wall-limit", type=int, default=1800)
    parser.add_argument("--no-warm-up", action="store_true", help="tests that code nothing")
    parser.add_argument("--preload", action="store_true",
                        help="collect the tests once before forking, so that each mutant's run finds"
                             " the test modules already imported")
    parser.add_argument("--memo-compress", action="store_true",
                        help="remember nncompress.compress's answers across mutants (only for"
                             " mutants of code that compress() does not run: the tests' archives"
                             " are then made once, in the parent)")
    parser.add_argument("prefixes", nargs="+")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    # "@FILE": exact mutant names, one a line (a sample); anything else: a name prefix
    exact = [line.strip() for prefix in args.prefixes if prefix.startswith("@")
             for line in open(prefix[1:], encoding="utf-8") if line.strip()]
    prefixes = [prefix for prefix in args.prefixes if not prefix.startswith("@")]
    names = (mutant_names(prefixes) if prefixes else []) + exact
    import pytest

    import nncompress  # noqa: F401
    from nncompress import api, parallel, segments  # noqa: F401

    # warm up: load (or compile) level 1's kernels before forking
    if not args.no_warm_up:
        assert api.decompress(api.compress(b"warm-up " * 100, 1)) == b"warm-up " * 100
    if args.memo_compress:
        remembered = {}
        plain = api.compress

        def compress(data, *a, **k):
            key = (bytes(data), a, tuple(sorted(k.items())))
            if key not in remembered:
                remembered[key] = plain(data, *a, **k)
            return remembered[key]

        api.compress = nncompress.compress = compress
    if args.preload:
        devnull, saved = os.open(os.devnull, os.O_WRONLY), os.dup(1)
        os.dup2(devnull, 1)
        # with --memo-compress the tests are run once unmutated, which fills the memo
        only = [] if args.memo_compress else ["--collect-only"]
        pytest.main([*only, "-q", "-p", "no:cacheprovider", "--rootdir=.", *args.tests])
        os.dup2(saved, 1)
    results = json.load(open(args.out)) if os.path.exists(args.out) else {}
    for name in names:
        if name in results:
            continue
        started = time.time()
        pid = os.fork()
        if pid == 0:
            os.environ["MUTANT_UNDER_TEST"] = name
            resource.setrlimit(resource.RLIMIT_CPU, (args.cpu_limit, args.cpu_limit + 1))
            signal.alarm(args.wall_limit)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = pytest.main(["-x", "-q", "-p", "no:cacheprovider", "--rootdir=.", *args.tests])
            os._exit(int(code))
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            verdict = "timeout"
        else:
            code = os.waitstatus_to_exitcode(status)
            verdict = {0: "survived", 1: "killed"}.get(code, f"error {code}")
        results[name] = verdict
        print(f"{name}: {verdict} ({time.time() - started:.0f} s)", flush=True)
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
