"""Running episodes, and matrices of them: the plan, local and Ray backends, the run store,
exports. Heavy parts (the store, the backends) are imported from their modules on use."""

from simforge.runs.episode import (
    EpisodeOutcome,
    EpisodeResult,
    aplay_episode,
    play_episode,
    run_episode,
)

__all__ = ["EpisodeOutcome", "EpisodeResult", "aplay_episode", "play_episode", "run_episode"]
