"""Reports of stored runs: metrics (pass rate with a Wilson interval, pass^k, paired robustness
deltas, safety violations, flakiness), rich tables for the terminal, and a self-contained HTML
page with inline SVG plots."""

from simforge.report.metrics import stress_summary, summarize, wilson

__all__ = ["stress_summary", "summarize", "wilson"]
