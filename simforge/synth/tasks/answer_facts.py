"""Required outputs for tasks whose source episode changed nothing: the facts its final answer
states that the episode's tool results backed.

A read-only task ("which laptop does Ana have?") has no end state to compare, and a task without
a correctness check earns nothing, so without this the oracle and the no-op would both score 0.
The facts are the answer's distinctive tokens, the kind an agent can only state after doing the
lookups: ids and codes (``AST-09401``, ``LA77123001``), amounts with three or more digits
(``318.00``, ``1,249.00``), dates and e-mail addresses; common words and small counts are not
facts (they appear in any answer). A token counts only if the episode's successful tool results
hold it too (the same string inside a result's text, or the same number as a result's value):
what the answer invents or repeats from small talk is not checkable.

A fact the agent is given proves nothing: one that the user's own messages, the user brief a
simulated user speaks from, or what the agent reads before doing anything (the tools' names,
descriptions and schemas, the policy) already state is paid to an agent that says the
instruction back (the audit's ``parrot``) or recites the text it was shown (``surface-probe``).
Such facts are never required, even when nothing else is left: a task with nothing else to prove
its work is left out by synthesis (:func:`.episode_tasks.unproven`), not shipped gameable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from simforge.scoring.matching import answer_states
from simforge.trace.episode import Episode

MAX_FACTS = 6

_CODE = re.compile(r"(?<![\w@.-])[A-Za-z]{1,8}[-_]?\d[\w-]*\d(?![\w@-])")
_LONG = re.compile(r"(?<![\w@.-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{8,}(?![\w@-])")
_DATE = re.compile(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?:T[\d:.]+Z?)?(?![\w-])")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_AMOUNT = re.compile(r"(?<![\w.,-])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,-])\d+(?:\.\d+)?(?![\w-])")


def leaves(value: Any, depth: int = 8) -> Iterator[Any]:
    """Every scalar inside a JSON value."""
    if isinstance(value, dict):
        if depth > 0:
            for child in value.values():
                yield from leaves(child, depth - 1)
    elif isinstance(value, list):
        if depth > 0:
            for child in value[:500]:
                yield from leaves(child, depth - 1)
    else:
        yield value


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def candidates(answer: str) -> list[str]:
    """Distinctive tokens of an answer, in order of appearance, without repeats."""
    found: list[tuple[int, str]] = []
    for regex in (_EMAIL, _DATE, _CODE, _LONG):
        found.extend((m.start(), m.group(0)) for m in regex.finditer(answer))
    taken = [(start, start + len(text)) for start, text in found]
    for m in _AMOUNT.finditer(answer):
        inside = any(a <= m.start() < b for a, b in taken)
        if not inside and sum(ch.isdigit() for ch in m.group(0)) >= 3:
            found.append((m.start(), m.group(0)))
    out: list[str] = []
    for _, text in sorted(found):
        text = text.rstrip(".")
        if text not in out and not any(text in other for other in out):
            out.append(text)
    return out


def backed(fact: str, texts: Iterable[str], values: Iterable[float]) -> bool:
    number = _number(fact)
    if number is not None:
        return any(abs(v - number) < 0.005 for v in values)
    return any(fact in text for text in texts)


def answer_facts(episode: Episode) -> list[str]:
    """The facts of the episode's final answer that its tool results hold (see the module),
    given or not."""
    answers = [m.content for m in episode.messages if m.role == "assistant" and m.content]
    if not answers:
        return []
    texts: list[str] = []
    values: list[float] = []
    for call in episode.tool_calls:
        if call.error is not None:
            continue
        for leaf in leaves(call.result):
            if isinstance(leaf, bool) or leaf is None:
                continue
            if isinstance(leaf, int | float):
                values.append(float(leaf))
            elif isinstance(leaf, str):
                texts.append(leaf)
                values.extend(
                    n for m in _AMOUNT.finditer(leaf) if (n := _number(m.group(0))) is not None
                )
    return [f for f in candidates(answers[-1]) if backed(f, texts, values)]


def given(fact: str, text: str) -> bool:
    """Whether ``text`` (what the agent is given) already states ``fact``, by the rule the
    ``required_outputs`` validator grades an answer with: saying ``text`` back would pass."""
    return answer_states(text, fact)


def required_outputs(episode: Episode, shown: str = "") -> list[str]:
    """The facts of the episode's final answer that its tool results hold and that neither the
    user's messages nor ``shown`` (the rest of what the agent is given) state (see the module)."""
    said = " ".join(m.content or "" for m in episode.messages if m.role == "user")
    text = f"{said}\n{shown}"
    return [f for f in answer_facts(episode) if not given(f, text)][:MAX_FACTS]
