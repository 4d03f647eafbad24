"""A world can be written out as a real SQLite file, to inspect with SQL."""

from __future__ import annotations

import sqlite3

from simforge.world.export import to_sqlite


def test_the_current_state_lands_in_sqlite(mini_pack, tmp_path):
    world = mini_pack.world()
    world.update("Customer", "C-0002", {"tier": "gold"}, now=1.0)
    world.delete("Customer", "C-0003", now=2.0)
    world.insert("Note", {"customer_id": "C-0002", "text": "called back"}, now=3.0)
    path = to_sqlite(world, tmp_path / "world.db")
    with sqlite3.connect(path) as db:
        assert db.execute("select tier from customer where id = 'C-0002'").fetchone() == ("gold",)
        assert db.execute("select count(*) from customer where id = 'C-0003'").fetchone() == (0,)
        assert db.execute("select count(*) from customer").fetchone() == (world.count("Customer"),)
        assert db.execute("select text from note").fetchall() == [("called back",)]
