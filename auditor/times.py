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
