"""Archives must decode on any CPU: compile the kernels for a different target in a subprocess."""

import os
import subprocess
import sys

import pytest

import nncompress

SCRIPT = """
import sys, nncompress
mode, src, dst, level = sys.argv[1:5]
data = open(src, 'rb').read()
out = nncompress.compress(data, int(level)) if mode == 'c' else nncompress.decompress(data)
open(dst, 'wb').write(out)
"""


def run_with_target(cpu_name, *args, tmp_path):
    env = dict(os.environ)
    if cpu_name:
        env["NUMBA_CPU_NAME"] = cpu_name
        # a separate cache so the generic build can't be served from the host's cached machine code
        env["NUMBA_CACHE_DIR"] = str(tmp_path / f"numba-cache-{cpu_name}")
    subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env, check=True, timeout=600)


@pytest.mark.parametrize("level", [1, 6])
def test_generic_and_host_targets_interoperate(tmp_path, sample_text, level):
    src = tmp_path / "input"
    src.write_bytes(sample_text[:8000] + bytes(range(256)))
    host_nnc, generic_nnc = tmp_path / "host.nnc", tmp_path / "generic.nnc"
    run_with_target(None, "c", str(src), str(host_nnc), str(level), tmp_path=tmp_path)
    run_with_target("generic", "c", str(src), str(generic_nnc), str(level), tmp_path=tmp_path)
    assert host_nnc.read_bytes() == generic_nnc.read_bytes()
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    run_with_target("generic", "d", str(host_nnc), str(out1), "0", tmp_path=tmp_path)
    run_with_target(None, "d", str(generic_nnc), str(out2), "0", tmp_path=tmp_path)
    assert out1.read_bytes() == src.read_bytes() == out2.read_bytes()


def test_in_process_matches_subprocess(tmp_path, sample_text):
    src = tmp_path / "input"
    src.write_bytes(sample_text[:3000])
    dst = tmp_path / "x.nnc"
    run_with_target(None, "c", str(src), str(dst), "6", tmp_path=tmp_path)
    assert dst.read_bytes() == nncompress.compress(src.read_bytes(), 6)
