"""The gateway accounting API (devshard ``devshardctl``), schema versions 2 to 6.

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
  omitempty booleans: absent means false in v5+, NULL before v5; so is v6's ``slow_decode``
  (false in v6+, NULL before);
- a schema-6 record's ``capability`` block (``HostCapability``, every field omitempty, the
  block itself omitted when all are empty) becomes one ``acct_capabilities`` row when it was
  sent; a field omitted from a sent block stays NULL (the gateway omits false and 0: the
  table's header says how to read it), and no block makes no row;
- a list that is ``null`` is empty.

Counts are uint64 (the wire and the UBIGINT columns); a value out of range is a wrong
shape. A participants answer is read as a stream (:class:`ParticipantsText`): its records
are decoded, validated, turned into rows and inserted a chunk at a time inside the epoch's
one transaction, so memory holds the body and one chunk, not every record as objects; an
answer of more than :data:`MAX_ROWS` rows is refused before any is built, and an epoch
list of more than :data:`MAX_LISTED` epochs is refused.

Each ``--accounting`` URL is its own gateway (:func:`gateway_id`: its base URL, redacted), and
every row carries it (``gateway``, ``queries/schema/016_accounting_gateways.sql``): re-collecting
epoch E from a gateway replaces that gateway's rows of E only, so several gateways' accounting
of one epoch is stored side by side, and the same gateway collected twice is stored once.

A requested epoch the gateway does not list, an HTTP failure or a response that is
not the documented JSON leaves that epoch in ``CollectReport.missing`` with a
one-line reason; whatever was obtained for other epochs is stored, and rows stored
by an earlier successful collection of the failed epoch are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Optional

import duckdb
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError,
                      WrapValidator)

from ..errors import SourceError
from ..result import CollectReport
from ..progress import Progress
from ..redact import redact_url
from ..store import Store, coverage_row, utcnow
from .http import JsonClient, Response
from .wire_int import wire_int

SOURCE = "accounting"

DISPOSITIONS = ("finished_used", "finished_unused", "finished_usage_unknown", "ghost",
                "protocol_only", "unfinished_refused", "unfinished_execution")
TIMEOUT_OUTCOMES = ("applied", "skipped", "vote_collection_failed", "insufficient_votes",
                    "diff_send_failed")
# From this schema version on, omitted CounterKey flags / delivery_reason and an omitted
# SlotRecord.delivery_reasons mean false / '' / {} (omitempty); before it they are NULL.
V5 = 5
# From this one on, an omitted CounterKey slow_decode means false (NULL before).
V6 = 6

TABLES = ("acct_epochs", "acct_participants", "acct_escrow_nonces", "acct_counters",
          "acct_slots", "acct_findings", "acct_capabilities")
# the capability block's fields (capability.go), in the order of acct_capabilities
CAPABILITY_FIELDS = ("protocol_version_unsupported", "tool_choice_unsupported", "context_limit",
                     "version_refusals", "tool_refusals", "context_refusals")


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


UINT64_MAX = 2**64 - 1
# counts are uint64 on the wire and UBIGINT in the store: out of range is a shape error
# (integers only in the wire's decimal form: wire_int)
WireInt = BeforeValidator(wire_int)
# the bounds apply to the integer, not to the Optional: a JSON null is absent (None), which a
# bound on the Optional rejected with a TypeError pydantic does not turn into a ValidationError


def _bounded(lo: int, hi: int) -> Any:
    """An optional wire integer in [lo, hi]: null is absent."""
    return Annotated[Optional[Annotated[int, Field(ge=lo, le=hi)]], WireInt]


Count = _bounded(0, UINT64_MAX)
CountMap = Annotated[Optional[dict[str, Annotated[int, WireInt, Field(ge=0, le=UINT64_MAX)]]],
                     BeforeValidator(_count_map)]
SlotId = _bounded(0, 2**63 - 1)  # a BIGINT column
Version = _bounded(-2**31, 2**31 - 1)  # an INTEGER column
Str = Annotated[str, BeforeValidator(_none_to_empty_str)]
Time = Annotated[Optional[datetime], WrapValidator(_lenient_time)]


class _Model(BaseModel):
    # extra="allow": unknown fields are accepted (never an error) and kept in `extra`.
    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)


class CounterKey(_Model):
    slot_id: SlotId = None
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
    slow_decode: Optional[bool] = None           # v6
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


class HostCapability(_Model):
    """A schema-6 record's ``capability`` block: every field omitempty (absent: None here)."""

    protocol_version_unsupported: Optional[bool] = None
    tool_choice_unsupported: Optional[bool] = None
    context_limit: Count = None
    version_refusals: Count = None
    tool_refusals: Count = None
    context_refusals: Count = None


