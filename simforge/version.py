"""simforge's version, in a module of its own so that any layer can name it without importing
the package's public API (``simforge/__init__.py``, which imports the environment)."""

__version__ = "0.1.0"
