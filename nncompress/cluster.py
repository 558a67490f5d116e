"""The Dask engine: segments coded by the workers of a dask.distributed cluster.

    pip install 'nncompress[cluster]'            # on the client and on every worker
    dask scheduler                               # one machine: tcp://HOST:8786
    dask worker tcp://HOST:8786 --nworkers N --nthreads 1    # every machine
    nncompress --cluster tcp://HOST:8786 -6 big.txt      (or NNC_CLUSTER=tcp://HOST:8786)

Each job is a module-level function of nncompress.parallel and one segment's bytes, passed inline
with the task (not scattered): the scheduler then holds the task's input until it is done, so
when a worker dies it re-runs the task elsewhere (up to distributed's allowed-failures limit),
and the archive is unchanged.  The results come back in order through the same bounded window
as local processes (workers' threads + 1 segments in flight), so the client's memory stays
bounded too.  One thread per worker process is right: the kernels hold the GIL.
"""

from __future__ import annotations

import contextlib
import os
import warnings

from . import format as fmt
from . import parallel, segments
from .format import NNCError

ENV_VAR = "NNC_CLUSTER"


def _distributed():
    try:
        import distributed
    except ImportError:
        raise NNCError("--cluster needs dask.distributed: pip install 'nncompress[cluster]'") from None
    return distributed


def connect(address: str, timeout: float = 30):
    """A distributed.Client for a scheduler address such as tcp://host:8786."""
    distributed = _distributed()
    return distributed.Client(address, timeout=timeout, set_as_default=False)


@contextlib.contextmanager
def connected(address: str | None):
    """A client for `address` for the length of a with-block (None: yields None, run locally).
    A scheduler that cannot be reached is an NNCError, not a traceback."""
    if not address:
        yield None
        return
    try:
        client = connect(address)
    except (OSError, TimeoutError) as exc:
        raise NNCError(f"cannot reach the cluster at {address}: {exc}") from None
    try:
        yield client
    finally:
        client.close()


def address_from(option: str | None) -> str | None:
    """--cluster, else $NNC_CLUSTER, else None (run locally)."""
    return option or os.environ.get(ENV_VAR) or None


class DaskEngine:
    """parallel's engine interface over a distributed.Client."""

    def __init__(self, client):
        self.client = client
        info = client.scheduler_info()
        threads = sum(worker.get("nthreads", 1) for worker in info.get("workers", {}).values())
        self.slots = max(1, threads)

    def submit(self, fn, *args):
        # pure=False: two equal segments are still two tasks (and hashing megabytes is wasted work).
        # The segment rides in the task on purpose (see the module docstring), so distributed's
        # advice against large graphs does not apply.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
            return self.client.submit(fn, *args, pure=False)

    def cancel(self, futures) -> None:
        if futures:
            self.client.cancel(futures)

    def close(self) -> None:
        pass  # the client belongs to the caller


def compress_file(client, source, sink, *, level=6, params=None, block_size=fmt.DEFAULT_BLOCK_SIZE,
                  segment_size=segments.DEFAULT_SEGMENT_SIZE, progress=None, size=None):
    """Compress binary file object source into sink on the cluster: the bytes a local run writes
    (size: the input's size when known, as the command line passes a regular file's)."""
    return parallel.compress_stream(source, sink, DaskEngine(client), level=level, params=params,
                                    block_size=block_size, segment_size=segment_size, progress=progress,
                                    size=size)


def decompress_file(client, source, sink, *, verify_all=False, progress=None):
    """Decompress (sink None: test) the archive read from source on the cluster."""
    return parallel.decompress_stream(source, sink, DaskEngine(client), verify_all=verify_all,
                                      progress=progress)
