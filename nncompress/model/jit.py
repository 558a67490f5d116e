"""How every model kernel is compiled: the numba options, in one place.

Determinism first: no fastmath (not even "contract": a fused multiply-add rounds once where the
reference rounds twice), no parallel reductions, Python's error model.  Every kernel module takes
its decorator from here and imports nothing else from numba's compiler.

Compiled code is cached on disk, with two changes to numba's own cache:

* The cache key also covers the source of every compiled module: this package and the range
  coder's kernels (nncompress/rangecoder.py, nncompress/fused.py, which compile the model's step
  into their decode loop).  numba only notices edits to the file that defines a cached function,
  but `nibble.step` compiles in the kernels of the sibling modules: without this, editing mixer.py
  would leave a stale `step` (or a stale fused decode loop) in the cache.
* Where no cache directory is writable (a read-only install and no writable home, e.g. a service
  account), numba refuses to create the function ("no locator available").  We then use a private
  per-user directory under the system temporary directory, and failing that compile in memory on
  every run, saying so once on stderr.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path

import numba
from numba.core import caching

# The options of every kernel.  fastmath and parallel are spelled out so that a reader (and
# tests/test_kernel_flags.py) sees they are off; the error model is numba's njit default.
#
# _nrt=False: no reference counting.  The kernels allocate nothing (scratch rows live in the
# state) and the state's arrays are borrowed views (packed.py), so there is nothing to count; with
# the counting on, numba emitted a call per array for every state tuple a kernel passed or
# received (over 300 calls per nibble step with ~100 fields), which made the model 1.7x slower.
OPTIONS = dict(fastmath=False, parallel=False, error_model="python", _nrt=False)

# Python's error model tests every divisor for zero, and that branch keeps LLVM from vectorising
# a loop that divides (the expert's Adam step divides every weight's step by its moment).  Kernels
# whose divisors are positive by construction may leave the test out: a nonzero division gives
# the same IEEE-754 result under either model, so the bits do not change, only the speed
# (bench/TUNING.md, round 26).
UNCHECKED_DIVISION = dict(OPTIONS, error_model="numpy")


def compiled_sources() -> list:
    """Every source file whose code a cached kernel may embed.  The reference twin is left out:
    it is never compiled, and editing it should not cost a recompile."""
    model = Path(__file__).parent
    paths = [path for path in sorted(model.glob("*.py")) if path.name != "reference.py"]
    return paths + [model.parent / "rangecoder.py", model.parent / "fused.py"]


def _model_sources_digest() -> str:
    """Hash of compiled_sources(): part of every kernel's cache key."""
    digest = hashlib.sha256()
    for path in compiled_sources():
        digest.update(path.name.encode())
        try:
            digest.update(path.read_bytes())
        except OSError:  # unreadable source (unusual installs): fall back to its size and age
            st = path.stat()
            digest.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()


MODEL_SOURCES_DIGEST = _model_sources_digest()


def private_cache_dir() -> str | None:
    """A cache directory only this user can write (created mode 0700), or None."""
    path = os.path.join(tempfile.gettempdir(), f"nncompress-numba-cache-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    # someone else's directory (or one others may write) could hold planted machine code
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return path


class _PrivateTempLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba cache locator of last resort: private_cache_dir()."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(self._base, self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        cls._base = private_cache_dir()
        if cls._base is None:
            return None
        return super().from_function(py_func, py_file)


class _ModelCacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = [*caching.CompileResultCacheImpl._locator_classes, _PrivateTempLocator]


class _ModelCache(caching.FunctionCache):
    _impl_class = _ModelCacheImpl

    def _index_key(self, sig, codegen):
        return (*super()._index_key(sig, codegen), MODEL_SOURCES_DIGEST)


_uncached_note_shown = False


def _enable_cache(dispatcher) -> None:
    global _uncached_note_shown
    if numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1 (debugging): plain Python functions
        return
    try:
        dispatcher._cache = _ModelCache(dispatcher.py_func)
    except RuntimeError as exc:  # numba: "cannot cache function ...: no locator available"
        if not _uncached_note_shown:
            _uncached_note_shown = True
            print(f"nncompress: no writable cache directory, kernels are compiled on every run "
                  f"({exc})", file=sys.stderr)


def kernel(func=None, *, inline: bool = False, cache: bool = True, checked_division: bool = True):
    """Compile `func` as a model kernel.  inline=True: inlined into its callers at numba's IR
    level (small helpers on the hot path; they then compile under their callers' options).
    cache=False only for generated code, which has no source file to key a cache by (its callers'
    cached code contains it).  checked_division=False: UNCHECKED_DIVISION, for kernels whose every
    divisor is positive by construction."""
    def decorate(f):
        options = OPTIONS if checked_division else UNCHECKED_DIVISION
        if inline:
            options = dict(options, inline="always")
        dispatcher = numba.njit(**options)(f)
        if cache:
            _enable_cache(dispatcher)
        return dispatcher
    return decorate(func) if func is not None else decorate
