"""Archives must decode on any CPU: compile the kernels for a different target in a subprocess.

Archive bytes alone are a weak witness (a float drift in the recurrent layer may not reach the
coded output of a short input), so the model's probabilities and its float state are compared
too, over more than 64 KB.  The generic build gets its own numba cache, shared by every test
here, so it is compiled once and can never be served from the host's cached machine code.
"""

import os
import subprocess
import sys

import pytest

import nncompress

SCRIPT = """
import sys, nncompress
mode, src, dst, level = sys.argv[1:5]
data = open(src, 'rb').read()
if mode == 'd':
    out = nncompress.decompress(data)
elif level == 'rnnme':  # branch neural2: the RNNME expert alone
    out = nncompress.compress(data, model='rnnme,hidden=16,me=18')
else:
    out = nncompress.compress(data, int(level))
open(dst, 'wb').write(out)
"""

# sha256 of every prediction and of the model's float64 state after the input, per level
MODEL_STATE = """
import hashlib, sys
import numpy as np
from nncompress.model.predictor import Predictor
from nncompress.presets import params_for_level
data = open(sys.argv[1], 'rb').read()
for level in map(int, sys.argv[2:]):
    predictor = Predictor(params_for_level(level))
    predictions = hashlib.sha256()
    for start in range(0, len(data), 1 << 14):
        predictions.update(predictor.predict_known(data[start : start + (1 << 14)]).tobytes())
    floats = hashlib.sha256()
    arrays = predictor._arrays
    for name in sorted(arrays):
        if arrays[name].dtype in (np.float64, np.float32):  # float32: the RNNME expert
            floats.update(name.encode() + arrays[name].tobytes())
    print(level, predictions.hexdigest(), floats.hexdigest())
"""


@pytest.fixture(scope="module")
def generic_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("numba-cache-generic")


def run_with_target(generic_cache, *args, script=SCRIPT):
    env = dict(os.environ)
    if generic_cache is not None:
        env["NUMBA_CPU_NAME"] = "generic"
        # a separate cache so the generic build can't be served from the host's cached machine code
        env["NUMBA_CACHE_DIR"] = str(generic_cache)
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env, check=True,
                          timeout=900, capture_output=True, text=True).stdout


@pytest.mark.parametrize("level", [1, 6, 9, "rnnme"])  # 9 and rnnme: the RNNME expert (neural2)
def test_generic_and_host_targets_interoperate(tmp_path, sample_text, generic_cache, level):
    src = tmp_path / "input"
    src.write_bytes(sample_text[:8000] + bytes(range(256)))
    host_nnc, generic_nnc = tmp_path / "host.nnc", tmp_path / "generic.nnc"
    run_with_target(None, "c", src, host_nnc, level)
    run_with_target(generic_cache, "c", src, generic_nnc, level)
    assert host_nnc.read_bytes() == generic_nnc.read_bytes()
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    run_with_target(generic_cache, "d", host_nnc, out1, 0)
    run_with_target(None, "d", generic_nnc, out2, 0)
    assert out1.read_bytes() == src.read_bytes() == out2.read_bytes()


def test_generic_and_host_models_agree_bit_for_bit(tmp_path, large_text, generic_cache):
    """Every probability and every float64 state value (recurrent weights, states, gradients)
    after 70 KB, at levels 1, 6 and 9: an FMA contraction or any other target-dependent float
    rounding shows here even where it does not change the archive."""
    src = tmp_path / "input"
    src.write_bytes(large_text[:70_000])
    levels = (1, 6, 9)
    host = run_with_target(None, src, *levels, script=MODEL_STATE).split()
    generic = run_with_target(generic_cache, src, *levels, script=MODEL_STATE).split()
    assert len(host) == 3 * len(levels)
    assert host == generic


def test_in_process_matches_subprocess(tmp_path, sample_text):
    src = tmp_path / "input"
    src.write_bytes(sample_text[:3000])
    dst = tmp_path / "x.nnc"
    run_with_target(None, "c", src, dst, 6)
    assert dst.read_bytes() == nncompress.compress(src.read_bytes(), 6)
