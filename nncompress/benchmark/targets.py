"""The files of a benchmark run: FILE|DIR|SET arguments (resolved by :mod:`nncompress.targets`)
turned into named, hashed files and the groups the totals are taken over."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .. import targets

SINGLE_FILES = "files"  # the group of the arguments that name single files


@dataclass
class BenchFile:
    name: str
    path: Path
    bytes: int
    sha256: str


def file_info(path: Path, name: str | None = None) -> BenchFile:
    data = Path(path).read_bytes()
    return BenchFile(name or Path(path).name, Path(path), len(data), hashlib.sha256(data).hexdigest())


def bench_files(arguments: list[str], corpora_dir: str | os.PathLike | None = None
                ) -> tuple[list[BenchFile], dict[str, list[str]]]:
    """(every file once, {group: file names}).  Single files form the group ``files``; a folder
    or a set is a group of its own.  A file met twice is measured once; two different files with
    the same base name are told apart by their paths."""
    groups: dict[str, list[Path]] = {}
    for target in targets.resolve(arguments, corpora_dir):
        groups.setdefault(target.set or SINGLE_FILES, []).extend(target.files)
    seen: dict[Path, BenchFile] = {}
    names: set[str] = set()
    for paths in groups.values():
        for path in paths:
            key = path.resolve()
            if key in seen:
                continue
            name = path.name if path.name not in names else str(path)
            names.add(name)
            seen[key] = file_info(path, name)
    return list(seen.values()), {g: list(dict.fromkeys(seen[p.resolve()].name for p in ps))
                                 for g, ps in groups.items()}
