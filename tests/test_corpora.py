"""Corpus catalog, lookup with SHA-256 verification, and fetching (against a local HTTP server only)."""

import functools
import hashlib
import http.server
import io
import os
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from nncompress import corpora


def _entry(name, data, set_name="tiny", url="", member="", derive=""):
    return corpora.CorpusFile(name=name, set=set_name, bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
                              kind="test", url=url, member=member, derive=derive)


@pytest.fixture()
def http_root(tmp_path):
    """A folder served by http.server on 127.0.0.1 in a thread; yields (folder, base URL)."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_catalog_sets():
    catalog = corpora.load_catalog()
    names = corpora.set_names(catalog)
    assert {"canterbury", "calgary", "enwik8_1M", "large", "all"} <= set(names)
    assert len(corpora.set_files("all", catalog)) == len(catalog)
    assert [e.name for e in corpora.set_files("enwik8_1M", catalog)] == ["enwik8_1M"]
    assert catalog["enwik8_1M"].derive == "head:1000000" and catalog["enwik8_1M"].bytes == 1_000_000
    for entry in catalog.values():
        assert len(entry.sha256) == 64 and entry.url.startswith("http")
    with pytest.raises(corpora.CorpusError, match="unknown corpus set"):
        corpora.set_files("nope", catalog)


def test_catalog_matches_shared_manifest(corpora):  # the `corpora` fixture: skips without the shared copy
    from nncompress import corpora as module

    catalog = module.load_catalog()
    manifest = {}
    for line in (corpora / "MANIFEST.tsv").read_text().splitlines()[1:]:
        name, size, sha = line.split("\t")[:3]
        manifest[name] = (int(size), sha)
    assert {n: (e.bytes, e.sha256) for n, e in catalog.items()} == manifest


def test_locate_verifies_sha256(tmp_path, monkeypatch):
    data = b"the quick brown fox\n" * 10
    entry = _entry("fox.txt", data)
    (tmp_path / "fox.txt").write_bytes(data)
    assert corpora.locate(entry, tmp_path) == tmp_path / "fox.txt"
    # same size, different bytes: rejected by the SHA-256 check
    (tmp_path / "fox.txt").write_bytes(data[:-2] + b"X\n")
    with pytest.raises(corpora.CorpusError, match="sha256 .* does not match"):
        corpora.locate(entry, tmp_path)
    (tmp_path / "fox.txt").write_bytes(data + b"more")
    with pytest.raises(corpora.CorpusError, match="size"):
        corpora.locate(entry, tmp_path)
    # NNC_CORPORA is used when no folder is given; a missing file says how to fetch it
    monkeypatch.setenv("NNC_CORPORA", str(tmp_path / "empty"))
    assert corpora.search_dirs() == [tmp_path / "empty"]
    with pytest.raises(corpora.CorpusError, match="fetch"):
        corpora.locate(entry)


def test_resolve_set_rejects_damaged_catalog_file(tmp_path):
    catalog = corpora.load_catalog()
    entry = catalog["grammar.lsp"]
    (tmp_path / "grammar.lsp").write_bytes(b"x" * entry.bytes)
    with pytest.raises(corpora.CorpusError, match="grammar.lsp"):
        corpora.resolve_set("grammar.lsp", tmp_path, catalog=catalog)


def test_fetch_from_mirror(http_root, tmp_path):
    root, base = http_root
    good, bad = b"hello corpus\n" * 50, b"tampered"
    (root / "a.txt").write_bytes(good)
    (root / "b.txt").write_bytes(bad)
    catalog = {"a.txt": _entry("a.txt", good), "b.txt": _entry("b.txt", b"original", "other")}
    dest = tmp_path / "dest"
    paths = corpora.fetch(["tiny"], dest, base_url=base, catalog=catalog, log=lambda m: None)
    assert paths == [dest / "a.txt"] and (dest / "a.txt").read_bytes() == good
    with pytest.raises(corpora.CorpusError, match="sha256"):
        corpora.fetch(["other"], dest, base_url=base, catalog=catalog, log=lambda m: None)
    assert not (dest / "b.txt").exists() and not list(dest.glob(".*"))
    with pytest.raises(corpora.CorpusError, match="download failed"):
        corpora.fetch(["tiny"], tmp_path / "d2", base_url=base + "/missing", catalog=catalog, log=lambda m: None)


def test_fetch_canonical_archives(http_root, tmp_path):
    root, base = http_root
    one, two, big = b"first file\n" * 20, b"second file\n" * 30, bytes(range(256)) * 40
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in (("one", one), ("sub/two", two)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (root / "set.tar.gz").write_bytes(buffer.getvalue())
    with zipfile.ZipFile(root / "big.zip", "w") as archive:
        archive.writestr("big", big)
    catalog = {
        "one": _entry("one", one, url=f"{base}/set.tar.gz", member="one"),
        "two": _entry("two", two, url=f"{base}/set.tar.gz", member="two"),
        "big_1k": _entry("big_1k", big[:1000], url=f"{base}/big.zip", member="big", derive="head:1000"),
    }
    dest = tmp_path / "dest"
    paths = corpora.fetch(["all"], dest, catalog=catalog, log=lambda m: None)
    assert [p.name for p in paths] == ["one", "two", "big_1k"]
    assert (dest / "two").read_bytes() == two and (dest / "big_1k").read_bytes() == big[:1000]
    # present and correct: kept, nothing downloaded (the server is not needed)
    (root / "set.tar.gz").unlink()
    assert len(corpora.fetch(["tiny"], dest, catalog=catalog, log=lambda m: None)) == 3


def test_fetch_cli_real_catalog(http_root, tmp_path, corpora, capsys):
    from nncompress.benchmark import main

    root, base = http_root
    for name in ("grammar.lsp", "xargs.1"):
        (root / name).write_bytes((corpora / name).read_bytes())
    dest = tmp_path / "fetched"
    assert main(["fetch", "grammar.lsp", "xargs.1", "--dest", str(dest), "--base-url", base]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["grammar.lsp", "xargs.1"]
    assert main(["fetch", "paper1", "--dest", str(dest), "--base-url", base]) == 1
    assert "download failed" in capsys.readouterr().err


def test_search_path_is_option_environment_then_user_cache(tmp_path, monkeypatch):
    """No folder is guessed from where the package lives: --corpora, NNC_CORPORA, the user cache."""
    monkeypatch.delenv("NNC_CORPORA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # platformdirs honours it on Linux
    assert corpora.default_fetch_dir() == tmp_path / "cache" / "nncompress" / "corpora"
    assert corpora.search_dirs() == [corpora.default_fetch_dir()]
    assert corpora.search_dirs(tmp_path / "mine") == [tmp_path / "mine"]
    assert corpora.shared_corpora() is None
    monkeypatch.setenv("NNC_CORPORA", str(tmp_path))
    assert corpora.search_dirs() == [tmp_path] and corpora.shared_corpora() == tmp_path


def test_catalog_is_package_data(tmp_path, monkeypatch):
    """Read through importlib.resources, whatever the working directory."""
    monkeypatch.chdir(tmp_path)
    text = corpora.catalog_text()
    assert text.count("\n") > len(corpora.load_catalog())
    assert "alice29.txt" in corpora.load_catalog()


# -- FILE|DIR|SET arguments (nncompress.targets), shared by bench and analyze -----------------------

def test_targets_file_directory_and_manifest(tmp_path, monkeypatch):
    from nncompress import targets

    folder = tmp_path / "set"
    folder.mkdir()
    for name in ("b.txt", "a.txt", ".hidden"):
        (folder / name).write_bytes(name.encode())
    (folder / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    single, whole = targets.resolve(["set/a.txt", "set"])
    assert single.set is None and single.files == [Path("set/a.txt")]
    assert whole.set == "set" and whole.files == [Path("set/a.txt"), Path("set/b.txt")]
    # a MANIFEST.tsv chooses and orders the files (the shared-corpora layout); it is never a target
    (folder / "MANIFEST.tsv").write_text("name\tbytes\nb.txt\t5\nmissing\t1\na.txt\t5\n")
    assert [p.name for p in targets.resolve(["set"])[0].files] == ["b.txt", "a.txt"]


def test_targets_catalog_names_and_path_precedence(tmp_path, monkeypatch):
    from nncompress import targets

    entry = corpora.load_catalog()["grammar.lsp"]
    store = tmp_path / "store"
    store.mkdir()
    data = b"x" * entry.bytes
    (store / "grammar.lsp").write_bytes(data)
    monkeypatch.chdir(tmp_path)
    # a catalog name is looked up in the corpora folder and verified
    with pytest.raises(corpora.CorpusError, match="sha256"):
        targets.resolve(["grammar.lsp"], store)
    # an existing path always wins over a catalog name, and is used as it is
    (tmp_path / "grammar.lsp").write_bytes(b"my own grammar")
    (target,) = targets.resolve(["grammar.lsp"], store)
    assert target.set is None and target.files == [Path("grammar.lsp")]
    assert target.files[0].read_bytes() == b"my own grammar"
    with pytest.raises(corpora.CorpusError, match="nosuch: no such file, directory or corpus set"):
        targets.resolve(["nosuch"], store)


# -- mutation testing (issue 9): the member search, every archive type, the exact refusals --

def _tar(mode, members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize("suffix, mode", [(".tar.gz", "w:gz"), (".tgz", "w:gz"), (".tar", "w"),
                                          (".tar.bz2", "w:bz2"), (".tar.xz", "w:xz")])
def test_a_member_is_found_by_its_last_name_part_in_every_tar_type(suffix, mode):
    blob = _tar(mode, [("top/data.txt", None), ("top/deep/data.txt", b"nested member\n"),
                       ("top/deep/other", b"other")])
    url = f"http://mirror.invalid/set{suffix}?from=catalog"  # the address's path decides the type
    assert corpora._extract(blob, url, "data.txt") == b"nested member\n"  # the directory is skipped
    assert corpora._extract(blob, url, "") == blob  # no member: the download itself
    with pytest.raises(corpora.CorpusError) as refused:
        corpora._extract(blob, url, "deep/data.txt")
    assert str(refused.value) == f"{url}: archive has no member 'deep/data.txt'"


def test_a_zip_member_is_found_by_its_last_name_part():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("top/deep/my file", b"spaced\n")
        archive.writestr("top/deep/data.txt", b"zipped\n")
    url = "http://mirror.invalid/set.zip"
    assert corpora._extract(buffer.getvalue(), url, "data.txt") == b"zipped\n"
    assert corpora._extract(buffer.getvalue(), url, "my file") == b"spaced\n"
    with pytest.raises(corpora.CorpusError) as refused:
        corpora._extract(buffer.getvalue(), url, "file")
    assert str(refused.value) == f"{url}: archive has no member 'file'"


def test_unknown_archive_types_and_derivations_are_named():
    with pytest.raises(corpora.CorpusError) as refused:
        corpora._extract(b"blob", "http://mirror.invalid/set.rar", "x")
    assert str(refused.value) == "http://mirror.invalid/set.rar: unknown archive type (expected .zip or .tar.gz)"
    assert corpora._derive(b"abcdef", "head:4") == b"abcd" and corpora._derive(b"abcdef", "") == b"abcdef"
    with pytest.raises(corpora.CorpusError) as refused:
        corpora._derive(b"abcdef", "tail:4")
    assert str(refused.value) == "unknown derivation 'tail:4'"
    # a malformed head:N is a corpus error naming it (it was a ValueError: a traceback from fetch)
    for derive in ("head:1:2", "head:", "head", "head:x", "head:-1"):
        with pytest.raises(corpora.CorpusError) as refused:
            corpora._derive(b"abcdef", derive)
        assert str(refused.value) == f"bad derivation {derive!r} (expected head:N, N a number of bytes)"
    assert corpora._derive(b"abcdef", "head:0") == b""


def test_a_catalog_file_is_read_as_utf_8_whatever_the_locale(tmp_path):
    """Under the C locale without UTF-8 mode the locale's encoding is ASCII: the catalog's UTF-8
    names must still be read (round 7 of the mutation review: `load_catalog` 4)."""
    import subprocess
    import sys

    catalog = tmp_path / "c.tsv"
    catalog.write_text(f"name\tset\tbytes\tsha256\ncafé.txt\tmine\t3\t{'ab' * 32}\n", encoding="utf-8")
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0",
               PYTHONIOENCODING="utf-8")
    (tmp_path / "data").mkdir()  # the shipped catalog too (all ASCII today), as package data
    (tmp_path / "data" / "sets.tsv").write_bytes(catalog.read_bytes())
    probe = ("import sys, locale, pathlib; from importlib import resources; from nncompress import corpora\n"
             "assert locale.getpreferredencoding(False).lower() in ('ascii', 'ansi_x3.4-1968'), "
             "locale.getpreferredencoding(False)\n"
             "print(list(corpora.load_catalog(sys.argv[1])))\n"
             "resources.files = lambda package: pathlib.Path(sys.argv[2])\n"
             "print(list(corpora.load_catalog()))")
    done = subprocess.run([sys.executable, "-c", probe, str(catalog), str(tmp_path)], env=env, capture_output=True,
                          text=True, encoding="utf-8")
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout == "['café.txt']\n['café.txt']\n"


def test_set_names_and_is_set_answer_for_the_catalog_given():
    mine = {"x.txt": _entry("x.txt", b"x", set_name="mine"), "y.txt": _entry("y.txt", b"y", set_name="other"),
            "z.txt": _entry("z.txt", b"z", set_name="mine")}
    assert corpora.set_names(mine) == ["mine", "other", "all"]
    assert corpora.set_names()[-1] == "all" and "canterbury" in corpora.set_names()
    assert [corpora.is_set(name, mine) for name in ("mine", "other", "all", "y.txt", "canterbury", "alice29.txt")] \
        == [True, True, True, True, False, False]
    assert corpora.is_set("canterbury") and corpora.is_set("alice29.txt") and not corpora.is_set("mine")


def test_locate_and_resolve_set_without_the_check_and_with_their_catalog(tmp_path, monkeypatch):
    data = b"the quick brown fox\n" * 10
    entry = _entry("fox.txt", data)
    (tmp_path / "fox.txt").write_bytes(b"damaged")
    assert corpora.locate(entry, tmp_path, check=False) == tmp_path / "fox.txt"  # not read at all
    catalog = {"fox.txt": entry}  # a name the shipped catalog does not have
    assert corpora.resolve_set("tiny", tmp_path, check=False, catalog=catalog) == [tmp_path / "fox.txt"]
    with pytest.raises(corpora.CorpusError) as refused:
        corpora.resolve_set("tiny", tmp_path, catalog=catalog)
    assert str(refused.value) == (f"{tmp_path / 'fox.txt'}: size 7 bytes does not match the catalog's 200 "
                                  "for 'fox.txt' (wrong or damaged file; fetch it again)")
    monkeypatch.setenv("NNC_CORPORA", str(tmp_path / "empty"))
    with pytest.raises(corpora.CorpusError) as refused:
        corpora.locate(entry)
    assert str(refused.value) == (f"corpus file 'fox.txt' not found in {tmp_path / 'empty'}; "
                                  "run 'nncompress bench fetch tiny' or pass --corpora DIR")


def test_sha256_file_reads_bounded_pieces(tmp_path, monkeypatch):
    data = bytes(range(256)) * (3 * 4096 + 7)  # 3 MiB and a bit
    path = tmp_path / "big"
    path.write_bytes(data)
    asked = []
    real_open = open

    class Recording:
        def __init__(self, f):
            self.f = f

        def read(self, size=-1):
            asked.append(size)
            return self.f.read(size)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(corpora, "open", lambda p, mode="r": Recording(real_open(p, mode)), raising=False)
    assert corpora.sha256_file(path) == hashlib.sha256(data).hexdigest()
    assert len(asked) == 5 and all(size is not None and 0 < size <= 1 << 20 for size in asked)


def test_fetch_usage_errors_name_the_tool(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # one usage line, whatever the terminal
    with pytest.raises(SystemExit) as stopped:
        corpora.fetch_main(["--bogus"])
    assert stopped.value.code == 1
    assert capsys.readouterr().err == ("usage: nncompress bench fetch [-h] [--dest DEST] [--base-url BASE_URL] "
                                       "[SET ...]\nnncompress bench fetch: unrecognized arguments: --bogus\n")


def test_load_catalog_reads_a_given_file_with_short_rows_and_missing_columns(tmp_path):
    sha = "AB" * 32
    full = tmp_path / "full.tsv"
    full.write_text("# a comment line\n\nname\tset\tbytes\tsha256\tkind\turl\tmember\tderive\n"
                    f"café.txt\tmine\t3\t{sha}\tplain text\thttp://h/a b.zip\tin/café.txt\thead:3\n"
                    f"b.txt\tmine\t5\t{sha}\n", encoding="utf-8")
    assert corpora.load_catalog(full) == {
        "café.txt": corpora.CorpusFile("café.txt", "mine", 3, sha.lower(), "plain text", "http://h/a b.zip",
                                       "in/café.txt", "head:3"),
        "b.txt": corpora.CorpusFile("b.txt", "mine", 5, sha.lower(), "", "", "", "")}
    bare = tmp_path / "bare.tsv"  # only the required columns
    bare.write_text(f"name\tset\tbytes\tsha256\nc.txt\tother\t7\t{sha}\n", encoding="utf-8")
    assert corpora.load_catalog(str(bare)) == {
        "c.txt": corpora.CorpusFile("c.txt", "other", 7, sha.lower(), "", "", "", "")}


def test_fetch_returns_every_path_logs_each_step_and_makes_its_folder(http_root, tmp_path, monkeypatch, capsys):
    root, base = http_root
    good = b"hello corpus\n" * 50
    (root / "a.txt").write_bytes(good)
    catalog = {"a.txt": _entry("a.txt", good)}
    dest = tmp_path / "deep" / "er" / "dest"  # made with its parents
    logged = []
    assert corpora.fetch(["tiny"], dest, base_url=base + "/", catalog=catalog, log=logged.append) == [dest / "a.txt"]
    assert logged == [f"a.txt: downloading {base}/a.txt", f"a.txt: {len(good):,} bytes, sha256 verified"]
    logged.clear()
    assert corpora.fetch(["tiny"], dest, base_url=base, catalog=catalog, log=logged.append) == [dest / "a.txt"]
    assert logged == ["a.txt: present and verified"]
    # no folder given: the user cache; no log given: standard error
    monkeypatch.setattr(corpora, "default_fetch_dir", lambda: tmp_path / "cache" / "nncompress" / "corpora")
    assert corpora.fetch(["tiny"], None, base_url=base, catalog=catalog) == \
        [tmp_path / "cache" / "nncompress" / "corpora" / "a.txt"]
    captured = capsys.readouterr()
    said = [line for line in captured.err.splitlines() if not line.startswith("127.0.0.1 ")]  # (the server's)
    assert captured.out == "" and said == [f"a.txt: downloading {base}/a.txt",
                                           f"a.txt: {len(good):,} bytes, sha256 verified"]
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("a.txt", good)
    (root / "set.zip").write_bytes(zipped.getvalue())
    canonical = {"a.txt": _entry("a.txt", good, url=f"{base}/set.zip", member="a.txt")}
    logged.clear()
    assert corpora.fetch(["tiny"], tmp_path / "d3", catalog=canonical, log=logged.append) == [tmp_path / "d3" / "a.txt"]
    assert logged == [f"a.txt: downloading {base}/set.zip", f"a.txt: {len(good):,} bytes, sha256 verified"]


def test_fetch_writes_through_a_hidden_temporary_beside_the_target_and_cleans_up(http_root, tmp_path, monkeypatch):
    root, base = http_root
    (root / "MIRRORX").mkdir()  # a mirror path ending in X: only "/" is stripped from it
    good, other = b"hello corpus\n" * 50, b"other corpus\n" * 40
    (root / "MIRRORX" / "a.txt").write_bytes(good)
    (root / "MIRRORX" / "b.txt").write_bytes(other)
    catalog = {"a.txt": _entry("a.txt", good), "b.txt": _entry("b.txt", other)}
    dest = tmp_path / "dest"
    placed = []
    real_replace = corpora.os.replace

    def recording_replace(source, target):
        placed.append((source, target))
        real_replace(source, target)

    monkeypatch.setattr(corpora.os, "replace", recording_replace)
    assert corpora.fetch(["tiny"], dest, base_url=base + "/MIRRORX/", catalog=catalog, log=lambda m: None) == \
        [dest / "a.txt", dest / "b.txt"]
    for (source, target), name in zip(placed, ("a.txt", "b.txt")):
        assert os.path.dirname(source) == str(dest) and os.path.basename(source).startswith(f".{name}.")
        assert target == dest / name
    def full_disk(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(corpora.os, "replace", full_disk)
    with pytest.raises(corpora.CorpusError) as refused:
        corpora.fetch(["tiny"], tmp_path / "full", base_url=base + "/MIRRORX", catalog=catalog, log=lambda m: None)
    assert str(refused.value) == ("a.txt: download failed: [Errno 28] No space left on device\n"
                                  "b.txt: download failed: [Errno 28] No space left on device")
    assert os.listdir(tmp_path / "full") == []  # no temporary left behind


def test_unknown_set_names_the_sets_of_the_catalog_given():
    catalog = {"a.txt": _entry("a.txt", b"x"), "b.txt": _entry("b.txt", b"y", "other")}
    with pytest.raises(corpora.CorpusError) as refused:
        corpora.set_files("nope", catalog)
    assert str(refused.value) == "unknown corpus set or file 'nope' (sets: tiny, other, all)"


def test_fetch_tool_says_where_the_files_are(http_root, tmp_path, monkeypatch, capsys):
    root, base = http_root
    catalog = corpora.load_catalog()
    entry = catalog["grammar.lsp"]
    monkeypatch.setattr(corpora, "fetch", lambda sets, dest, base_url, catalog: [Path("x")] * len(sets))
    assert corpora.fetch_main(["grammar.lsp", "xargs.1", "--dest", str(tmp_path / "d")]) == 0
    assert capsys.readouterr().out == f"2 files ready in {tmp_path / 'd'}\n"
    monkeypatch.setattr(corpora, "default_fetch_dir", lambda: tmp_path / "cache")
    assert corpora.fetch_main([entry.name]) == 0
    assert capsys.readouterr().out == f"1 files ready in {tmp_path / 'cache'}\n"


def test_a_download_names_the_tool_and_has_a_timeout(monkeypatch):
    """Round 7 of the mutation review: the request `_download` makes (the served tests cannot see
    its header or timeout)."""
    import urllib.request

    seen = []

    class Response(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

    def urlopen(request, timeout):
        seen.append((request.full_url, dict(request.header_items()), timeout))
        return Response(b"the bytes")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    assert corpora._download("http://h.invalid/a b") == b"the bytes"
    assert corpora._download("http://h.invalid/x", timeout=3) == b"the bytes"
    assert seen == [("http://h.invalid/a b", {"User-agent": "nncompress-bench-fetch"}, 120.0),
                    ("http://h.invalid/x", {"User-agent": "nncompress-bench-fetch"}, 3)]
