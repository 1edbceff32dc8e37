"""Gateway log ingestion: storing what was parsed.

Parsed rows (``log_events``), rejected-line counts (``log_rejects``) with a few samples per
file and reason (``log_reject_samples``) and the file's new position (``log_files``) are
committed together, ROWS_PER_COMMIT rows (whole DuckDB row groups) per transaction, so an
interrupted run resumes where the last commit stopped and never stores a line twice.
"""

from __future__ import annotations

import bisect
from datetime import datetime

from ..store import Store, utcnow
from .gatewaylog_files import HEAD_BYTES, _sha
from .gatewaylog_overlap import Overlap
from .gatewaylog_records import FileRec, LogFiles
from .gatewaylog_report import RunReport

ROWS_PER_COMMIT = 4 * 122_880    # whole DuckDB row groups per transaction (see _Writer)
SAMPLES_PER_FILE = 5         # rejected lines kept per file and reason


def _insert_events() -> str:
    """log_events rows of a parsed block (``_gw_block``): its codes (gatewaylog_parse's
    TS_SOURCE_CODES and FMT_CODES) as the table's ENUM values."""
    from .gatewaylog_parse import FMT_CODES, TS_SOURCE_CODES

    def case(col: str, codes: dict[str, int]) -> str:
        return f"CASE {col} " + " ".join(f"WHEN {c} THEN '{name}'" for name, c in codes.items()) + " END"

    return f"""
INSERT INTO log_events
SELECT ? AS file_id, line_no, byte_offset, ts, {case('src', TS_SOURCE_CODES)}, {case('fmt', FMT_CODES)},
       level, CASE WHEN is_stage THEN 'stage' ELSE 'event' END, name, request,
       escrow, nonce, nullif(host, ''), fields
FROM _gw_block
"""


class RowStore:
    """Where one run stores rows, rejected lines and file positions."""

    def __init__(self, store: Store, files: LogFiles, run: RunReport) -> None:
        self.store = store
        self.files = files
        self.run = run
        self.parsed_bytes = 0         # bytes handed to the parsers in this run
        self.samples: dict[tuple[int, str], int] = {}   # (file, reason) seen this run -> samples stored

    def writer(self, rec: FileRec, head: bytes | None, size: int | None, mtime: datetime | None) -> _Writer:
        """A writer of ``rec``'s rows; ``head``, ``size`` and ``mtime`` are the file's,
        saved in its record with each commit."""
        return _Writer(self, rec, dict(head=head, size=size, mtime=mtime))

    def finish_state(self, rec: FileRec, state: dict) -> None:
        """Save ``rec`` with the file's identity (its first bytes read, size, mtime) as of now."""
        head = state["head"]
        if head is not None:
            n = min(len(head), rec.byte_offset, HEAD_BYTES)
            rec.head_len, rec.head_sha256 = n, (_sha(head[:n]) if n else None)
        rec.size, rec.mtime = state["size"], state["mtime"]
        rec.last_read_at = utcnow()
        self.files.save(rec)

    def write_rejects(self, rec: FileRec, counts: dict[str, int], samples: dict[str, list]) -> None:
        """Add ``counts`` rejected lines by reason to ``rec``'s, and keep the first samples."""
        con = self.store.con
        fid = rec.file_id
        for reason, n in counts.items():
            if not n:
                continue
            key = (fid, reason)
            if key not in self.samples:
                have, stored = self.store.one(
                    "SELECT (SELECT count(*) FROM log_rejects WHERE file_id = $1 AND reason = $2),"
                    "       (SELECT count(*) FROM log_reject_samples WHERE file_id = $1 AND reason = $2)",
                    [fid, reason])
                if not have:
                    con.execute("INSERT INTO log_rejects VALUES (?, ?, 0)", [fid, reason])
                self.samples[key] = stored
            con.execute("UPDATE log_rejects SET lines = lines + ? WHERE file_id = ? AND reason = ?", [n, fid, reason])
            rows = samples.get(reason, [])[:max(0, SAMPLES_PER_FILE - self.samples[key])]
            if rows:
                con.executemany("INSERT INTO log_reject_samples VALUES (?, ?, ?, ?, ?)",
                                [[fid, reason, ln, off, text] for ln, off, text in rows])
                self.samples[key] += len(rows)