class _Totals(_Model):
    """Fields shared by EpochSummary, ParticipantRecord and (mostly) SlotRecord."""

    schema_version: Version = None
    assigned_nonces: Count = None
    dispositions: CountMap = None
    timeout_outcomes: CountMap = None
    protocol_misses: Count = None
    protocol_invalid: Count = None
    required_validations: Count = None           # v5
    completed_validations: Count = None          # v5
    validations_performed: Count = None          # v6
    timeouts_applied: Count = None               # v6
    unresolved_challenges: Count = None
    in_flight: Count = None
    in_flight_requests: Count = None             # v6
    timeout_pending: Count = None                # v3+
    pending_classification: Count = None
    unclassified: Count = None
    overclassified: Count = None
    unknown_reason_total: Count = None


class SlotRecord(_Totals):
    escrow_id: Str = ""
    slot_id: SlotId = None
    delivery_reasons: CountMap = None            # v5, omitempty
    recorded_invalid_transitions: Count = None
    cross_check_error: Count = None              # v4+


class EpochSummary(_Totals):
    updated_at: Time = None
    epoch_index: _bounded(0, 2**63 - 1) = None  # stored as the BIGINT epoch
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
    capability: Optional[HostCapability] = None  # v6, omitempty (None: not sent)
    findings: Annotated[Optional[list[Finding]], BeforeValidator(_none_to_empty_list)] = None  # v5
    counters: Annotated[list[CounterRecord], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list)
    slots: Annotated[list[SlotRecord], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list)


class EpochsResponse(_Model):
    schema_version: Version = None
    epochs: Annotated[list[EpochSummary], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list)


class ParticipantsResponse(_Model):
    schema_version: Version = None
    epoch_index: Count = None
    participants: Annotated[list[ParticipantRecord], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list)


def decode_epochs(data: Any) -> EpochsResponse:
    """``GET /api/v1/epochs`` body -> model. Raises ValidationError on a wrong shape."""
    return EpochsResponse.model_validate(data)


def decode_epoch_list(data: Any) -> tuple[EpochsResponse, list[str]]:
    """``GET /api/v1/epochs`` body -> the model of its readable entries, and why each other
    entry was skipped (``epochs.1.epoch_index: Input should be greater than or equal to 0``).
    Raises ValidationError when the list itself has the wrong shape."""
    raw = data.get("epochs") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        return decode_epochs(data), []
    head = decode_epochs({**data, "epochs": []})
    bad: list[str] = []
    for i, entry in enumerate(raw):
        try:
            head.epochs.append(EpochSummary.model_validate(entry))
        except ValidationError as exc:
            bad.append(f"entry skipped: epochs.{i}.{_one_line(exc)}")
    return head, bad


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
        "validations_performed": t.validations_performed,
        "timeouts_applied": t.timeouts_applied,
        "unresolved_challenges": t.unresolved_challenges,
        "in_flight": t.in_flight,
        "in_flight_requests": t.in_flight_requests,
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


def _participant_row(ident: dict[str, Any], rec: ParticipantRecord, v: int | None, prov: dict[str, Any],
                     sizes: dict[str, int | None]) -> dict[str, Any]:
    cc = rec.cross_checks
    return {
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
        "n_escrows": sizes["latest_nonces"],
        "n_counters": sizes["counters"],
        "n_slots": sizes["slots"],
        "n_findings": sizes["findings"],
        "extra": _json({**(rec.model_extra or {}),
                        **({"cross_checks": cc.model_extra} if cc and cc.model_extra else {})} or None),
        **prov,
    }


def _nonce_row(ident: dict[str, Any], i: int, n: EscrowNonce, v: int | None, prov: dict[str, Any]) -> dict[str, Any]:
    return {**ident, "escrow_id": n.escrow_id, "latest_nonce": n.latest_nonce, "phase": n.phase,
            "schema_version": v, "extra": _extra(n), **prov}


