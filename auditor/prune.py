"""The store's retention rule: ``auditor prune --keep-epochs N``, and ``report daily``'s
``retain_epochs`` (auditor.toml, ``--retain-epochs``, ``$AUDITOR_RETAIN_EPOCHS``).

- The epochs kept are the newest N the store holds from the chain (``chain_epochs``); with
  ``also`` (``report daily``: the epoch it reports) older than those, every epoch from it on.
- The gateway log's lines timed before the start of the oldest kept epoch (its effective
  start SNV(N), the block time ``chain_windows`` gives) are dropped, from every table that
  holds them (``Store.drop_lines_before``). A line without a time stays: unknown is not old.
- Everything else stays: the chain's and the accounting's rows of every epoch, escrow probes,
  watch readings, coverage, and ``log_files`` with each file's read position (collecting the
  same file again reads none of the dropped lines back), ``log_rejects`` and their samples.
- A store holding N epochs or fewer is left as it is: the lines before its oldest epoch may
  be of epochs not collected yet.
- What it costs: today every line is a row of log_events, whose rows must stay numbered in
  the order stored (``Store.lines_deleted``), so the rows kept are written again: the file
  may first grow by about their size. The next collects reuse the space freed; DuckDB gives
  back only the free space at the file's end. The kept derived tables are worked out again by
  the next analysis.
- A store with no chain epoch cannot tell epochs apart, and one whose oldest kept epoch's
  start time is not stored cannot tell which lines are older: both are refused (one line,
  exit 3), nothing dropped.
- One transaction: a prune stopped or failed midway leaves the store as it was.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .errors import SourceError
from .times import utc, utc_text


@dataclass
class Pruned:
    """What one prune kept and dropped."""

    keep: int                           # N
    stored: int                         # epochs the store holds from the chain
    kept: list[int]                     # the epochs kept
    cutoff: datetime | None = None      # the start of the oldest kept epoch; None: nothing was cut
    lines_dropped: int = 0              # log lines dropped (a line may be a row of more than one table)
    dropped: dict[str, int] = field(default_factory=dict)   # rows deleted, per table that holds lines
    first_ts: datetime | None = None    # the first and last time of the lines dropped
    last_ts: datetime | None = None
    untimed: int = 0                    # lines without a time, kept
    forgotten: list[str] = field(default_factory=list)      # kept derived tables to be worked out again
    size_before: int | None = None      # the store file's bytes before and after (None: in memory)
    size_after: int | None = None

    def lines(self, setting: str = "--keep-epochs") -> list[str]:
        """The summary, one sentence a line: what was kept, what dropped, the store's size."""
        from .analyses.targets import epochs_text

        if self.cutoff is None:
            return [f"kept every epoch: the store holds {self.stored} ({epochs_text(self.kept)}), not more than "
                    f"{setting} {self.keep}; nothing dropped"]
        out = [f"kept epoch{'s' if len(self.kept) > 1 else ''} {epochs_text(self.kept)} ({len(self.kept)} of "
               f"{self.stored} stored): the gateway log "
               f"from {utc_text(self.cutoff)} on, the start of epoch {self.kept[0]}"]
        if not self.lines_dropped:
            out.append("dropped nothing: no stored log line is timed before it")
        else:
            per = ", ".join(f"{t} {n:,}" for t, n in self.dropped.items() if n)
            out.append(f"dropped {self.lines_dropped:,} log lines timed {utc_text(self.first_ts)} to "
                       f"{utc_text(self.last_ts)} (rows: {per})")
        if self.untimed:
            out.append(f"kept {self.untimed:,} log lines without a time (unknown is not old)")
        if self.forgotten:
            out.append(f"the kept tables {', '.join(self.forgotten)} will be worked out again from the lines "
                       "left, by the next analysis that reads them")
        if self.size_before is not None:        # measured when lines were dropped, of a file
            out.append(f"the store file: {_mb(self.size_before)} before, {_mb(self.size_after)} after (the space "
                       "freed is reused by the next collects; DuckDB gives back only free space at the file's end)")
        return out


def run(store: Any, keep: int, also: int | None = None) -> Pruned:
    """Apply the retention rule to ``store`` (opened for writing): keep the newest ``keep``
    epochs' log lines (and ``also``'s), drop the older ones. Raises SourceError (exit 3) when
    the store cannot tell the epochs apart; nothing is dropped then."""
    if keep < 1:
        raise ValueError("keep at least one epoch")
    rows = store.query("retention_epochs", keep=keep, also=also)
    if not rows:
        raise SourceError("the store holds no chain epoch, so prune cannot tell the epochs apart: nothing dropped; "
                          "collect the chain first (auditor collect --epoch N --node URL)")
    pruned = Pruned(keep=keep, stored=rows[0]["stored"], kept=[r["epoch"] for r in rows])
    if pruned.stored <= len(pruned.kept):
        return pruned
    oldest = rows[0]
    if oldest["start_time"] is None:
        raise SourceError(f"the start of epoch {oldest['epoch']} (the time of block {oldest['start_height']}) is not "
                          f"stored, so prune cannot tell which log lines are older: nothing dropped; collect it "
                          f"(auditor collect --epoch {oldest['epoch']} --node URL)")
    pruned.cutoff = utc(oldest["start_time"])
    span = store.query("retention_dropped_span", cutoff=pruned.cutoff)[0]
    pruned.lines_dropped, pruned.untimed = span["lines"], span["untimed"]
    pruned.first_ts, pruned.last_ts = utc(span["first_ts"]), utc(span["last_ts"])
    if not pruned.lines_dropped:
        return pruned
    pruned.size_before = _size(store.path)
    pruned.dropped, pruned.forgotten = store.drop_lines_before(pruned.cutoff)
    pruned.size_after = _size(store.path)
    return pruned


def _size(path: str) -> int | None:
    """The store's bytes on disk, its write-ahead log included (after a CHECKPOINT, none)."""
    if path == ":memory:":
        return None
    return sum(os.path.getsize(p) for p in (path, path + ".wal") if os.path.exists(p))


def _mb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e6:,.1f} MB"
