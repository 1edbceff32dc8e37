"""`auditor report daily`: the cron job. One run writes ``DIR/<date>/report.{json,md,html}``
for one epoch, and optionally a Prometheus textfile.

- Which epoch: ``--epoch N``; else, with ``--date D``, the epoch that was in force at noon
  UTC of D (its effective span [SNV(N), SNV(N+1)), which the store must already hold);
  else the latest settled epoch: asked of the node when one is given
  (``/v1/epochs/latest``: the latest epoch minus one once its PoC is over and inference
  runs, else minus two; stepping back while the node lacks the next epoch's root group),
  otherwise the latest settled epoch the store holds.
- ``<date>`` is D, or the UTC date of the epoch's effective start.
- With ``retain_epochs`` (``--retain-epochs N``, auditor.toml, ``$AUDITOR_RETAIN_EPOCHS``) the
  store is pruned after the collect and before the report, as ``auditor prune --keep-epochs N``
  (auditor/prune.py), the reported epoch's log kept too; what it dropped is logged.
- The three files are written together or not at all (``render.write_all_atomic``): each
  to a temp file first, then all renamed, so a full disk leaves the day's folder as it was
  (and says which file and why, exit 3); an unusable ``--out`` is one line naming it, exit 2.
- A lock file (``DIR/.auditor-report.lock``) keeps two runs from overlapping: a second run
  waits up to ``LOCK_WAIT`` seconds, then exits 3 saying which lock it found held. It is
  never followed (a symbolic link there is refused) and only its user may open it (0600).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time as dtime, timezone
from pathlib import Path
from typing import Any

from .errors import EXIT_FINDINGS, EXIT_SOURCE, NotFoundError, SourceError, UsageError, cannot_write
from .times import utc

LOCK_WAIT = 5.0
LOCK_NAME = ".auditor-report.lock"
FORMATS = ("json", "md", "html")


def run(db: Path, sources: Any, out_dir: Path, *, day: str | None, epoch: int | None, fail_on: str | None,
        prom_textfile: Path | None, progress: Any, collect: Callable[[Any, Any, list[int]], int],
        command: str, mine: tuple[str, ...] = (), retain_epochs: int | None = None) -> int:
    """The whole job: under the lock of ``out_dir``, pick the epoch, collect it from
    ``sources`` (unless offline; ``collect(store, sources, epochs)`` prints the run reports and
    says 3 when anything is missing), write the report in every format of ``FORMATS`` and the
    textfile; the exit code (3 incomplete, else 1 findings at ``fail_on``, else 0).
    ``mine``: --mine as given, whose findings are marked (auditor/mine.py). ``retain_epochs``:
    after the collect, the store's gateway log is pruned to the newest N epochs' and the
    reported epoch's (auditor/prune.py) before the report is made.

    The textfile is written on every run that got the lock, a failed one too
    (``auditor_report_complete 0`` and whatever was obtained), so an alert has something to
    read. On exit 1 the findings at ``fail_on`` or above go to stderr, one line each, quiet or
    not: cron mails them."""
    from .report import promfile
    from .report.text import plain

    when = parse_date(day)
    with locked(out_dir):                           # held until every file is written
        job = Job(epoch)
        try:
            result, code, folder = _report(job, db, sources, out_dir, when, progress, collect, command, mine,
                                           retain_epochs)
        except Exception:
            if prom_textfile is not None:
                _write_failed(prom_textfile, job.epoch)
            raise
        code = code or result.exit_code(fail_on)
        if prom_textfile is not None:
            promfile.write(prom_textfile, result, job.epoch, complete=code != EXIT_SOURCE)
            progress.log(f"report daily: wrote {prom_textfile}")
    if code == EXIT_FINDINGS:
        print_findings(result, fail_on)
    elif code == EXIT_SOURCE:       # the collection printed what was MISSING; the report may lack more
        from .report.collect_report import print_incomplete

        print_incomplete(result, sources.offline)
        print(f"auditor: the report of epoch {job.epoch} is incomplete (exit 3): its coverage section "
              f"says what is missing: {plain(folder)}/report.md", file=sys.stderr)
    return code


@dataclass
class Job:
    """What a run has obtained so far: the epoch, once picked (a failed run's textfile says it)."""

    epoch: int | None


def _report(job: Job, db: Path, sources: Any, out_dir: Path, when: date | None, progress: Any,
            collect: Callable[[Any, Any, list[int]], int], command: str,
            mine: tuple[str, ...] = (), retain_epochs: int | None = None) -> tuple[Any, int, Path]:
    """Pick the epoch, collect it, prune the store (``retain_epochs``), write the report files:
    the result, the collection's code and the folder written."""
    from .analyses import epoch_report
    from .collect import resolved
    from .report import render
    from .store import Store

    with resolved(sources) as s, Store(db, progress=progress) as store:     # --replay: its server is the node
        if job.epoch is None and when is not None:
            job.epoch = epoch_at(store, when)
        elif job.epoch is None and s.nodes and not s.offline:
            job.epoch = latest_settled_on_chain(s)
        code = 0
        if s.any and not s.offline:
            code = collect(store, s, [] if job.epoch is None else [job.epoch])
        if job.epoch is None:
            job.epoch = latest_settled_in_store(store)
        progress.log(f"report daily: epoch {job.epoch}")
        if retain_epochs is not None:
            _prune(store, retain_epochs, job.epoch, progress)
        result = epoch_report.run(store, job.epoch)
        if mine:
            from . import mine as mine_

            mine_.mark(result, mine_.resolve(store, mine, job.epoch, quiet=progress.quiet), store, job.epoch)
        folder = out_dir / report_day(store, job.epoch, when).isoformat()
    view = render.View(command=command)
    # all three files or none: a full disk never leaves json and md without html
    records = [render.FORMATS[fmt] for fmt in FORMATS]
    render.write_all_atomic({folder / f"report.{f.extension}": render.render(result, f.name, view) for f in records})
    progress.log(f"report daily: wrote {folder}/report.{{{','.join(f.extension for f in records)}}} "
                 f"({len(result.findings)} findings)")
    return result, code, folder


def _prune(store, keep: int, epoch: int, progress: Any) -> None:
    """The retention rule (auditor/prune.py), the reported epoch kept too, each line of what it
    did logged. When the store cannot tell which lines are old, nothing is dropped and that is
    one line on stderr, --quiet or not (cron mails it): the report is made all the same."""
    from . import prune
    from .report.text import plain

    try:
        pruned = prune.run(store, keep, also=epoch)
    except SourceError as exc:
        print(f"auditor: report daily: not pruned: {plain(exc)}", file=sys.stderr)
        return
    for line in pruned.lines("retain_epochs"):
        progress.log(f"report daily: {line}")


def _write_failed(path: Path, epoch: int | None) -> None:
    """The failed run's textfile; when even that fails, one more line (the run's error follows)."""
    from .errors import AuditorError
    from .report import promfile
    from .report.text import plain

    try:
        promfile.write_failed(path, epoch)
    except AuditorError as exc:
        print(f"auditor: {plain(exc)}", file=sys.stderr)


def print_findings(result: Any, fail_on: str | None) -> None:
    """The findings that made the exit 1 (with --mine: the ones of mine), most severe first, one
    line each on stderr."""
    from .report.text import plain
    from .result import ranked

    for f in ranked(result.failing(fail_on or "info")):
        print(f"auditor: {f.severity} {f.code} {plain(f.subject.get('id'))}: {plain(f.summary)}",
              file=sys.stderr)


@contextmanager
def locked(directory: Path, wait: float = LOCK_WAIT) -> Iterator[None]:
    """Hold ``DIR/.auditor-report.lock`` (flock) for the run. The lock file is never followed
    (``O_NOFOLLOW``: a link there is refused, so the PID written cannot land in the file it
    names), is a regular file of this user, and is readable by this user only (0600, an older
    0644 one too): whoever else can read the folder cannot open it to hold it."""
    path = directory / LOCK_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{path} is a symbolic link; a lock file is never followed: remove it") from None
        raise cannot_write(path, exc) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            what = "not a regular file" if not stat.S_ISREG(st.st_mode) else f"owned by user {st.st_uid}"
            raise UsageError(f"{path} is {what}; the lock file is this user's own: remove it")
        if stat.S_IMODE(st.st_mode) != 0o600:
            os.fchmod(fd, 0o600)            # a lock made by an older auditor, 0644
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


def latest_settled_on_chain(sources, steps: int = 2) -> int:
    """From the node's ``/v1/epochs/latest``: the latest epoch minus one once it is past its
    PoC (phase Inference), else minus two; then the first of it and up to ``steps`` epochs
    before it whose next epoch's root group the node holds (without it an epoch is not settled:
    a node behind its own head, or a recording made for an older epoch)."""
    from .collect import client, resolved
    from .sources.chain import API, DapiLatestEpoch, decode

    with resolved(sources) as s, client(s, s.nodes, "chain") as c:
        try:
            latest = decode(DapiLatestEpoch, c.get("/v1/epochs/latest"))
        except NotFoundError:
            raise SourceError(f"{', '.join(c.shown)} is not a Gonka chain API: it answers 404 to "
                              "/v1/epochs/latest") from None
        index = int(latest.latest_epoch.index)
        candidate = index - 1 if latest.phase == "Inference" else index - 2
        tried = [n for n in range(candidate, candidate - steps - 1, -1) if n >= 0]
        for n in tried:
            try:
                c.get(f"{API}/epoch_group_data/{n + 1}")
            except NotFoundError:
                continue
            return n
    held = f"the root group of none of epochs {tried[-1] + 1}..{tried[0] + 1}" if tried else "no settled epoch"
    raise SourceError(f"the node says epoch {index} is the latest, but holds {held}: no settled epoch "
                      "to report; give --epoch N")


def report_day(store, epoch: int, day: date | None) -> date:
    if day is not None:
        return day
    row = store.one("SELECT start_time FROM chain_windows WHERE epoch = ? AND \"window\" = 'epoch'", [epoch])
    if row is None or row[0] is None:
        return datetime.now(timezone.utc).date()
    return utc(row[0]).date()
