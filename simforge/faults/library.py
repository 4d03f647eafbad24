"""Named fault profiles: the built-ins shipped in ``simforge/faults/profiles/``, a scenario's
own, or a YAML file given by path."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from simforge.config import ConfigError, NotFound, load_model
from simforge.faults.registry import KINDS
from simforge.faults.rules import NONE, FaultProfile

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"


class FaultConfigError(ConfigError):
    """A fault profile that cannot be used; names the file, the field and what is allowed."""


@cache
def builtin_profiles() -> dict[str, FaultProfile]:
    profiles: dict[str, FaultProfile] = {}
    for name in _builtin_files():
        profile = _builtin(name)
        profiles[profile.name] = profile
    return profiles


@cache
def _builtin_files() -> dict[str, Path]:
    """The built-in profile files by name (a profile is named as its file)."""
    return {path.stem: path for path in sorted(PROFILE_DIR.glob("*.yaml"))}


@cache
def _builtin(name: str) -> FaultProfile:
    """One built-in profile, parsed on first use: a scenario names one or two of the ten."""
    return load_profile(_builtin_files()[name])


def load_profile(path: Path) -> FaultProfile:
    """One profile file; its ``name`` must match the file name."""
    profile: FaultProfile = load_model(FaultProfile, path, FaultConfigError)
    if profile.name != path.stem:
        raise FaultConfigError(
            path, [f"name {profile.name!r} must match the file name {path.stem!r}"]
        )
    return profile


def resolve_profile(name: str | None, custom: list[FaultProfile] | None = None) -> FaultProfile:
    """A profile by name: the scenario's own first, then the built-ins, then a YAML path."""
    if name is None or name == "none":
        return NONE
    for profile in custom or []:
        if profile.name == name:
            return profile
    if name in _builtin_files():
        return _builtin(name)
    path = Path(name)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        loaded: FaultProfile = load_model(FaultProfile, path, FaultConfigError)
        return loaded
    known = sorted({*builtin_profiles(), *(p.name for p in custom or [])})
    raise NotFound(f"unknown fault profile {name!r}; known: {known}")


def describe_kinds() -> list[dict[str, Any]]:
    """Every fault kind with its parameters, types and defaults (for `simforge faults list`)."""
    out = []
    for name, cls in KINDS.items():
        schema = cls.model_json_schema()
        params = {}
        for field, info in cls.model_fields.items():
            if field == "kind":
                continue
            prop = schema.get("properties", {}).get(field, {})
            params[field] = {
                "type": prop.get("type")
                or [o.get("type") for o in prop.get("anyOf", [])]
                or "object",
            }
            if info.is_required():
                params[field]["required"] = True
            else:
                default = info.get_default(call_default_factory=True)
                params[field]["default"] = (
                    default.model_dump() if hasattr(default, "model_dump") else default
                )
            if "enum" in prop:
                params[field]["allowed"] = prop["enum"]
        out.append(
            {
                "kind": name,
                "stage": cls.stage,
                "only_for": cls.only_for,
                "renders": dict(cls.renders),
                "description": " ".join((cls.__doc__ or "").split()),
                "params": params,
            }
        )
    return out
