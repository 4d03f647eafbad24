"""Snapshot files of every supported format become raw tables; a broken one is named."""

from __future__ import annotations

import json
import sqlite3

import pytest

from simforge.synth.entities.catalog import EntityCatalog, from_snapshot
from simforge.synth.read.snapshot import KEY, SnapshotError, load_snapshot, load_snapshots


def test_json_dict_keyed_by_id_keeps_the_key(tmp_path):
    path = tmp_path / "users.json"
    path.write_text(json.dumps({"u1": {"name": "Ann", "age": 3}, "u2": {"name": "Bo", "age": 4}}))
    rows = load_snapshot(path)["users"]
    assert rows[0] == {"name": "Ann", "age": 3, KEY: "u1"}
    catalog = EntityCatalog()
    from_snapshot({"users": rows}, catalog)
    user = catalog.entities["User"]
    assert user.pk == "user_id" and user.rows["u1"]["user_id"] == "u1"


def test_json_array_jsonl_csv_toml_and_sqlite(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps([{"order_id": "o1"}]))
    (tmp_path / "b.jsonl").write_text('{"item_id": "i1"}\n\n{"item_id": "i2"}\n')
    (tmp_path / "c.csv").write_text('plan_id,price,code,meta\np1,9.5,0042,"{""a"": 1}"\n')
    (tmp_path / "d.toml").write_text('[[lines]]\nline_id = "L1"\nactive = true\n')
    con = sqlite3.connect(tmp_path / "e.sqlite")
    con.execute("CREATE TABLE customers (customer_id TEXT, tags TEXT)")
    con.execute("INSERT INTO customers VALUES ('c1', '[\"vip\"]')")
    con.commit()
    con.close()
    tables = load_snapshots([tmp_path])
    assert tables["a"] == [{"order_id": "o1"}]
    assert [r["item_id"] for r in tables["b"]] == ["i1", "i2"]
    assert tables["c"] == [{"plan_id": "p1", "price": 9.5, "code": "0042", "meta": {"a": 1}}]
    assert tables["lines"] == [{"line_id": "L1", "active": True}]
    assert tables["customers"] == [{"customer_id": "c1", "tags": ["vip"]}]


def test_broken_json_names_file_line_and_record(tmp_path):
    path = tmp_path / "orders.json"
    path.write_text('{\n "o1": {"status": "ok"},\n "o2": {"status": ok}\n}')
    with pytest.raises(SnapshotError) as err:
        load_snapshot(path)
    message = str(err.value)
    assert "orders.json" in message and "line 3" in message and "'o2'" in message


def test_broken_jsonl_and_csv_name_the_line(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(SnapshotError, match=r"x.jsonl: line 2"):
        load_snapshot(bad)
    csv = tmp_path / "y.csv"
    csv.write_text("a,b\n1,2\n3\n")
    with pytest.raises(SnapshotError, match=r"y.csv: line 3"):
        load_snapshot(csv)
    with pytest.raises(SnapshotError, match="unknown snapshot format"):
        load_snapshot(_touch(tmp_path / "z.xml"))


def _touch(path):
    path.write_text("<x/>")
    return path
