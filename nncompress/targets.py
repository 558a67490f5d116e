"""FILE|DIR|SET arguments of `nncompress bench` and `nncompress analyze`, resolved one way.

The rule, for each argument in order:

1. a path to an existing **file** is that file, on its own (no set);
2. a path to an existing **directory** is a set named as the argument was written, holding the
   files listed in its ``MANIFEST.tsv`` when it has one (the layout of a shared corpora folder),
   else every regular, non-hidden file directly in it, sorted by name (not recursive;
   ``MANIFEST.tsv`` itself is never a target);
3. otherwise a **catalog name**: a corpus set (``canterbury``, ``calgary``, ..., ``all``) or one
   file of the catalog (``alice29.txt``), found in the corpora search path and SHA-256-checked
   (:mod:`nncompress.corpora`); a set named as the argument.

A path on disk always wins over a catalog name, so ``analyze alice29.txt`` reads the file in the
current directory when there is one, and the verified corpus copy otherwise.  Anything else is a
:class:`~nncompress.corpora.CorpusError` naming the argument.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import corpora

MANIFEST = "MANIFEST.tsv"


@dataclass
class Target:
    """One argument resolved: its files, and the set name (None for a single file)."""
    argument: str
    set: str | None
    files: list[Path]


def directory_files(path: Path) -> list[Path]:
    """The files of a directory taken as a set (rule 2 above)."""
    manifest = path / MANIFEST
    if manifest.is_file():
        listed = []
        for line in manifest.read_text(encoding="utf-8").splitlines()[1:]:
            name = line.split("\t")[0]
            if name and (path / name).is_file():
                listed.append(path / name)
        if listed:
            return listed
    return sorted(p for p in path.iterdir()
                  if p.is_file() and not p.name.startswith(".") and p.name != MANIFEST)


def resolve(arguments: list[str], corpora_dir: str | os.PathLike | None = None) -> list[Target]:
    """Each argument -> a :class:`Target` (see the module documentation for the rule)."""
    catalog = None
    out = []
    for argument in arguments:
        path = Path(argument)
        if path.is_file():
            out.append(Target(argument, None, [path]))
        elif path.is_dir():
            out.append(Target(argument, argument, directory_files(path)))
        else:
            catalog = corpora.load_catalog() if catalog is None else catalog
            if not corpora.is_set(argument, catalog):
                raise corpora.CorpusError(f"{argument}: no such file, directory or corpus set "
                                          f"(sets: {', '.join(corpora.set_names(catalog))})")
            out.append(Target(argument, argument,
                              corpora.resolve_set(argument, corpora_dir, catalog=catalog)))
    return out
