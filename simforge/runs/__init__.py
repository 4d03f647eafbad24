"""Running episodes (and, later, matrices of them, stored and resumable)."""

from simforge.runs.episode import EpisodeResult, run_episode

__all__ = ["EpisodeResult", "run_episode"]
