"""The gateway accounting API (devshard ``devshardctl``), schema versions 2 to 5.

``collect`` lists ``GET /api/v1/epochs``, then reads
``GET /api/v1/epochs/{E}/participants`` for each selected epoch and stores the
records into the ``acct_*`` tables (``queries/schema/004_accounting.sql``), one
transaction per epoch, with ``coverage`` rows saying what was obtained.

Decoding is liberal, as ``gateway-accounting.md`` asks: every field is optional,
``null`` is empty, enums are open strings, unknown fields are kept raw (``extra``).
Which defaults apply is decided when rows are built, per the record's
``schema_version``:

- a scalar count that is absent is NULL ("not reported", e.g. ``timeout_pending``
  of a v2 record), never 0;
- a map that was sent has only the keys that occurred: a known key missing from it
  is 0; a map that is absent is NULL, except ``delivery_reasons`` of v5+ (omitempty:
  absent means empty);
- CounterKey strings are omitempty: absent means ``''``; the v5 timing flags are
  omitempty booleans: absent means false in v5+, NULL before v5;
- a list that is ``null`` is empty.

A requested epoch the gateway does not list, an HTTP failure or a response that is
not the documented JSON leaves that epoch in ``CollectReport.missing`` with a
one-line reason; whatever was obtained for other epochs is stored, and rows stored
by an earlier successful collection of the failed epoch are kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Optional

import duckdb
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationError,
                      WrapValidator)

from ..errors import SourceError
from ..result import CollectReport
from ..progress import Progress
from ..store import Store, coverage_row, utcnow
from .http import JsonClient, Response

SOURCE = "accounting"

DISPOSITIONS = ("finished_used", "finished_unused", "finished_usage_unknown", "ghost",
                "protocol_only", "unfinished_refused", "unfinished_execution")
TIMEOUT_OUTCOMES = ("applied", "skipped", "vote_collection_failed", "insufficient_votes",
                    "diff_send_failed")
# From this schema version on, omitted CounterKey flags / delivery_reason and an omitted
# SlotRecord.delivery_reasons mean false / '' / {} (omitempty); before it they are NULL.
V5 = 5

TABLES = ("acct_epochs", "acct_participants", "acct_escrow_nonces", "acct_counters",
          "acct_slots", "acct_findings")


# -- liberal field types ----------------------------------------------------------
def _none_to_empty_str(v: Any) -> Any:
    return "" if v is None else v


def _none_to_empty_list(v: Any) -> Any:
    return [] if v is None else v


def _count_map(v: Any) -> Any:
    """``null`` -> {}; entries whose count is null are dropped (null = empty)."""
    if v is None:
        return {}
    if isinstance(v, Mapping):
        return {k: c for k, c in v.items() if c is not None}
    return v


def _lenient_time(v: Any, handler: Any) -> Any:
    """An unparsable ``updated_at`` is NULL, not a rejected record."""
    if v is None or v == "":
        return None
    try:
        return handler(v)
    except ValidationError:
        return None


Count = Annotated[Optional[int], Field(ge=0)]
CountMap = Annotated[Optional[dict[str, Annotated[int, Field(ge=0)]]], BeforeValidator(_count_map)]
Str = Annotated[str, BeforeValidator(_none_to_empty_str)]
Time = Annotated[Optional[datetime], WrapValidator(_lenient_time)]


class _Model(BaseModel):
    # extra="allow": unknown fields are accepted (never an error) and kept in `extra`.
    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)


class CounterKey(_Model):
    slot_id: Count = None
    disposition: Str = ""
    dispatch_phase: Str = ""
    timeout_evaluation_phase: Str = ""
    quarantine_mode: Str = ""
    no_send_reason: Str = ""
    failure_origin: Str = ""
    logprobs_decoded: Optional[bool] = None      # v5
    slow_receipt: Optional[bool] = None          # v5
    slow_chunk: Optional[bool] = None            # v5
    clock_drifted: Optional[bool] = None         # v5
    detail_reason: Str = ""
    delivery_reason: Optional[str] = None        # v5
    timeout_kind: Str = ""
    timeout_outcome: Str = ""
    timeout_reason: Str = ""


class CounterRecord(_Model):
    escrow_id: Str = ""
    key: Annotated[CounterKey, BeforeValidator(lambda v: {} if v is None else v)] = Field(
        default_factory=CounterKey)
    count: Count = None


class EscrowNonce(_Model):
    escrow_id: Str = ""
    latest_nonce: Count = None
    phase: Optional[str] = None                  # v3+


class CrossChecks(_Model):
    timeout_applied: Count = None
    host_missed: Count = None
    recorded_invalid_transitions: Count = None
    host_invalid: Count = None
    error_count: Count = None


class Finding(_Model):
    code: Str = ""
    severity: Str = ""
    part: Count = None
    whole: Count = None                          # omitempty: absent for count findings


class _Totals(_Model):
    """Fields shared by EpochSummary, ParticipantRecord and (mostly) SlotRecord."""

    schema_version: Optional[int] = None
    assigned_nonces: Count = None
    dispositions: CountMap = None
    timeout_outcomes: CountMap = None
    protocol_misses: Count = None
    protocol_invalid: Count = None
    required_validations: Count = None           # v5
    completed_validations: Count = None          # v5
    unresolved_challenges: Count = None
    in_flight: Count = None
    timeout_pending: Count = None                # v3+
    pending_classification: Count = None
    unclassified: Count = None
    overclassified: Count = None
    unknown_reason_total: Count = None


class SlotRecord(_Totals):
    escrow_id: Str = ""
    slot_id: Count = None
    delivery_reasons: CountMap = None            # v5, omitempty
    recorded_invalid_transitions: Count = None
    cross_check_error: Count = None              # v4+


class EpochSummary(_Totals):
    updated_at: Time = None
    epoch_index: Count = None
    cross_check_errors: Count = None
    recording_errors: Count = None               # v2-v3
    writer_errors: Count = None                  # v2-v3


class ParticipantRecord(_Totals):
    updated_at: Time = None
    epoch_index: Count = None
    participant: Str = ""
    model: Str = ""
    latest_nonces: Annotated[list[EscrowNonce], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list)
    recording_errors: Count = None               # v2-v3
    writer_errors: Count = None                  # v2-v3
    cross_checks: Optional[CrossChecks] = None
    findings: Annotated[Optional[list[Finding]], BeforeValidator(_none_to_empty_list)] = None  # v5
    counters: Annotated[list[CounterRecord], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list)
    slots: Annotated[list[SlotRecord], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list)


class EpochsResponse(_Model):
    schema_version: Optional[int] = None
    epochs: Annotated[list[EpochSummary], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list)


class ParticipantsResponse(_Model):
    schema_version: Optional[int] = None
    epoch_index: Count = None
    participants: Annotated[list[ParticipantRecord], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list)


def decode_epochs(data: Any) -> EpochsResponse:
    """``GET /api/v1/epochs`` body -> model. Raises ValidationError on a wrong shape."""
    return EpochsResponse.model_validate(data)


def decode_participants(data: Any) -> ParticipantsResponse:
    """``GET /api/v1/epochs/{E}/participants`` body -> model."""
    return ParticipantsResponse.model_validate(data)


# -- rows ---------------------------------------------------------------------------
def _json(v: Any) -> str | None:
    return None if v is None else json.dumps(v, sort_keys=True, separators=(",", ":"))


def _extra(m: BaseModel) -> str | None:
    return _json(m.model_extra) if m.model_extra else None


def _from_v5(version: int | None) -> bool:
    return version is not None and version >= V5


def _wide(m: dict[str, int] | None, keys: Sequence[str], prefix: str = "") -> dict[str, int | None]:
    """Known map keys as columns: 0 when the map was sent without the key, NULL when no map."""
    return {prefix + k: (None if m is None else m.get(k, 0)) for k in keys}


def _totals(t: _Totals) -> dict[str, Any]:
    row: dict[str, Any] = {"assigned_nonces": t.assigned_nonces}
    row.update(_wide(t.dispositions, DISPOSITIONS))
    row.update(_wide(t.timeout_outcomes, TIMEOUT_OUTCOMES, "timeout_"))
    row.update({
        "dispositions": _json(t.dispositions),
        "timeout_outcomes": _json(t.timeout_outcomes),
        "protocol_misses": t.protocol_misses,
        "protocol_invalid": t.protocol_invalid,
        "required_validations": t.required_validations,
        "completed_validations": t.completed_validations,
        "unresolved_challenges": t.unresolved_challenges,
        "in_flight": t.in_flight,
        "timeout_pending": t.timeout_pending,
        "pending_classification": t.pending_classification,
        "unclassified": t.unclassified,
        "overclassified": t.overclassified,
        "unknown_reason_total": t.unknown_reason_total,
    })
    return row


def epoch_row(epoch: int, s: EpochSummary, listing_version: int | None, prov: dict[str, Any]) -> dict[str, Any]:
    """The acct_epochs row of one EpochSummary."""
    return {
        "epoch": epoch,
        "schema_version": s.schema_version if s.schema_version is not None else listing_version,
        "updated_at": s.updated_at,
        **_totals(s),
        "cross_check_errors": s.cross_check_errors,
        "recording_errors": s.recording_errors,
        "writer_errors": s.writer_errors,
        "extra": _extra(s),
        **prov,
    }


def participant_rows(epoch: int, resp: ParticipantsResponse, prov: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Rows for every acct_* table but acct_epochs, from one participants response."""
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES if t != "acct_epochs"}
    for rec in resp.participants:
        v = rec.schema_version if rec.schema_version is not None else resp.schema_version
        v5 = _from_v5(v)
        ident = {"epoch": epoch, "participant": rec.participant, "model": rec.model}
        cc = rec.cross_checks
        out["acct_participants"].append({
            **ident,
            "schema_version": v,
            "updated_at": rec.updated_at,
            **_totals(rec),
            "recording_errors": rec.recording_errors,
            "writer_errors": rec.writer_errors,
            "cc_timeout_applied": cc.timeout_applied if cc else None,
            "cc_host_missed": cc.host_missed if cc else None,
            "cc_recorded_invalid_transitions": cc.recorded_invalid_transitions if cc else None,
            "cc_host_invalid": cc.host_invalid if cc else None,
            "cc_error_count": cc.error_count if cc else None,
            "n_escrows": len(rec.latest_nonces),
            "n_counters": len(rec.counters),
            "n_slots": len(rec.slots),
            "n_findings": None if rec.findings is None else len(rec.findings),
            "extra": _json({**(rec.model_extra or {}),
                            **({"cross_checks": cc.model_extra} if cc and cc.model_extra else {})} or None),
            **prov,
        })
        for n in rec.latest_nonces:
            out["acct_escrow_nonces"].append({
                **ident, "escrow_id": n.escrow_id, "latest_nonce": n.latest_nonce, "phase": n.phase,
                "schema_version": v, "extra": _extra(n), **prov,
            })
        def flag(b: bool | None) -> bool | None:
            return b if b is not None else (False if v5 else None)

        for i, c in enumerate(rec.counters):
            k = c.key
            out["acct_counters"].append({
                **ident, "escrow_id": c.escrow_id, "seq": i, "slot_id": k.slot_id,
                "disposition": k.disposition, "dispatch_phase": k.dispatch_phase,
                "timeout_evaluation_phase": k.timeout_evaluation_phase,
                "quarantine_mode": k.quarantine_mode, "no_send_reason": k.no_send_reason,
                "failure_origin": k.failure_origin, "detail_reason": k.detail_reason,
                "delivery_reason": k.delivery_reason if k.delivery_reason is not None else ("" if v5 else None),
                "timeout_kind": k.timeout_kind, "timeout_outcome": k.timeout_outcome,
                "timeout_reason": k.timeout_reason,
                "logprobs_decoded": flag(k.logprobs_decoded), "slow_receipt": flag(k.slow_receipt),
                "slow_chunk": flag(k.slow_chunk), "clock_drifted": flag(k.clock_drifted),
                "count": c.count,
                "key_extra": _json({**(k.model_extra or {}), **({"record": c.model_extra} if c.model_extra else {})}
                                   or None),
                "schema_version": v, **prov,
            })
        for s in rec.slots:
            delivery = s.delivery_reasons if s.delivery_reasons is not None else ({} if v5 else None)
            out["acct_slots"].append({
                **ident, "escrow_id": s.escrow_id, "slot_id": s.slot_id, **_totals(s),
                "delivery_reasons": _json(delivery),
                "recorded_invalid_transitions": s.recorded_invalid_transitions,
                "cross_check_error": s.cross_check_error,
                "extra": _extra(s),
                "schema_version": s.schema_version if s.schema_version is not None else v, **prov,
            })
        for i, f in enumerate(rec.findings or []):
            out["acct_findings"].append({
                **ident, "seq": i, "code": f.code, "severity": f.severity, "part": f.part,
                "whole": f.whole, "extra": _extra(f), "schema_version": v, **prov,
            })
    return out


