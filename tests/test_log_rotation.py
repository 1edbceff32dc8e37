"""Gateway logs under logrotate, through the real CLI: every mode (create, copytruncate,
compress, compress + delaycompress, rotate N with deletion of the oldest, dateext), a
collect after every cycle, and every line written stored exactly once; rows of files that
rotate out of view are kept and their files marked gone."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from conftest import q, run_cli

LINES_PER_CYCLE = 150      # > 4 KiB a cycle: fingerprints cover their full 4 KiB
CYCLES = 5


class Gateway:
    """Appends numbered stage lines to app.log through an O_APPEND descriptor, as a process
    that keeps its log open; ``reopen`` is the reopen logrotate's postrotate asks for."""

    def __init__(self, d: Path) -> None:
        self.path = d / "app.log"
        self.seq = 0
        self.f = open(self.path, "ab", buffering=0)

    def write(self, n: int) -> None:
        out = []
        for _ in range(n):
            self.seq += 1
            s = self.seq
            out.append(f"2026/09/30 {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d} request=req-1-{s} "
                       f"stage=race_completed escrow=97311 nonce={s} host=sjewn7j3 winner=true\n".encode())
        self.f.write(b"".join(out))

    def reopen(self) -> None:
        self.f.close()
        self.f = open(self.path, "ab", buffering=0)


