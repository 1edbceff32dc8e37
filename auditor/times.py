"""Times: one UTC helper and one formatter.

Inside the program a time is a ``datetime``, aware and in UTC (``utc``): analyses keep them
so in their results. A time becomes text in one place, ``utc_text``, at the edge: the JSON
and CSV writers, every table cell, and the sentences of notes and findings. It writes one
form, ISO 8601 in UTC with a ``Z`` and microseconds, ``2026-09-23T00:03:36.172913Z``
(``TIME_PATTERN``): fixed width, so the texts sort as the times do.

Times that arrive as text are parsed once, where they arrive (a source module). The
chain's block times carry nanoseconds; results hold them to the microsecond, and the text
as sent stays in the store (``chain_block_times.time_text``) as provenance only.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

TIME_PATTERN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
# a time a user gives (--since, --until, auditor.toml): ISO 8601, a date alone or with a time of
# minutes, seconds or fractions, T or a space between, Z or an offset (+05:30, +0530, +05) or none (UTC)
USER_TIME = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,6})?)?)?"
                       r"(?:[Zz]|[+-]\d\d(?::?\d\d)?)?")
# the longest duration any option takes (--timeout, --lookback, --interval, --peak-window): a
# year. Past it a value means nothing, and far past it (1e10 s) the clock's arithmetic overflows
MAX_SECONDS = 366 * 24 * 3600


def utc(t: Any) -> Any:
    """``t`` as an aware UTC datetime; a naive time is taken as UTC (never the machine's
    zone). Anything that is not a datetime (None, a number, text) is returned as it is."""
    if not isinstance(t, datetime):
        return t
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def utc_text(t: datetime | None, timespec: str = "microseconds") -> str:
    """The one written form of a time, ``2026-09-23T00:03:36.172913Z``; '?' when unknown.
    ``timespec`` (as ``datetime.isoformat``) shortens it where people read it: the table,
    md and html cells show ``milliseconds``; json, csv and sentences keep every digit."""
    if t is None:
        return "?"
    return utc(t).isoformat(timespec=timespec).replace("+00:00", "Z")


def parse_time(text: str | datetime) -> datetime:
    """The one parser of a time a user gives: ``USER_TIME`` (``2026-10-23T11:35Z``,
    ``2026-10-23 11:35:00+05:30``, ``2026-10-23``), as an aware UTC datetime; a time without a
    zone is UTC. A datetime (a TOML time) is taken as it is. ValueError says what is expected."""
    if isinstance(text, datetime):
        return utc(text)
    t = str(text).strip()
    if not USER_TIME.fullmatch(t) or t[10:11] not in ("", "T", " "):
        raise ValueError(f"{text!r} is not a time: give ISO 8601, e.g. 2026-10-23T11:35Z, 2026-10-23T11:35:00+02:00 "
                         "or 2026-10-23 (UTC unless a zone is given)")
    t = t.replace(",", ".")
    if t[-1] in "Zz":
        t = t[:-1] + "+00:00"
    elif re.search(r"[+-]\d\d$", t) and len(t) > 10:     # +05: an offset of hours alone
        t += ":00"
    try:
        return utc(datetime.fromisoformat(t))
    except ValueError:
        raise ValueError(f"{text!r} is not a time: a field is out of range") from None
