"""times.py: the one parser of a time a user gives (--since, --until, auditor.toml) and the one
UTC helper; property tests hold the parser to the ISO 8601 forms it accepts."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, strategies as st

from auditor.times import parse_time, utc, utc_text

MOMENTS = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1))
OFFSETS = st.integers(min_value=-14 * 60, max_value=14 * 60)


@given(MOMENTS, OFFSETS, st.sampled_from(["minutes", "seconds", "microseconds"]), st.sampled_from(["T", " "]))
def test_iso_8601_with_any_offset_is_that_instant_in_utc(moment, minutes, timespec, sep):
    zone = timezone(timedelta(minutes=minutes))
    t = moment.replace(tzinfo=zone)
    if timespec == "minutes":
        t = t.replace(second=0, microsecond=0)
    elif timespec == "seconds":
        t = t.replace(microsecond=0)
    text = t.isoformat(sep=sep, timespec=timespec)
    got = parse_time(text)
    assert got == t and got.tzinfo == timezone.utc
    if minutes == 0:
        assert parse_time(text.replace("+00:00", "Z")) == got
    assert parse_time(text[:-3] + text[-2:]) == got                   # +0530 as +05:30


@given(MOMENTS)
def test_no_zone_is_utc_and_the_written_form_reads_back(moment):
    assert parse_time(moment.isoformat()) == moment.replace(tzinfo=timezone.utc)
    assert parse_time(utc_text(moment)) == utc(moment)                  # what the reports write
    assert parse_time(moment) == utc(moment)                            # a TOML time as it is


@pytest.mark.parametrize("text, want", [
    ("2026-10-23T11:35Z", "2026-10-23T11:35:00.000000Z"),
    ("2026-10-23t11:35z".replace("t", "T"), "2026-10-23T11:35:00.000000Z"),
    ("2026-10-23 11:35+0530", "2026-10-23T06:05:00.000000Z"),
    ("2026-10-23T11:35-02", "2026-10-23T13:35:00.000000Z"),
    ("2026-10-23", "2026-10-23T00:00:00.000000Z"),
    ("2026-10-23T11:35:07,5Z", "2026-10-23T11:35:07.500000Z"),
])
def test_the_forms_people_type(text, want):
    assert utc_text(parse_time(text)) == want


@pytest.mark.parametrize("text", ["", "yesterday", "2026-10-23T11", "2026-10-23T11:35Zulu", "2026-W43-1",
                                  "2026-13-01", "2026-10-23T24:00", "10/23/2026", "2026-10-23T11:35+25:00",
                                  "2026-10-23X11:35"])
def test_anything_else_is_refused_with_what_is_expected(text):
    with pytest.raises(ValueError, match="is not a time"):
        parse_time(text)


def test_one_parser_of_user_times():
    """The CLI's time options and the charts' times parse with times.parse_time; nothing else
    in the package parses a time a user gives with strptime."""
    from conftest import ROOT

    sources = {p: p.read_text(encoding="utf-8") for p in (ROOT / "auditor").rglob("*.py")}
    assert not [p.name for p, s in sources.items() if "strptime" in s or "TIME_FORMATS" in s]
    assert "parse_time" in sources[ROOT / "auditor" / "cli.py"]
