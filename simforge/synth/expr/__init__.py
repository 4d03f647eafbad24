"""The expression language of learned handlers (JSON in ``tools.json``) and its search."""