def _counter_row(ident: dict[str, Any], i: int, c: CounterRecord, v: int | None, prov: dict[str, Any]) -> dict[str, Any]:
    v5 = _from_v5(v)
    v6 = v is not None and v >= V6

    def flag(b: bool | None, since: bool = v5) -> bool | None:
        return b if b is not None else (False if since else None)

    k = c.key
    return {
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
        "slow_decode": flag(k.slow_decode, v6),
        "count": c.count,
        "key_extra": _json({**(k.model_extra or {}), **({"record": c.model_extra} if c.model_extra else {})}
                           or None),
        "schema_version": v, **prov,
    }


def _slot_row(ident: dict[str, Any], i: int, s: SlotRecord, v: int | None, prov: dict[str, Any]) -> dict[str, Any]:
    delivery = s.delivery_reasons if s.delivery_reasons is not None else ({} if _from_v5(v) else None)
    return {
        **ident, "escrow_id": s.escrow_id, "slot_id": s.slot_id, **_totals(s),
        "delivery_reasons": _json(delivery),
        "recorded_invalid_transitions": s.recorded_invalid_transitions,
        "cross_check_error": s.cross_check_error,
        "extra": _extra(s),
        "schema_version": s.schema_version if s.schema_version is not None else v, **prov,
    }


def capability_row(ident: dict[str, Any], rec: ParticipantRecord, v: int | None,
                   prov: dict[str, Any]) -> dict[str, Any] | None:
    """The acct_capabilities row of a record's capability block; None when none was sent."""
    cap = rec.capability
    if cap is None:
        return None
    return {**ident, **{f: getattr(cap, f) for f in CAPABILITY_FIELDS}, "extra": _extra(cap),
            "schema_version": v, **prov}


def _finding_row(ident: dict[str, Any], i: int, f: Finding, v: int | None, prov: dict[str, Any]) -> dict[str, Any]:
    return {**ident, "seq": i, "code": f.code, "severity": f.severity, "part": f.part,
            "whole": f.whole, "extra": _extra(f), "schema_version": v, **prov}


# the lists of a ParticipantRecord: field, item model, table, row builder
_LISTS = (("latest_nonces", EscrowNonce, "acct_escrow_nonces", _nonce_row),
          ("counters", CounterRecord, "acct_counters", _counter_row),
          ("slots", SlotRecord, "acct_slots", _slot_row),
          ("findings", Finding, "acct_findings", _finding_row))


