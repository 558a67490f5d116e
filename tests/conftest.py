import pytest

from nncompress.corpora import shared_corpora  # noqa: F401  (one lookup, shared with `nncompress bench`)


@pytest.fixture(scope="session")
def corpora():
    path = shared_corpora()
    if path is None:
        pytest.skip("shared corpora not available (set NNC_CORPORA)")
    return path


@pytest.fixture(scope="session")
def sample_text() -> bytes:
    """A few KB of English text every Python has."""
    from nncompress.demo import default_input

    return default_input(20_000)[1]
