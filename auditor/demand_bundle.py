"""Demand bundles (issue 36): one gateway's PoC-time demand, carried to another store.

A governance proposer needs the network's demand; gateway operators will not hand over their
raw logs (request ids, API key suffixes, client traffic). ``auditor export demand --epochs A..B
--out FILE.parquet`` writes what ``auditor targets`` needs from one gateway's store and nothing
more; ``auditor targets N --bundle FILE|URL`` adds it to the store's own logs.

One Parquet file, one table, written atomically (a temp file beside it, then a rename). Its
rows, by ``kind``:

- ``window``: a confirmation PoC window of the epochs (``epoch``, ``window`` cpoc:N, its
  ``start_height``/``end_height`` and ``start_time``/``end_time`` from the chain) and the part
  the gateway's logs covered (``covered_from``/``covered_to``; NULL: not covered, no evidence);
- ``model``: per covered window and model the logs name, the attempts overlapping the window
  and their summed duration (``attempts``, ``attempt_seconds``: a latency, nothing else);
- ``step``: the in-flight level of a model over a covered window as steps: at ``ts`` =
  ``start_time`` the level then (``delta``), after it the net change at each instant where
  attempts started or ended. Steps of several gateways add up to their summed in-flight
  demand, so the statistic (max, pNN of per-second in flight) is that of all of them.

The file's metadata (key ``auditor.demand_bundle``, JSON): the format and its version, the
gateway's identity (the chain address(es) that created the escrows its logs name, public on
chain, or the ``--name`` the operator gives) and its basis, its ``per_10000`` when given,
what the logs covered (first and last line, files), the epochs, the tool's version, when it
was made, and ``content_sha256``: the SHA-256 of the rows and the other metadata, checked
on reading. No request id, API key, client, host label or log line is in it; the models, the
window heights and times and the creator addresses are what the chain publishes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import SourceError, UsageError
from .heights import in_cpoc_window
from .times import utc

FORMAT = "auditor demand bundle"
VERSION = 1
META_KEY = b"auditor.demand_bundle"
KINDS = ("window", "model", "step")
COLUMNS = ("kind", "epoch", "window", "start_height", "end_height", "start_time", "end_time",
           "covered_from", "covered_to", "model", "ts", "delta", "attempts", "attempt_seconds")
OWN_SOURCE = "this store's gateway logs"
MAX_BUNDLE = 64 * 2**20                   # bytes: a bundle is small (steps of a few windows)


@dataclass
class Contribution:
    """One gateway's demand windows: the store's own logs, or a bundle's."""

    gateway: str                     # identity: creator address(es) joined by ',' or a given name
    gateway_basis: str
    source: str                      # "this store's gateway logs" or the bundle's path/URL
    created_at: datetime | None      # None: the store's own logs (they win over any bundle)
    windows: list[dict]              # cpoc.gateway_demand's shape
    meta: dict = field(default_factory=dict)


