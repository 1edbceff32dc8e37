"""`auditor report daily`: the cron job. One run writes ``DIR/<date>/report.{json,md,html}``
for one epoch, and optionally a Prometheus textfile.

- Which epoch: ``--epoch N``; else, with ``--date D``, the epoch that was in force at noon
  UTC of D (its effective span [SNV(N), SNV(N+1)), which the store must already hold);
  else the latest settled epoch: asked of the node when one is given
  (``/v1/epochs/latest``: the latest epoch minus one once its PoC is over and inference
  runs, else minus two), otherwise the latest settled epoch the store holds.
- ``<date>`` is D, or the UTC date of the epoch's effective start.
- The three files are written together or not at all (``render.write_all_atomic``): each
  to a temp file first, then all renamed, so a full disk leaves the day's folder as it was
  (and says which file and why, exit 3); an unusable ``--out`` is one line naming it, exit 2.
- A lock file (``DIR/.auditor-report.lock``) keeps two runs from overlapping: a second run
  waits up to ``LOCK_WAIT`` seconds, then exits 3 saying which lock it found held.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime, time as dtime, timezone
from pathlib import Path
from typing import Any

from .errors import SourceError, UsageError, cannot_write

LOCK_WAIT = 5.0
LOCK_NAME = ".auditor-report.lock"
FORMATS = ("json", "md", "html")


def run(db: Path, sources: Any, out_dir: Path, *, day: str | None, epoch: int | None, fail_on: str | None,
        prom_textfile: Path | None, progress: Any, collect: Callable[[Any, Any, list[int]], int],
        command: str) -> int:
    """The whole job: under the lock of ``out_dir``, pick the epoch, collect it from
    ``sources`` (unless offline; ``collect(store, sources, epochs)`` prints the run reports and
    says 3 when anything is missing), write the report in every format of ``FORMATS`` and the
    textfile; the exit code (3 incomplete, else 1 findings at ``fail_on``, else 0)."""
    from .analyses import epoch_report
    from .collect import resolved
    from .report import promfile, render
    from .store import Store

    when = parse_date(day)
    with locked(out_dir):                           # held until every file is written
        with resolved(sources) as s, Store(db) as store:         # --replay: its server is the node
            if epoch is None and when is not None:
                epoch = epoch_at(store, when)
            elif epoch is None and s.nodes and not s.offline:
                epoch = latest_settled_on_chain(s)
            code = 0
            if s.any and not s.offline:
                code = collect(store, s, [] if epoch is None else [epoch])
            if epoch is None:
                epoch = latest_settled_in_store(store)
            progress.log(f"report daily: epoch {epoch}")
            result = epoch_report.run(store, epoch)
            folder = out_dir / report_day(store, epoch, when).isoformat()
        view = render.View(command=command)
        # all three files or none: a full disk never leaves json and md without html
        render.write_all_atomic({folder / f"report.{fmt}": render.render(result, fmt, view) for fmt in FORMATS})
        progress.log(f"report daily: wrote {folder}/report.{{{','.join(FORMATS)}}} "
                     f"({len(result.findings)} findings)")
        if prom_textfile is not None:
            promfile.write(prom_textfile, result, epoch)
            progress.log(f"report daily: wrote {prom_textfile}")
    return code or result.exit_code(fail_on)


@contextmanager
def locked(directory: Path, wait: float = LOCK_WAIT) -> Iterator[None]:
    path = directory / LOCK_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise cannot_write(path, exc) from exc
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SourceError(f"another `auditor report daily` holds {path}; waited {wait:.0f} s, "
                                      "giving up (it will write this report)") from None
                time.sleep(0.2)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as exc:
            raise cannot_write(path, exc) from exc
        yield
    finally:
        os.close(fd)   # closing releases the lock


def parse_date(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--date {text!r}: expected YYYY-MM-DD") from None


def epoch_at(store, day: date) -> int:
    noon = datetime.combine(day, dtime(12), timezone.utc)
    row = store.one("SELECT epoch FROM chain_windows WHERE \"window\" = 'epoch' AND start_time <= ? "
                    "AND (end_time > ? OR end_time IS NULL) ORDER BY epoch DESC LIMIT 1", [noon, noon])
    if row is None:
        raise SourceError(f"no stored epoch was in force at {noon:%Y-%m-%d %H:%M}Z; collect it first "
                          "(auditor collect --epoch N --node URL), or give --epoch N")
    return int(row[0])


def latest_settled_in_store(store) -> int:
    row = store.one("SELECT max(epoch) FROM chain_epochs WHERE settled")
    if row is None or row[0] is None:
        raise SourceError("the store holds no settled epoch; give --epoch N, or a --node to ask")
    return int(row[0])


def latest_settled_on_chain(sources) -> int:
    """From the node's ``/v1/epochs/latest``: the latest epoch minus one once it is past its
    PoC (phase Inference), else minus two."""
    from .collect import client, resolved
    from .sources.chain import DapiLatestEpoch, decode

    with resolved(sources) as s, client(s, s.nodes, "chain") as c:
        latest = decode(DapiLatestEpoch, c.get("/v1/epochs/latest"))
    index = int(latest.latest_epoch.index)
    return index - 1 if latest.phase == "Inference" else index - 2


def report_day(store, epoch: int, day: date | None) -> date:
    if day is not None:
        return day
    row = store.one("SELECT start_time FROM chain_windows WHERE epoch = ? AND \"window\" = 'epoch'", [epoch])
    if row is None or row[0] is None:
        return datetime.now(timezone.utc).date()
    return row[0].astimezone(timezone.utc).date()
