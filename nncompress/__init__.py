"""nncompress: a neural text compressor.

An online-trained RNNME predictor (recurrent network + hashed maximum-entropy contexts) drives
constriction's range coder.  The API mirrors the standard library's lzma module::

    import nncompress
    blob = nncompress.compress(data, preset=6)
    assert nncompress.decompress(blob) == data
"""

import importlib

# The public names are imported on first use (PEP 562): importing the package, or a light
# submodule such as the benchmark worker or the corpus catalog, must not load numba and the
# kernels (hundreds of milliseconds and ~100 MiB of resident memory), nor importlib.metadata
# (several MiB, which would show in the benchmark worker's peak memory).
_LAZY = {
    "compress": "api", "decompress": "api", "open": "api", "NNCompressor": "api",
    "NNDecompressor": "api", "NNCFile": "api", "NNCError": "errors",
    "FORMAT_VERSION": "format", "DEFAULT_LEVEL": "presets",
}
__all__ = ["compress", "decompress", "open", "NNCompressor", "NNDecompressor", "NNCFile",
           "NNCError", "FORMAT_VERSION", "DEFAULT_LEVEL"]


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("nncompress")
    except metadata.PackageNotFoundError:  # a source tree on sys.path that was never installed
        return "0+unknown"


def __getattr__(name: str):
    if name == "__version__":
        value = _version()
    elif name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})
