"""mutmut with its wall-clock timeouts scaled by $MUTMUT_WALL_SCALE (the CPU-time limit is
mutmut's own): on a machine whose idle share is tiny, a niced mutant's tests take 10-20 times
their CPU time in wall time, so the wall bound alone would call most mutants 'timeout'."""
import os
import sys

import mutmut.workers.isolation as isolation
import mutmut.workers.timeout as timeout

SCALE = float(os.environ.get("MUTMUT_WALL_SCALE", "20"))
_register = timeout.register_timeout


def scaled(pid, timeout_s):
    return _register(pid, timeout_s * SCALE)


isolation.register_timeout = scaled
from mutmut.__main__ import cli  # noqa: E402

sys.argv[0] = "mutmut"
sys.exit(cli())