def unknown_fields(resp: ParticipantsResponse) -> set[str]:
    """Dotted names of the fields this decoder does not know (for a run-report note)."""
    names: set[str] = set()

    def walk(prefix: str, m: BaseModel) -> None:
        names.update(prefix + k for k in (m.model_extra or {}))
        for name in type(m).model_fields:
            child = getattr(m, name)
            items = child if isinstance(child, list) else [child]
            for it in items:
                if isinstance(it, BaseModel):
                    walk(f"{prefix}{name}.", it)

    walk("", resp)
    return names


# -- storage ------------------------------------------------------------------------
def _coverage(epoch: int | None, item: str, status: str, detail: str, url: str | None,
              fetched_at: datetime | None) -> dict[str, Any]:
    return coverage_row(SOURCE, item, status, detail, epoch=epoch, url=url, fetched_at=fetched_at)


def _held(store: Store, epoch: int) -> tuple[int, datetime | None]:
    """Participant records already stored for ``epoch`` and when they were fetched."""
    n, at = store.one(
        "SELECT count(*), max(fetched_at) FROM acct_participants WHERE epoch = ?", [epoch])
    if n == 0:
        n2, at2 = store.one(
            "SELECT count(*), max(fetched_at) FROM acct_epochs WHERE epoch = ?", [epoch])
        return int(n2), at2
    return int(n), at


