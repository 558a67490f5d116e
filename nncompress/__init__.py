"""nncompress: a neural text compressor.

An online-trained RNNME predictor (recurrent network + hashed maximum-entropy contexts) drives
constriction's range coder.  The API mirrors the standard library's lzma module::

    import nncompress
    blob = nncompress.compress(data, preset=6)
    assert nncompress.decompress(blob) == data
"""

from .api import NNCError, NNCFile, NNCompressor, NNDecompressor, compress, decompress, open
from .format import FORMAT_VERSION
from .presets import DEFAULT_LEVEL

__version__ = "0.1.0"
__all__ = ["compress", "decompress", "open", "NNCompressor", "NNDecompressor", "NNCFile",
           "NNCError", "FORMAT_VERSION", "DEFAULT_LEVEL"]
