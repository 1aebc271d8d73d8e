"""The version, written once: the package and pyproject.toml (dynamic version) both read it here."""

__version__ = "0.1.0"