# -- writing ------------------------------------------------------------------------------------
def rows_of(windows: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The bundle's rows from :func:`cpoc.gateway_demand` windows."""
    out = []
    base = dict.fromkeys(COLUMNS)
    for w in windows:
        head = {"epoch": w["epoch"], "window": w["window"], "start_height": w["start_height"],
                "end_height": w["end_height"], "start_time": utc(w["start"]), "end_time": utc(w["end"])}
        lo, hi = w["covered"] or (None, None)
        out.append({**base, **head, "kind": "window", "covered_from": utc(lo), "covered_to": utc(hi)})
        for m, d in sorted(w["models"].items()):
            out.append({**base, **head, "kind": "model", "model": m, "attempts": d["attempts"],
                        "attempt_seconds": float(d["attempt_seconds"])})
            out.append({**base, **head, "kind": "step", "model": m, "ts": utc(w["start"]), "delta": d["initial"]})
            out.extend({**base, **head, "kind": "step", "model": m, "ts": utc(t), "delta": dl}
                       for t, dl in d["steps"])
    return out


def content_hash(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> str:
    """SHA-256 of the rows and the metadata (less the hash itself), in a canonical JSON."""
    def canon(v: Any) -> Any:
        return utc(v).isoformat() if isinstance(v, datetime) else v

    body = {"meta": {k: v for k, v in meta.items() if k != "content_sha256"},
            "rows": [[canon(r.get(c)) for c in COLUMNS] for r in rows]}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _schema():
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    return pa.schema([("kind", pa.string()), ("epoch", pa.int64()), ("window", pa.string()),
                      ("start_height", pa.int64()), ("end_height", pa.int64()), ("start_time", ts),
                      ("end_time", ts), ("covered_from", ts), ("covered_to", ts), ("model", pa.string()),
                      ("ts", ts), ("delta", pa.int64()), ("attempts", pa.int64()),
                      ("attempt_seconds", pa.float64())])


def write(path: Path, rows: list[dict], meta: dict) -> dict:
    """Write the bundle at ``path`` atomically; ``meta`` gets its ``content_sha256``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = {**meta, "content_sha256": content_hash(rows, meta)}
    schema = _schema().with_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode()})
    table = pa.Table.from_pylist(rows, schema=schema)
    path = Path(path)
    from .paths import not_a_store

    not_a_store(path, "--out")          # never over the store it was read from
    if path.is_dir():
        raise UsageError(f"--out {path} is a directory; give a file path")
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            pq.write_table(table, f, compression="zstd")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        from .errors import cannot_write

        raise cannot_write(path, exc) from exc
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return meta


def export(store, first: int, last: int, out: Path, *, name: str | None = None,
           per_10000: float | None = None) -> dict:
    """``auditor export demand``: the bundle of epochs ``first``..``last`` of ``store`` at ``out``.
    Returns its metadata, with the counts of windows and rows written."""
    from . import __version__
    from .analyses import cpoc
    from .analyses.context import Run

    from .analyses.frame import stored_epochs

    stored = stored_epochs(store, first, last)
    if not stored:
        raise SourceError(f"no epoch of {first}..{last} is in the store: its cPoC windows' heights and times "
                          f"come from the chain: auditor collect --epoch {last} --node URL")
    span = store.query("poc_overload_log_span")[0]
    if span["first_ts"] is None:
        raise SourceError("no gateway log in the store: a demand bundle is made from the gateway's logs: "
                          "auditor collect --gateway-log PATH")
    gateway, basis = identity(store, name)
    windows = [w for e in stored for w in cpoc.gateway_demand(Run(store, e))]
    rows = rows_of(windows)
    meta = {"format": FORMAT, "version": VERSION, "gateway": gateway, "gateway_basis": basis,
            "per_10000": per_10000,
            "per_10000_basis": "given with --per-10000" if per_10000 is not None else "unknown (not given)",
            "epochs": [first, last], "epochs_stored": stored,
            "logs_first_ts": utc(span["first_ts"]).isoformat(), "logs_last_ts": utc(span["last_ts"]).isoformat(),
            "log_files": span["files"], "tool_version": __version__,
            "created_at": datetime.now(timezone.utc).isoformat()}
    meta = write(out, rows, meta)
    return {**meta, "windows": sum(1 for r in rows if r["kind"] == "window"),
            "windows_covered": sum(1 for w in windows if w["covered"] is not None), "rows": len(rows)}


def identity(store, name: str | None) -> tuple[str, str]:
    """The gateway's identity and its basis: ``name`` when given, else the address(es) that
    created the escrows its logs name (chain_escrows, public), else a usage error."""
    if name is not None:
        if not name.strip() or len(name) > 200 or any(ord(c) < 32 for c in name):
            raise UsageError("--name: give a short printable name for the gateway")
        return name.strip(), "name given by the operator (--name)"
    r = store.query("demand_bundle_gateway")[0]
    if not r["creators"]:
        gone, n = r["escrows_not_found"], r["escrows"]
        why = (f"the chain has no record of the {n} escrow(s) the logs name (asked: not found)" if gone == n else
               f"the creator of the {n} escrow(s) the logs name is not in the store "
               f"({f'{gone} not found on the chain; ' if gone else ''}collect with --node to probe "
               f"{'the others' if gone else 'them'})")
        raise UsageError(f"{why}, so the gateway has no public identity: give one with --name")
    return ",".join(r["creators"]), (f"creator address of the {r['escrows_found']} escrow(s) the logs name "
                                     "(devshard_escrow records on chain)")


def own(store, runs: Mapping[int, Any]) -> Contribution | None:
    """The store's own gateway logs as a contribution (None without a log)."""
    from .analyses import cpoc

    if not runs or cpoc.log_span(next(iter(runs.values())))["first_ts"] is None:
        return None
    try:
        gateway, basis = identity(store, None)
    except UsageError:                  # no escrow record: the store's own logs all the same
        gateway, basis = "this store", "unknown (no escrow record)"
    windows = [w for e in sorted(runs) for w in cpoc.gateway_demand(runs[e])]
    return Contribution(gateway, basis, OWN_SOURCE, None, windows)


# -- reading ------------------------------------------------------------------------------------
def fetch(source: str, timeout: float = 10.0) -> bytes:
    """The bytes of a bundle: an http(s) URL through the project's HTTP client (its size limit,
    deadline and redirect rules), else a local file."""
    if source.startswith(("http://", "https://")):
        from .sources.http import JsonClient

        with JsonClient([source], answerer="server", rate_per_min=0, timeout=timeout, retries=1) as client:
            try:
                return client.get_bytes("").data
            except SourceError as exc:
                raise type(exc)(f"--bundle {source}: {exc}") from None
    p = Path(source)
    try:
        if p.stat().st_size > MAX_BUNDLE:
            raise UsageError(f"--bundle {source}: larger than {MAX_BUNDLE // 2**20} MiB: not a demand bundle")
        return p.read_bytes()
    except OSError as exc:
        raise UsageError(f"--bundle {source}: cannot read it ({exc.strerror or exc})") from None


def parse(data: bytes, source: str) -> Contribution:
    """A bundle's bytes as a :class:`Contribution`; anything else is one UsageError line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def bad(why: str) -> UsageError:
        return UsageError(f"--bundle {source}: not a demand bundle auditor can use: {why}")

    try:
        pf = pq.ParquetFile(io.BytesIO(data))
        table = pf.read()
    except (pa.ArrowException, OSError, ValueError, TypeError, IndexError, MemoryError) as exc:
        raise bad(f"not a readable Parquet file ({str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__})") from None
    raw = (table.schema.metadata or {}).get(META_KEY)
    try:
        meta = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise bad("no auditor.demand_bundle metadata (make it with `auditor export demand`)")
    if meta.get("version") != VERSION:
        raise bad(f"format version {meta.get('version')!r}; this auditor reads version {VERSION}")
    if not table.schema.equals(_schema(), check_metadata=False):
        raise bad("its columns are not those of a demand bundle")
    rows = table.to_pylist()
    if meta.get("content_sha256") != content_hash(rows, meta):
        raise bad("its content does not match its content_sha256 (altered or damaged)")
    gateway = meta.get("gateway")
    if not isinstance(gateway, str) or not gateway:
        raise bad("no gateway identity")
    try:
        created = datetime.fromisoformat(meta["created_at"])
    except (KeyError, TypeError, ValueError):
        raise bad("no readable created_at") from None
    return Contribution(gateway, str(meta.get("gateway_basis")), source, created, _windows(rows, bad), meta)


def _windows(rows: list[dict], bad) -> list[dict]:
    windows: dict[tuple[int, str], dict] = {}
    for r in rows:
        if r["kind"] not in KINDS or r["epoch"] is None or r["window"] is None:
            raise bad(f"a row of kind {r['kind']!r} without its window")
        key = (r["epoch"], r["window"])
        if r["kind"] == "window":
            if key in windows:
                raise bad(f"epoch {key[0]} {key[1]} twice")
            lo, hi = r["covered_from"], r["covered_to"]
            if (lo is None) != (hi is None) or (lo is not None and not (
                    r["start_time"] is not None and r["end_time"] is not None and lo <= hi
                    and in_cpoc_window(lo, r["start_time"], r["end_time"])
                    and in_cpoc_window(hi, r["start_time"], r["end_time"]))):
                raise bad(f"epoch {key[0]} {key[1]}: its coverage is not inside the window")
            windows[key] = {"epoch": r["epoch"], "window": r["window"], "start_height": r["start_height"],
                            "end_height": r["end_height"], "start": r["start_time"], "end": r["end_time"],
                            "covered": None if lo is None else (lo, hi), "models": {}}
            continue
        w = windows.get(key)
        if w is None or w["covered"] is None or r["model"] is None:
            raise bad(f"a {r['kind']} row of epoch {key[0]} {key[1]} outside a covered window")
        m = w["models"].setdefault(r["model"], {"initial": None, "steps": [], "attempts": 0, "attempt_seconds": 0.0})
        if r["kind"] == "model":
            if r["attempts"] is None or r["attempts"] < 0 or r["attempt_seconds"] is None \
                    or not 0 <= r["attempt_seconds"] < 1e12:
                raise bad(f"epoch {key[0]} {key[1]} {r['model']}: attempts not a count")
            m["attempts"], m["attempt_seconds"] = r["attempts"], r["attempt_seconds"]
        else:
            if r["ts"] is None or r["delta"] is None or not in_cpoc_window(r["ts"], w["start"], w["end"]) \
                    or abs(r["delta"]) > 10**9:
                raise bad(f"epoch {key[0]} {key[1]} {r['model']}: a step outside the window")
            if r["ts"] == w["start"] and m["initial"] is None and not m["steps"]:
                if r["delta"] < 0:
                    raise bad(f"epoch {key[0]} {key[1]} {r['model']}: a negative level")
                m["initial"] = r["delta"]
            else:
                m["steps"].append((r["ts"], r["delta"]))
    for (e, name), w in windows.items():
        for model, m in w["models"].items():
            if m["initial"] is None:
                raise bad(f"epoch {e} {name} {model}: no level at the window's start")
    return list(windows.values())


def load(source: str, timeout: float = 10.0) -> Contribution:
    """The bundle at ``source`` (path or URL; a URL's credentials are never shown)."""
    from .redact import redact_url

    shown = redact_url(source) if source.startswith(("http://", "https://")) else source
    return parse(fetch(source, timeout), shown)


# -- merging ------------------------------------------------------------------------------------
def check_known(c: Contribution, known: Mapping[tuple[int, str], Mapping[str, Any]], epochs: Sequence[int],
                stored: Sequence[int]) -> None:
    """Refuse (one UsageError line) a bundle window of an asked epoch the chain in the store does
    not know, or whose heights are not the chain's."""
    for w in c.windows:
        if w["epoch"] not in epochs:
            continue
        if w["epoch"] not in stored:
            raise UsageError(f"--bundle {c.source}: epoch {w['epoch']} is not in the store; collect it "
                             f"(auditor collect --epoch {w['epoch']} --node URL) or leave the bundle out")
        k = known.get((w["epoch"], w["window"]))
        if k is None or (k["start_height"], k["end_height"]) != (w["start_height"], w["end_height"]):
            chain = "none" if k is None else f"heights {k['start_height']}..{k['end_height']}"
            raise UsageError(f"--bundle {c.source}: epoch {w['epoch']} {w['window']} at heights "
                             f"{w['start_height']}..{w['end_height']} is not a window the chain knows "
                             f"(the store's: {chain})")


def merge(contributions: Sequence[Contribution], epochs: Sequence[int]) -> tuple[dict, list[dict]]:
    """Per (epoch, window) of ``epochs``: the windows to count, one per gateway (the store's own
    logs win, then the newest bundle), and what each contribution gave (for the JSON)."""
    chosen: dict[tuple[str, int, str], tuple[Contribution, dict]] = {}

    def rank(c: Contribution) -> tuple:
        return (c.created_at is None, c.created_at or datetime.min.replace(tzinfo=timezone.utc))

    for c in contributions:
        for w in c.windows:
            if w["epoch"] not in epochs or w["covered"] is None:
                continue
            key = (c.gateway, w["epoch"], w["window"])
            if key not in chosen or rank(c) > rank(chosen[key][0]):
                chosen[key] = (c, w)
    # one gateway's data under two names (a bundle exported twice with two --name, or beside the
    # store's own logs): the same per-second steps in a window, which two gateways' traffic never
    # gives; counted once, under the store's own logs or the first name
    by_window: dict[tuple[int, str], list[tuple[Contribution, dict]]] = {}
    same_as: dict[tuple[str, int, str], str] = {}       # (gateway, epoch, window) -> the gateway counted
    seen: dict[tuple[int, str, str], str] = {}
    for (gw, e, name), cw in sorted(chosen.items(), key=lambda kv: (kv[1][0].created_at is not None, kv[0])):
        series = _series(cw[1])
        if series is not None and (e, name, series) in seen:
            same_as[(gw, e, name)] = seen[(e, name, series)]
            continue
        if series is not None:
            seen[(e, name, series)] = gw
        by_window.setdefault((e, name), []).append(cw)
    by_window = {k: by_window[k] for k in sorted(by_window)}
    report = []
    for c in contributions:
        counted, superseded, duplicate, outside = [], [], [], 0
        for w in c.windows:
            if w["epoch"] not in epochs:
                outside += 1
                continue
            if w["covered"] is None:
                continue
            lo, hi = w["covered"]
            entry = {"epoch": w["epoch"], "window": w["window"], "covered_from": lo, "covered_to": hi,
                     "covered_share": round((hi - lo).total_seconds() / max(1e-9, (w["end"] - w["start"]).total_seconds()), 4)}
            key = (c.gateway, w["epoch"], w["window"])
            if chosen[key][0] is not c:
                superseded.append(entry)
            elif key in same_as:
                duplicate.append({**entry, "same_as": same_as[key]})
            else:
                counted.append(entry)
        report.append({"gateway": c.gateway, "gateway_basis": c.gateway_basis, "source": c.source,
                       "created_at": c.created_at, "tool_version": c.meta.get("tool_version"),
                       "content_sha256": c.meta.get("content_sha256"),
                       "per_10000": c.meta.get("per_10000"), "windows_counted": counted,
                       "windows_superseded": superseded, "windows_same_as_another": duplicate,
                       "windows_outside_epochs": outside})
    return by_window, report


def _series(w: Mapping[str, Any]) -> tuple | None:
    """A window's demand as a value two windows share only when they hold the same data: its
    coverage and each model's attempts and per-second steps (None: no attempt in it)."""
    if not w["models"]:
        return None
    return (w["covered"], tuple(sorted((m, d["attempts"], d["initial"], tuple(map(tuple, d["steps"])))
                                       for m, d in w["models"].items())))
