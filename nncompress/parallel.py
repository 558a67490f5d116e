"""The parallel engine: several segments coded at once, by local processes or a Dask cluster.

Segments (segments.py) are independent streams, so they can be coded anywhere in any order; the
engine reads them in order, keeps at most `window` of them in flight (the workers, plus one being
read), and writes the results in order.  Memory therefore stays bounded however long the input
(stdin to stdout included), and the bytes written are those of a one-process run.

Processes, not threads: the numba kernels hold the GIL.  Workers start with 'forkserver' (fork
from a process that has started threads, numba's among them, is unsafe) and ignore SIGINT, so
Ctrl-C reaches only the main process, which stops them and lets the caller remove its partial
output.

Memory rule: each worker holds one model (codec.model_memory: about 34 MiB at -1, 404 MiB at -6,
2,020 MiB at -9) plus about 3 segments of buffers (raw input, compressed output, their copies in
transit), plus ~150 MiB for the interpreter and the compiled kernels; the main process holds up
to workers + 1 segments.  -T N is lowered until that fits in the memory available now.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import multiprocessing
import os
import signal

from . import format as fmt
from . import segments
from .codec import StreamDecoder, model_memory
from .format import NNCError
from .presets import params_for_level

WORKER_BASE_MEMORY = 150 << 20


class WorkerLost(NNCError):
    """A local worker process died (killed, or out of memory): its segment is lost, so the whole
    output is abandoned (the command line removes what it had written)."""
SEGMENT_BUFFERS = 3


# -- the jobs (module level so that workers can import them) --

def compress_job(data: bytes, level, params, block_size: int, size: int | None = None) -> bytes:
    """One segment's stream, its model sized to `size` (segments.fitted_size)."""
    return segments.compress_segment(data, level, params, block_size, size=size)


def decompress_job(stream: bytes, keep: bool = True):
    """The segment's raw bytes, or when keep is False only (length, crc32): a test sends back
    nothing it does not need."""
    raw = segments.decompress_segment(stream)
    return raw if keep else (len(raw), fmt.crc32(raw))


def decompress_file_job(data: bytes) -> bytes:
    """A whole (small) archive, however many segments it has."""
    decoder = StreamDecoder(multi_stream=True)
    out = decoder.feed(data)
    decoder.finish()
    return out


# -- sizing --