def participant_rows(epoch: int, resp: ParticipantsResponse, prov: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Rows for every acct_* table but acct_epochs, from one participants response."""
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES if t != "acct_epochs"}
    for rec in resp.participants:
        v = rec.schema_version if rec.schema_version is not None else resp.schema_version
        ident = {"epoch": epoch, "participant": rec.participant, "model": rec.model}
        sizes = {f: None if getattr(rec, f) is None else len(getattr(rec, f)) for f, *_ in _LISTS}
        out["acct_participants"].append(_participant_row(ident, rec, v, prov, sizes))
        if (cap := capability_row(ident, rec, v, prov)) is not None:
            out["acct_capabilities"].append(cap)
        for field, _, table, build in _LISTS:
            out[table].extend(build(ident, i, item, v, prov) for i, item in enumerate(getattr(rec, field) or []))
    return out


def _unknown(prefix: str, m: BaseModel, names: set[str]) -> None:
    if m.model_extra:
        names.update(prefix + k for k in m.model_extra)
    for name, child in m.__dict__.items():  # the fields' values (the extra ones are in model_extra)
        if isinstance(child, BaseModel):
            _unknown(f"{prefix}{name}.", child, names)
        elif type(child) is list:
            for it in child:
                if isinstance(it, BaseModel):
                    _unknown(f"{prefix}{name}.", it, names)


def unknown_fields(resp: ParticipantsResponse) -> set[str]:
    """Dotted names of the fields this decoder does not know (for a run-report note)."""
    names: set[str] = set()
    _unknown("", resp, names)
    return names


# -- a participants answer, read as a stream ----------------------------------------------
ROW_CHUNK = 20_000  # rows validated, built and inserted at a time
# rows (all acct_* tables) one participants answer may hold: a real epoch's answer is a few MB,
# some thousands of rows; beyond this the epoch is refused (the store's transaction holding
# every row of the epoch until it commits is what memory grows with: 10^6 rows took 900 MB)
MAX_ROWS = 250_000
MAX_LISTED = 100_000  # epochs an epoch list may hold (one a day would take 270 years)
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _ws(s: str, i: int) -> int:
    return _WS.match(s, i).end()


class ParticipantsText:
    """A participants answer whose records are decoded one at a time, so that memory holds
    the body's text and one chunk of rows, never every record as objects at once (a 35 MB
    answer of 10^6 tiny records took 4.7 GB that way).

    Built by the HTTP client in place of ``json.loads``: the whole text is checked here
    (JSON syntax, the same as ``json.loads`` accepts; each record is decoded and dropped), so
    malformed JSON raises ValueError and the client fails over, as for any answer. ``top``
    holds the top-level fields but ``participants``; :meth:`records` decodes the records again,
    one by one."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.top: dict[str, Any] = {}
        self.is_object = True
        self.records_at: int | None = None  # where the participants array's first record starts
        self.count = 0
        self.rows = 0  # the rows the records would make: one each, one per item of their lists, one per capability block
        s = self.text
        i = _ws(s, 0)
        if not s.startswith("{", i):
            self.is_object = False
            _, i = _DECODER.raw_decode(s, i)
        else:
            i = self._members(_ws(s, i + 1))
        if _ws(s, i) != len(s):
            raise json.JSONDecodeError("Extra data", s, _ws(s, i))

    def _members(self, i: int) -> int:
        s = self.text
        if s.startswith("}", i):
            return i + 1
        while True:
            if not s.startswith('"', i):
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", s, i)
            key, i = _DECODER.raw_decode(s, i)
            i = _ws(s, i)
            if not s.startswith(":", i):
                raise json.JSONDecodeError("Expecting ':' delimiter", s, i)
            i = _ws(s, i + 1)
            if key == "participants" and s.startswith("[", i):
                self.top.pop(key, None)
                self.records_at, self.count, self.rows = i + 1, 0, 0
                for record in self._array(i + 1):
                    self.count += 1
                    self.rows += 1 + (sum(len(x) for f, *_ in _LISTS if isinstance(x := record.get(f), list))
                                      + isinstance(record.get("capability"), dict)   # its acct_capabilities row
                                      if isinstance(record, dict) else 0)
                i = self._end
            else:
                self.top[key], i = _DECODER.raw_decode(s, i)
                if key == "participants":
                    self.records_at, self.count, self.rows = None, 0, 0
            i = _ws(s, i)
            if s.startswith(",", i):
                i = _ws(s, i + 1)
            elif s.startswith("}", i):
                return i + 1
            else:
                raise json.JSONDecodeError("Expecting ',' delimiter", s, i)

    def _array(self, i: int) -> Iterator[Any]:
        """The values of the array whose first value starts at ``i`` (after ``[``), one by one;
        ``_end`` is then the index after its ``]``."""
        s = self.text
        i = _ws(s, i)
        if s.startswith("]", i):
            self._end = i + 1
            return
        while True:
            value, i = _DECODER.raw_decode(s, i)
            yield value
            i = _ws(s, i)
            if s.startswith(",", i):
                i = _ws(s, i + 1)
            elif s.startswith("]", i):
                self._end = i + 1
                return
            else:
                raise json.JSONDecodeError("Expecting ',' delimiter", s, i)

    def records(self) -> Iterator[Any]:
        return iter(()) if self.records_at is None else self._array(self.records_at)


class _Shape(Exception):
    """An answer that is not the documented one: the reason, one line."""


def _shape(exc: ValidationError, *where: object) -> str:
    """``_one_line`` of an error in a part of the answer: ``where`` is its place (the first
    number of the error's own location is added to the last of ``where``: a slice's offset)."""
    first = exc.errors()[0]
    loc = list(first.get("loc", ()))
    place = list(where)
    if place and isinstance(place[-1], int) and loc and isinstance(loc[0], int):
        place[-1] += loc.pop(0)
    dotted = ".".join(str(p) for p in place + loc) or "(top level)"
    return f"{dotted}: {first.get('msg', 'invalid')}"


