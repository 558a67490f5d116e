"""The compressors nncompress is compared with, shared by `bench`, `analyze` and `demo`.

A :class:`Comparator` is a key, a label and a *spec*: a small JSON-ready dict a measuring worker
(:mod:`nncompress.benchmark.worker`) turns back into callables, so that a comparator can be
measured in a fresh process.  Three kinds of spec:

* ``{"type": "python", "codec": ..., "args": {...}}``: a Python binding (:func:`python_codec`);
* ``{"type": "external", "exe": ..., "compress": [...], "decompress": [...]}``: a program found on
  ``PATH`` or named by an environment variable (paq8px, cmix, lstm-compress);
* ``{"type": "nncompress", "level": N}``: this package.

Nothing heavy is imported here: the bindings are imported only when a codec is asked for.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass

PPMD_MEM = 256 << 20


def python_codec(name: str, args: dict | None = None):
    """(compress, decompress) callables for an in-process codec (ImportError if not installed)."""
    args = args or {}
    if name == "zlib":
        import zlib
        return (lambda d: zlib.compress(d, args.get("level", 9))), zlib.decompress
    if name == "bz2":
        import bz2
        return (lambda d: bz2.compress(d, args.get("level", 9))), bz2.decompress
    if name == "lzma":
        import lzma
        preset = args.get("preset", 9) | (lzma.PRESET_EXTREME if args.get("extreme", True) else 0)
        return (lambda d: lzma.compress(d, preset=preset)), lzma.decompress
    if name == "zstd":
        import zstandard
        compressor = zstandard.ZstdCompressor(level=args["level"], threads=0)
        decompressor = zstandard.ZstdDecompressor()
        return compressor.compress, decompressor.decompress
    if name == "brotli":
        import brotli
        return (lambda d: brotli.compress(d, quality=args.get("quality", 11))), brotli.decompress
    if name == "ppmd":
        import pyppmd
        kw = dict(max_order=args["order"], mem_size=args.get("mem", PPMD_MEM), variant=args.get("variant", "I"))
        return (lambda d: pyppmd.compress(d, **kw)), (lambda d: pyppmd.decompress(d, **kw))
    if name == "zpaq":
        import zpaq
        return ((lambda d: zpaq.compress(d, level=args.get("level", 5), threads=1)),
                (lambda d: zpaq.decompress(d, threads=1)))
    if name == "paq9a":
        import paq
        return paq.compress, paq.decompress
    raise ValueError(f"unknown codec {name!r}")


@dataclass
class Comparator:
    key: str
    label: str
    spec: dict
    version: str = ""
    available: bool = True
    note: str = ""

    def codec(self):
        """(compress, decompress) callables in this process (python and nncompress specs)."""
        if self.spec["type"] == "python":
            return python_codec(self.spec["codec"], self.spec.get("args", {}))
        if self.spec["type"] == "nncompress":
            from .api import compress, decompress

            level = self.spec["level"]
            return (lambda d: compress(d, level)), decompress
        raise ValueError(f"{self.key}: an external program is run by the benchmark worker only")


def dist_version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


# key, label, codec, args, module, distribution
PYTHON = [
    ("gzip", "gzip -9 (zlib)", "zlib", {"level": 9}, "zlib", None),
    ("bzip2", "bzip2 -9", "bz2", {"level": 9}, "bz2", None),
    ("xz", "xz -9e (lzma)", "lzma", {"preset": 9, "extreme": True}, "lzma", None),
    ("zstd19", "zstd -19", "zstd", {"level": 19}, "zstandard", "zstandard"),
    ("zstd22", "zstd --ultra -22", "zstd", {"level": 22}, "zstandard", "zstandard"),
    ("brotli", "brotli -11", "brotli", {"quality": 11}, "brotli", "brotli"),
    ("ppmd6", "PPMd var.I -o6 256 MiB", "ppmd", {"order": 6, "mem": PPMD_MEM}, "pyppmd", "pyppmd"),
    ("ppmd16", "PPMd var.I -o16 256 MiB", "ppmd", {"order": 16, "mem": PPMD_MEM}, "pyppmd", "pyppmd"),
    ("zpaq5", "zpaq -m5", "zpaq", {"level": 5}, "zpaq", "zpaq"),
    ("paq9a", "paq9a", "paq9a", {}, "paq", "paq"),
]

# key, label, environment variable, executable names, compress and decompress argument templates.
# The README's paq8px column is paq8px v216 -8, built from public source and measured on the same
# 2-core machine type outside bench/; `nncompress bench` adds it whenever a paq8px is found here.
EXTERNAL = [
    ("paq8px", "paq8px -8", "NNC_PAQ8PX", ["paq8px"],
     ["{exe}", "-8", "{input}", "{output}"], ["{exe}", "-d", "{input}", "{output}"]),
    ("cmix", "cmix", "NNC_CMIX", ["cmix"],
     ["{exe}", "-c", "{input}", "{output}"], ["{exe}", "-d", "{input}", "{output}"]),
    ("lstm-compress", "lstm-compress", "NNC_LSTM_COMPRESS", ["lstm-compress"],
     ["{exe}", "-c", "{input}", "{output}"], ["{exe}", "-d", "{input}", "{output}"]),
]

ALIASES = {
    "zlib": ["gzip"], "gz": ["gzip"], "bz2": ["bzip2"], "lzma": ["xz"], "zstd": ["zstd19", "zstd22"],
    "ppmd": ["ppmd6", "ppmd16"], "zpaq": ["zpaq5"], "paq": ["paq9a"], "lstm": ["lstm-compress"],
}
ALL_KEYS = [row[0] for row in PYTHON] + [row[0] for row in EXTERNAL]


def _python_comparator(row) -> Comparator:
    import importlib.util
    import zlib

    key, label, codec, args, module, dist = row
    spec = {"type": "python", "codec": codec, "args": args}
    if importlib.util.find_spec(module) is None:
        hint = {"paq": "make install-bench"}.get(module, f"pip install {dist}")
        return Comparator(key, label, spec, available=False,
                          note=f"skipped: Python package '{dist}' is not installed ({hint})")
    if module == "zlib":
        version = f"zlib {zlib.ZLIB_RUNTIME_VERSION}"
    elif dist:
        version = f"{dist} {dist_version(dist)}"
    else:
        version = f"Python {sys.version.split()[0]} {module}"
    return Comparator(key, label, spec, version=version)


def _external_comparator(row) -> Comparator:
    key, label, env, names, compress_args, decompress_args = row
    exe = os.environ.get(env) or next(filter(None, (shutil.which(name) for name in names)), None)
    spec = {"type": "external", "exe": exe or "", "compress": compress_args, "decompress": decompress_args}
    if not exe:
        return Comparator(key, label, spec, available=False,
                          note=f"skipped: '{names[0]}' not found on PATH (or set {env}=/path/to/it)")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        return Comparator(key, label, spec, available=False, note=f"skipped: {env}={exe} is not an executable")
    return Comparator(key, label, spec, version=f"{os.path.basename(exe)} ({exe})")


def nncompress_comparator(level: int) -> Comparator:
    from . import FORMAT_VERSION, __version__

    return Comparator(f"nnc-{level}", f"nncompress -{level}", {"type": "nncompress", "level": level},
                      version=f"nncompress {__version__} (format {FORMAT_VERSION})")


def nncompress_model_comparator(model: str) -> Comparator:
    """branch neural2: nncompress with another model than the levels' context mixing, e.g. the
    RNNME network alone ("rnnme", `nncompress --model rnnme`)."""
    from . import FORMAT_VERSION, __version__

    return Comparator(f"nnc-{model.split(',')[0]}", f"nncompress --model {model}",
                      {"type": "nncompress", "level": 0, "model": model},
                      version=f"nncompress {__version__} (format {FORMAT_VERSION})")


def select_comparators(names: str | list[str] | None = None) -> list[Comparator]:
    """Comparators by name, in the order asked (None or 'all': every known one, in the table's
    order); aliases expand to their members; unavailable ones carry a note saying why."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names or names == ["all"]:
        keys = ALL_KEYS
    else:
        keys = []
        for name in names:
            if name == "none":
                continue
            for key in ALIASES.get(name.lower(), [name.lower()]):
                if key not in ALL_KEYS:
                    raise ValueError(f"unknown compressor {name!r} (known: {', '.join(ALL_KEYS + sorted(ALIASES))})")
                if key not in keys:
                    keys.append(key)
    python = {row[0]: row for row in PYTHON}
    external = {row[0]: row for row in EXTERNAL}
    return [_python_comparator(python[key]) if key in python else _external_comparator(external[key])
            for key in keys]


def reference_codecs(keys=("gzip", "xz", "paq9a")) -> dict[str, object | None]:
    """{key: compress function, or None when the binding is not installed} for in-process use
    (`analyze` and `demo`)."""
    out = {}
    for comparator in select_comparators(list(keys)):
        out[comparator.key] = comparator.codec()[0] if comparator.available else None
    return out


def parse_levels(text: str | None) -> list[int]:
    """'1,6,9' -> [1, 6, 9]; '', 'none' or '0' -> []."""
    if text is None or text.strip().lower() in ("", "none", "0"):
        return []
    levels = []
    for part in text.split(","):
        level = int(part)
        if not 1 <= level <= 9:
            raise ValueError(f"nncompress level must be 1..9, not {level}")
        if level not in levels:
            levels.append(level)
    return levels


__all__ = ["Comparator", "python_codec", "select_comparators", "nncompress_comparator",
           "nncompress_model_comparator", "reference_codecs",
           "parse_levels", "dist_version", "ALL_KEYS", "ALIASES", "PYTHON", "EXTERNAL", "PPMD_MEM"]
