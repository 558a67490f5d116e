import os
from pathlib import Path

import pytest


def shared_corpora() -> Path | None:
    """The workplace's shared benchmark corpora, if present (NNC_CORPORA overrides)."""
    env = os.environ.get("NNC_CORPORA")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here.parent / "shared" / "corpora", here.parent.parent / "shared" / "corpora"]
    for path in candidates:
        if (path / "MANIFEST.tsv").exists():
            return path
    return None


@pytest.fixture(scope="session")
def corpora() -> Path:
    path = shared_corpora()
    if path is None:
        pytest.skip("shared corpora not available (set NNC_CORPORA)")
    return path


@pytest.fixture(scope="session")
def sample_text() -> bytes:
    """A few KB of English text every Python has."""
    from nncompress.demo import default_input

    return default_input(20_000)[1]