def _one_line(exc: ValidationError) -> str:
    errs = exc.errors()
    first = errs[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
    more = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
    return f"{loc}: {first.get('msg', 'invalid')}{more}"


def _fail(store: Store, report: CollectReport, epoch: int, reason: str, url: str | None,
          summary_row: dict[str, Any] | None = None) -> None:
    """Record a failed epoch: always in the run report; in the store only when it holds
    nothing for the epoch yet (earlier good rows and their coverage are kept, so a
    gateway that deleted an old epoch, or is down, does not erase what was collected).
    ``summary_row`` is the epoch's acct_epochs row when the listing gave one."""
    held, at = _held(store, epoch)
    if held:
        when = at.isoformat(timespec="seconds") if at else "earlier"
        report.missing.append(f"epoch {epoch}: {reason} (kept the rows fetched at {when})")
        return
    report.missing.append(f"epoch {epoch}: {reason}")
    now = utcnow()
    cov = [_coverage(epoch, "participants", "missing", reason, url, now)]
    if summary_row is not None:
        cov.insert(0, _coverage(epoch, "epoch_summary", "ok", f"schema_version {summary_row['schema_version']}",
                                summary_row["source_url"], summary_row["fetched_at"]))
    else:
        cov.insert(0, _coverage(epoch, "epoch_summary", "missing", reason, url, now))
    with store.transaction():
        if summary_row is not None:
            report.add("acct_epochs", store.replace("acct_epochs", {"epoch": epoch}, [summary_row]))
        store.replace("coverage", {"source": SOURCE, "epoch": epoch}, cov)


def _fetch(client: JsonClient, path: str) -> tuple[Response | None, str | None]:
    try:
        return client.get(path), None
    except SourceError as exc:
        return None, str(exc)


def collect(store: Store, client: JsonClient, epochs: list[int] | None, progress: Progress) -> CollectReport:
    """Collect ``epochs`` (all the gateway lists when None) into the acct_* tables."""
    report = CollectReport(SOURCE)
    listing: EpochsResponse | None = None
    listing_resp, err = _fetch(client, "/api/v1/epochs")
    if listing_resp is not None:
        try:
            listing = decode_epochs(listing_resp.data)
        except ValidationError as exc:
            err = f"{listing_resp.url} is not an accounting epoch list ({_one_line(exc)})"
    listed: dict[int, EpochSummary] = {}
    if listing is not None:
        for s in listing.epochs:
            if s.epoch_index is not None:
                listed[s.epoch_index] = s
        shown = ", ".join(str(e) for e in sorted(listed)) or "none"
        store.put_coverage(_coverage(None, "epoch_list", "ok",
                                     f"lists epochs {shown} (schema_version {listing.schema_version})",
                                     listing_resp.url, listing_resp.fetched_at))
    else:
        report.missing.append(f"epoch list: {err}")
        store.put_coverage(_coverage(None, "epoch_list", "missing", err or "", None, None))
        if epochs is None:
            return report

    targets = sorted(set(epochs)) if epochs is not None else sorted(listed)
    if not targets:
        report.notes.append("the gateway lists no epochs")
        return report
    unknown: set[str] = set()
    for epoch in progress.track(targets, "accounting: epochs"):
        summary = listed.get(epoch)
        summary_row = None
        if listing is not None and listing_resp is not None:
            if summary is None:
                lo, hi = (min(listed), max(listed)) if listed else (0, -1)
                shown = ("none" if not listed else f"{lo}..{hi}" if len(listed) == hi - lo + 1
                         else f"{len(listed)} epochs between {lo} and {hi}")
                _fail(store, report, epoch, f"not listed by the gateway at {listing_resp.url} (it lists {shown})",
                      listing_resp.url)
                continue
            summary_row = epoch_row(epoch, summary, listing.schema_version,
                                    {"source_url": listing_resp.url, "height": None,
                                     "fetched_at": listing_resp.fetched_at})
        resp, err = _fetch(client, f"/api/v1/epochs/{epoch}/participants")
        parsed: ParticipantsResponse | None = None
        if resp is not None:
            try:
                parsed = decode_participants(resp.data)
            except ValidationError as exc:
                err = f"{resp.url} is not an accounting participants answer ({_one_line(exc)})"
            else:
                got = {parsed.epoch_index} | {r.epoch_index for r in parsed.participants}
                got.discard(None)
                if got - {epoch}:
                    err = f"{resp.url} answered for epoch {sorted(got - {epoch})[0]}, not {epoch}"
                    parsed = None
        if parsed is None or resp is None:
            _fail(store, report, epoch, f"participants not obtained: {err}", resp.url if resp else None,
                  summary_row)
            continue
        if _store_epoch(store, report, epoch, summary_row, parsed, resp):
            unknown |= unknown_fields(parsed)
    if unknown:
        report.notes.append("fields this auditor does not know, kept raw in `extra`: " + ", ".join(sorted(unknown)))
    return report


def _store_epoch(store: Store, report: CollectReport, epoch: int, summary_row: dict[str, Any] | None,
                 parsed: ParticipantsResponse, resp: Response) -> bool:
    """Replace everything stored for ``epoch`` with this answer, in one transaction."""
    prov = {"source_url": resp.url, "height": None, "fetched_at": resp.fetched_at}
    tables = participant_rows(epoch, parsed, prov)
    if summary_row is not None:
        tables["acct_epochs"] = [summary_row]
        cov = [_coverage(epoch, "epoch_summary", "ok", f"schema_version {summary_row['schema_version']}",
                         summary_row["source_url"], summary_row["fetched_at"])]
    else:
        cov = [_coverage(epoch, "epoch_summary", "missing", "the epoch list was not obtained",
                         None, resp.fetched_at)]
    versions = sorted({r["schema_version"] for r in tables["acct_participants"] if r["schema_version"] is not None}
                      | ({parsed.schema_version} if parsed.schema_version is not None else set()))
    cov.append(_coverage(epoch, "participants", "ok",
                         f"{len(tables['acct_participants'])} records, {len(tables['acct_counters'])} counters, "
                         f"{len(tables['acct_slots'])} slots (schema_version "
                         f"{', '.join(map(str, versions)) or 'unknown'})",
                         resp.url, resp.fetched_at))
    try:
        with store.transaction():
            counts = {t: store.replace(t, {"epoch": epoch}, tables.get(t, [])) for t in TABLES}
            store.replace("coverage", {"source": SOURCE, "epoch": epoch}, cov)
    except duckdb.ConstraintException as exc:
        # e.g. two records for the same (participant, model): not the documented shape
        first = str(exc).splitlines()[0]
        _fail(store, report, epoch, f"participants not stored: {resp.url} breaks a key ({first})", resp.url,
              summary_row)
        return False
    for t, n in counts.items():
        if n:
            report.add(t, n)
    return True
