"""Which numbers are quantities: the words of a column (or a finding's evidence key) that
holds identifiers, never quantities. Their numbers are written without thousands separators
(an escrow 134985, a height 6213928), every other whole number with them (a reward
16,000,000,000,000) in the table, md and html views and in a finding's next step; json and
csv raw. Imports nothing of auditor's: the registry (a finding's next step) and the views
both read it.
"""

from __future__ import annotations

# start / end: a number marking where something starts or ends is a height or a position
# (a cPoC's gen_start, val_end), never an amount
IDENTIFIERS = frozenset({"escrow", "epoch", "height", "nonce", "slot", "request", "id", "index", "port", "seed",
                         "start", "end"})


def identifier(column: str | None) -> bool:
    """Whether ``column`` (by its words) holds identifiers: ``escrow``, ``primary_nonce``, ``start_height``."""
    return column is not None and bool(IDENTIFIERS & set(str(column).lower().replace(" ", "_").split("_")))
