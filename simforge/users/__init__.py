"""The user an agent talks to: one per episode, answering the agent's messages.

- :class:`~simforge.users.scripted.ScriptedUser` replies with the task's ``user_turns`` in order
  and ends the conversation after the last;
- :class:`~simforge.users.llm.LLMUser` is a model behind an OpenAI-compatible endpoint playing
  the task's user scenario (``Task.user``), ending the conversation with an explicit signal,
  its replies cached by a hash of the conversation so that reruns need no endpoint.

:func:`build_user` makes one from a spec string (``scripted``, ``llm:MODEL``), as the policy
specs do, so a worker process can rebuild it.
"""

from simforge.users.base import SimulatedUserError, Turn, User, UserReply
from simforge.users.scripted import ScriptedUser
from simforge.users.specs import build_user

__all__ = ["ScriptedUser", "SimulatedUserError", "Turn", "User", "UserReply", "build_user"]
