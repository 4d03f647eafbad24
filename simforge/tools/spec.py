"""ToolSpec and the models a spec carries: latency, capacity and natural errors.

One spec is the single source of truth for every surface a tool has: the OpenAI function the agent
sees, and later the MCP tool and the OpenAPI operation the server publishes.
"""

from __future__ import annotations

import math
import random
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Constant(_Frozen):
    kind: Literal["constant"] = "constant"
    seconds: float = Field(0.05, ge=0)

    def sample(self, rng: random.Random) -> float:
        return self.seconds


class Uniform(_Frozen):
    kind: Literal["uniform"] = "uniform"
    low: float = Field(ge=0)
    high: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) must be >= low ({self.low})")
        return self

    def sample(self, rng: random.Random) -> float:
        return rng.uniform(self.low, self.high)


class LogNormal(_Frozen):
    """Service latencies are right-skewed: parameterised by the median people quote, a sigma,
    and a cap so that one draw cannot stall an episode."""

    kind: Literal["lognormal"] = "lognormal"
    median: float = Field(gt=0)
    sigma: float = Field(0.5, ge=0)
    cap: float | None = Field(None, gt=0)

    def sample(self, rng: random.Random) -> float:
        value = self.median * math.exp(self.sigma * rng.gauss(0.0, 1.0))
        return min(value, self.cap) if self.cap is not None else value


class Empirical(_Frozen):
    """Quantiles measured from real traces: ``quantiles[i]`` is the latency at probability
    ``i / (n - 1)``; a draw interpolates linearly between neighbours."""

    kind: Literal["empirical"] = "empirical"
    quantiles: list[float] = Field(min_length=2)

    @model_validator(mode="after")
    def _monotone(self) -> Empirical:
        if any(b < a for a, b in zip(self.quantiles, self.quantiles[1:], strict=False)):
            raise ValueError("quantiles must be non-decreasing")
        if self.quantiles[0] < 0:
            raise ValueError("latencies must be >= 0")
        return self

    def sample(self, rng: random.Random) -> float:
        q = self.quantiles
        x = rng.random() * (len(q) - 1)
        i = min(int(x), len(q) - 2)
        return q[i] + (q[i + 1] - q[i]) * (x - i)

    @classmethod
    def from_samples(cls, samples: list[float], points: int = 21) -> Empirical:
        data = sorted(samples)
        if not data:
            raise ValueError("no samples")
        qs = []
        for k in range(points):
            pos = k / (points - 1) * (len(data) - 1)
            lo = int(pos)
            hi = min(lo + 1, len(data) - 1)
            qs.append(data[lo] + (data[hi] - data[lo]) * (pos - lo))
        return cls(quantiles=qs)


LatencyModel = Annotated[Constant | Uniform | LogNormal | Empirical, Field(discriminator="kind")]


class ErrorModel(_Frozen):
    """A tool's natural failure rate (as learned from logs): with probability ``rate`` a call
    answers ``status`` instead of running. Draws are recorded like any injected fault."""

    rate: float = Field(0.0, ge=0, le=1)
    status: int = Field(503, ge=400, le=599)
    message: str = "service temporarily unavailable"


class ToolSpec(_Frozen):
    """Everything about a tool except its handler."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] = Field(default_factory=dict)
    kind: Literal["read", "write"] = "read"
    system: str | None = None
    entities: tuple[str, ...] = ()
    latency: LatencyModel = Field(default_factory=Constant)
    capacity: int | None = Field(None, ge=1)
    errors: ErrorModel = Field(default_factory=ErrorModel)
    ends_conversation: bool = False
    """A successful call ends the episode, the agent's last text being its final answer (a
    transfer to a human agent)."""

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-calling form (``tools=[...]`` of Chat Completions)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }
