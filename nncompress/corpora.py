"""Benchmark corpora: the catalog (``nncompress/data/sets.tsv``, shipped as package data),
finding its files on disk, checking their SHA-256, and fetching them.

Where the files are looked for, in order:

1. ``--corpora DIR`` (the ``corpora=`` argument), if given: only that folder;
2. the environment variable ``NNC_CORPORA``, if set: only that folder (the Makefile and the test
   suite set it to the checkout's shared copy);
3. otherwise the folder ``fetch`` writes to by default: the user cache directory
   (``platformdirs.user_cache_dir("nncompress")/corpora``, e.g. ``~/.cache/nncompress/corpora``
   on Linux, honouring ``XDG_CACHE_HOME``).

No folder outside these is guessed: the package does not know where a checkout lives.  Every
file taken from the catalog is checked against its recorded size and SHA-256; a mismatch is an
error (:class:`CorpusError`), never a silent substitution.  Corpus files are never copied into
the repository.

The download and cache are written here rather than with pooch: a catalog file can be a member
of a shared archive (downloaded once for several files) cut to its first N bytes (``head:N``),
and a flat mirror can stand in for every canonical address; pooch would need custom processors
for both and still leave the verification to us.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from .cli_args import Parser as UsageParser  # usage errors exit 1, as gzip and xz

ALL = "all"
ENV = "NNC_CORPORA"


class CorpusError(Exception):
    """A corpus file is missing, has the wrong contents, or could not be fetched."""


@dataclass(frozen=True)
class CorpusFile:
    name: str
    set: str
    bytes: int
    sha256: str
    kind: str
    url: str
    member: str = ""
    derive: str = ""


def catalog_text() -> str:
    """The shipped catalog, read through importlib.resources (works from a checkout, an editable
    install, a wheel or a zip)."""
    return resources.files("nncompress").joinpath("data").joinpath("sets.tsv").read_text(encoding="utf-8")


def load_catalog(path: str | os.PathLike | None = None) -> dict[str, CorpusFile]:
    """Read the catalog (default: the shipped ``sets.tsv``; or another file in the same format):
    file name -> :class:`CorpusFile`, in file order."""
    text = Path(path).read_text(encoding="utf-8") if path else catalog_text()
    entries: dict[str, CorpusFile] = {}
    header = None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if header is None:
            header = fields
            continue
        row = dict(zip(header, fields + [""] * (len(header) - len(fields))))
        entries[row["name"]] = CorpusFile(
            name=row["name"], set=row["set"], bytes=int(row["bytes"]), sha256=row["sha256"].lower(),
            kind=row.get("kind", ""), url=row.get("url", ""), member=row.get("member", ""),
            derive=row.get("derive", ""))
    return entries


def set_names(catalog: dict[str, CorpusFile] | None = None) -> list[str]:
    catalog = load_catalog() if catalog is None else catalog
    names = list(dict.fromkeys(entry.set for entry in catalog.values()))
    return names + [ALL]


def set_files(name: str, catalog: dict[str, CorpusFile] | None = None) -> list[CorpusFile]:
    """The catalog entries of a set (``all``: every entry), or of one catalog file by name."""
    catalog = load_catalog() if catalog is None else catalog
    if name == ALL:
        return list(catalog.values())
    members = [entry for entry in catalog.values() if entry.set == name]
    if members:
        return members
    if name in catalog:
        return [catalog[name]]
    raise CorpusError(f"unknown corpus set or file {name!r} (sets: {', '.join(set_names(catalog))})")


def is_set(name: str, catalog: dict[str, CorpusFile] | None = None) -> bool:
    catalog = load_catalog() if catalog is None else catalog
    return name in set_names(catalog) or name in catalog


# -- where the files are --------------------------------------------------------------------------

def shared_corpora() -> Path | None:
    """The folder ``NNC_CORPORA`` names, if it is set and exists (the test suite's corpora)."""
    env = os.environ.get(ENV)
    return Path(env) if env and Path(env).is_dir() else None


def default_fetch_dir() -> Path:
    """Where ``fetch`` writes and the last place searched: the user cache directory."""
    from platformdirs import user_cache_path

    return user_cache_path("nncompress", appauthor=False) / "corpora"


def search_dirs(corpora: str | os.PathLike | None = None) -> list[Path]:
    """The folders searched for corpus files, in order (see the module documentation)."""
    if corpora:
        return [Path(corpora)]
    env = os.environ.get(ENV)
    if env:
        return [Path(env)]
    return [default_fetch_dir()]


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: str | os.PathLike, entry: CorpusFile) -> Path:
    """Check size and SHA-256 of ``path`` against the catalog entry; raise CorpusError if wrong."""
    path = Path(path)
    size = path.stat().st_size
    if size != entry.bytes:
        raise CorpusError(f"{path}: size {size:,} bytes does not match the catalog's {entry.bytes:,} "
                          f"for {entry.name!r} (wrong or damaged file; fetch it again)")
    actual = sha256_file(path)
    if actual != entry.sha256:
        raise CorpusError(f"{path}: sha256 {actual} does not match the catalog's {entry.sha256} "
                          f"for {entry.name!r} (wrong or damaged file; fetch it again)")
    return path


def locate(entry: CorpusFile, corpora: str | os.PathLike | None = None, check: bool = True) -> Path:
    """The verified path of one catalog file."""
    dirs = search_dirs(corpora)
    for folder in dirs:
        path = folder / entry.name
        if path.is_file():
            return verify(path, entry) if check else path
    where = ", ".join(str(d) for d in dirs)
    raise CorpusError(f"corpus file {entry.name!r} not found in {where}; "
                      f"run 'nncompress bench fetch {entry.set}' or pass --corpora DIR")


