"""Serve a ``--record`` directory over loopback HTTP, so a recorded run replays
through the collector's real HTTP path (tests, the README demo, bug reports).

Each recorded file holds one response: ``path``, ``query``, ``height`` (the
``x-cosmos-block-height`` header sent, or null), ``status``, ``content_type`` and
``body`` (text, byte for byte). Several files for the same request are served in
file-name order, the last one repeating: that is how "429, then 200" is recorded.
A request with no recording answers 404 ``{"code": 5, "message": "not recorded"}``.

A recording is checked when it is loaded, before anything is served: every field of the
right type, ``status`` an HTTP status (100-599), and ``content_type`` free of control
characters, so a recorded value can never add a header (CR LF) to what is served. A file
that fails is named with the reason (a usage error: the directory given is not a usable
recording). Recorded files are read only when they are regular files (a FIFO named ``x.json``
is never opened, a link to /dev/zero never read), and only up to :data:`MAX_RECORDED` bytes.

``--record`` writes them (:func:`save_response`): each file whole, under a name no other file
has, so nothing recorded is ever overwritten.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from ..errors import UsageError, cannot_write
from .wire_int import is_decimal

Key = tuple[str, str, str | None]


def _key(path: str, query: str, height: object) -> Key:
    q = urlencode(sorted(parse_qsl(query, keep_blank_values=True)))
    return (path.rstrip("/") or "/", q, None if height in (None, "") else str(height))


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # a header value may hold tab, nothing else below space


def _invalid(entry: object) -> str | None:
    """Why a recorded response cannot be served as it is, or None."""
    if not isinstance(entry, dict):
        return "not a JSON object"
    for name, types in (("path", str), ("query", str), ("body", str), ("content_type", str)):
        if name in entry and entry[name] is not None and not isinstance(entry[name], types):
            return f"{name} is not a string"
    if not isinstance(entry.get("path"), str) or not isinstance(entry.get("body"), str):
        return "path and body are required"
    status = entry.get("status")
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        return f"status {str(status)[:40]!r} is not an HTTP status (100-599)"
    height = entry.get("height")
    if height not in (None, "") and not (isinstance(height, int) and not isinstance(height, bool)
                                         or isinstance(height, str) and is_decimal(height, signed=False)):
        return f"height {str(height)[:40]!r} is not a block height"
    if _CONTROL.search(entry.get("content_type") or ""):
        return "content_type holds a control character (CR, LF, ...)"
    return None


# a recorded file holds one body of at most MAX_BODY (http.py), escaped as JSON: twice that
# is every character escaped by a backslash; a real recorded file is a few MB
MAX_RECORDED = 2 * 64 * 2**20 + 2**20


def _read(f: Path) -> bytes:
    """A recorded file's bytes: read only from a regular file (a FIFO named ``x.json`` would
    hang the load, a link to /dev/zero would grow without end), and only up to MAX_RECORDED."""
    import stat

    from ..paths import kind, read_regular

    try:
        mode, data = read_regular(f, MAX_RECORDED + 1)
    except OSError as exc:
        raise UsageError(f"{f}: cannot read it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise UsageError(f"{f} is {kind(mode)}, not a recorded response (a recording is regular files)")
    if len(data) > MAX_RECORDED:
        raise UsageError(f"{f} is over {MAX_RECORDED // 2**20} MiB, more than any recorded response holds")
    return data


def load_recording(directories: Sequence[Path | str] | Path | str) -> dict[Key, list[dict]]:
    """Index the recorded responses of one or several directories (searched recursively)."""
    dirs = [Path(directories)] if isinstance(directories, (str, Path)) else [Path(d) for d in directories]
    table: dict[Key, list[dict]] = defaultdict(list)
    for directory in dirs:
        if not directory.is_dir():
            raise UsageError(f"no recording directory {directory}")
        files = sorted(directory.rglob("*.json"))
        if not files:
            raise UsageError(f"{directory} holds no recorded responses")
        for f in files:
            try:
                entry = json.loads(_read(f).decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:
                raise UsageError(f"{f} is not a recorded response ({str(exc).splitlines()[0][:120]})") from exc
            if why := _invalid(entry):
                raise UsageError(f"{f} is not a recorded response: {why}")
            table[_key(entry["path"], entry.get("query") or "", entry.get("height"))].append(entry)
    return dict(table)


def start_recording(directory: Path) -> int:
    """Make ``--record``'s ``directory`` (or take it as it is) and return the number after the
    highest recorded file's in it, so that a new recording follows the old one's order. A path
    that cannot be a recording folder (a file, a read-only folder) is one line naming it."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--record {directory} is not a directory; give a folder for the recording")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not os.access(directory, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
        return max((int(f.stem) for f in directory.glob("*.json") if is_decimal(f.stem, signed=False)), default=0)
    except OSError as exc:
        raise cannot_write(f"--record {directory}", exc) from exc


def save_response(directory: Path, seq: int, entry: dict) -> int:
    """Write one recorded response as ``NNNNNN.json`` under ``directory``, the first free
    number from ``seq`` on, and return it. A file is made whole (a temp file) and then
    linked to its name, which fails if the name exists: a recorded file is never overwritten,
    whoever made it (another run recording into the same folder at once, or one whose files
    were partly deleted), and each run's own files stay in its order."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False, indent=1))
            while True:
                try:
                    os.link(tmp, directory / f"{seq:06d}.json")
                    return seq
                except FileExistsError:
                    seq += 1
        finally:
            os.unlink(tmp)
    except OSError as exc:
        raise cannot_write(f"--record {directory}", exc) from exc


class ReplayServer:
    """A threaded HTTP server on 127.0.0.1 with an ephemeral port. Use as a context manager."""

    def __init__(self, directories: Sequence[Path | str] | Path | str, port: int = 0) -> None:
        dirs = [directories] if isinstance(directories, (str, Path)) else list(directories)
        # each folder's recording, in the order given (holding() names them); served merged
        self.recordings = [(Path(d), load_recording(d)) for d in dirs]
        table: dict[Key, list[dict]] = defaultdict(list)
        for _, recording in self.recordings:
            for key, entries in recording.items():
                table[key].extend(entries)
        self.table = dict(table)
        self.served: dict[Key, int] = defaultdict(int)
        self.log: list[tuple[str, str | None, int]] = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                parts = urlsplit(self.path)
                key = _key(parts.path, parts.query, self.headers.get("x-cosmos-block-height"))
                with lock:
                    entries = outer.table.get(key)
                    if entries:
                        i = min(outer.served[key], len(entries) - 1)
                        outer.served[key] += 1
                        entry = entries[i]
                    else:
                        entry = {"status": 404, "content_type": "application/json",
                                 "body": json.dumps({"code": 5, "message": "not recorded", "details": []})}
                    outer.log.append((self.path, key[2], entry["status"]))
                body = entry["body"].encode("utf-8")
                self.send_response(entry["status"])
                self.send_header("Content-Type", entry.get("content_type") or "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        try:
            self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        except OSError as exc:        # the port in use, or one below 1024 without the right
            raise UsageError(f"--port {port}: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc} "
                             "(give another port, or 0 for any free one)") from None
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def holding(self, prefix: str) -> list[Path]:
        """The folders given whose recording answers a path under ``prefix`` (``/api/v1/``:
        the accounting API's), in the order given."""
        return [d for d, recording in self.recordings if any(key[0].startswith(prefix) for key in recording)]

    def __enter__(self) -> "ReplayServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
