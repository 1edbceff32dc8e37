"""The chain collector: epoch N from a public node into the ``chain_*`` tables.

Follows the fetch plan of chain-api.md section 13. Responses are decoded once,
here, into pydantic models that accept the wire format exactly: 64-bit integers
as strings (or numbers), each checked against its wire type or the narrower column
it is stored in (``Int``: int64, ``U64``: uint64, ``I32``; out of range is a shape
error, so that item is missing and the rest of the epoch stored), ``Decimal`` as
``{value, exponent}`` (within DECIMAL(38,18)), camelCase keys
where the chain uses them, absent or null fields as defaults, unknown fields
ignored, and both shapes of the v0.2.15 dapi.

Everything for one epoch is written in one transaction at the end, so a failed
run never leaves a half-written epoch; items that could not be fetched are
recorded in ``coverage`` and listed in the run report.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Annotated, Any, Callable

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ..errors import NotFoundError, SourceError
from ..heights import EpochParams, cpoc_windows, epoch_boundaries
from ..result import CollectReport
from ..progress import Progress
from ..store import Store, coverage_row, utcnow
from ..redact import redact_text
from .http import JsonClient, Response
from .wire_int import MAX_DIGITS, wire_int

API = "/chain-api/productscience/inference/inference"


# -- wire decoding -------------------------------------------------------------
INT64 = (-2**63, 2**63 - 1)
UINT64 = (0, 2**64 - 1)
INT32 = (-2**31, 2**31 - 1)


def _to_int(v: Any) -> int:
    """A wire integer (:func:`wire_int`); null is the field's default, 0."""
    n = wire_int(v)
    return 0 if n is None else n


def _bounded(lo: int, hi: int, name: str) -> Callable[[Any], int]:
    """The integer of a wire value, which must fit ``name`` (the wire type, or the column it is
    stored in when that is narrower): out of range it is a shape error, not a failed write."""
    def check(v: Any) -> int:
        n = _to_int(v)
        if not lo <= n <= hi:
            shown = str(n) if len(str(n)) <= 24 else f"a {len(str(n))}-digit number"
            raise ValueError(f"{shown} is out of the {name} range")
        return n
    return check


MAX_DECIMAL = Decimal(10) ** 20  # DECIMAL(38,18), the column chain Decimals are stored in
_DECIMAL_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")   # as the wire writes a decimal


def to_decimal(v: Any) -> Decimal | None:
    """Chain ``Decimal`` ``{value, exponent}`` (value × 10^exponent), or a plain number/string."""
    if v is None or v == "" or v == {}:
        return None
    if isinstance(v, dict):
        d = Decimal(_bounded(*INT64, "int64")(v.get("value"))).scaleb(_bounded(*INT32, "int32")(v.get("exponent")))
    elif isinstance(v, bool):
        raise ValueError("a boolean is not a decimal")
    elif isinstance(v, (int, str)):
        if len(str(v).strip()) > MAX_DIGITS:
            raise ValueError(f"a number of {len(str(v).strip())} characters is out of range")
        if isinstance(v, str) and not _DECIMAL_TEXT.fullmatch(v):     # Decimal() reads "7_5" and "٧٥" too
            raise ValueError(f"{v[:40]!r} is not a number in decimal digits")
        d = Decimal(str(v))
    elif isinstance(v, float):
        d = Decimal(repr(v))
    else:
        raise ValueError(f"not a decimal: {v!r}")
    return d


def _storable_decimal(d: Decimal | None) -> Decimal | None:
    if d is not None and (not d.is_finite() or abs(d) >= MAX_DECIMAL):
        raise ValueError(f"{d} is out of the DECIMAL(38,18) range")
    return d


Int = Annotated[int, BeforeValidator(_bounded(*INT64, "int64"))]  # int64 on the wire, or a BIGINT column
U64 = Annotated[int, BeforeValidator(_bounded(*UINT64, "uint64"))]  # uint64 counts and ids
I32 = Annotated[int, BeforeValidator(_bounded(*INT32, "int32"))]
# int64 weights stored as HUGEINT: either 64-bit range is kept exactly (uint64 max included)
W64 = Annotated[int, BeforeValidator(_bounded(INT64[0], UINT64[1], "64-bit"))]
Dec = Annotated[Decimal | None, BeforeValidator(to_decimal), AfterValidator(_storable_decimal)]


