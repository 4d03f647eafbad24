"""simforge environments in trainers' own forms (``docs/trainers.md``).

- :mod:`simforge.integrations.trl`: an ``environment_factory`` for TRL's ``GRPOTrainer`` (one
  instance per rollout, the task's tools as typed methods, ``reset`` and ``get_reward``), a
  dataset of tasks by seed, and a reward function that scores the final text too
  (``pip install 'simforge[trl]'``);
- :mod:`simforge.integrations.verifiers`: ``load_environment(...)``, a verifiers multi-turn tool
  environment whose rubric is simforge's reward (``pip install 'simforge[verifiers]'``);
- Gymnasium is in :mod:`simforge.env.gym` (every scenario is a Gymnasium id).

Each wraps the same environment (``simforge.make``: a registered scenario, a scenario YAML path,
several of them as one pool, or a pack served as a sandbox) and keeps its conversation contract:
a text is a message to the user, the agent's last text is its final answer, the reward comes at
the end, and an invalid episode scores 0 with its reason, never an exception. Nothing here is
imported by ``import simforge``; each module imports its trainer library when it is imported.
"""