def _gzip(src: Path) -> None:
    with open(src, "rb") as f, gzip.open(str(src) + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    os.remove(src)


class Logrotate:
    """What logrotate does to app.log at each rotation, for one set of options."""

    def __init__(self, d: Path, *, copytruncate=False, compress=False, delaycompress=False, rotate=50,
                 dateext=False) -> None:
        self.d, self.copytruncate, self.compress, self.delay = d, copytruncate, compress, delaycompress
        self.keep, self.dateext, self.day = rotate, dateext, 0

    def _numbered(self) -> None:
        """Shift app.log.k[.gz] -> app.log.k+1[.gz], deleting what passes the rotate count."""
        for k in range(self.keep, 0, -1):
            for ext in ("", ".gz"):
                p = self.d / f"app.log.{k}{ext}"
                if p.exists():
                    if k == self.keep:
                        p.unlink()
                    else:
                        os.rename(p, self.d / f"app.log.{k + 1}{ext}")

    def rotate(self, gw: Gateway) -> None:
        live = self.d / "app.log"
        if self.dateext:
            self.day += 1
            new = self.d / f"app.log-202610{self.day:02d}"
        else:
            self._numbered()
            new = self.d / "app.log.1"
        if self.copytruncate:
            shutil.copyfile(live, new)
            os.truncate(live, 0)
        else:
            os.rename(live, new)
            gw.write(7)                 # written to the old file before the gateway reopens
            live.touch()
            gw.reopen()
        if self.compress:
            rotated = self.rotated()
            plain = [p for p in rotated if not p.name.endswith(".gz")]
            for p in plain[1:] if self.delay else plain:     # delaycompress: all but the newest
                _gzip(p)
        if self.dateext:
            for p in self.rotated()[self.keep:]:
                p.unlink()

    def rotated(self) -> list[Path]:
        """The rotated files, newest first."""
        if self.dateext:
            return sorted(self.d.glob("app.log-*"), reverse=True)
        return sorted(self.d.glob("app.log.*"), key=lambda p: int(p.name.split(".")[2]))


MODES = {
    "create": {},
    "copytruncate": {"copytruncate": True},
    "compress": {"compress": True},
    "compress+delaycompress": {"compress": True, "delaycompress": True},
    "copytruncate+compress+delaycompress": {"copytruncate": True, "compress": True, "delaycompress": True},
    "rotate 2, oldest deleted": {"compress": True, "delaycompress": True, "rotate": 2},
    "dateext": {"dateext": True, "compress": True, "rotate": 3},
}


def collect(db: Path, *paths: Path):
    r = run_cli("collect", *[a for p in paths for a in ("--gateway-log", str(p))], db=db)
    assert r.returncode == 0, r.stderr
    return r


def stored_once(db: Path, written: int) -> None:
    """Every line written is stored, none twice."""
    n, distinct, lo, hi = q(db, "SELECT count(*), count(DISTINCT nonce), min(nonce), max(nonce) FROM log_events")[0]
    assert (n, distinct, lo, hi) == (written, written, 1, written)


@pytest.mark.parametrize("mode", list(MODES))
def test_every_logrotate_mode_stores_each_line_once(tmp_path, mode):
    db = tmp_path / "a.duckdb"
    rot = Logrotate(tmp_path, **MODES[mode])
    gw = Gateway(tmp_path)
    for _ in range(CYCLES):
        gw.write(LINES_PER_CYCLE)
        collect(db, tmp_path / "app.log*")
        rot.rotate(gw)
    gw.write(LINES_PER_CYCLE)
    collect(db, tmp_path / "app.log*")
    stored_once(db, gw.seq)
    # nothing new: a second run stores nothing
    assert "loaded log_events 0" in collect(db, tmp_path / "app.log*").stderr
    stored_once(db, gw.seq)
    # one record per file present; the files logrotate deleted are marked gone, their rows kept
    rows = q(db, "SELECT path, gone_at IS NOT NULL FROM log_files")
    assert sorted(p for p, gone in rows if not gone) == sorted(str(p) for p in tmp_path.glob("app.log*"))
    assert any(gone for _, gone in rows) == ("rotate" in MODES[mode])


def test_only_the_live_file_given_rows_of_rotated_content_are_kept(tmp_path):
    """Given only app.log, each rotation leaves the rotated content out of view: its rows
    stay, its log_files row and coverage say it is gone."""
    db = tmp_path / "a.duckdb"
    rot = Logrotate(tmp_path, rotate=2)
    gw = Gateway(tmp_path)
    for _ in range(3):
        gw.write(LINES_PER_CYCLE)
        collect(db, tmp_path / "app.log")
        rot._numbered()
        os.rename(tmp_path / "app.log", tmp_path / "app.log.1")
        gw.reopen()
    gw.write(LINES_PER_CYCLE)
    r = collect(db, tmp_path / "app.log")
    assert "gone" in r.stderr
    stored_once(db, gw.seq)
    assert q(db, "SELECT count(*) FILTER (WHERE gone), count(*) FILTER (WHERE NOT gone) "
                 "FROM (SELECT gone_at IS NOT NULL AS gone FROM log_files)")[0] == (3, 1)
    assert q(db, "SELECT count(*) FROM coverage WHERE source = 'gateway_log' AND detail LIKE 'gone:%'")[0][0] == 3
    # the coverage query the reports read says which files are gone
    from auditor.store import Store

    from auditor.analyses import coverage

    store = Store(db, read_only=True)
    try:
        files = store.query("coverage_gateway_log_files")
        entry = coverage.gateway_log(store, 0, [])
    finally:
        store.close()
    assert sorted(f["gone"] for f in files) == [False, True, True, True]
    assert len(entry["gone"]) == 3 and entry["loaded"]["files"] == 4    # the epoch report's coverage says so
    # given again with its rotated copies, nothing is stored twice
    collect(db, tmp_path / "app.log*")
    stored_once(db, gw.seq)


@pytest.mark.parametrize("copy", ["copytruncate caught between copy and truncate", "gzip -k beside it"])
def test_a_copy_beside_the_file_it_copies_is_not_stored_twice(tmp_path, copy):
    """A collect that finds app.log and a copy of it at once (logrotate's copytruncate
    between its copy and its truncate, or `gzip -k`): each line still once, and the cycle
    after the truncate (or the removal) goes on from there."""
    db = tmp_path / "a.duckdb"
    gw = Gateway(tmp_path)
    gw.write(LINES_PER_CYCLE)
    collect(db, tmp_path / "app.log*")
    gw.write(LINES_PER_CYCLE)                       # read through the copy's source, not twice
    if copy.startswith("copytruncate"):
        shutil.copyfile(tmp_path / "app.log", tmp_path / "app.log.1")
        collect(db, tmp_path / "app.log*")
        stored_once(db, gw.seq)
        os.truncate(tmp_path / "app.log", 0)
    else:
        with open(tmp_path / "app.log", "rb") as f, gzip.open(tmp_path / "app.log.gz", "wb") as g:
            shutil.copyfileobj(f, g)
        collect(db, tmp_path / "app.log*")
        stored_once(db, gw.seq)
        os.remove(tmp_path / "app.log")
        gw.reopen()
    gw.write(LINES_PER_CYCLE)
    collect(db, tmp_path / "app.log*")
    stored_once(db, gw.seq)


def test_logs_that_start_with_nuls_are_not_copies_of_each_other(tmp_path):
    """A writer without O_APPEND after copytruncate leaves NULs at the start of its file: every
    such file had the same first 4 KiB, so b.log was taken for a copy of a.log, 'read after'
    a.log's end, and none of its lines stored (exit 0). Each is read; only the line the NULs
    run into is rejected."""
    from conftest import FIXTURES

    lines = (FIXTURES / "gateway-logs" / "section12.log").read_bytes().splitlines(keepends=True)
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"\0" * 300_000 + b"".join(lines[:40]))
    b.write_bytes(b"\0" * 8192 + b"".join(lines[40:]))
    db = tmp_path / "n.duckdb"
    r = run_cli("collect", "--gateway-log", str(a), "--gateway-log", str(b), db=db)
    assert r.returncode == 0 and "a copy of" not in r.stderr, r.stderr
    got = dict(q(db, "SELECT f.path, count(e.line_no) FROM log_files f LEFT JOIN log_events e USING (file_id) "
                     "GROUP BY f.path"))
    assert got == {str(a): 39, str(b): len(lines) - 41}, got