def resolve_set(name: str, corpora: str | os.PathLike | None = None, check: bool = True,
                catalog: dict[str, CorpusFile] | None = None) -> list[Path]:
    """Verified paths of every file in a set (or of one catalog file)."""
    return [locate(entry, corpora, check) for entry in set_files(name, catalog)]


# -- fetching -------------------------------------------------------------------------------------

def _download(url: str, timeout: float = 120.0) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "nncompress-bench-fetch"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def _extract(blob: bytes, url: str, member: str) -> bytes:
    if not member:
        return blob
    path = urllib.parse.urlparse(url).path
    if path.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            for info in archive.infolist():
                if info.filename.rsplit("/", 1)[-1] == member:
                    return archive.read(info)
    elif path.endswith((".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz")):
        with tarfile.open(fileobj=io.BytesIO(blob)) as archive:
            for info in archive.getmembers():
                if info.isfile() and info.name.rsplit("/", 1)[-1] == member:
                    return archive.extractfile(info).read()
    else:
        raise CorpusError(f"{url}: unknown archive type (expected .zip or .tar.gz)")
    raise CorpusError(f"{url}: archive has no member {member!r}")


def _derive(data: bytes, derive: str) -> bytes:
    if not derive:
        return data
    kind, _, arg = derive.partition(":")
    if kind == "head":
        if not arg.isdigit():  # a malformed catalog row is refused as a corpus error, not a traceback
            raise CorpusError(f"bad derivation {derive!r} (expected head:N, N a number of bytes)")
        return data[: int(arg)]
    raise CorpusError(f"unknown derivation {derive!r}")


def fetch(names=(ALL,), dest: str | os.PathLike | None = None, base_url: str | None = None,
          catalog: dict[str, CorpusFile] | None = None, log=None) -> list[Path]:
    """Download the files of the given sets into ``dest`` and verify each one.

    With ``base_url`` every file is read as ``{base_url}/{name}`` (a mirror laid out like the
    shared folder); otherwise from the catalog's canonical address (an archive is downloaded
    once and the member extracted; ``head:N`` takes the first N bytes).  Files already present
    and correct are kept.  A file whose SHA-256 does not match is not written, and CorpusError
    is raised after the others are done."""
    catalog = load_catalog() if catalog is None else catalog
    dest = Path(dest) if dest else default_fetch_dir()
    dest.mkdir(parents=True, exist_ok=True)
    log = log or (lambda message: print(message, file=sys.stderr))
    entries = list({entry.name: entry for name in names for entry in set_files(name, catalog)}.values())
    archives: dict[str, bytes] = {}
    done, errors = [], []
    for entry in entries:
        target = dest / entry.name
        if target.is_file():
            try:
                done.append(verify(target, entry))
                log(f"{entry.name}: present and verified")
                continue
            except CorpusError:
                pass  # replace it
        try:
            if base_url:
                url = base_url.rstrip("/") + "/" + urllib.parse.quote(entry.name)
                log(f"{entry.name}: downloading {url}")
                data = _download(url)
            else:
                if entry.url not in archives:
                    log(f"{entry.name}: downloading {entry.url}")
                    archives[entry.url] = _download(entry.url)
                data = _derive(_extract(archives[entry.url], entry.url, entry.member), entry.derive)
            actual = hashlib.sha256(data).hexdigest()
            if len(data) != entry.bytes or actual != entry.sha256:
                raise CorpusError(f"{entry.name}: downloaded {len(data):,} bytes with sha256 {actual}, "
                                  f"expected {entry.bytes:,} bytes with sha256 {entry.sha256}; not written")
            fd, tmp = tempfile.mkstemp(dir=dest, prefix=f".{entry.name}.")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, target)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            done.append(target)
            log(f"{entry.name}: {len(data):,} bytes, sha256 verified")
        except CorpusError as exc:
            errors.append(str(exc))
        except OSError as exc:  # includes urllib.error.URLError / HTTPError
            errors.append(f"{entry.name}: download failed: {exc}")
    if errors:
        raise CorpusError("\n".join(errors))
    return done


def fetch_main(argv=None) -> int:
    """``nncompress bench fetch [SET...] [--dest DIR] [--base-url URL]``"""
    catalog = load_catalog()
    parser = UsageParser(
        prog="nncompress bench fetch",
        description="Download benchmark corpus files and verify their SHA-256 against the catalog (corpora/README.md).")
    parser.add_argument("sets", nargs="*", default=[ALL], metavar="SET",
                        help=f"set or file name (default all): {', '.join(set_names(catalog))}")
    parser.add_argument("--dest", help=f"folder to write to (default {default_fetch_dir()})")
    parser.add_argument("--base-url", help="read every file as BASE_URL/NAME from a mirror instead")
    args = parser.parse_args(argv)
    try:
        paths = fetch(args.sets or [ALL], args.dest, args.base_url, catalog)
    except CorpusError as exc:
        print(f"nncompress bench fetch: {exc}", file=sys.stderr)
        return 1
    print(f"{len(paths)} files ready in {Path(args.dest) if args.dest else default_fetch_dir()}")
    return 0


__all__ = ["CorpusError", "CorpusFile", "load_catalog", "set_names", "set_files", "is_set",
           "shared_corpora", "default_fetch_dir", "search_dirs", "sha256_file", "verify", "locate",
           "resolve_set", "fetch", "fetch_main"]
