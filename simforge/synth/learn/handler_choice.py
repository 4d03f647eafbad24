"""Choosing each tool's handler from its observed calls.

Candidates follow from how the tool's results relate to entities (see
:mod:`.observations`): a record named by a key argument (``get``, or ``update`` for a
write), an id or a stored row found by other fields (``find``), a list of records (``search``),
a value inside a record (``get`` with a path), a new record (``create``); tools without entities
get ``compute`` (arithmetic), ``constant`` or ``replay``. Each candidate is run, with the
interpreter that sessions use, on the recorded calls from the state just before each of them; the
best one is kept when it reproduces enough calls, else the replay table answers. Learned error
conditions are checked first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from simforge.synth.entities.catalog import EntityCatalog
from simforge.synth.expr.language import same
from simforge.synth.learn.created_records import learn_creates, modelled_fields
from simforge.synth.learn.error_conditions import learn_errors
from simforge.synth.learn.observations import CallObservation, ToolProfile
from simforge.synth.learn.preconditions import Distributions, learn_preconditions, merge
from simforge.synth.learn.side_effects import learn_side_effects
from simforge.synth.learn.write_effects import MAX_SAMPLES, learn_effects, learn_fields
from simforge.synth.runtime.effects import apply_effects
from simforge.synth.runtime.error_rules import ErrorObservation
from simforge.synth.runtime.interpreter import DictStore, Runtime, arithmetic, run
from simforge.synth.runtime.side_effects import RESULT
from simforge.tools.errors import ToolError

Row = dict[str, Any]
CHECK_CAP = 120
KEEP_LEARNED = 0.3


class Learner:
    def __init__(
        self,
        catalog: EntityCatalog,
        base: Mapping[str, Mapping[str, Row]],
        pks: Mapping[str, str],
        rt: Runtime,
    ) -> None:
        self.catalog = catalog
        self.base = base
        self.pks = pks
        self.rt = rt
        self.dists = Distributions(base)
        self.modelled: dict[str, dict[str, set[str]]] = {}
        """tool -> entity -> the fields its handler reproduces in every observed call (what a
        task's expected state may ask of it)."""

    # -- checking -------------------------------------------------------------------------------

    def outcome(self, desc: Mapping[str, Any], obs: CallObservation) -> tuple[bool, Any]:
        """Run ``desc`` on one recorded call from the state before it."""
        store = self._store(obs)
        mapping_key = desc.get("key")
        if mapping_key and isinstance(obs.args.get(mapping_key), str):
            entity = desc.get("entity", "")
            if obs.env.get("old") is not None:
                store.put(entity, obs.args[mapping_key], obs.env["old"])
            elif obs.missing_target:
                store.put(entity, obs.args[mapping_key], None)  # type: ignore[arg-type]
        try:
            return True, run(desc, store, dict(obs.args), self.rt)
        except ToolError as exc:
            return False, exc.message
        except Exception as exc:  # a candidate that crashes is a candidate that is wrong
            return False, f"{type(exc).__name__}"

    def _store(self, obs: CallObservation) -> DictStore:
        """The world as the call found it: the seed, the episode's initial state (rows it saw
        that differ from the seed, wherever in the episode it saw them) and what happened
        earlier in the episode."""
        store = DictStore(self.base, self.pks)
        for entity, rows in (obs.initial or {}).items():
            for id, row in rows.items():
                store.put(entity, id, row)
        if obs.store is not None:
            for entity, rows in obs.store.overlay.items():
                for id, row in rows.items():
                    if id not in (obs.initial or {}).get(entity, {}) or row is not None:
                        store.put(entity, id, row)
        return store

    def accuracy(self, desc: Mapping[str, Any], calls: Sequence[CallObservation]) -> float:
        calls = list(calls)[:CHECK_CAP]
        if not calls:
            return 0.0
        hits = 0
        for obs in calls:
            ok, value = self.outcome(desc, obs)
            if obs.error is not None:
                hits += (not ok) and value == obs.error
            else:
                hits += ok and same(value, obs.result)
        return hits / len(calls)

    # -- learning -------------------------------------------------------------------------------

    def learn(self, profile: ToolProfile, calls: Sequence[CallObservation]) -> dict[str, Any]:
        """The handler description of one tool (``kind`` plus what that kind needs)."""
        name = profile.name
        good = [c for c in calls if c.error is None]
        mapping = profile.best_mapping()
        refs = {arg: {"entity": r.entity, "sub": r.sub} for arg, r in profile.best_refs().items()}
        write = profile.is_write
        candidates: list[dict[str, Any]] = []
        if mapping is not None:
            mode, entity, key = mapping
            common = {"tool": name, "entity": entity, "refs": refs}
            if mode == "record" and write:
                candidates.append(self._update(common, key, good))
            elif mode == "record":
                candidates.append(self._get(common, profile, entity, key, good))
            elif mode == "path":
                path = self._path(good, key)
                if write:
                    candidates.append(self._update(common, key, good))
                elif path is not None:
                    candidates.append({**common, "kind": "get", "key": key, "view": {"path": path}})
            elif mode == "key":
                match = self._match(entity, good)
                if match:
                    candidates.append(
                        {**common, "kind": "find", "match": match, "pk": self.pks[entity]}
                    )
            elif mode == "found":
                match = self._match(entity, good)
                if match:
                    candidates.append(
                        {
                            **common,
                            "kind": "find",
                            "match": match,
                            "pk": self.pks[entity],
                            "returns": "row",
                        }
                    )
            elif mode == "list":
                candidates.append(self._search(common, entity, good))
            elif mode == "created":
                candidates.append(self._create(common, entity, good))
        if good and all(same(c.result, good[0].result) for c in good) and len(good) >= 2:
            candidates.append({"tool": name, "kind": "constant", "value": good[0].result})
        candidates.extend(self._compute(name, good))
        best: dict[str, Any] = {"tool": name, "kind": "replay"}
        best_score = -1.0
        for desc in candidates:
            desc["errors"] = self._errors(desc, calls)
            score = self.accuracy(desc, calls)
            if score > best_score:
                best, best_score = desc, score
        keep = best_score >= KEEP_LEARNED or best["kind"] in ("update", "create")
        if not keep:
            best = {"tool": name, "kind": "replay"}
        named = {
            record.get(self.pks.get(entity, ""), "") and entity
            for c in good
            for arg, _, record in c.side
            if arg == RESULT
            for entity in [self._entity_of(record)]
            if entity
        }
        named.discard("")
        if named:
            # what the write did to the row its answer names (a bill it says it paid)
            for entity in sorted(named):
                found = learn_side_effects(good, {RESULT: {"entity": entity, "sub": None}})
                best["side"] = [*(best.get("side") or []), *found]
        if best["kind"] in ("update", "create"):
            envs = [_would_write(best, c.env) for c in good[:CHECK_CAP]]
            inferred = learn_preconditions(best, good, envs, self.dists)
            best["errors"] = merge(best.get("errors") or [], inferred)
        best["train_accuracy"] = round(max(best_score, 0.0), 4)
        self.modelled[name] = modelled_fields(best, good)
        return best

    def _entity_of(self, record: Row) -> str | None:
        found = self.catalog.recognise(record)
        return found[0].name if found is not None else None

    def _get(
        self,
        common: dict[str, Any],
        profile: ToolProfile,
        entity: str,
        key: str,
        good: Sequence[CallObservation],
    ) -> dict[str, Any]:
        """A read of the row the key argument names. When the same argument names rows of
        several entities (a lookup of details by any id), the others are tried in turn, each
        with its own view."""
        others = [
            e
            for (mode, e, arg), _ in profile.mapping.most_common()
            if mode == "record" and arg == key and e != entity and e in self.pks
        ]
        if not others:
            return {**common, "kind": "get", "key": key, "view": self._omit(entity, good)}

        def of(name: str) -> list[CallObservation]:
            pk = self.pks[name]
            return [
                c
                for c in good
                if isinstance(c.result, dict) and c.result.get(pk) == c.args.get(key)
            ]

        return {
            **common,
            "kind": "get",
            "key": key,
            "view": self._omit(entity, of(entity)),
            "also": [{"entity": e, "view": self._omit(e, of(e))} for e in others],
        }

    def _omit(self, entity: str, good: Sequence[CallObservation]) -> dict[str, Any]:
        """Fields the results never show are left out; fields they show only sometimes are
        left out when null (an API that drops empty fields)."""
        seen: dict[str, int] = {}
        records = [c.result for c in good if isinstance(c.result, dict)]
        for record in records:
            for k in record:
                seen[k] = seen.get(k, 0) + 1
        if not records:
            return {}
        fields = self.catalog.entities[entity].fields
        view: dict[str, Any] = {}
        omit = sorted(k for k in fields if k not in seen)
        sometimes = sorted(k for k, n in seen.items() if n < len(records))
        if omit:
            view["omit"] = omit
        if sometimes:
            view["omit_null"] = sometimes
        return view

    def _update(
        self, common: dict[str, Any], key: str, good: Sequence[CallObservation]
    ) -> dict[str, Any]:
        pairs = [(c.new, c.env) for c in good if c.new is not None and c.env.get("old") is not None]
        model = learn_effects(pairs)
        changes = {**model.changes, **_named_args(pairs, key, model.changes)}
        returns: Any = "row"
        if good and not any(isinstance(c.result, dict) for c in good):
            values = {repr(c.result) for c in good}
            found = text_template(good)
            if found is not None:
                returns = {"template": found}
            else:
                returns = {"c": good[0].result} if len(values) == 1 else "replay"
        elif self.catalog.is_kind(common["entity"]) and any(
            not isinstance(c.result, dict)
            or c.result.get(self.pks[common["entity"]]) != c.args.get(key)
            for c in good
        ):
            returns = "replay"  # the row nested in a larger answer: recorded answers it
        creates = learn_creates(good, self.pks)
        if creates:
            common = {**common, "creates": creates}
        return {
            **common,
            "kind": "update",
            "key": key,
            "effects": changes,
            "side": learn_side_effects(good, common["refs"]),
            "returns": returns,
            "view": self._omit(common["entity"], good),
        }

    def _create(
        self, common: dict[str, Any], entity: str, good: Sequence[CallObservation]
    ) -> dict[str, Any]:
        made = [(c.new, {**c.env, "old": None}) for c in good if c.created and c.new is not None]
        keys: list[str] = []
        for new, _ in made:
            keys.extend(k for k in new if k not in keys)
        return {
            **common,
            "kind": "create",
            "pk": self.pks[entity],
            "fields": learn_fields(made[:MAX_SAMPLES], keys),
            "side": learn_side_effects(good, common["refs"]),
            "returns": "row",
        }

    def _path(self, good: Sequence[CallObservation], key: str) -> list[dict[str, Any]] | None:
        votes: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        for c in good[:MAX_SAMPLES]:
            old = c.env.get("old")
            if not isinstance(old, dict):
                continue
            for path in _find_paths(old, c.result):
                segs = [_segment(p, c.args, key) for p in path]
                sig = repr(segs)
                votes[sig] = (votes.get(sig, (0, segs))[0] + 1, segs)
        if not votes:
            return None
        return max(votes.values(), key=lambda v: v[0])[1]

    def _match(self, entity: str, good: Sequence[CallObservation]) -> dict[str, list[Any]]:
        table = self.base.get(entity, {})
        counts: dict[tuple[str, tuple[Any, ...]], int] = {}
        used = 0
        pk = self.pks.get(entity, "")
        for c in good[:MAX_SAMPLES]:
            id = c.result.get(pk) if isinstance(c.result, dict) else c.result
            row = table.get(id) if isinstance(id, str) else None
            if row is None:
                continue
            used += 1
            for arg, value in c.args.items():
                for path in _find_paths(row, value, depth=3):
                    counts[(arg, tuple(path))] = counts.get((arg, tuple(path)), 0) + 1
        match: dict[str, list[Any]] = {}
        for (arg, found), n in sorted(counts.items(), key=lambda kv: (-kv[1], len(kv[0][1]))):
            path = list(found)
            if n == used and arg not in match:
                match[arg] = list(path)
        return match

    def _search(
        self, common: dict[str, Any], entity: str, good: Sequence[CallObservation]
    ) -> dict[str, Any]:
        table = self.base.get(entity, {})
        pk = self.pks[entity]
        view: dict[str, Any] = {"omit": [], "merge": [], "add": {}}
        for c in good:
            if not (isinstance(c.result, list) and c.result and isinstance(c.result[0], dict)):
                continue
            record = c.result[0]
            row = table.get(str(record.get(pk)))
            if row is None:
                continue
            view["omit"] = sorted(k for k in row if k not in record)
            for f, value in row.items():
                for arg, given in c.args.items():
                    if (
                        isinstance(value, dict)
                        and isinstance(given, str)
                        and isinstance(value.get(given), dict)
                    ):
                        view["merge"] = [[{"c": f}, {"arg": arg}]]
            for k, v in record.items():
                if k not in row and not any(
                    k in (row.get(s[0]["c"]) or {}).get(c.args.get(s[1]["arg"]), {})
                    for s in view["merge"]
                ):
                    for arg, given in c.args.items():
                        if given == v:
                            view["add"][k] = arg
                    if k not in view["add"]:
                        view.setdefault("const", {})[k] = v
            break
        desc = {**common, "kind": "search", "view": view, "filters": []}
        hits = [c for c in good if isinstance(c.result, list) and c.result]
        filters: list[dict[str, Any]] = []
        if hits:
            first = hits[0].result[0]
            for field_, value in first.items():
                for arg in hits[0].args:
                    if all(
                        all(
                            isinstance(r, dict) and r.get(field_) == c.args.get(arg)
                            for r in c.result
                        )
                        for c in hits
                    ):
                        filters.append({"field": field_, "arg": arg})
                if isinstance(value, str | bool | int) and all(
                    all(isinstance(r, dict) and r.get(field_) == value for r in c.result)
                    for c in hits
                ):
                    filters.append({"field": field_, "c": value})
        chosen: list[dict[str, Any]] = [f for f in filters if "arg" in f]
        desc["filters"] = chosen
        score = self.accuracy(desc, good)
        for rule in (r for r in filters if "c" in r):
            trial = {**desc, "filters": [*chosen, rule]}
            trial_score = self.accuracy(trial, good)
            if trial_score > score:
                chosen, score, desc = [*chosen, rule], trial_score, trial
        return desc

    def _compute(self, name: str, good: Sequence[CallObservation]) -> list[dict[str, Any]]:
        if not good:
            return []
        args = [k for k, v in good[0].args.items() if isinstance(v, str)]
        out = []
        for arg in args:
            try:
                arithmetic(str(good[0].args[arg]))
            except Exception:
                continue
            for digits in (2, None):
                for as_string in (True, False):
                    out.append(
                        {
                            "tool": name,
                            "kind": "compute",
                            "arg": arg,
                            "digits": digits,
                            "as_string": as_string,
                        }
                    )
        return out

    def _errors(
        self, desc: Mapping[str, Any], calls: Sequence[CallObservation]
    ) -> list[dict[str, Any]]:
        if not any(c.error for c in calls):
            return []
        plain = {k: v for k, v in desc.items() if k != "errors"}
        observations = []
        for c in calls[:CHECK_CAP]:
            env = _would_write(desc, c.env)
            no_match = False
            if desc["kind"] == "find" and c.error is not None:
                no_match = not self.outcome(plain, c)[0]
            refs = c.env.get("ref") or {}
            missing = tuple(
                k for k, v in refs.items() if v is None or (isinstance(v, list) and None in v)
            )
            observations.append(ErrorObservation(env, c.error, c.missing_target, no_match, missing))
        return learn_errors(observations)


def text_template(good: Sequence[CallObservation]) -> str | None:
    """A text answer as a template of the arguments (``Certificate ... added to user
    {user_id} with amount {amount}.``) when one reproduces every observed answer; an argument
    fills a slot only where its value is distinctive (a string of four characters or more, a
    number of two digits or more)."""
    if not good or not all(isinstance(c.result, str) for c in good):
        return None
    from simforge.synth.runtime.interpreter import fill

    first = good[0]
    text = str(first.result).replace("{", "{{").replace("}", "}}")
    used = False
    for name, value in sorted(first.args.items(), key=lambda kv: -len(str(kv[1]))):
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            continue
        shown = value if isinstance(value, str) else str(value)
        if len(shown) < (4 if isinstance(value, str) else 2) or shown not in text:
            continue
        if "{" + name + "}" in text:
            continue
        text = re.sub(rf"(?<![\w.]){re.escape(shown)}(?![\w])", "{" + name + "}", text)
        used = True
    if not used:
        return None
    try:
        if all(fill(text, c.args) == c.result for c in good):
            return text
    except (KeyError, IndexError, ValueError):
        return None
    return None


def share_not_found(handlers: list[dict[str, Any]]) -> None:
    """A tool never seen failing on an unknown id answers like its siblings on the same entity
    did: the recorded "not found" form of another lookup (or read) of that entity."""
    forms: dict[tuple[str, str], dict[str, Any]] = {}
    for desc in handlers:
        for rule in desc.get("errors") or []:
            op = next(iter(rule["when"]))
            if op in ("missing", "no_match") and desc.get("entity"):
                forms.setdefault((desc["entity"], op), rule)
    for desc in handlers:
        entity = desc.get("entity")
        op = {"find": "no_match", "get": "missing", "update": "missing"}.get(desc["kind"])
        if not entity or op is None:
            continue
        rules = desc.setdefault("errors", [])
        if any(next(iter(r["when"])) == op for r in rules):
            continue
        borrowed = forms.get((entity, op)) or forms.get(
            (entity, "missing" if op == "no_match" else "no_match")
        )
        if borrowed is not None:
            rules.insert(0, {**borrowed, "when": {op: True if op == "no_match" else "target"}})


def _would_write(desc: Mapping[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    """The call's environment with ``new``, the row the handler would write (error conditions
    may compare an argument with a value computed for it, such as a total price)."""
    if desc["kind"] == "update" and isinstance(env.get("old"), dict):
        return {**env, "new": {**env["old"], **apply_effects(desc.get("effects") or {}, env)}}
    if desc["kind"] == "create":
        scope = {**env, "old": None}
        return {**scope, "new": apply_effects(desc.get("fields") or {}, scope)}
    return env


def _named_args(
    pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]], key: str, learned: Mapping[str, Any]
) -> dict[str, Any]:
    """Fields set by the argument of the same name: an argument named like a field of the row,
    equal to the field after every observed call, sets it, even where no call happened to
    change it (``nonfree_baggages`` that stayed 0 in every recorded call)."""
    if not pairs:
        return {}
    out: dict[str, Any] = {}
    for name in pairs[0][1].get("args") or {}:
        if name == key or name in learned:
            continue
        if all(
            name in (env.get("old") or {})
            and name in (env.get("args") or {})
            and same(env["args"][name], new.get(name))
            for new, env in pairs
        ):
            out[name] = {"p": ["args", name]}
    return out


def _find_paths(node: Any, value: Any, depth: int = 4) -> list[list[Any]]:
    out: list[list[Any]] = []

    def walk(n: Any, path: list[Any], d: int) -> None:
        if path and same(n, value):
            out.append(path)
            return
        if d <= 0:
            return
        if isinstance(n, dict):
            for k, v in n.items():
                walk(v, [*path, k], d - 1)

    walk(node, [], depth)
    return out


def _segment(part: Any, args: Mapping[str, Any], key: str) -> dict[str, Any]:
    for name, value in args.items():
        if name != key and value == part:
            return {"arg": name}
    return {"c": part}