class Wire(BaseModel):
    """Base of every response model: unknown fields ignored, null means default."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


class MLNodeInfo(Wire):
    node_id: str = ""
    throughput: W64 = 0
    poc_weight: W64 = 0
    timeslot_allocation: list[bool] = []


class ValidationWeight(Wire):
    member_address: str = ""
    weight: W64 = 0
    reputation: I32 = 0
    ml_nodes: list[MLNodeInfo] = []
    confirmation_weight: W64 = 0
    voting_power: W64 = 0


class WeightScale(Wire):
    model_id: str = ""
    weight_scale_factor: Dec = None


class EpochGroupData(Wire):
    poc_start_block_height: Int = 0
    epoch_group_id: Int = 0
    effective_block_height: Int = 0
    last_block_height: Int = 0
    validation_weights: list[ValidationWeight] = []
    total_weight: W64 = 0
    model_id: str = ""
    sub_group_models: list[str] = []
    epoch_index: U64 = 0
    confirmation_weight_scales: list[WeightScale] = []


class EpochGroupDataResponse(Wire):
    epoch_group_data: EpochGroupData


class PerformanceSummary(Wire):
    epoch_index: U64 = 0
    participant_id: str = ""
    inference_count: U64 = 0
    missed_requests: U64 = 0
    earned_coins: U64 = 0
    rewarded_coins: U64 = 0
    burned_coins: U64 = 0
    validated_inferences: U64 = 0
    invalidated_inferences: U64 = 0
    claimed: bool = False


class PerformanceSummaryList(Wire):
    summaries: list[PerformanceSummary] = Field(default=[], alias="epochPerformanceSummary")


class PerformanceSummaryOne(Wire):
    summary: PerformanceSummary = Field(alias="epochPerformanceSummary")


class EpochParamsWire(Wire):
    epoch_length: Int = 0
    poc_stage_duration: Int = 0
    poc_exchange_duration: Int = 0
    poc_validation_delay: Int = 0
    poc_validation_duration: Int = 0
    set_new_validators_delay: Int = 0
    inference_validation_cutoff: Int = 0
    confirmation_poc_safety_window: Int = 0
    poc_slot_allocation: Dec = None

    @model_validator(mode="before")
    @classmethod
    def _unnest(cls, data: Any) -> Any:
        # v0.2.15 dapi shape: the whole object one level deeper, ints as strings
        if isinstance(data, dict) and isinstance(data.get("epoch_params"), dict):
            return data["epoch_params"]
        return data

    def heights(self) -> EpochParams:
        return EpochParams(
            epoch_length=self.epoch_length,
            poc_stage_duration=self.poc_stage_duration,
            poc_validation_delay=self.poc_validation_delay,
            poc_validation_duration=self.poc_validation_duration,
            set_new_validators_delay=self.set_new_validators_delay,
            poc_exchange_duration=self.poc_exchange_duration,
            inference_validation_cutoff=self.inference_validation_cutoff,
        )


class ValidationParams(Wire):
    binom_test_p0: Dec = None
    expiration_blocks: Int = 0


class Params(Wire):
    epoch_params: EpochParamsWire = EpochParamsWire()
    validation_params: ValidationParams = ValidationParams()


class ParamsResponse(Wire):
    params: Params


class ExcludedItem(Wire):
    address: str = ""
    epoch_index: U64 = 0
    reason: str = ""
    exclusion_block_height: Int = 0


class ExcludedResponse(Wire):
    items: list[ExcludedItem] = []


class CpocEvent(Wire):
    epoch_index: U64 = 0
    event_sequence: Int = 0
    trigger_height: Int = 0
    generation_start_height: Int = 0
    phase: str = ""
    poc_seed_block_hash: str = ""


class CpocEventsResponse(Wire):
    events: list[CpocEvent] = []


class PreservedParticipant(Wire):
    participant_id: str = ""
    node_ids: list[str] = []


class PreservedModel(Wire):
    model_id: str = ""
    participants: list[PreservedParticipant] = []


class PreservedSnapshot(Wire):
    episode_anchor_height: Int = 0
    model_preserved_nodes: list[PreservedModel] = []


class PreservedSnapshotResponse(Wire):
    found: bool = False
    snapshot: PreservedSnapshot | None = None


class ModelRecord(Wire):
    id: str = ""
    units_of_compute_per_token: U64 = 0
    context_window: U64 = 0
    v_ram: U64 = 0
    throughput_per_nonce: U64 = 0


class Pagination(Wire):
    next_key: str = ""
    total: U64 = 0


MAX_PAGES = 100   # pages of one paginated list: 100,000 models at 1,000 a page, 10^6 participants at 10,000


@dataclass
class Pages:
    """The ``pagination.next_key`` walk of one list: it ends at an empty key, and also at a key
    already asked (a node that answers the same ``next_key`` again would be asked forever)
    or after ``cap`` pages; :attr:`stopped` then says why, for the one line the caller shows."""

    what: str
    cap: int = MAX_PAGES
    key: str = ""
    pages: int = 0
    stopped: str | None = None
    _asked: set[str] = field(default_factory=set)

    def params(self, limit: int | str) -> dict[str, Any]:
        """The query of the next page."""
        return {"pagination.limit": limit, **({"pagination.key": self.key} if self.key else {})}

    def advance(self, next_key: str) -> bool:
        """Record one page's ``next_key``: whether there is a next page to ask."""
        self.pages += 1
        self._asked.add(self.key)
        if not next_key:
            return False
        if next_key in self._asked:
            self.stopped = (f"{self.what}: the node answered next_key {next_key[:40]!r} again after "
                            f"{self.pages} page(s); the list is read up to there")
        elif self.pages >= self.cap:
            self.stopped = f"{self.what}: the list did not end after {self.cap} pages; read up to there"
        else:
            self.key = next_key
            return True
        return False