def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes the kernel says can be allocated without swapping (None if unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def worker_memory(params, segment_size: int) -> int:
    return model_memory(params) + SEGMENT_BUFFERS * segment_size + WORKER_BASE_MEMORY


def plan_workers(requested: int, params, segment_size: int, available: int | None = None) -> int:
    """-T N as it can run here: 0 means every core; capped so N workers fit in memory."""
    if requested < 0:
        raise ValueError("the number of threads must be >= 0")
    workers = requested or cpu_count()
    if available is None:
        available = available_memory()
    if available is not None:
        per_worker = worker_memory(params, segment_size) + segment_size  # + its share in the main process
        workers = min(workers, max(1, available // per_worker))
    return max(1, workers)


# -- engines: anything with submit(fn, *args) -> future, cancel(futures), slots, close() --

class SerialEngine:
    """Runs each job in this process when it is submitted (-T 1 with the segment-aware paths)."""

    slots = 1

    def submit(self, fn, *args):
        future = cf.Future()
        try:
            future.set_result(fn(*args))
        except Exception as exc:  # noqa: BLE001 - handed to whoever asks for the result
            future.set_exception(exc)
        return future

    def cancel(self, futures) -> None:
        pass

    def close(self) -> None:
        pass


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalEngine:
    """A pool of `workers` processes, started on first use."""

    def __init__(self, workers: int):
        self.slots = workers
        self._pool = None

    def submit(self, fn, *args):
        if self._pool is not None and getattr(self._pool, "_broken", False):
            self.close(abort=True)  # a worker died in an earlier job: start afresh
        if self._pool is None:
            method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
            self._pool = cf.ProcessPoolExecutor(self.slots, mp_context=multiprocessing.get_context(method),
                                                initializer=_ignore_sigint)
        return self._pool.submit(fn, *args)

    def cancel(self, futures) -> None:
        for future in futures:
            future.cancel()

    def close(self, abort: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not abort:
            pool.shutdown(wait=True)
            return
        # interrupted or failed: don't wait for segments nobody will write
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(5)


def make_engine(threads: int = 1, client=None, *, params=None, segment_size=None):
    """The engine for -T threads or a distributed.Client (which wins)."""
    if client is not None:
        from .cluster import DaskEngine

        return DaskEngine(client)
    workers = plan_workers(threads, params or params_for_level(6),
                           segment_size or segments.DEFAULT_SEGMENT_SIZE)
    return SerialEngine() if workers == 1 else LocalEngine(workers)


def close_engine(engine, abort: bool = False) -> None:
    if isinstance(engine, LocalEngine):
        engine.close(abort)
    else:
        engine.close()


# -- the ordered pipeline --

def ordered_futures(engine, fn, jobs):
    """Yield the future of fn(*job) for each job, in order, with at most engine.slots + 1 jobs in
    flight; the caller takes each result (or its exception) before asking for the next."""
    window = engine.slots + 1
    pending = collections.deque()
    try:
        for job in jobs:
            pending.append(engine.submit(fn, *job))
            if len(pending) >= window:
                yield _checked(pending.popleft())
        while pending:
            yield _checked(pending.popleft())
    finally:
        if pending:
            engine.cancel(list(pending))


def _checked(future):
    """The future, once done; a worker that died surfaces as WorkerLost (an NNCError)."""
    try:
        future.exception()
    except cf.CancelledError:
        pass
    else:
        if isinstance(future.exception(), cf.BrokenExecutor):
            raise WorkerLost(f"a worker process died ({future.exception()}); "
                             "output abandoned, input kept")
    return future


def _write_all(sink, data) -> None:
    view = memoryview(data)
    while view:
        count = sink.write(view)
        if count is None:
            return
        if not count:
            raise OSError("write made no progress")
        view = view[count:]


def compress_stream(source, sink, engine, *, level, params=None, block_size=fmt.DEFAULT_BLOCK_SIZE,
                    segment_size=segments.DEFAULT_SEGMENT_SIZE, progress=None,
                    size: int | None = None) -> tuple[int, int]:
    """Compress the binary file object source into sink; returns (bytes read, bytes written).

    size: the input's size when known (a regular file's), as NNCompressor takes it."""
    segments.check_segment_size(segment_size)
    if segment_size is None:
        raise ValueError("parallel compression needs a segment size")
    read = written = 0
    pieces = segments.read_segments(source, segment_size)
    first = next(pieces)
    second = next(pieces, None)

    def job(index, piece):
        fit = segments.fitted_size(len(piece), index * segment_size, size, block_size, segment_size)
        return piece, level, params, block_size, fit

    if second is None:  # one segment: no worker to start, no data to ship
        engine = SerialEngine()
        jobs = [job(0, first)]
    else:
        def all_pieces():
            yield first
            yield second
            yield from pieces
        jobs = (job(index, piece) for index, piece in enumerate(all_pieces()))
    sizes = collections.deque()

    def tracked():
        for job in jobs:
            sizes.append(len(job[0]))
            yield job

    for future in ordered_futures(engine, compress_job, tracked()):
        out = future.result()
        raw = sizes.popleft()
        read += raw
        _write_all(sink, out)
        written += len(out)
        if progress:
            progress(raw)
    return read, written


def decompress_stream(source, sink, engine, *, verify_all: bool = False, progress=None) -> tuple[int, int]:
    """Decompress the archive read from source into sink (None: only check it).

    verify_all (for -t): a damaged segment does not stop the check; every damaged segment is
    named in the NNCError raised at the end, after all the others were verified."""
    read = written = 0
    keep = sink is not None
    damaged = []
    pieces = segments.split_streams(source, recover=verify_all)
    held = collections.deque()

    def jobs():
        try:
            for piece in pieces:
                held.append(piece)
                yield piece.data, keep  # None (framing known bad) comes back as None
        except NNCError as exc:
            raise _BadFraming(exc) from None

    futures = ordered_futures(engine, _decode_or_none, jobs())
    total = 0
    while True:
        try:
            future = next(futures)
        except StopIteration:
            break
        except _BadFraming as exc:
            raise exc.error from None
        try:
            out = future.result()
        except NNCError as exc:
            piece = held.popleft()
            message = f"segment {piece.index} (at byte {piece.offset} of the archive): {exc}"
            if not verify_all:
                futures.close()
                raise NNCError(message) from None
            damaged.append((message, str(exc)))
            total += 1
            read += len(piece.data or b"")
            continue
        piece = held.popleft()
        total += 1
        if piece.data is None:
            damaged.append((f"segment {piece.index} (at byte {piece.offset} of the archive): {piece.error}",
                            piece.error))
            continue
        read += len(piece.data)
        size = len(out) if keep else out[0]
        if keep:
            _write_all(sink, out)
        written += size
        if progress:  # decoded bytes: the progress total is the size the archive records
            progress(size)
    if damaged:
        if total == 1:  # a one-segment archive: the message it always had
            raise NNCError(damaged[0][1])
        good = total - len(damaged)
        raise NNCError(f"{len(damaged)} of {total} segments damaged ({good} verified): "
                       + "; ".join(message for message, _ in damaged))
    return read, written


class _BadFraming(Exception):
    """split_streams refused the archive (its message already names the segment)."""

    def __init__(self, error: NNCError):
        super().__init__(str(error))
        self.error = error


def _decode_or_none(stream, keep):
    return None if stream is None else decompress_job(stream, keep)


# -- whole buffers (the API) --

def compress_bytes(data, level, *, params=None, block_size=fmt.DEFAULT_BLOCK_SIZE,
                   segment_size=segments.DEFAULT_SEGMENT_SIZE, threads=1, client=None) -> bytes:
    import io

    if params is not None:
        level = 0
    sink = io.BytesIO()
    engine = make_engine(threads, client, params=params or params_for_level(level), segment_size=segment_size)
    aborted = True
    try:
        raw = bytes(memoryview(data).cast("B"))
        compress_stream(io.BytesIO(raw), sink, engine, level=level, params=params,
                        block_size=block_size, segment_size=segment_size, size=len(raw))
        aborted = False
    finally:
        close_engine(engine, aborted)
    return sink.getvalue()


def decompress_bytes(data, *, threads=1, client=None) -> bytes:
    import io

    sink = io.BytesIO()
    engine = make_engine(threads, client)
    aborted = True
    try:
        decompress_stream(io.BytesIO(bytes(data)), sink, engine)
        aborted = False
    finally:
        close_engine(engine, aborted)
    return sink.getvalue()


class FilePrefetcher:
    """Many small input files: whole files go to the workers ahead of the one being written.

    The command line handles files one at a time (names, checks, atomic output); without this,
    a file smaller than a segment would be one job at a time.  Files up to `limit` bytes are
    read and submitted in command-line order, at most engine.slots + 1 ahead; take() hands back
    a file's result only if the bytes the caller then reads are the bytes that were sent."""

    def __init__(self, engine, names, mode: str, limit: int, *, level=6, params=None,
                 block_size=fmt.DEFAULT_BLOCK_SIZE):
        self._engine = engine
        self._names = iter(names)
        self._mode = mode
        self._limit = limit
        self._job = (compress_job, (level, params, block_size)) if mode == "compress" \
            else (decompress_file_job, ())
        self._ahead = collections.OrderedDict()  # name -> (data, future)
        self._fill()

    def _fill(self) -> None:
        while len(self._ahead) <= self._engine.slots:
            name = next(self._names, None)
            if name is None:
                return
            if name == "-" or name in self._ahead:
                continue
            try:
                if not os.path.isfile(name) or os.path.getsize(name) > self._limit:
                    continue
                with open(name, "rb") as f:
                    data = f.read(self._limit + 1)
            except OSError:
                continue  # the command line reports it when it gets there
            if len(data) > self._limit:
                continue
            fn, extra = self._job
            if self._mode == "compress":  # a whole file: its size is known (as Runner declares it)
                extra = extra + (len(data),)
            self._ahead[name] = (data, self._engine.submit(fn, data, *extra))

    def take(self, name: str, data: bytes):
        """The job's result for this file if it was sent with exactly `data`, else None."""
        entry = self._ahead.pop(name, None)
        self._fill()
        if entry is None or entry[0] != data:
            if entry is not None:
                self._engine.cancel([entry[1]])
            return None
        return entry[1].result()

    def close(self) -> None:
        self._engine.cancel([future for _, future in self._ahead.values()])
        self._ahead.clear()


class Prepended:
    """A binary reader that returns `head` first, then the rest of `source`."""

    def __init__(self, head: bytes, source):
        self._head = memoryview(head)
        self._source = source

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size is None or size < 0:
                out = bytes(self._head) + self._source.read()
                self._head = self._head[:0]
                return out
            out, self._head = bytes(self._head[:size]), self._head[size:]
            return out
        return self._source.read(size)
