"""nncompress: a neural text compressor.

An online-trained RNNME predictor (recurrent network + hashed maximum-entropy contexts) drives
constriction's range coder.  The API mirrors the standard library's lzma module::

    import nncompress
    blob = nncompress.compress(data, preset=6)
    assert nncompress.decompress(blob) == data
"""

from .errors import NNCError
from .format import FORMAT_VERSION
from .presets import DEFAULT_LEVEL

__version__ = "0.1.0"
__all__ = ["compress", "decompress", "open", "NNCompressor", "NNDecompressor", "NNCFile",
           "NNCError", "FORMAT_VERSION", "DEFAULT_LEVEL"]

# The API pulls in numba and the model kernels (about half a second): it is imported on first
# use, so `nncompress --help` and `--version` answer without it.
_API_NAMES = frozenset({"compress", "decompress", "open", "NNCompressor", "NNDecompressor",
                        "NNCFile"})


def __getattr__(name):
    if name in _API_NAMES:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _API_NAMES)