class ModelsResponse(Wire):
    model: list[ModelRecord] = []
    pagination: Pagination = Pagination()


class BlockHeader(Wire):
    height: Int = 0
    time: str = ""


class BlockResponse(Wire):
    header: BlockHeader

    @model_validator(mode="before")
    @classmethod
    def _dig(cls, data: Any) -> Any:
        # CometBFT JSON-RPC: {"jsonrpc", "id", "result": {"block_id", "block": {"header": ...}}}
        if isinstance(data, dict) and "result" in data:
            result = data.get("result") or {}
            return {"header": ((result.get("block") or {}).get("header"))}
        return data


class LatestEpoch(Wire):
    index: U64 = 0
    poc_start_block_height: Int = 0


class Stages(Wire):
    """``epoch_stages`` of dapi ``/v1/epochs/latest``: the current epoch's heights (``auditor watch``)."""

    epoch_index: Int = 0
    poc_start: Int = 0
    poc_validation_end: Int = 0
    next_poc_start: Int = 0


class DapiLatestEpoch(Wire):
    """dapi ``/v1/epochs/latest`` in either v0.2.15 shape (chain-api.md 1.4)."""

    block_height: Int = 0
    latest_epoch: LatestEpoch = LatestEpoch()
    epoch_stages: Stages = Stages()
    phase: str = ""
    epoch_params: EpochParamsWire = EpochParamsWire()
    is_confirmation_poc_active: bool = False
    active_confirmation_poc_event: CpocEvent | None = None


