"""The World: versioned writes, as-of reads, diffs, and snapshots that make reset cheap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import Field

from simforge.world import EntitySchema, World, WorldError, entity, entity_base

Base = entity_base()


@entity(id_prefix="A-", id_width=3)
class Account(Base, table=True):
    id: str = Field(primary_key=True)
    owner: str
    balance: float = 0.0
    status: str = "open"


SCHEMAS = {"Account": EntitySchema.of(Account)}
BASE = {
    "Account": {
        f"A-{i:03d}": {"id": f"A-{i:03d}", "owner": f"o{i}", "balance": 10.0 * i, "status": "open"}
        for i in range(1, 6)
    }
}


def new_world() -> World:
    return World(SCHEMAS, BASE)


def test_reads_see_writes_and_base_is_never_mutated():
    w = new_world()
    w.update("Account", "A-001", {"balance": 99.0}, now=5.0)
    assert w.get("Account", "A-001")["balance"] == 99.0
    assert BASE["Account"]["A-001"]["balance"] == 10.0
    assert new_world().get("Account", "A-001")["balance"] == 10.0


def test_as_of_read_returns_the_state_at_that_time():
    w = new_world()
    w.update("Account", "A-001", {"balance": 1.0}, now=10.0)
    w.update("Account", "A-001", {"balance": 2.0}, now=20.0)
    w.delete("Account", "A-002", now=30.0)
    created = w.insert("Account", {"owner": "new"}, now=40.0)
    assert w.get("Account", "A-001", as_of=5.0)["balance"] == 10.0
    assert w.get("Account", "A-001", as_of=10.0)["balance"] == 1.0
    assert w.get("Account", "A-001", as_of=19.9)["balance"] == 1.0
    assert w.get("Account", "A-001", as_of=25.0)["balance"] == 2.0
    assert w.get("Account", "A-002", as_of=29.0) is not None
    assert w.get("Account", "A-002", as_of=30.0) is None
    assert w.get("Account", created["id"], as_of=39.0) is None
    assert [r["id"] for r in w.rows("Account", as_of=35.0)] == ["A-001", "A-003", "A-004", "A-005"]


def test_diff_lists_created_updated_deleted_with_field_changes():
    w = new_world()
    w.update("Account", "A-001", {"balance": 1.0}, now=1.0)
    w.update("Account", "A-003", {"status": "frozen"}, now=2.0)
    w.update("Account", "A-003", {"status": "open"}, now=3.0)  # changed back: no diff
    w.delete("Account", "A-002", now=4.0)
    new = w.insert("Account", {"owner": "zoe", "balance": 5.0}, now=5.0)
    changes = {(c.entity, c.id): c for c in w.diff()}
    assert set(changes) == {("Account", "A-001"), ("Account", "A-002"), ("Account", new["id"])}
    assert changes[("Account", "A-001")].op == "updated"
    assert changes[("Account", "A-001")].fields == {"balance": (10.0, 1.0)}
    assert changes[("Account", "A-002")].op == "deleted"
    assert changes[("Account", new["id"])].op == "created"
    assert changes[("Account", new["id"])].after["status"] == "open"  # defaults filled in


def test_diff_since_a_time_only_counts_later_writes():
    w = new_world()
    w.update("Account", "A-001", {"balance": 1.0}, now=1.0)
    w.update("Account", "A-001", {"balance": 2.0}, now=5.0)
    w.update("Account", "A-004", {"owner": "x"}, now=6.0)
    changes = w.diff(since=1.0)
    assert [(c.id, c.fields) for c in changes] == [
        ("A-001", {"balance": (1.0, 2.0)}),
        ("A-004", {"owner": ("o4", "x")}),
    ]


def test_new_ids_are_deterministic_and_skip_taken_ones():
    w = new_world()
    assert w.insert("Account", {"owner": "a"}, now=0)["id"] == "A-006"
    assert w.insert("Account", {"owner": "b"}, now=0)["id"] == "A-007"


def test_write_errors_are_clear():
    w = new_world()
    with pytest.raises(WorldError, match="already exists"):
        w.insert("Account", {"id": "A-001", "owner": "dup"}, now=0)
    with pytest.raises(WorldError, match="unknown entity 'Nope'"):
        w.get("Nope", "x")
    with pytest.raises(WorldError, match="not found"):
        w.update("Account", "A-999", {"owner": "x"}, now=0)
    w.update("Account", "A-001", {"owner": "x"}, now=5)
    with pytest.raises(WorldError, match="precedes"):
        w.update("Account", "A-001", {"owner": "y"}, now=4)


write_op = st.one_of(
    st.tuples(st.just("update"), st.sampled_from(list(BASE["Account"])), st.floats(0, 100)),
    st.tuples(st.just("delete"), st.sampled_from(list(BASE["Account"])), st.just(0.0)),
    st.tuples(st.just("insert"), st.text("abc", min_size=1, max_size=3), st.floats(0, 100)),
)


def apply(w: World, ops: list, t0: float) -> None:
    for i, (op, key, value) in enumerate(ops):
        now = t0 + i
        if op == "update" and w.get("Account", key) is not None:
            w.update("Account", key, {"balance": value}, now=now)
        elif op == "delete" and w.get("Account", key) is not None:
            w.delete("Account", key, now=now)
        elif op == "insert":
            w.insert("Account", {"owner": key, "balance": value}, now=now)


@settings(max_examples=60, deadline=None)
@given(before=st.lists(write_op, max_size=8), after=st.lists(write_op, max_size=8))
def test_restore_of_a_snapshot_is_the_identity(before, after):
    w = new_world()
    apply(w, before, 0.0)
    state, log, diff = w.materialize(), list(w.log), w.diff()
    snap = w.snapshot()
    apply(w, after, 100.0)
    w.restore(snap)
    assert w.materialize() == state
    assert w.log == log
    assert w.diff() == diff
    # and the world keeps working the same way after a restore
    apply(w, after, 100.0)
    fresh = new_world()
    apply(fresh, before, 0.0)
    apply(fresh, after, 100.0)
    assert w.materialize() == fresh.materialize()


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(write_op, max_size=12), t=st.floats(-1, 15))
def test_as_of_matches_replaying_the_log_up_to_t(ops, t):
    w = new_world()
    apply(w, ops, 0.0)
    replay = new_world()  # the same ops, applied only up to time t (op i happens at t=i)
    apply(replay, [op for i, op in enumerate(ops) if i <= t], 0.0)
    expected = {r["id"]: r for r in replay.rows("Account")}
    assert {r["id"]: r for r in w.rows("Account", as_of=t)} == expected


@settings(max_examples=80, deadline=None)
@given(
    before=st.lists(write_op, max_size=8),
    middle=st.lists(write_op, max_size=8),
    after=st.lists(write_op, max_size=8),
    t=st.floats(-1, 40),
    reads=st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_history_is_the_same_whenever_it_is_first_read(before, middle, after, t, reads):
    """The per-key index of the log is built when a history read needs it: reading history
    between writes, snapshots and restores must not change any answer."""
    lazy, eager = new_world(), new_world()

    def touch(w: World, read: bool) -> None:
        if read:
            w.diff()
            w.get("Account", "A-001", as_of=t)

    for w in (lazy, eager):
        apply(w, before, 0.0)
        touch(w, w is eager and reads[0])
        snap = w.snapshot()
        apply(w, middle, 20.0)
        touch(w, w is eager or reads[1])
        w.restore(snap)
        touch(w, w is eager and reads[2])
        apply(w, after, 20.0)
    assert eager.log == lazy.log
    assert eager.diff() == lazy.diff()
    assert eager.diff(since=t) == lazy.diff(since=t)
    assert list(eager.rows("Account", as_of=t)) == list(lazy.rows("Account", as_of=t))
    assert eager.next_id("Account") == lazy.next_id("Account")


def test_insert_fills_defaults_in_order_and_never_reuses_an_id():
    w = new_world()
    row = {"owner": "a"}
    created = w.insert("Account", row, now=0)
    assert row == {"owner": "a"}  # the caller's dict is not kept or changed
    # the defaults in their order, then the row's fields, then a new id at the end
    assert list(created) == ["balance", "status", "owner", "id"]
    assert list(w.insert("Account", {"id": None, "owner": "z"}, now=0)) == [
        *["balance", "status", "id", "owner"]  # a key given as None keeps its place
    ]
    assert created == {"id": "A-006", "owner": "a", "balance": 0.0, "status": "open"}
    w.delete("Account", "A-006", now=1)
    w.insert("Account", {"id": "A-009", "owner": "explicit"}, now=2)
    assert w.insert("Account", {"owner": "b"}, now=3)["id"] == "A-008"
    assert w.insert("Account", {"owner": "c"}, now=4)["id"] == "A-010"  # 006 deleted, 009 taken
    assert w.get("Account", "A-006") is None


def test_versions_of_a_seeded_row_are_plain_untracked_dicts():
    """A write to a seeded (frozen) row makes a plain dict the collector does not track when
    it holds only scalars, as do the versions after it; one holding a container is tracked
    (as it must be), and the rows read the same either way."""
    import gc

    from simforge.world.frozen import freeze

    w = World(SCHEMAS, freeze(BASE))
    seeded = w.get("Account", "A-001")
    assert gc.is_tracked(seeded)  # a FrozenDict: always tracked
    first = w.update("Account", "A-001", {"balance": 1.0}, now=1.0)
    second = w.update("Account", "A-001", {"status": "frozen"}, now=2.0)
    assert type(first) is dict and not gc.is_tracked(first) and not gc.is_tracked(second)
    assert first == {**seeded, "balance": 1.0}
    assert second == {**seeded, "balance": 1.0, "status": "frozen"}
    assert list(second) == list(seeded)  # the key order stays the row's
    boxed = w.update("Account", "A-002", {"owner": ["a", "b"]}, now=3.0)
    assert gc.is_tracked(boxed)
    assert gc.is_tracked(w.update("Account", "A-002", {"status": "x"}, now=4.0))
