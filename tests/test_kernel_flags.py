"""The coding path must stay deterministic: no fastmath (of any kind, "contract" included), no
parallel, no libm transcendentals or BLAS, in every module of the model, and every kernel
compiled through nncompress/model/jit.py (the one place the numba options live)."""

import ast
import importlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core.registry import CPUDispatcher

PACKAGE = Path(__file__).resolve().parent.parent / "nncompress"
MODEL = PACKAGE / "model"
# every module numba compiles: the model package and the range-coder twin with its fused loop
MODEL_MODULES = sorted(MODEL.glob("*.py")) + [MODEL.parent / "rangecoder.py", MODEL.parent / "fused.py"]
# LLVM fast-math flags numba accepts in a fastmath set (any of them breaks bit-exactness)
FASTMATH_FLAGS = {"fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"}
# analysis-only code outside the coding path that may use floating-point libm
LIBM_ALLOWED = {
    ("predictor.py", "byte_distributions"),  # code lengths in bits (np.log2), not in the coding path
    # Adam's square root: IEEE 754 requires sqrt correctly rounded (one instruction on x86-64 and
    # aarch64, no libm), so it is as deterministic as + - * /; test_rnnme's twin checks it bit for bit
    ("rnnme_ops.py", "adam_row"),
    ("reference_rnnme.py", "_adam"),  # the same square root in the expert's plain-Python twin
}


def _tree(path):
    return ast.parse(path.read_text(), filename=str(path))


def _is_false(node):
    return isinstance(node, ast.Constant) and node.value is False


def test_model_modules_are_found():
    names = {p.name for p in MODEL_MODULES}
    assert {"jit.py", "detmath.py", "nibble.py", "mixer.py", "rnn.py"} <= names


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_no_fastmath_or_parallel_spelled_anywhere(path):
    """fastmath/parallel may only ever be spelled False (as keyword or dict key); no prange."""
    for node in ast.walk(_tree(path)):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.keyword) and node.arg in ("fastmath", "parallel"):
            assert _is_false(node.value), f"{where}: {node.arg}={ast.unparse(node.value)}"
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value in ("fastmath", "parallel"):
                    assert _is_false(value), f"{where}: {key.value!r}: {ast.unparse(value)}"
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            assert name != "prange", f"{where}: prange"


@pytest.mark.parametrize("path", MODEL_MODULES, ids=lambda p: p.name)
def test_no_fastmath_flag_names_in_model(path):
    """A fastmath flag set can be built without the word fastmath next to it."""
    tree = _tree(path)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docstrings:
            assert node.value not in FASTMATH_FLAGS, f"{path.name}:{node.lineno}: {node.value!r}"


@pytest.mark.parametrize("path", MODEL_MODULES, ids=lambda p: p.name)
def test_numba_compiler_only_through_jit_module(path):
    """Kernels take their decorator from jit.py: no njit/jit/vectorize of their own."""
    if path.name == "jit.py":
        return
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("numba"):
            imported = {a.name for a in node.names}
            assert not imported & {"njit", "jit", "vectorize", "guvectorize", "cfunc",
                                   "generated_jit", "stencil"}, f"{path.name}:{node.lineno}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "numba":
            assert node.attr not in {"njit", "jit", "vectorize", "guvectorize", "cfunc"}, \
                f"{path.name}:{node.lineno}: numba.{node.attr}"