def _streamed_rows(epoch: int, answer: ParticipantsText, url: str, prov: dict[str, Any],
                   seen: dict[str, Any]) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """Batches of rows (at most about ROW_CHUNK) of a streamed participants answer, table by
    table. Raises _Shape on the first part that is not the documented shape, or that is of
    another epoch. ``seen`` gathers the schema versions, unknown field names and counts."""
    def refuse(why: str) -> _Shape:
        return _Shape(f"{url} is not an accounting participants answer ({why})")

    if not answer.is_object:
        raise refuse("(top level): not a JSON object")
    try:
        head = ParticipantsResponse.model_validate(answer.top)
    except ValidationError as exc:
        raise refuse(_shape(exc)) from None
    if head.epoch_index is not None and head.epoch_index != epoch:
        raise _Shape(f"{url} answered for epoch {head.epoch_index}, not {epoch}")
    if answer.rows > MAX_ROWS:
        raise _Shape(f"{url}: {answer.count:,} records making {answer.rows:,} rows refused "
                     f"(at most {MAX_ROWS:,} rows an answer)")
    _unknown("", head, seen["unknown"])
    if head.schema_version is not None:
        seen["versions"].add(head.schema_version)
    batch: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES if t != "acct_epochs"}
    pending = 0
    for n, raw in enumerate(answer.records()):
        lists = {f: raw.pop(f) for f, *_ in _LISTS if isinstance(raw, dict) and f in raw}
        try:
            for f, items in lists.items():
                if items is not None and not isinstance(items, list):
                    ParticipantRecord.model_validate({f: items})  # raises, naming the field
            rec = ParticipantRecord.model_validate(raw if not lists else {**raw, **{
                f: None if items is None else [] for f, items in lists.items()}})
        except ValidationError as exc:
            raise refuse(_shape(exc, "participants", n)) from None
        if rec.epoch_index is not None and rec.epoch_index != epoch:
            raise _Shape(f"{url} answered for epoch {rec.epoch_index}, not {epoch}")
        v = rec.schema_version if rec.schema_version is not None else head.schema_version
        if v is not None:
            seen["versions"].add(v)
        _unknown("participants.", rec, seen["unknown"])
        ident = {"epoch": epoch, "participant": rec.participant, "model": rec.model}
        sizes = {f: len(lists.get(f) or ()) for f, *_ in _LISTS}
        sizes["findings"] = len(lists["findings"] or ()) if "findings" in lists else None
        batch["acct_participants"].append(_participant_row(ident, rec, v, prov, sizes))
        pending += 1
        if (cap := capability_row(ident, rec, v, prov)) is not None:
            batch["acct_capabilities"].append(cap)
            pending += 1
        for field, model, table, build in _LISTS:
            items = lists.get(field) or []
            for a in range(0, len(items), ROW_CHUNK):
                try:
                    models = _ADAPTERS[field].validate_python(items[a:a + ROW_CHUNK])
                except ValidationError as exc:
                    raise refuse(_shape(exc, "participants", n, field, a)) from None
                for m in models:
                    _unknown(f"participants.{field}.", m, seen["unknown"])
                batch[table].extend(build(ident, a + i, m, v, prov) for i, m in enumerate(models))
                pending += len(models)
                if pending >= ROW_CHUNK:
                    yield batch
                    batch, pending = {t: [] for t in batch}, 0
            lists.pop(field, None)  # its raw items are no longer needed
        if pending >= ROW_CHUNK:
            yield batch
            batch, pending = {t: [] for t in batch}, 0
    yield batch


_ADAPTERS = {f: TypeAdapter(list[model]) for f, model, *_ in _LISTS}


# -- storage ------------------------------------------------------------------------
def gateway_id(base: str) -> str:
    """A gateway's identity in the store: the base URL given to ``--accounting``, redacted
    (:func:`auditor.redact.redact_url`), without its query, fragment and trailing ``/``: what a
    stored row's ``source_url`` holds up to ``/api/v1/`` (migration 016 works it out of that for
    rows stored before). The accounting API says nothing of the gateway itself."""
    shown = redact_url(base.strip())
    return re.split(r"[?#]", shown, maxsplit=1)[0].rstrip("/")


def _replace_coverage(store: Store, gateway: str, epoch: int | None, rows: list[dict[str, Any]]) -> None:
    """Replace this gateway's accounting coverage rows of ``epoch`` (None: the epoch list) with
    ``rows``; another gateway's rows stay (those of no known gateway, '' from before migration
    016, are replaced: the store then held one gateway per epoch)."""
    with store.transaction():
        store.con.execute(
            "DELETE FROM coverage WHERE source = ? AND epoch IS NOT DISTINCT FROM ? AND gateway IN (?, '')"
            + ("" if epoch is not None else " AND item = 'epoch_list'"), [SOURCE, epoch, gateway])
        store.insert("coverage", [{**r, "gateway": gateway} for r in rows])


