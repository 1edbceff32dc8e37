"""A participant as a user names it on the command line (``--participant``, ``--mine``,
``auditor history ADDR``): its full address, or the label the tables and charts print."""

from __future__ import annotations

import re
from typing import Any

from .errors import UsageError


def address(store: Any, text: str, flag: str = "--participant") -> str:
    """A participant given on the command line as a full address: a full one as given; the
    8-character label or the shortened form the tables print (``gonka1…p86j0skk``) as the one
    address the store knows that fits it. None or several is a usage error."""
    label = re.fullmatch(r"(gonka1(?:…|\.\.\.))?([a-z0-9]+)", text or "")
    if label is None or (text.startswith("gonka1") and not label.group(1)):
        return text         # a full address (or no label at all) as given: the analysis says if it has none
    head = "gonka1" if label.group(1) else ""
    found = [r["participant"] for r in store.query("participants_matching", head=head, tail=label.group(2))]
    if len(found) != 1:
        which = f"matches {', '.join(found[:4])}{' ...' if len(found) > 4 else ''}" if found else \
            "matches no participant the store holds"
        raise UsageError(f"{flag} {text} {which}: give the full gonka1... address")
    return found[0]


def closest(text: str, stored: list[dict[str, Any]]) -> str | None:
    """The address of ``stored`` (queries/participants_stored.sql's rows) nearest ``text`` (a
    typo of one), if one is near."""
    import difflib

    near = difflib.get_close_matches(text, [r["participant"] for r in stored], n=1, cutoff=0.8)
    return near[0] if near else None
