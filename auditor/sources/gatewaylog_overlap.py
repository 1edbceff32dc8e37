"""Gateway log ingestion: lines a new file shares with one stored under another name.

A log exported again with an overlap (``docker logs gw`` a day later, once its max-file has
dropped the oldest lines; ``journalctl --since 24h`` from cron; a file cut down to its tail;
a stream stopped and given again, longer; the same content as a file and on stdin) begins
inside lines another file stored: they were stored twice, and every count over them doubled
(a cPoC window's peak in flight from 20 to 40). Its rows are compared, block by block as they
are parsed, with the stored file that holds its first row, line for line from there
(queries/gatewaylog_overlap_*.sql); the run of lines both hold is not stored again, and a
note says which lines of which file they are. At least MIN_RUN lines in a row must match: a
few lines two gateways log alike at the same second are no overlap.
"""

from __future__ import annotations

from typing import Any

MIN_RUN = 20


class Overlap:
    """The overlap of a new file (``file_id``) with a stored one, worked out as its blocks come.
    Rows that match before the run is long enough are held back (``held``) until it is, or a
    row differs (they are stored then), or the file ends (``release``: stored)."""

    def __init__(self, store: Any, file_id: int) -> None:
        self.store, self.file_id = store, file_id
        self.open = True                   # still comparing
        self.source: dict[str, Any] | None = None
        self.shift = 0                     # the source's line number minus the new file's
        self.held: list = []               # matching rows not yet known to be an overlap
        self.skipped = 0                   # rows not stored
        self.first = self.last = None      # the new file's lines not stored
        self.sources: list[list] = []      # [path, first line, last line] of the stored lines they are

    def new_rows(self, tbl: Any) -> Any:
        """The rows of the parsed block ``tbl`` (pyarrow, in line order) to store now: those the
        source does not hold, once one differs; none while they match it."""
        if not self.open or tbl.num_rows == 0:
            return tbl
        if self.source is None and not self._find_source(tbl):
            self.open = False
            return tbl
        with self.store.registered("_ov_block", tbl):
            first_new = self.store.query("gatewaylog_overlap_run", source=self.source["file_id"],
                                         shift=self.shift)[0]["first_new"]
        same = tbl.num_rows if first_new is None else _index_of(tbl, first_new)
        run = sum(t.num_rows for t in self.held) + same
        if self.skipped or run >= MIN_RUN:            # an overlap: the held rows and these are not stored
            for t in [*self.held, tbl.slice(0, same)]:
                self._skip(t)
            self.held, rest = [], tbl.slice(same)
            if first_new is not None and self._find_source(rest):
                return self.new_rows(rest)            # the stored lines go on in another file (a grown stream)
        elif first_new is None:                       # all alike so far: held until the run is long enough
            self.held.append(tbl)
            return tbl.slice(0, 0)
        else:                                         # alike by chance: every row is stored
            rest, self.held = _concat([*self.held, tbl]), []
        if first_new is not None:
            self.open = False
        return rest

    def release(self) -> list:
        """At the file's end: the rows held back (a run too short to tell an overlap: stored)."""
        held, self.held, self.open = self.held, [], False
        return held

    def _skip(self, tbl: Any) -> None:
        if tbl.num_rows:
            lines = tbl.column("line_no")
            first, last = lines[0].as_py(), lines[tbl.num_rows - 1].as_py()
            self.first = self.first if self.first is not None else first
            self.last = last
            self.skipped += tbl.num_rows
            src = self.source["path"]
            if self.sources and self.sources[-1][0] == src:
                self.sources[-1][2] = last + self.shift
            else:
                self.sources.append([src, first + self.shift, last + self.shift])

    def _find_source(self, tbl: Any) -> bool:
        r = tbl.slice(0, 1).to_pylist()[0]
        found = self.store.query("gatewaylog_overlap_start", file=self.file_id, ts=r["ts"],
                                 kind="stage" if r["is_stage"] else "event", line_name=r["name"],
                                 request=r["request"], escrow=r["escrow"], nonce=r["nonce"], host=r["host"] or None,
                                 fields=r["fields"])
        if not found:
            return False
        self.source = found[0]
        self.shift = found[0]["line_no"] - r["line_no"]
        return True

    def note(self, path: str) -> str | None:
        """What was not stored, in words; None when nothing was."""
        if not self.skipped:
            return None
        where = "; ".join(f"lines {a:,}–{b:,} of {src}" for src, a, b in self.sources)
        return (f"{path}: its lines {self.first:,}–{self.last:,} are {where}, stored already: their "
                f"{self.skipped:,} rows not stored again (an export that overlaps an earlier one)")


def _concat(tables: list) -> Any:
    import pyarrow as pa

    return pa.concat_tables(tables)


def _index_of(tbl: Any, line_no: int) -> int:
    """The index of the row of line ``line_no`` in ``tbl``."""
    import pyarrow.compute as pc

    return int(pc.index(tbl.column("line_no"), line_no).as_py())