def _coverage(epoch: int | None, item: str, status: str, detail: str, url: str | None,
              fetched_at: datetime | None) -> dict[str, Any]:
    return coverage_row(SOURCE, item, status, detail, epoch=epoch, url=url, fetched_at=fetched_at)


def _held(store: Store, epoch: int, gateway: str) -> tuple[int, datetime | None]:
    """Participant records already stored for ``epoch`` from ``gateway`` and when they were fetched."""
    mine = "epoch = ? AND (gateway = ? OR epoch IN (SELECT epoch FROM acct_legacy_epochs))"
    n, at = store.one(f"SELECT count(*), max(fetched_at) FROM acct_participants WHERE {mine}", [epoch, gateway])
    if n == 0:
        n2, at2 = store.one(f"SELECT count(*), max(fetched_at) FROM acct_epochs WHERE {mine}", [epoch, gateway])
        return int(n2), at2
    return int(n), at


def _one_line(exc: ValidationError) -> str:
    errs = exc.errors()
    first = errs[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
    more = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
    return f"{loc}: {first.get('msg', 'invalid')}{more}"


def _fail(store: Store, report: CollectReport, gateway: str, epoch: int, reason: str, url: str | None,
          summary_row: dict[str, Any] | None = None) -> None:
    """Record a failed epoch: always in the run report; in the store only when it holds
    nothing for the epoch yet (earlier good rows and their coverage are kept, so a
    gateway that deleted an old epoch, or is down, does not erase what was collected).
    ``summary_row`` is the epoch's acct_epochs row when the listing gave one."""
    held, at = _held(store, epoch, gateway)
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
            report.add("acct_epochs", store.replace("acct_epochs", {"epoch": epoch, "gateway": gateway}, [summary_row]))
        _replace_coverage(store, gateway, epoch, cov)


def _fetch(client: JsonClient, path: str, parse: Any = json.loads) -> tuple[Response | None, str | None]:
    try:
        return client.get(path, parse=parse), None
    except SourceError as exc:
        return None, str(exc)


def collect(store: Store, client: JsonClient, epochs: list[int] | None, progress: Progress,
            name: str = SOURCE, gateway: str | None = None) -> CollectReport:
    """Collect ``epochs`` (all the gateway lists when None) from the one gateway ``client`` asks
    into the acct_* tables, as that gateway's (``gateway``, by default :func:`gateway_id` of its
    base URL); ``name`` is the run report's."""
    report = CollectReport(name)
    gateway = gateway or gateway_id(client.bases[0])
    listing: EpochsResponse | None = None
    # said before asking, as the chain's collect does: a gateway that does not answer is
    # retried for up to a minute, which was a minute of silence
    progress.log(f"{name}: reading the epoch list from {', '.join(client.shown)}")
    listing_resp, err = _fetch(client, "/api/v1/epochs")
    if listing_resp is not None:
        raw = listing_resp.data.get("epochs") if isinstance(listing_resp.data, dict) else None
        if isinstance(raw, list) and len(raw) > MAX_LISTED:
            err = f"{listing_resp.url}: an epoch list of {len(raw):,} epochs refused (at most {MAX_LISTED:,})"
        else:
            try:
                listing, bad = decode_epoch_list(listing_resp.data)
            except ValidationError as exc:
                err = f"{listing_resp.url} is not an accounting epoch list ({_one_line(exc)})"
    listed: dict[int, EpochSummary] = {}
    if listing is not None:
        for s in listing.epochs:
            if s.epoch_index is not None:
                listed[s.epoch_index] = s
        shown = ", ".join(str(e) for e in sorted(listed)) or "none"
        detail = f"lists epochs {shown} (schema_version {listing.schema_version})"
        for why in bad:     # one bad entry costs that entry: the other epochs are collected
            report.missing.append(f"epoch list: {listing_resp.url}: {why}")
        if bad:
            detail += f"; {len(bad)} entry(ies) skipped: " + "; ".join(bad[:3]) + (" ..." if len(bad) > 3 else "")
        _replace_coverage(store, gateway, None, [_coverage(None, "epoch_list", "partial" if bad else "ok", detail,
                                                           listing_resp.url, listing_resp.fetched_at)])
    else:
        report.missing.append(f"epoch list: {err}")
        _replace_coverage(store, gateway, None, [_coverage(None, "epoch_list", "missing", err or "", None, None)])
        if epochs is None:
            return report

    targets = sorted(set(epochs)) if epochs is not None else sorted(listed)
    if not targets:
        report.notes.append("the gateway lists no epochs")
        return report
    unknown: set[str] = set()
    for epoch in progress.track(targets, f"{name}: epochs"):      # which gateway, when several
        summary = listed.get(epoch)
        summary_row = None
        if listing is not None and listing_resp is not None:
            if summary is None:
                lo, hi = (min(listed), max(listed)) if listed else (0, -1)
                shown = ("none" if not listed else f"{lo}..{hi}" if len(listed) == hi - lo + 1
                         else f"{len(listed)} epochs between {lo} and {hi}")
                _fail(store, report, gateway, epoch, f"not listed by the gateway at {listing_resp.url} (it lists {shown})",
                      listing_resp.url)
                continue
            summary_row = epoch_row(epoch, summary, listing.schema_version,
                                    {"source_url": listing_resp.url, "height": None,
                                     "fetched_at": listing_resp.fetched_at, "gateway": gateway})
        resp, err = _fetch(client, f"/api/v1/epochs/{epoch}/participants", parse=ParticipantsText)
        if resp is None:
            _fail(store, report, gateway, epoch, f"participants not obtained: {err}", None, summary_row)
            continue
        unknown |= _store_epoch(store, report, gateway, epoch, summary_row, resp)
    if unknown:
        report.notes.append("fields this auditor does not know, kept raw in `extra`: " + ", ".join(sorted(unknown)))
    return report


def _store_epoch(store: Store, report: CollectReport, gateway: str, epoch: int,
                 summary_row: dict[str, Any] | None, resp: Response) -> set[str]:
    """Replace everything stored for ``epoch`` from ``gateway`` with this answer, in one transaction, its records
    validated and inserted a chunk at a time (:func:`_streamed_rows`). An answer that turns
    out not to be the documented shape, or to break a key, is rolled back whole and the epoch
    failed. Returns the names of the fields this decoder does not know."""
    prov = {"source_url": resp.url, "height": None, "fetched_at": resp.fetched_at, "gateway": gateway}
    seen: dict[str, Any] = {"versions": set(), "unknown": set()}
    counts = dict.fromkeys(TABLES, 0)
    if summary_row is not None:
        cov = [_coverage(epoch, "epoch_summary", "ok", f"schema_version {summary_row['schema_version']}",
                         summary_row["source_url"], summary_row["fetched_at"])]
    else:
        cov = [_coverage(epoch, "epoch_summary", "missing", "the epoch list was not obtained",
                         None, resp.fetched_at)]
    try:
        with store.transaction():
            # an epoch stored before gateways were kept apart (migration 016) was one gateway's:
            # replaced whole, as then
            legacy = store.one("SELECT count(*) FROM acct_legacy_epochs WHERE epoch = ?", [epoch])[0] > 0
            for t in TABLES:
                store.replace(t, {"epoch": epoch} if legacy else {"epoch": epoch, "gateway": gateway},
                              [summary_row] if t == "acct_epochs" and summary_row else [])
            if legacy:
                store.replace("acct_legacy_epochs", {"epoch": epoch}, [])
            counts["acct_epochs"] = 1 if summary_row is not None else 0
            for batch in _streamed_rows(epoch, resp.data, resp.url, prov, seen):
                for t, rows in batch.items():
                    counts[t] += store.insert(t, rows)
            versions = sorted(seen["versions"])
            cov.append(_coverage(epoch, "participants", "ok",
                                 f"{counts['acct_participants']} records, {counts['acct_counters']} counters, "
                                 f"{counts['acct_slots']} slots (schema_version "
                                 f"{', '.join(map(str, versions)) or 'unknown'})",
                                 resp.url, resp.fetched_at))
            _replace_coverage(store, gateway, epoch, cov)
    except _Shape as exc:
        _fail(store, report, gateway, epoch, f"participants not obtained: {exc}", resp.url, summary_row)
        return set()
    except duckdb.ConstraintException as exc:
        # e.g. two records for the same (participant, model): not the documented shape
        first = str(exc).splitlines()[0]
        _fail(store, report, gateway, epoch, f"participants not stored: {resp.url} breaks a key ({first})", resp.url,
              summary_row)
        return set()
    for t, n in counts.items():
        if n:
            report.add(t, n)
    return seen["unknown"]
