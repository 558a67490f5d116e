"""The coding path must stay deterministic: no fastmath, no parallel, no libm transcendentals."""

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "nncompress"
MODEL = PACKAGE / "model"


def test_no_fastmath_or_parallel_in_package():
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"fastmath\s*=\s*True", text), path
        assert not re.search(r"parallel\s*=\s*True", text), path
        assert "prange" not in text, path


def test_kernels_call_no_transcendentals():
    forbidden = {"exp", "log", "log2", "log10", "tanh", "sinh", "cosh", "expm1", "log1p", "pow",
                 "sqrt", "dot", "matmul", "power", "sin", "cos"}
    for path in MODEL.glob("kernels*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in forbidden:
                raise AssertionError(f"{path.name}:{node.lineno} uses {node.attr}")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                raise AssertionError(f"{path.name}:{node.lineno} uses @ (BLAS)")


def test_all_kernels_cached():
    text = (MODEL / "kernels.py").read_text()
    assert text.count("@njit(") == text.count("@njit(cache=True")
