"""The store's insert: the parameter path (a few rows) and the Arrow path (many) store the
same values, exactly, for every column type the schemas use."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from auditor import store as store_mod
from auditor.store import Store

ROWS = [
    dict(i=1, big=2**100 + 7, dec=Decimal("123456789.000000000000000001"), ts=datetime(2026, 9, 30, 11, 2, 17),
         tz=datetime(2026, 9, 30, 13, 2, 17, 5, tzinfo=timezone(timedelta(hours=2))), s="x'y", j='{"a": [1, 2]}',
         b=True, d=0.1, l=[3, 4], m={"k": "v"}),
    dict(i=-5, big=None, dec=None, ts=None, tz=None, s=None, j=None, b=None, d=None, l=None, m=None),
    dict(i=7, s="only some columns"),
]


@pytest.mark.parametrize("small", [0, 64])
def test_insert_paths_store_the_same(tmp_path, monkeypatch, small):
    monkeypatch.setattr(store_mod, "SMALL_INSERT", small)
    st = Store(tmp_path / "s.duckdb")
    try:
        st.con.execute("SET TimeZone = 'America/New_York'")     # naive times are UTC whatever the session says
        st.con.execute("CREATE TABLE t (i INTEGER, big HUGEINT, dec DECIMAL(38, 18), ts TIMESTAMPTZ, "
                       "tz TIMESTAMPTZ, s VARCHAR, j JSON, b BOOLEAN, d DOUBLE, l INTEGER[], m MAP(VARCHAR, VARCHAR))")
        assert st.insert("t", ROWS) == 3
        got = st.con.execute("SELECT i, big, dec, epoch_us(ts), epoch_us(tz), s, j, b, d, l, m FROM t ORDER BY i").fetchall()
    finally:
        st.close()
    utc = datetime(2026, 9, 30, 11, 2, 17, tzinfo=timezone.utc)
    assert got == [
        (-5, None, None, None, None, None, None, None, None, None, None),
        (1, 2**100 + 7, Decimal("123456789.000000000000000001"), int(utc.timestamp()) * 10**6,
         int(utc.timestamp()) * 10**6 + 5, "x'y", '{"a": [1, 2]}', True, 0.1, [3, 4], {"k": "v"}),
        (7, None, None, None, None, "only some columns", None, None, None, None, None),
    ]


def test_insert_rejects_an_unknown_column(tmp_path):
    st = Store(tmp_path / "s.duckdb")
    try:
        st.con.execute("CREATE TABLE t (i INTEGER)")
        with pytest.raises(ValueError, match="no column nope"):
            st.insert("t", [{"i": 1, "nope": 2}])
    finally:
        st.close()


def test_a_wheel_ships_every_folder_of_queries():
    """A wheel (``pip install .``, not editable) carries queries/ as ``auditor/queries``: each
    folder of it must be a package of pyproject.toml with its SQL as package data. One that
    is not is missing from the install: queries/lines/ was, and such a store had no line
    tables for the views to read."""
    import tomllib

    from conftest import ROOT

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    top = ROOT / "queries"
    folders = {".".join(("auditor", "queries", *d.relative_to(top).parts))
               for d in [top, *top.rglob("*")] if d.is_dir() and d.name != "__pycache__"}
    assert len(folders) >= 4
    assert folders <= set(cfg["packages"])
    assert {f: cfg["package-data"].get(f) for f in folders} == {f: ["*.sql"] for f in folders}
