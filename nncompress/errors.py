"""The package's exceptions, in a room of their own so every layer can raise them without
importing another layer (the coder and the container both report damaged data)."""


class NNCError(Exception):
    """Raised for anything wrong with compressed data (or with a request the library can't do)."""