class _Writer:
    """Buffers parsed blocks and stores them in row-group-sized transactions.

    Rows are inserted ROWS_PER_COMMIT at a time (whole DuckDB row groups: such a commit
    writes its row groups once, compressed, instead of logging them in the WAL), each in
    one transaction with the rejected lines before it and the file position of the first
    line after it."""

    def __init__(self, rows: RowStore, rec: FileRec, state: dict) -> None:
        self.out, self.rec, self.state = rows, rec, state
        self.tables: list = []                      # pyarrow tables of events, in line order
        self.rows = 0
        self.rejects: dict[str, list[int]] = {}     # reason -> line numbers not yet committed
        self.samples: dict[str, list] = {}
        self.end_off, self.end_lines = rec.byte_offset, rec.lines   # after the last line received
        # a file read from its first line: the lines it shares with a stored file are not stored again
        self.overlap = Overlap(rows.store, rec.file_id) if rec.byte_offset == 0 and rec.lines == 0 else None

    def add(self, res, nbytes: int) -> None:
        self.out.parsed_bytes += nbytes
        events = res.events if self.overlap is None or not res.parsed else self.overlap.new_rows(res.events)
        if res.parsed and events.num_rows:
            self.tables.append(events)
            self.rows += events.num_rows
        for reason, lines in res.rejects.items():
            self.rejects.setdefault(reason, []).extend(lines)
        for reason, ss in res.samples.items():
            self.samples.setdefault(reason, []).extend(ss)
        self.end_off += nbytes
        self.end_lines += res.lines
        while self.rows > ROWS_PER_COMMIT:
            import pyarrow as pa

            tbl = pa.concat_tables(self.tables)
            head, tail = tbl.slice(0, ROWS_PER_COMMIT), tbl.slice(ROWS_PER_COMMIT)
            first = tail.slice(0, 1).to_pylist()[0]      # the first line not committed
            self._commit(head, first["line_no"], first["byte_offset"], first["line_no"] - 1)
            self.tables, self.rows = [tail], tail.num_rows
        if sum(len(v) for v in self.rejects.values()) > 1_000_000:    # a file of mostly non-gateway lines
            self.flush(complete=False)

    def flush(self, complete: bool) -> None:
        import pyarrow as pa

        if self.overlap is not None:        # the file's position moves past them: a short run is stored
            self.tables.extend(self.overlap.release())
        tbl = pa.concat_tables(self.tables) if self.tables else None
        self.rec.complete = complete
        self._commit(tbl, None, self.end_off, self.end_lines)
        self.tables, self.rows = [], 0
        if self.overlap is not None and (note := self.overlap.note(self.rec.path)):
            self.out.run.note(note)
            self.overlap = None                 # said once

    def _commit(self, tbl, upto: int | None, offset: int, lines: int) -> None:
        """Store ``tbl`` and the rejected lines before line ``upto`` (all when None), and
        move the file position to ``offset`` / ``lines``: one transaction."""
        out, rec = self.out, self.rec
        counts, samples = {}, {}
        for reason, nums in self.rejects.items():
            k = len(nums) if upto is None else bisect.bisect_left(nums, upto)
            counts[reason] = k
            self.rejects[reason] = nums[k:]
            ss = self.samples.get(reason, [])
            samples[reason] = [x for x in ss if upto is None or x[0] < upto]
            self.samples[reason] = [x for x in ss if upto is not None and x[0] >= upto]
        n = tbl.num_rows if tbl is not None else 0
        con = out.store.con
        with out.store.transaction():
            if n:
                # one Arrow chunk (cheap: string views are not copied); DuckDB makes partial
                # row groups of a chunked table, and spends twice the time
                with out.store.registered("_gw_block", _as_json(tbl.combine_chunks())):
                    con.execute(_insert_events(), [rec.file_id])
            out.write_rejects(rec, counts, samples)
            rec.byte_offset, rec.lines = offset, lines
            rec.events += n
            rec.rejected += sum(counts.values())
            out.finish_state(rec, self.state)
        out.run.stored(n, counts)


def _as_json(tbl):
    """``tbl`` with its ``fields`` column typed as Arrow's JSON extension, which DuckDB takes
    as JSON without parsing every value again: the parsers write valid JSON (the property
    tests load every ``fields`` they make), and the check cost 5% of the ingestion's CPU."""
    import pyarrow as pa

    i = tbl.schema.get_field_index("fields")
    col = tbl.column(i)
    typ = pa.json_(col.type)
    return tbl.set_column(i, pa.field("fields", typ, nullable=False),
                          pa.chunked_array([pa.ExtensionArray.from_storage(typ, c) for c in col.chunks], typ))
