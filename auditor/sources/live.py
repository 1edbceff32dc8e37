"""What ``auditor watch`` reads of the running epoch, through the shared HTTP client.

One :func:`read` is one reading: the state of the current epoch's miss test inputs at one
height, from up to three kinds of source, with no miss counted twice.

- **The chain** (a public node, ``--node``): dapi ``/v1/epochs/latest`` (chain-api.md 2.4)
  for the height and the epoch's stages; ``params`` for ``binom_test_p0``; the paginated
  ``participant`` list (3.3) for each participant's ``current_epoch_stats``, which hold only
  the escrows already settled on chain this epoch (9.2, 12.4); ``devshard_escrow/{id}``
  (12.3) for whether an escrow is settled; CometBFT ``block`` (4.1) for the block time.
- **The gateway's accounting API** (``--accounting``): ``/api/v1/epochs/{E}/participants``
  (gateway-accounting.md 2), per (escrow, slot) the assigned nonces and ``protocol_misses``.
- **A devshard host** (``--host``, the host's ``/devshard/<version>`` base): ``stats/shards``
  and ``stats/shards/{escrow_id}`` (chain-api.md 12.6), its slots' ``missed`` at its nonce.

An escrow that ``devshard_escrow/{id}`` says is settled is already in the chain's counters,
so its slots from the accounting or the host are left out; an unsettled slot reported by
both the host and the accounting is counted once, from the host (its own state, the one it
signs at settlement). A settled escrow never changes again, so it is asked once per process.

The epoch being watched is the one whose counters are running: epoch E's counters start
when E-1 is settled at V(E) (the end of E's PoC validation) and are settled at V(E+1)
(chain-api.md section 4), so ``start = V(E)``, ``end = V(E+1) = V(E) + epoch_length``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from urllib.parse import quote

from pydantic import ValidationError

from ..errors import NotFoundError, SourceError, UsageError
from .accounting import MAX_ROWS, ParticipantRecord, ParticipantsText
from .chain import (API, BlockResponse, DapiLatestEpoch, Int, Pages, Pagination, ParamsResponse, Wire, decode,
                    parse_block_time)
from .escrows import DevshardEscrowResponse
from .http import JsonClient
from .wire_int import is_decimal

WATCH_BURST = 20          # a minute's worth: the node's own limiter allows 200 (chain-api.md 1.7)


# -- wire models the other collectors do not need -------------------------------------------
class EpochStats(Wire):
    inference_count: Int = 0
    missed_requests: Int = 0


class LiveParticipant(Wire):
    index: str = ""
    address: str = ""
    status: str = ""
    current_epoch_stats: EpochStats = EpochStats()


class ParticipantList(Wire):
    participant: list[LiveParticipant] = []
    pagination: Pagination = Pagination()
    block_height: Int = 0


class ShardRef(Wire):
    escrow_id: str = ""
    epoch_id: Int = 0


class Shards(Wire):
    current_epoch_id: Int = 0
    shards: list[ShardRef] = []


class SlotStats(Wire):
    missed: Int = 0
    invalid: Int = 0


class Shard(Wire):
    escrow_id: str = ""
    epoch_id: Int = 0
    nonce: Int = 0
    host_stats: dict[str, SlotStats] = {}


# -- a reading ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Window:
    """The running epoch: its counters run over heights [start, end)."""

    epoch: int
    height: int
    start: int
    end: int

    @property
    def progress(self) -> float:
        span = self.end - self.start
        return 0.0 if span <= 0 else min(1.0, max(0.0, (self.height - self.start) / span))


@dataclass(frozen=True)
class Unsettled:
    """One slot of an escrow not settled on chain: its assigned nonces and misses so far."""

    escrow_id: str
    slot_id: int
    participant: str
    assigned: int
    missed: int
    source: str            # "accounting" or "host"


@dataclass
class Reading:
    window: Window
    taken_at: datetime
    governance_p0: Decimal | None
    chain: dict[str, tuple[int, int]]                 # participant -> (inference_count, missed_requests)
    unsettled: list[Unsettled] = field(default_factory=list)
    settled_escrows: list[str] = field(default_factory=list)   # reported off chain, already on chain
    seconds_per_block: float | None = None
    missing: list[str] = field(default_factory=list)  # asked for, not obtained: the answer is incomplete
    notes: list[str] = field(default_factory=list)
    requests_sent: int = 0
    sources: list[str] = field(default_factory=lambda: ["chain"])   # what was asked


def assigned(slot_id: int, nonce: int, slots: int) -> int:
    """Nonces assigned to a slot at ``nonce`` (chain-api.md 12.4): 0 before its first."""
    if slots <= 0:
        return 0
    first = slots if slot_id == 0 else slot_id
    return 0 if nonce < first else 1 + (nonce - first) // slots


@dataclass
class Reader:
    """Reads the running epoch again and again; what never changes is asked once."""

    node: JsonClient
    accounting: list[JsonClient] = field(default_factory=list)
    hosts: list[JsonClient] = field(default_factory=list)
    now: Callable[[], datetime] = field(default=lambda: datetime.now().astimezone())
    _settled: set[str] = field(default_factory=set)
    _escrow_slots: dict[str, list[str]] = field(default_factory=dict)
    _p0: dict[int, Decimal | None] = field(default_factory=dict)
    _block_time: dict[int, datetime] = field(default_factory=dict)
    _state: dict[str, bool | None] = field(default_factory=dict)   # this reading's escrow answers

    def sent(self) -> int:
        return sum(c.requests_sent for c in (self.node, *self.accounting, *self.hosts))

    def read(self) -> Reading:
        before = self.sent()
        self._state = {}                  # an escrow is asked once a reading, however many slots name it
        window = self._window()
        taken = self.now()
        reading = Reading(window, taken, self._governance_p0(window.epoch), self._chain_counters())
        reading.sources += [*(["accounting"] if self.accounting else []), *(["host"] if self.hosts else [])]
        unsettled: dict[tuple[str, int], Unsettled] = {}
        for h in self.hosts:
            self._host(h, window, reading, unsettled)
        for a in self.accounting:
            self._accounting(a, window, reading, unsettled)
        reading.unsettled = sorted(unsettled.values(), key=lambda u: (u.participant, u.escrow_id, u.slot_id))
        reading.seconds_per_block = self._seconds_per_block(window, reading)
        reading.requests_sent = self.sent() - before
        return reading

    # -- the chain ----------------------------------------------------------------------------
    def _window(self) -> Window:
        latest = decode(DapiLatestEpoch, self.node.get("/v1/epochs/latest"))
        st, height = latest.epoch_stages, latest.block_height
        if not st.poc_validation_end or not st.next_poc_start or not st.poc_start:
            raise SourceError("/v1/epochs/latest has no epoch_stages: the current epoch's heights are unknown")
        length = st.next_poc_start - st.poc_start
        epoch = st.epoch_index or latest.latest_epoch.index
        if height >= st.poc_validation_end:            # epoch E's counters run since V(E)
            return Window(epoch, height, st.poc_validation_end, st.poc_validation_end + length)
        # during E's PoC, E-1 is still the one whose counters run (settled at V(E))
        return Window(epoch - 1, height, st.poc_validation_end - length, st.poc_validation_end)

    def _governance_p0(self, epoch: int) -> Decimal | None:
        if epoch not in self._p0:
            self._p0[epoch] = decode(ParamsResponse, self.node.get(f"{API}/params")).params \
                .validation_params.binom_test_p0
        return self._p0[epoch]

    def _chain_counters(self) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        pages = Pages("participant list")
        while True:
            page = decode(ParticipantList, self.node.get(f"{API}/participant", pages.params("10000")))
            for p in page.participant:
                s = p.current_epoch_stats
                out[p.address or p.index] = (s.inference_count, s.missed_requests)
            if not pages.advance(page.pagination.next_key):
                if pages.stopped:       # the counters of a part of the list are unknown
                    raise SourceError(pages.stopped)
                return out

    def _escrow(self, escrow_id: str, reading: Reading) -> bool | None:
        """True settled, False not settled, None unknown (asked, no answer): asked once a reading."""
        if escrow_id in self._settled:
            return True
        if escrow_id not in self._state:
            self._state[escrow_id] = self._ask_escrow(escrow_id, reading)
        return self._state[escrow_id]

    def _ask_escrow(self, escrow_id: str, reading: Reading) -> bool | None:
        try:
            answer = decode(DevshardEscrowResponse, self.node.get(f"{API}/devshard_escrow/{quote(escrow_id)}"))
        except NotFoundError:
            answer = DevshardEscrowResponse()
        except SourceError as exc:
            reading.missing.append(f"devshard_escrow/{escrow_id}: {exc}")
            return None
        if not answer.found or answer.escrow is None:
            reading.notes.append(f"escrow {escrow_id} is not found on chain: its misses are counted as not settled")
            return False
        self._escrow_slots[escrow_id] = list(answer.escrow.slots)
        if answer.escrow.settled:
            self._settled.add(escrow_id)
        return answer.escrow.settled

    def _open(self, escrow_id: str, reading: Reading) -> bool:
        """Whether the escrow's misses count as not yet on chain: False when it is settled
        (noted: the chain's counters hold them) or its state is unknown (missing)."""
        state = self._escrow(escrow_id, reading)
        if state and escrow_id not in reading.settled_escrows:
            reading.settled_escrows.append(escrow_id)
        return state is False

    def _seconds_per_block(self, window: Window, reading: Reading) -> float | None:
        try:
            t0 = self._time_of(window.start)
            t1 = self._time_of(window.height)
        except SourceError as exc:
            reading.notes.append(f"block times unknown ({exc}): no miss rate per hour")
            return None
        blocks = window.height - window.start
        return (t1 - t0).total_seconds() / blocks if blocks > 0 else None

    def _time_of(self, height: int) -> datetime:
        if height not in self._block_time:
            resp = self.node.get("/chain-rpc/block", {"height": str(height)})
            self._block_time[height] = parse_block_time(decode(BlockResponse, resp).header.time)
        return self._block_time[height]

    # -- off chain ----------------------------------------------------------------------------
    def _accounting(self, c: JsonClient, window: Window, reading: Reading,
                    unsettled: dict[tuple[str, int], Unsettled]) -> None:
        # read as the collector reads it: streamed, one record decoded at a time, within MAX_ROWS
        try:
            answer = c.get(f"/api/v1/epochs/{window.epoch}/participants", parse=ParticipantsText).data
            if not answer.is_object:
                raise SourceError("not an accounting participants answer (not a JSON object)")
            if answer.rows > MAX_ROWS:
                raise SourceError(f"{answer.rows:,} rows refused (at most {MAX_ROWS:,} rows an answer)")
            records = [ParticipantRecord.model_validate(raw) for raw in answer.records()]
        except NotFoundError:
            records = []
        except (SourceError, ValidationError) as exc:
            reading.missing.append(f"accounting {', '.join(c.shown)}: {_line(exc)}")
            return
        for rec in records:
            for s in rec.slots:
                sid = int(s.slot_id or 0)
                if (s.escrow_id, sid) in unsettled or not s.escrow_id:
                    continue                      # the host's own state already counts it
                if not self._open(s.escrow_id, reading):
                    continue
                unsettled[(s.escrow_id, sid)] = Unsettled(s.escrow_id, sid, rec.participant,
                                                          int(s.assigned_nonces or 0), int(s.protocol_misses or 0),
                                                          "accounting")

    def _host(self, c: JsonClient, window: Window, reading: Reading,
              unsettled: dict[tuple[str, int], Unsettled]) -> None:
        try:
            shards = decode(Shards, c.get("/stats/shards"))
        except SourceError as exc:
            reading.missing.append(f"host {', '.join(c.shown)}: {_line(exc)}")
            return
        for ref in shards.shards:
            if ref.epoch_id != window.epoch:
                continue
            if not self._open(ref.escrow_id, reading):
                continue
            try:
                shard = decode(Shard, c.get(f"/stats/shards/{quote(ref.escrow_id)}"))
            except SourceError as exc:
                reading.missing.append(f"host {', '.join(c.shown)} shard {ref.escrow_id}: {_line(exc)}")
                continue
            slots = self._escrow_slots.get(ref.escrow_id, [])
            for slot, stats in shard.host_stats.items():
                sid = int(slot) if is_decimal(slot, signed=False) else len(slots)
                if sid >= len(slots):
                    reading.notes.append(f"escrow {ref.escrow_id} slot {slot!r}: not among its "
                                         f"{len(slots)} slots on chain")
                    continue
                unsettled[(ref.escrow_id, sid)] = Unsettled(ref.escrow_id, sid, slots[sid],
                                                            assigned(sid, shard.nonce, len(slots)), stats.missed,
                                                            "host")


def _line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def host_client_bases(urls: list[str]) -> list[str]:
    """``--host`` URLs must name the host's devshard base, ``http://HOST:PORT/devshard/<version>``."""
    for u in urls:
        if "/devshard/" not in u:
            raise UsageError(f"--host {u}: give the host's devshard base, e.g. http://HOST:8000/devshard/v1")
    return urls

