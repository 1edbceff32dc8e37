"""Integers from outside (a node, a gateway, a host, a recording) in the one form the wire
writes them: a JSON integer, or a string of ASCII decimal digits with an optional minus sign.

Python's ``int()`` and pydantic's lax integers read much more: ``"7_5"`` (75), Arabic-Indic
digits ``"٧٥"`` (75), ``" 75 "``, ``"+75"``, ``"75.0"``, ``true`` (1); and the chain decoder
read ``""`` as 0. None of them is a number a node or gateway writes, so each is a wrong shape
(issue 35), never a value. Every integer decoded from the wire goes through :func:`wire_int`.
"""

from __future__ import annotations

import re
from typing import Any

MAX_DIGITS = 40  # longer than any 64-bit integer, sign and padding included: refused unread
_DECIMAL = re.compile(r"-?[0-9]+")


def is_decimal(text: str, *, signed: bool = True) -> bool:
    """Whether ``text`` is an integer in the wire's decimal form (at most MAX_DIGITS characters;
    with ``signed`` false, no minus sign)."""
    return (len(text) <= MAX_DIGITS and _DECIMAL.fullmatch(text) is not None
            and (signed or not text.startswith("-")))


def wire_int(v: Any) -> Any:
    """The integer of a wire value (None stays None: absent); ValueError for anything that is
    not an integer in the wire's decimal form."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise ValueError("a boolean is not an integer")
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        if len(v) > MAX_DIGITS:
            raise ValueError(f"a number of {len(v)} characters is out of range")
        if _DECIMAL.fullmatch(v):
            return int(v)
        raise ValueError(f"{v[:40]!r} is not an integer in decimal digits")
    raise ValueError(f"not an integer: {str(v)[:40]!r}")