def decode(model: type[Wire], resp: Response) -> Any:
    try:
        return model.model_validate(resp.data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise SourceError(f"{resp.url}: unexpected response shape at {where}: {first.get('msg')}") from exc


def parse_block_time(text: str) -> datetime:
    """RFC 3339 with up to nanoseconds → aware datetime (microseconds; the text keeps the rest)."""
    t = text.strip().replace("Z", "+00:00")
    if "." in t:
        head, rest = t.split(".", 1)
        digits = "".join(ch for ch in rest if ch.isdigit())
        tz = rest[len(digits):]
        t = f"{head}.{(digits + '000000')[:6]}{tz}"
    return datetime.fromisoformat(t).astimezone(timezone.utc)


# -- collection ------------------------------------------------------------------
@dataclass
class _Run:
    """One epoch's collection: what the steps have learnt so far, and the rows gathered
    for the single write transaction at the end."""

    epoch: int
    client: JsonClient
    report: CollectReport
    progress: Progress
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    coverage: list[dict[str, Any]] = field(default_factory=list)
    block_times: list[dict[str, Any]] = field(default_factory=list)
    # learnt by the steps, in order
    root: EpochGroupData | None = None
    root_resp: Response | None = None
    nxt: EpochGroupData | None = None  # root group of N+1; None while N is not settled
    head: int | None = None
    p: EpochParams | None = None
    bounds: dict[str, int] = field(default_factory=dict)
    settled: bool = False
    events: list[CpocEvent] = field(default_factory=list)

    @property
    def start(self) -> int:
        return self.root.poc_start_block_height

    @property
    def next_start(self) -> int | None:
        return self.nxt.poc_start_block_height if self.nxt else None

    @property
    def settlement(self) -> int | None:
        return self.bounds.get("V(N+1) settlement")

    def rows(self, table: str) -> list[dict[str, Any]]:
        return self.tables.setdefault(table, [])

    def fetch(self, item: str, path: str, model: type[Wire], *, params: dict | None = None,
              height: int | None = None, required: bool = False,
              check: Callable[[Any], str | None] | None = None) -> tuple[Any, Response] | None:
        """Fetch and decode one item; a failure, or an answer ``check`` rejects with a reason,
        is recorded as missing (or raised as a SourceError if required)."""
        try:
            resp = self.client.get(path, params, height=height)
            value = decode(model, resp)
        except SourceError as exc:
            if required:
                raise
            self.missing(item, str(exc), height=height)
            return None
        why = check(value) if check else None
        if why and required:
            raise SourceError(f"{resp.url}: {why}")
        if why:
            self.missing(item, why, height=height, url=resp.url)
            return None
        self.coverage.append(_cov(self.epoch, item, "ok", None, resp.url, height, resp.fetched_at))
        return value, resp

    def missing(self, item: str, why: str, *, height: int | None = None, url: str | None = None) -> None:
        self.report.missing.append(f"{item}: {why}")
        self.coverage.append(_cov(self.epoch, item, "missing", why, url, height, utcnow()))


def _foreign(epoch: int, indices: list[int], what: str) -> str | None:
    """The shape error of an answer that has items and none of them of ``epoch``
    (an epoch_index of 0 is one the node did not say): a node answering for another epoch."""
    if indices and not {0, epoch} & set(indices):
        return f"unexpected response shape: {what} of epoch {', '.join(map(str, sorted(set(indices))))}, not {epoch}"
    return None


def _ours(epoch: int, items: list[Any]) -> list[Any]:
    """The items of ``epoch`` (or that do not say)."""
    return [x for x in items if x.epoch_index in (0, epoch)]


def _group_of(epoch: int) -> Callable[[EpochGroupDataResponse], str | None]:
    return lambda r: _foreign(epoch, [r.epoch_group_data.epoch_index], "epoch group data")


def _cov(epoch, item, status, detail, url, height, fetched_at) -> dict[str, Any]:
    return coverage_row("chain", item, status, detail, epoch=epoch, url=url, height=height, fetched_at=fetched_at)


def _prov(resp: Response) -> dict[str, Any]:
    return {"source_url": resp.url, "height": resp.height, "fetched_at": resp.fetched_at}


CHAIN_EPOCH_TABLES = (
    "chain_epochs", "chain_params", "chain_epoch_models", "chain_validation_weights", "chain_ml_nodes",
    "chain_performance", "chain_excluded", "chain_cpoc_events", "chain_preserved_nodes", "chain_models",
    "chain_epoch_heights",
)


def is_cached(store: Store, epoch: int) -> bool:
    row = store.one(
        "SELECT settled AND complete FROM chain_epochs WHERE epoch = ?", [epoch])
    return bool(row and row[0])


def collect_epoch(store: Store, client: JsonClient, epoch: int, progress: Progress,
                  *, refresh: bool = False) -> CollectReport:
    """Collect epoch N. A finished, complete epoch already in the store is not fetched again.

    The root group of N is required; after it, each step records what it could not get
    in ``coverage``, and a step that fails unexpectedly is recorded as missing too, so what
    the other steps fetched is still stored (the epoch is then not complete)."""
    report = CollectReport(source=f"chain epoch {epoch}")
    if not refresh and is_cached(store, epoch):
        report.skipped.append(f"epoch {epoch}: finished and complete in the store (use --refresh to fetch again)")
        return report
    run = _Run(epoch, client, report, progress)
    sent_before = client.requests_sent
    progress.log(f"chain epoch {epoch}: reading from {', '.join(client.shown)}")
    _root_group(run)
    for item, step in _STEPS:
        try:
            step(run)
        except Exception as exc:  # noqa: BLE001 (an answer nothing anticipated must not lose the others)
            run.missing(item, redact_text(f"internal error {type(exc).__name__}: {exc}"))
    _drop_unstorable(store, run)
    run.rows("chain_epochs").append(_epoch_row(run))
    _write(store, run)
    report.notes.append(f"{client.requests_sent - sent_before} requests")
    progress.log(_in_words(run))
    for table, rows in run.tables.items():
        if rows:
            report.add(table, len(rows))
    if run.block_times:
        report.add("chain_block_times", len(run.block_times))
    return report


def _in_words(run: _Run) -> str:
    """What was read of the epoch, as its progress says it: ``chain epoch 403: 27 participants,
    3 models, 1 cPoC``."""
    def n(count: int, what: str) -> str:
        return f"{count:,} {what}{'' if count == 1 else 's'}"

    participants = len({r["participant"] for r in run.rows("chain_performance")})
    return (f"chain epoch {run.epoch}: {n(participants, 'participant')}, {n(len(run.rows('chain_epoch_models')), 'model')}, "
            f"{n(len(run.rows('chain_cpoc_events')), 'cPoC')}")


def _root_group(run: _Run) -> None:
    """1. Root group of N (required: without it there is no epoch to audit)."""
    try:
        root, run.root_resp = run.fetch("epoch_group_data", f"{API}/epoch_group_data/{run.epoch}",
                                        EpochGroupDataResponse, required=True, check=_group_of(run.epoch))
    except NotFoundError as exc:
        raise SourceError(_not_found(run, exc)) from exc
    run.root = root.epoch_group_data


def _not_found(run: _Run, exc: NotFoundError) -> str:
    """Epoch N's root group is 404: no such epoch, or, when /v1/epochs/latest is 404 too, no chain."""
    try:
        run.client.get("/v1/epochs/latest")
    except NotFoundError:
        return (f"{', '.join(run.client.shown)} is not a Gonka chain API: it answers 404 to "
                f"epoch_group_data/{run.epoch} and to /v1/epochs/latest")
    except SourceError:
        pass
    return f"epoch {run.epoch} does not exist on the chain ({exc})"


def _next_root_group(run: _Run) -> None:
    """2. Root group of N+1: S(N+1); absent means N is not settled yet."""
    item = "epoch_group_data (N+1)"
    try:
        got = run.fetch(item, f"{API}/epoch_group_data/{run.epoch + 1}", EpochGroupDataResponse, required=True,
                        check=_group_of(run.epoch + 1))
        run.nxt = got[0].epoch_group_data
    except NotFoundError:
        run.report.notes.append(f"epoch {run.epoch + 1} does not exist yet: epoch {run.epoch} is not settled")
        run.coverage.append(_cov(run.epoch, item, "missing", "not created yet", None, None, utcnow()))
    except SourceError as exc:
        run.missing(item, str(exc))


def _params(run: _Run) -> None:
    """3. Chain head, then params in force during N (pinned at S(N+1)) and at settlement
    (V(N+1) - 1); the boundary heights, and whether N is settled."""
    latest = run.fetch("latest height", "/v1/epochs/latest", DapiLatestEpoch)
    run.head = latest[0].block_height if latest else None
    got = run.fetch("params (epoch)", f"{API}/params", ParamsResponse, height=run.next_start)
    if not got:
        return
    run.rows("chain_params").append(_params_row(run.epoch, "epoch", got[0].params, got[1]))
    p = got[0].params.epoch_params.heights()
    bounds = epoch_boundaries(run.start, run.next_start, p)
    if why := _beyond_int64(bounds):
        run.missing("params (epoch)", f"{got[1].url}: unexpected response shape: boundary heights {why}")
        return
    run.p, run.bounds = p, bounds
    settlement = run.settlement
    run.settled = settlement is not None and run.head is not None and run.head > settlement
    if settlement is not None and run.head is None:
        run.settled = True  # the next epoch exists and so does its root group: assume settled, say so
        run.report.notes.append("chain head unknown; assuming the epoch is settled because epoch N+1 exists")
    if run.settled:
        got = run.fetch("params (settlement)", f"{API}/params", ParamsResponse, height=settlement - 1)
        if got:
            run.rows("chain_params").append(_params_row(run.epoch, "settlement", got[0].params, got[1]))


def _model_groups(run: _Run) -> None:
    """4. Weights of the root group, then each per-model subgroup."""
    scales = {s.model_id: s.weight_scale_factor for s in run.root.confirmation_weight_scales}
    _weights(run, "", run.root.validation_weights, _prov(run.root_resp))
    for model_id in run.progress.track(run.root.sub_group_models, f"chain epoch {run.epoch}: model groups"):
        got = run.fetch(f"epoch_group_data model={model_id}", f"{API}/epoch_group_data/{run.epoch}",
                        EpochGroupDataResponse, params={"model_id": model_id}, check=_group_of(run.epoch))
        if not got:
            continue
        g, resp = got[0].epoch_group_data, got[1]
        _weights(run, model_id, g.validation_weights, _prov(resp))
        nodes = [n for w in g.validation_weights for n in w.ml_nodes]
        run.rows("chain_epoch_models").append({
            "epoch": run.epoch, "model_id": model_id, "total_weight": g.total_weight,
            "poc_weight_sum": sum(n.poc_weight for n in nodes), "members": len(g.validation_weights),
            "nodes": len(nodes), "weight_scale_factor": scales.get(model_id), **_prov(resp)})


def _performance(run: _Run) -> None:
    """5a. Performance summaries of N: only rows of N are kept, and an answer that keeps
    none when it should (rows of another epoch; nothing for a settled epoch) is missing."""
    def usable(r: PerformanceSummaryList) -> str | None:
        if run.settled and not r.summaries:
            return "the node returned no rows for a settled epoch"
        return _foreign(run.epoch, [s.epoch_index for s in r.summaries], "summaries")

    got = run.fetch("epoch_performance_summary", f"{API}/epoch_performance_summary/{run.epoch}",
                    PerformanceSummaryList, check=usable)
    if not got:
        return
    for s in _ours(run.epoch, got[0].summaries):
        run.rows("chain_performance").append({
            "epoch": run.epoch, "participant": s.participant_id, "inference_count": s.inference_count,
            "missed_requests": s.missed_requests, "earned_coins": s.earned_coins,
            "rewarded_coins": s.rewarded_coins, "burned_coins": s.burned_coins,
            "validated_inferences": s.validated_inferences,
            "invalidated_inferences": s.invalidated_inferences, "claimed": s.claimed, **_prov(got[1])})


def _exclusions(run: _Run) -> None:
    """5b. Participants excluded in N."""
    got = run.fetch("excluded_participants", f"{API}/excluded_participants/{run.epoch}", ExcludedResponse,
                    check=lambda r: _foreign(run.epoch, [x.epoch_index for x in r.items], "exclusions"))
    if got:
        for x in _ours(run.epoch, got[0].items):
            run.rows("chain_excluded").append({
                "epoch": run.epoch, "participant": x.address, "reason": x.reason,
                "exclusion_height": x.exclusion_block_height, **_prov(got[1])})


def _cpoc_events(run: _Run) -> None:
    """5c. Confirmation-PoC events, with their computed windows (added to the boundary heights)."""
    got = run.fetch("confirmation_poc_events", f"{API}/confirmation_poc_events/{run.epoch}", CpocEventsResponse,
                    check=lambda r: _foreign(run.epoch, [e.epoch_index for e in r.events], "events"))
    run.events = _ours(run.epoch, got[0].events) if got else []
    p = run.p
    for ev in run.events:
        w = cpoc_windows(ev.trigger_height, p) if p else None
        if w and (why := _beyond_int64(vars(w))):
            run.missing(f"confirmation_poc_event {ev.event_sequence} windows", f"{got[1].url}: {why}")
            w = None
        run.rows("chain_cpoc_events").append({
            "epoch": run.epoch, "event_sequence": ev.event_sequence, "trigger_height": ev.trigger_height,
            "generation_start_height": ev.generation_start_height or None, "phase": ev.phase,
            "poc_seed_block_hash": ev.poc_seed_block_hash,
            "gen_start": w.gen_start if w else None, "gen_end": w.gen_end if w else None,
            "exchange_end": w.exchange_end if w else None, "val_start": w.val_start if w else None,
            "val_end": w.val_end if w else None, **_prov(got[1])})
        if w:
            seq = ev.event_sequence
            run.bounds.update({f"cpoc:{seq} trigger": w.trigger, f"cpoc:{seq} gen_start": w.gen_start,
                               f"cpoc:{seq} gen_end": w.gen_end, f"cpoc:{seq} val_start": w.val_start,
                               f"cpoc:{seq} val_end": w.val_end})


def _preserved_episodes(run: _Run) -> None:
    """6. Preserved-node snapshots of every episode, pinned and anchor-checked."""
    episodes = [("poc_start", run.start, run.start)]
    if run.next_start is not None:
        episodes.append(("poc_next", run.next_start, run.next_start))
    if run.p:
        for ev in run.events:
            w = cpoc_windows(ev.trigger_height, run.p)
            if not _beyond_int64(vars(w)):
                episodes.append((f"cpoc:{ev.event_sequence}", ev.trigger_height, w.gen_start))
    for episode, anchor, at in episodes:
        _preserved(run, episode, anchor, at)


def _models_at_settlement(run: _Run) -> None:
    """7. Models, read at settlement (or unpinned while the epoch is open)."""
    _models(run, run.settlement - 1 if run.settled else None)


EARLIEST_BLOCK = datetime(2024, 1, 1, tzinfo=timezone.utc)     # before the Gonka chain's genesis (2025)


def _implausible(t: datetime) -> str | None:
    """Why a block time cannot be the chain's: before it began, or later than tomorrow."""
    if t < EARLIEST_BLOCK:
        return f"older than the chain (before {EARLIEST_BLOCK:%Y-%m-%d})"
    if t > datetime.now(timezone.utc) + timedelta(days=1):
        return "more than a day in the future"
    return None


def _out_of_order(run: _Run) -> None:
    """Block times must grow with height: the times of a pair that do not are both wrong
    shapes (which one is wrong cannot be told), so missing, and not stored."""
    times = sorted(run.block_times, key=lambda bt: bt["height"])
    bad: dict[int, str] = {}
    for a, b in zip(times, times[1:]):
        if a["time"] > b["time"]:
            for this, other in ((a, b), (b, a)):
                bad.setdefault(this["height"], f"unexpected response shape: time {this['time_text']!r} is out of "
                                               f"order with height {other['height']}'s {other['time_text']!r}")
    items = {f"block time {h}" for h in bad}
    run.coverage = [c for c in run.coverage if c["item"] not in items]
    for h, why in bad.items():
        run.missing(f"block time {h}", why, height=h)
    run.block_times = [bt for bt in run.block_times if bt["height"] not in bad]


def _block_times(run: _Run) -> None:
    """8. Block times of every boundary height: a time before the chain, in the future, or out
    of order with the others is a wrong shape (missing, not stored)."""
    for name, h in run.bounds.items():
        run.rows("chain_epoch_heights").append({"epoch": run.epoch, "name": name, "height": h})
    for h in run.progress.track(sorted(set(run.bounds.values())), f"chain epoch {run.epoch}: block times"):
        if run.head is not None and h > run.head:
            run.coverage.append(_cov(run.epoch, f"block time {h}", "missing", "height not reached yet", None, h,
                                     utcnow()))
            continue
        got = run.fetch(f"block time {h}", "/chain-rpc/block", BlockResponse, params={"height": h},
                        check=_block_time_shape)
        if got:
            hdr = got[0].header
            run.block_times.append({"height": h, "time": parse_block_time(hdr.time), "time_text": hdr.time,
                                    "source_url": got[1].url, "fetched_at": got[1].fetched_at})
    _out_of_order(run)


def _block_time_shape(block: BlockResponse) -> str | None:
    """Why a block's time is not one the chain can have, or None."""
    try:
        t = parse_block_time(block.header.time)
    except ValueError:
        return f"unreadable time {block.header.time!r}"
    why = _implausible(t)
    return f"unexpected response shape: time {block.header.time!r} is {why}" if why else None


# the steps after the root group, in order, each with the item it stands for when it fails
_STEPS: tuple[tuple[str, Callable[[_Run], None]], ...] = (
    ("epoch_group_data (N+1)", _next_root_group),
    ("params", _params),
    ("model groups", _model_groups),
    ("epoch_performance_summary", _performance),
    ("excluded_participants", _exclusions),
    ("confirmation_poc_events", _cpoc_events),
    ("preserved_nodes_snapshot", _preserved_episodes),
    ("models_all", _models_at_settlement),
    ("block times", _block_times),
)


def _epoch_row(run: _Run) -> dict[str, Any]:
    root = run.root
    return {
        "epoch": run.epoch, "poc_start_height": run.start, "poc_gen_end_height": run.bounds.get("PoC gen end (N)"),
        "poc_val_end_height": run.bounds.get("V(N)"), "effective_height": root.effective_block_height or None,
        "last_height": root.last_block_height or None, "next_poc_start_height": run.next_start,
        "settlement_height": run.settlement, "next_effective_height": run.bounds.get("SNV(N+1)"),
        "epoch_group_id": root.epoch_group_id, "total_weight": root.total_weight, "settled": run.settled,
        "complete": not run.report.missing and run.nxt is not None, **_prov(run.root_resp)}


def _weights(run: _Run, model_id: str, weights: list[ValidationWeight], prov: dict[str, Any]) -> None:
    for w in weights:
        run.rows("chain_validation_weights").append({
            "epoch": run.epoch, "model_id": model_id, "participant": w.member_address, "weight": w.weight,
            "confirmation_weight": w.confirmation_weight, "reputation": w.reputation,
            "voting_power": w.voting_power, **prov})
        for n in w.ml_nodes if model_id else ():
            run.rows("chain_ml_nodes").append({
                "epoch": run.epoch, "model_id": model_id, "participant": w.member_address, "node_id": n.node_id,
                "poc_weight": n.poc_weight, "throughput": n.throughput,
                "timeslot_allocation": n.timeslot_allocation, **prov})


def _params_row(epoch: int, purpose: str, params: Params, resp: Response) -> dict[str, Any]:
    e, v = params.epoch_params, params.validation_params
    return {
        "epoch": epoch, "purpose": purpose, "epoch_length": e.epoch_length,
        "poc_stage_duration": e.poc_stage_duration, "poc_exchange_duration": e.poc_exchange_duration,
        "poc_validation_delay": e.poc_validation_delay, "poc_validation_duration": e.poc_validation_duration,
        "set_new_validators_delay": e.set_new_validators_delay,
        "inference_validation_cutoff": e.inference_validation_cutoff,
        "confirmation_poc_safety_window": e.confirmation_poc_safety_window,
        "poc_slot_allocation": e.poc_slot_allocation, "binom_test_p0": v.binom_test_p0,
        "expiration_blocks": v.expiration_blocks, "raw": json.dumps(resp.data.get("params")), **_prov(resp)}


def _preserved(run: _Run, episode: str, anchor: int, at: int) -> None:
    def anchored(r: PreservedSnapshotResponse) -> str | None:
        if not r.found or r.snapshot is None:
            return f"no snapshot at height {at}"
        if r.snapshot.episode_anchor_height != anchor:
            return f"anchor {r.snapshot.episode_anchor_height} at height {at}, expected {anchor}"
        return None

    got = run.fetch(f"preserved_nodes_snapshot {episode}", f"{API}/preserved_nodes_snapshot",
                    PreservedSnapshotResponse, height=at, check=anchored)
    if not got:
        return
    snap, resp = got
    for m in snap.snapshot.model_preserved_nodes:
        for part in m.participants:
            for node in part.node_ids:
                run.rows("chain_preserved_nodes").append({
                    "epoch": run.epoch, "episode": episode, "anchor_height": anchor, "model_id": m.model_id,
                    "participant": part.participant_id, "node_id": node, **_prov(resp)})


def _models(run: _Run, height: int | None) -> None:
    seen: set[str] = set()
    pages = Pages("models_all")
    while True:
        got = run.fetch("models_all", f"{API}/models_all", ModelsResponse, params=pages.params(1000), height=height)
        if not got:
            return
        page, resp = got
        raw_models = resp.data.get("model") or []
        for m, raw in zip(page.model, raw_models):
            if m.id in seen:
                continue
            seen.add(m.id)
            run.rows("chain_models").append({
                "epoch": run.epoch, "model_id": m.id, "units_of_compute_per_token": m.units_of_compute_per_token,
                "context_window": m.context_window, "v_ram": m.v_ram,
                "throughput_per_nonce": m.throughput_per_nonce,
                "raw": json.dumps(raw), **_prov(resp)})
        if not pages.advance(page.pagination.next_key):
            if pages.stopped:
                run.missing("models_all", pages.stopped, height=height)
            return


def _beyond_int64(heights: dict[str, Any]) -> str | None:
    """Why computed heights cannot be stored (BIGINT), or None: sums of in-range values can overflow."""
    for name, h in heights.items():
        if isinstance(h, int) and not INT64[0] <= h <= INT64[1]:
            return f"out of the int64 range ({name} = {h})"
    return None


_COLUMN_RANGES = {"BIGINT": INT64, "INTEGER": INT32, "UBIGINT": UINT64, "HUGEINT": (-2**127, 2**127 - 1)}


def _drop_unstorable(store: Store, run: _Run) -> None:
    """The last guard before the write: a table whose rows hold an integer its column cannot
    take is not written, and is missing, so one bad value never costs the epoch's other rows.
    (The wire models refuse such values already; this catches what was computed from them.)"""
    for table, rows in run.tables.items():
        types = store.column_types(table)
        for row in rows:
            bad = next(((c, v) for c, v in row.items() if isinstance(v, int) and not isinstance(v, bool)
                        and (r := _COLUMN_RANGES.get(types.get(c, "").upper()))
                        and not r[0] <= v <= r[1]), None)
            if bad:
                run.missing(table, f"not stored: {bad[0]} = {bad[1]} is out of the {types[bad[0]]} range")
                rows.clear()
                break
        # an answer listing one key twice (a participant in a summary twice) would fail the whole
        # epoch's write on the table's key: that table is missing, the others are stored
        key = store.key_columns(table)
        seen: set[tuple] = set()
        for row in rows if key else []:
            k = tuple(row.get(c) for c in key)
            if k in seen:
                run.missing(table, "not stored: the answer lists " + ", ".join(f"{c} = {v!r}" for c, v in zip(key, k)
                                                                               if c != "epoch") + " twice")
                rows.clear()
                break
            seen.add(k)


def _write(store: Store, run: _Run) -> None:
    """Replace every chain row of the epoch in one transaction."""
    with store.transaction():
        for table in CHAIN_EPOCH_TABLES:
            store.replace(table, {"epoch": run.epoch}, run.tables.get(table, []))
        store.replace("coverage", {"source": "chain", "epoch": run.epoch}, run.coverage)
        store.con.execute("DELETE FROM chain_block_times WHERE list_contains(?, height)",
                          [[bt["height"] for bt in run.block_times]])
        store.insert("chain_block_times", run.block_times)
