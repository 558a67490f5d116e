"""nncompress: a neural text compressor.

An online-trained RNNME predictor (recurrent network + hashed maximum-entropy contexts) drives
constriction's range coder.  The API mirrors the standard library's lzma module::

    import nncompress
    blob = nncompress.compress(data, preset=6)
    assert nncompress.decompress(blob) == data
"""

import importlib
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("nncompress")
except _metadata.PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"

# The public names are imported on first use (PEP 562): importing the package, or a light
# submodule such as the benchmark worker or the corpus catalog, must not load numba and the
# kernels (hundreds of milliseconds and ~100 MiB of resident memory).
_LAZY = {
    "compress": "api", "decompress": "api", "open": "api", "NNCompressor": "api",
    "NNDecompressor": "api", "NNCFile": "api", "NNCError": "api",
    "FORMAT_VERSION": "format", "DEFAULT_LEVEL": "presets",
}
__all__ = ["compress", "decompress", "open", "NNCompressor", "NNDecompressor", "NNCFile",
           "NNCError", "FORMAT_VERSION", "DEFAULT_LEVEL"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
