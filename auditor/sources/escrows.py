"""The escrow-record collector: ``GET devshard_escrow/{id}`` for every escrow the store has seen.

The chain has no list or by-epoch escrow query (chain-api.md 12.6), so the ids come from
the gateway's logs and its accounting API (``queries/remints_escrows_to_probe.sql``). Each
answer ``{"escrow": DevshardEscrow, "found": bool}`` (12.3) becomes one row of
``chain_escrows`` (``queries/schema/010_chain_escrows.sql``):

- ``found: false`` is stored as such: the id never existed, or was pruned (the chain keeps
  the current and previous epoch's escrows only). One below the largest id found is known to
  have existed, so it was pruned and is not asked again.
- A settled escrow never changes again: it is never probed again (cached).
- ``found: false`` for an escrow whose creation epoch's settlement height V(E+1) the store
  knows (``chain_epochs``) is asked again pinned at that height (``x-cosmos-block-height``):
  the chain prunes escrows of epochs <= current - 2, and every escrow of E still exists at
  V(E+1), so an archive node can answer. A node that cannot (not an archive node) leaves the
  record missing in coverage.
- An id the node could not answer (down, malformed, HTTP error other than 404) keeps
  whatever row it had, and gets a ``missing`` coverage row (source ``chain_escrows``); the
  run report lists it, which makes the command exit 3.
- A 404 is read as "not found", as chain-api.md 1.6 says to treat any 404 (this query
  normally answers a missing record with 200 ``{"found": false}``): stored ``found = false``,
  and the coverage row's detail says it was a 404, so a reader can tell the two apart.

Rows are written in batches, each batch in one transaction with its coverage rows, so a long
probe (20 requests a minute on a public node) that is interrupted keeps what it got.

The probes are bounded (issue 35: an accounting API naming 400 invented ids cost 402 requests
on every run; 250,000 would have taken 208 hours at the public node's rate):

- only the ids the logs or the accounting API tie to the epochs collected are asked
  (``queries/remints_escrows_to_probe.sql``);
- at most :data:`MAX_PROBES` ids a run, those never asked first; the rest wait for the next
  runs, and the run says how many (missing: their records are unknown, exit 3);
- every probe is remembered (``escrow_probes``, ``queries/schema/015_escrow_probes.sql``): an id
  the node did not find is asked again only after a wait that doubles with each probe (1 hour
  up to 7 days), not on every run; one no node answered for is asked again by the next run
  (within the cap), as before.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator

from ..errors import NotFoundError, SourceError
from ..progress import Progress
from ..result import CollectReport
from ..store import Store, coverage_row, utcnow
from .chain import API, U64, Wire, decode
from .http import JsonClient

SOURCE = "chain_escrows"
BATCH = 50
MAX_PROBES = 250            # ids asked a run: within the public node's burst of 200, plus 2.5 minutes
FIRST_WAIT = timedelta(hours=1)     # before an id not found (or not answered) is asked again; doubles
LONGEST_WAIT = timedelta(days=7)
DEFERRED = "devshard_escrow (left for the next run)"     # the coverage item of the ids past the cap


def _text(v: Any) -> str:
    return "" if v is None else str(v)


Text = Annotated[str, BeforeValidator(_text)]


class DevshardEscrow(Wire):
    id: U64 = 0
    creator: str = ""
    amount: U64 = 0
    slots: list[Text] = []
    epoch_index: U64 = 0
    app_hash: Text = ""
    settled: bool = False
    token_price: U64 = 0
    model_id: str = ""


class DevshardEscrowResponse(Wire):
    escrow: DevshardEscrow | None = None
    found: bool = False


def item(escrow_id: int) -> str:
    """The coverage item of one probe."""
    return f"devshard_escrow/{escrow_id}"


def to_probe(store: Store, epochs: list[int] | None = None, now: datetime | None = None) -> list[dict[str, Any]]:
    """``[{escrow_id, hint_epoch, pin_height, tried_pinned, asked_before}]``: the ids seen in logs
    and accounting, tied to ``epochs`` (None: any), that need probing now, in the order to ask."""
    return store.query("remints_escrows_to_probe", epochs=epochs, now=now or utcnow())


def collect(store: Store, client: JsonClient, progress: Progress, epochs: list[int] | None = None) -> CollectReport:
    """Probe the escrow ids of ``epochs`` that are not cached nor waiting, at most MAX_PROBES;
    store the records, the coverage and what was asked (escrow_probes)."""
    report = CollectReport(source="chain escrows (devshard_escrow/{id})")
    now = utcnow()
    todo = to_probe(store, epochs, now)
    asked = {int(w["escrow_id"]) for w in todo}
    cached = sum(1 for r in store.rows("SELECT escrow_id FROM chain_escrows") if int(r["escrow_id"]) not in asked)
    if cached:
        report.skipped.append(f"{cached} escrow record(s) final in the store, waiting, or of other epochs: "
                              "not probed this run")
    todo, deferred = todo[:MAX_PROBES], todo[MAX_PROBES:]
    _defer(store, report, len(deferred), epochs)
    if not todo:
        report.notes.append("no escrow ids to probe (none seen in the logs or accounting, or all cached)")
        return report
    sent_before = client.requests_sent
    progress.log(f"chain escrows: checking {len(todo):,} escrow(s) the logs and the accounting name")
    rows: list[dict[str, Any]] = []
    cov: list[dict[str, Any]] = []
    for want in progress.track(todo, "chain escrows: checking"):
        eid, hint, pin = int(want["escrow_id"]), want["hint_epoch"], want["pin_height"]
        got = _probe(client, eid, hint, None if want["tried_pinned"] else pin, report)
        if got is not None:
            row, c = got
            if row is not None:
                rows.append(row)
            cov.append(c)
        if len(cov) >= BATCH:
            _write(store, rows, cov, now)
            report.add("chain_escrows", len(rows))
            rows, cov = [], []
    _write(store, rows, cov, now)
    report.add("chain_escrows", len(rows))
    report.notes.append(f"{client.requests_sent - sent_before} requests")
    return report


def _probe(client: JsonClient, eid: int, hint: int | None, pin: int | None,
           report: CollectReport) -> tuple[dict[str, Any] | None, dict[str, Any]] | None:
    """One escrow: ``(row or None, coverage row)``. A ``{"found": false}`` answer is asked again
    at ``pin`` (its epoch's settlement height, when known), where a pruned record still exists
    on an archive node; that read failing is missing coverage (the unpinned answer is kept)."""
    path = f"{API}/devshard_escrow/{eid}"
    try:
        resp = client.get(path)
        answer = decode(DevshardEscrowResponse, resp)
        row = _row(eid, answer, resp)
    except NotFoundError as exc:
        return ({"escrow_id": eid, "found": False, "raw": None, "source_url": None, "height": None,
                 "fetched_at": utcnow()},
                coverage_row(SOURCE, item(eid), "ok", f"HTTP 404, treated as found: false (chain-api.md 1.6): {exc}",
                             epoch=hint))
    except SourceError as exc:
        # the client's messages carry no credentials (http.py redacts its URLs)
        report.missing.append(f"{item(eid)}: {exc}")
        return None, coverage_row(SOURCE, item(eid), "missing", str(exc), epoch=hint)
    if not answer.found and pin is not None:
        try:
            presp = client.get(path, height=pin)
            panswer = decode(DevshardEscrowResponse, presp)
            prow = _row(eid, panswer, presp)
        except SourceError as exc:
            why = (f"not found in the current state (pruned: epoch {hint} is older than the previous epoch); "
                   f"the read pinned at its settlement height {pin} failed, which needs an archive node: {exc}")
            report.missing.append(f"{item(eid)}: pruned, and the pinned read at height {pin} failed")
            return row, coverage_row(SOURCE, item(eid), "missing", why, epoch=hint, url=resp.url)
        detail = (f"pruned from the current state; read at height {pin} (epoch {hint}'s settlement)"
                  if panswer.found else f"found: false, also at height {pin}")
        return prow, coverage_row(SOURCE, item(eid), "ok", detail, epoch=prow.get("epoch_index") or hint,
                                  url=presp.url, height=pin, fetched_at=presp.fetched_at)
    detail = None if answer.found else "found: false (never existed, or pruned)"
    return row, coverage_row(SOURCE, item(eid), "ok", detail, epoch=row.get("epoch_index") or hint,
                             url=resp.url, fetched_at=resp.fetched_at)


def _row(eid: int, answer: DevshardEscrowResponse, resp) -> dict[str, Any]:
    prov = {"source_url": resp.url, "height": resp.height, "fetched_at": resp.fetched_at}
    e = answer.escrow
    if not answer.found or e is None:
        return {"escrow_id": eid, "found": False, "raw": None, **prov}
    if e.id and e.id != eid:
        raise SourceError(f"{resp.url}: asked for escrow {eid}, the answer is escrow {e.id}")
    raw = resp.data.get("escrow") if isinstance(resp.data, dict) else None
    return {"escrow_id": eid, "found": True, "creator": e.creator, "amount": e.amount,
            "epoch_index": e.epoch_index, "model_id": e.model_id, "token_price": e.token_price,
            "settled": e.settled, "app_hash": e.app_hash, "slots": list(e.slots),
            "raw": json.dumps(raw), **prov}


def _defer(store: Store, report: CollectReport, left: int, epochs: list[int] | None) -> None:
    """Say how many ids wait past this run's MAX_PROBES (missing: their records are unknown),
    in the run report and in coverage; none left clears that coverage row."""
    with store.transaction():
        store.replace("coverage", {"source": SOURCE, "item": DEFERRED}, [])
        if left:
            why = (f"{left} escrow id(s) not probed: at most {MAX_PROBES} a run, the next runs ask them "
                   "(those never asked first)")
            report.missing.append(f"{DEFERRED}: {why}")
            store.put_coverage(coverage_row(SOURCE, DEFERRED, "missing", why,
                                            epoch=epochs[0] if epochs and len(epochs) == 1 else None))


def _wait(probes: int) -> timedelta:
    """How long an id not found waits after its ``probes``-th probe."""
    return min(FIRST_WAIT * 2 ** min(probes - 1, 20), LONGEST_WAIT)


def _remember(store: Store, cov: list[dict[str, Any]], rows: list[dict[str, Any]], now: datetime) -> None:
    """Record in escrow_probes what each probed id answered, and when to ask it again: one
    read and one write for every id (up to MAX_PROBES a run), not a statement or two an id."""
    found = {r["escrow_id"]: r for r in rows}
    ids = [int(c["item"].rsplit("/", 1)[1]) for c in cov]       # the item is devshard_escrow/{id}
    asked = dict(store.con.execute("SELECT escrow_id, probes FROM escrow_probes WHERE escrow_id IN "
                                   "(SELECT unnest(?::BIGINT[]))", [ids]).fetchall())
    remembered: dict[int, dict[str, Any]] = {}
    for eid, c in zip(ids, cov):
        row = found.get(eid)
        outcome = "failed" if c["status"] != "ok" and row is None else \
            "found" if row is not None and row["found"] else "not_found"
        probes = asked.get(eid, 0) + 1
        due = now + _wait(probes) if outcome == "not_found" else now   # found, or no answer: next run
        remembered[eid] = {"escrow_id": eid, "probes": probes, "last_at": now, "outcome": outcome, "next_at": due}
    with store.transaction():
        store.con.execute("DELETE FROM escrow_probes WHERE escrow_id IN (SELECT unnest(?::BIGINT[]))", [ids])
        store.insert("escrow_probes", list(remembered.values()))


def _write(store: Store, rows: list[dict[str, Any]], cov: list[dict[str, Any]], now: datetime) -> None:
    """Replace the probed ids' rows and coverage, and what was asked, in one transaction. A
    coverage row is keyed by its item alone (the epoch it is filed under may be learnt later)."""
    if not rows and not cov:
        return
    with store.transaction():          # a statement a table, not one an id
        store.con.execute("DELETE FROM chain_escrows WHERE escrow_id IN (SELECT unnest(?::BIGINT[]))",
                          [[r["escrow_id"] for r in rows]])
        store.insert("chain_escrows", rows)
        store.con.execute("DELETE FROM coverage WHERE source = ? AND item IN (SELECT unnest(?::VARCHAR[]))",
                          [SOURCE, [c["item"] for c in cov]])
        store.insert("coverage", cov)
        _remember(store, cov, rows, now)