@pytest.mark.parametrize("path", MODEL_MODULES, ids=lambda p: p.name)
def test_model_calls_no_transcendentals(path):
    forbidden = {"exp", "log", "log2", "log10", "tanh", "sinh", "cosh", "expm1", "log1p", "pow",
                 "sqrt", "dot", "matmul", "power", "sin", "cos", "exp2", "einsum", "inner",
                 "tensordot", "vdot", "erf", "fma"}
    tree = _tree(path)
    allowed_nodes = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and (path.name, fn.name) in LIBM_ALLOWED:
            allowed_nodes |= {id(n) for n in ast.walk(fn)}
    for node in ast.walk(tree):
        if id(node) in allowed_nodes:
            continue
        if isinstance(node, ast.Attribute) and node.attr in forbidden:
            raise AssertionError(f"{path.name}:{node.lineno} uses {node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in forbidden:
            raise AssertionError(f"{path.name}:{node.lineno} calls {node.func.id}")
        if isinstance(node, ast.ImportFrom):
            assert not {a.name for a in node.names} & forbidden, f"{path.name}:{node.lineno}"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            raise AssertionError(f"{path.name}:{node.lineno} uses @ (BLAS)")


def _model_dispatchers():
    """Every compiled function defined in the model modules (generated ones included)."""
    for path in MODEL_MODULES:
        package = "nncompress.model" if path.parent == MODEL else "nncompress"
        module = importlib.import_module(f"{package}.{path.stem}")
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                yield f"{path.stem}.{name}", value


def test_every_compiled_kernel_has_deterministic_options():
    """What numba was actually told, however it was spelled."""
    from nncompress.model import jit

    assert jit.OPTIONS["fastmath"] is False and jit.OPTIONS["parallel"] is False
    kernels = dict(_model_dispatchers())
    assert len(kernels) > 30 and {"nibble.step", "rnn.bptt", "packed.unpack"} <= set(kernels)
    for name, dispatcher in kernels.items():
        options = dispatcher.targetoptions
        assert not options.get("fastmath"), f"{name}: fastmath={options.get('fastmath')!r}"
        assert not options.get("parallel"), f"{name}: parallel={options.get('parallel')!r}"
        expected = jit.UNCHECKED_DIVISION if name.split(".")[0] in UNCHECKED_MODULES else jit.OPTIONS
        for key, value in expected.items():
            assert options.get(key) == value, f"{name}: {key}={options.get(key)!r}"


# The expert's kernels, whose divisors are positive by construction (rnnme_ops' docstring), skip
# Python's zero test on division so that Adam's loop vectorises; no other module may.
UNCHECKED_MODULES = {"rnnme_ops", "rnnme_lstm", "rnnme_kernels"}


def test_unchecked_division_differs_from_the_default_only_in_the_error_model():
    from nncompress.model import jit

    differing = {key for key in jit.OPTIONS if jit.OPTIONS[key] != jit.UNCHECKED_DIVISION[key]}
    assert differing == {"error_model"} and jit.UNCHECKED_DIVISION.keys() == jit.OPTIONS.keys()


def test_every_kernel_is_cached_except_generated_code():
    from nncompress.model import jit, packed

    for name, dispatcher in _model_dispatchers():
        if dispatcher is packed.unpack:  # generated from the state declaration: no source file
            continue
        assert isinstance(dispatcher._cache, jit._ModelCache), name


# Numba finds no writable cache directory: a read-only install and no writable home (a service
# account).  Simulated by taking away numba's own cache locators, which is what that situation
# leaves (as root every directory is writable, so permissions cannot produce it here).
NO_CACHE_DIRECTORY = """
import sys, tempfile
import numpy as np
from numba.core import caching
caching.CompileResultCacheImpl._locator_classes = []
if sys.argv[1] == "no-temp":
    tempfile.gettempdir = lambda: "/dev/null/not-a-directory"
import nncompress
from nncompress.model.histories import lookup_slot
table = np.zeros(256, dtype=np.uint8)
table[16 * 4 + 16] = 7
print(lookup_slot(table, (7 << 24) | 4))
"""


def _run_without_cache_directory(mode, tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    return subprocess.run([sys.executable, "-c", NO_CACHE_DIRECTORY, mode], env=env,
                          capture_output=True, text=True, timeout=600)


def test_no_writable_cache_directory_falls_back_to_a_private_temporary_one(tmp_path):
    result = _run_without_cache_directory("temp", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["80"]  # the slot after the first (offset 16 * 5)
    private = tmp_path / f"nncompress-numba-cache-{os.getuid()}"
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert list(private.rglob("histories.lookup_slot-*.nbi"))  # it was cached there


def test_no_cache_directory_at_all_compiles_in_memory_with_a_note(tmp_path):
    result = _run_without_cache_directory("no-temp", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["80"]
    notes = [line for line in result.stderr.splitlines() if "nncompress:" in line]
    assert len(notes) == 1 and "no writable cache directory" in notes[0]


def test_private_cache_directory_refused_when_others_may_write_it(tmp_path, monkeypatch):
    from nncompress.model import jit

    monkeypatch.setattr(jit.tempfile, "gettempdir", lambda: str(tmp_path))
    path = tmp_path / f"nncompress-numba-cache-{os.getuid()}"
    assert jit.private_cache_dir() == str(path)
    path.chmod(0o777)
    assert jit.private_cache_dir() is None
