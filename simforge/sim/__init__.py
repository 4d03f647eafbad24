"""The kernel: Session, the call pipeline, named RNG streams, the recorder."""

from simforge.sim.calls import CallOutcome, CallPipeline
from simforge.sim.recorder import Recorder
from simforge.sim.rng import Streams
from simforge.sim.session import Budgets, CallRequest, Session, SessionClosed

__all__ = [
    "Budgets",
    "CallOutcome",
    "CallPipeline",
    "CallRequest",
    "Recorder",
    "Session",
    "SessionClosed",
    "Streams",
]
