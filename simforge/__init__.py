"""simforge: production agent traces in; perturbed, scored, reproducible environments out."""

from __future__ import annotations

__version__ = "0.1.0"
