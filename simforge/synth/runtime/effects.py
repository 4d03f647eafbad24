"""A learned write's effects as a session applies them: each changed field's expression
evaluated in order, the later ones seeing the earlier (learned by
:mod:`simforge.synth.learn.write_effects`)."""

from __future__ import annotations

from typing import Any

from simforge.synth.expr.language import Expr, Unresolved, evaluate


def apply_effects(
    changes: dict[str, Expr], env: dict[str, Any], scope: str | None = "new"
) -> dict[str, Any]:
    """The new values of the fields an effect changes, in order, each visible to the later ones
    under ``scope`` (fields whose expression does not apply keep their value)."""
    out: dict[str, Any] = {}
    env = {**env, scope: out} if scope else env
    for name, expr in changes.items():
        try:
            out[name] = evaluate(expr, env)
        except (Unresolved, TypeError, ValueError, OverflowError, ZeroDivisionError):
            continue
    return out
