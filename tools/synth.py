"""Seeded, reproducible synthetic devshard gateway logs (``devshardctl``, pre-v4.1.2).

The generator simulates a gateway serving one or more models through a pool of escrows
and writes what the gateway would log, in the formats of ``docs/gateway-logs.md`` section 1:

* ``text``        Go ``log`` prefix ``YYYY/MM/DD HH:MM:SS `` + stage line / raw event
* ``docker``      ``docker logs --timestamps`` RFC 3339 (9 fixed digits) prefix + Go prefix + line
* ``bare``        the line with no prefix at all
* ``json``        slog JSON records (``{"time":…,"level":…,"msg":…,…}``); raw events as ``msg``
* ``dockerjson``  Docker json-file driver records wrapping the ``text`` line

Everything the file contains is known by construction and returned as a :class:`SynthSummary`
(lines per stage and event, requests, hedged races, suppressed losers, ghosts, escrow
rotations and exhaustions, the confirmation-PoC windows ...) so that parser and analysis
tests can compare their results with the ground truth.

What is simulated (see ``Scenario`` for the knobs):

* requests through admission (``gateway_request_received``, limiter, runtime selection,
  ``proxy_request_started``, ``runner_started``), the hedging decision (section 4.1) and
  attempts with their own nonces (``prepared`` … ``race_completed``), winners, suppressed
  losers, failures, escalations, ``nonce_disposition`` lines;
* a per-escrow picker that consumes nonces in order (slot = nonce mod slots): during a
  confirmation PoC window (relaxed mode) every nonce whose slot belongs to a non-preserved
  host is burned as a ``poc_unavailable_host`` ghost (or sent as a PoC probe), so all real
  traffic lands on the preserved hosts, which then fail more often; throttled-host ghosts
  and stale-exclusion ghosts outside the window;
* the phase gate lines at the window's phase transitions;
* the escrow lifecycle: request-triggered exhaustion (section 6.2, including the spurious
  retirement of issue #1800), periodic ``escrow_balance_low`` / ``escrow_nonce_high``
  checks every 30 s, replacement mints, settlement lines;
* limiter rejections, zero-capacity 429 lines, and a few non-gateway noise lines.

Same seed, same scenario, same format, same target size -> byte-identical output.
With ``target_bytes=None`` the request rate is ``Scenario.requests_per_second`` and the
event stream does not depend on the format (every format renders the same events).
"""

from __future__ import annotations

import bisect
import gzip
import heapq
import math
import random
import re
import time as _time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from operator import itemgetter
from pathlib import Path

__all__ = ["Scenario", "SynthSummary", "CPoCWindowInfo", "FORMATS", "write_logs", "write_excerpt",
           "generate_lines", "go_quote", "sanitize_value", "HOST_ADDRESSES"]

FORMATS = ("text", "docker", "bare", "json", "dockerjson")
NS = 1_000_000_000
MS = 1_000_000
UTC = timezone.utc

# Participants of MiniMaxAI/MiniMax-M2.7 in ../shared/data/chain-snapshot-2026-09-23/chain_poc_nodes.csv
# (address, participant_model_weight). Host label = last 8 characters.
HOST_ADDRESSES: tuple[tuple[str, int], ...] = (
    ("gonka10eg5wakkmc0tee3llwj2qwa67knzk48cht38c5", 98797),
    ("gonka1346p2h8dn4kp98c5e93k5q64g0h7vxjxnd55fh", 5337),
    ("gonka16dgkvx7mh609ntkzknckwaskgq9lcdp86j0skk", 143303),
    ("gonka17r099027khes2w2lv95dvuq3ehfeljgukagan4", 16235),
    ("gonka1830lqug50lse998x2lakk4pj5ypfumz5pasz0y", 17423),
    ("gonka18x6wprs8c4x7awjgvn5t0e04fscrrash8rvmw4", 77000),
    ("gonka1ajmhqgvkf76hss5xe35kcnntqqhs7r8jz8s939", 5827),
    ("gonka1al62tfyd6xud4hr25zxwcx78rapwhx5gjz0qxy", 1217),
    ("gonka1dkl4mah5erqggvhqkpc8j3qs5tyuetgdy552cp", 4667),
    ("gonka1f90vekylyqvx3u8pdst3mcjv05tg5ux0sl3tts", 17394),
    ("gonka1gvrrhjmy4w4mayvs2s5l23edj8ertcmtd2v4zr", 367007),
    ("gonka1gyk0aahvr3qeju4zx0nplfreej6cy4jjk8svc5", 3087),
    ("gonka1kvmerzu64094dt9t62ea0cp75larh39ulzldum", 153334),
    ("gonka1kx9mca3xm8u8ypzfuhmxey66u0ufxhs7nm6wc5", 5247),
    ("gonka1p2lhgng7tcqju7emk989s5fpdr7k2c3ek6h26m", 5769),
    ("gonka1q60h5av2pxe6gz3edmlcvd8p36vtj7r24fm43v", 66332),
    ("gonka1qwfrtz9c7kcrfkrrlne2pkcye74mj6ce33xdkl", 11669),
    ("gonka1rqm2u7lxzn7r68y0drcyhag6xnckpsnfmgd53t", 22264),
    ("gonka1scskt6wpnjnumsah6kjphmdu87vjgvcxmn4rxv", 438662),
    ("gonka1u60wtn9dhadweeuq2gywcpx34fpfnuhmu7w0qq", 46384),
    ("gonka1vjz8csqsr0ph0lv0yylc4auypnzrld7y6l2feu", 6450),
    ("gonka1y2a9p56kv044327uycmqdexl7zs82fs5ryv5le", 4667),
    ("gonka1ym3np7guxart483yfdxnlztuazx22cjt0e4a2p", 11480),
)
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

INSUFFICIENT = "prepare: local apply: mandatory start inference: insufficient escrow balance"
ERR_ALL_EXCLUDED = "redundancy: request has tried every host in escrow"
ERR_NO_AVAILABLE = "redundancy: no currently-available host outside the request's exclude set"


# --------------------------------------------------------------------------------------
# Scenario and summary
# --------------------------------------------------------------------------------------

Offset = timedelta | datetime


@dataclass
class Scenario:
    """What the simulated gateway does. Defaults give a realistic mixed day-part."""

    duration: timedelta = timedelta(hours=6)
    """Planned time range of the file. With a byte target the request rate is adapted so the
    file spans about this range; without one, generation stops at the end of the range."""
    requests_per_second: float = 2.0
    """Arrival rate used when ``target_bytes`` is None (fixed-rate, format-independent)."""
    models: tuple[str, ...] = ("MiniMaxAI/MiniMax-M2.7",)
    hosts: int = 20
    """Number of host addresses (taken from ``host_addresses``, then generated from the seed)."""
    host_addresses: tuple[tuple[str, int], ...] = HOST_ADDRESSES
    """(address, weight) of the hosts to use first: by default the 23 MiniMax participants of
    the epoch-403 snapshot; a model's own participants for a story about that model."""
    slots: int = 16
    escrows: int = 4
    """Active escrows at any time (per scenario, spread over the models)."""
    epoch: int = 412
    first_block_height: int = 6_354_000
    block_time_s: float = 6.0
    # --- confirmation PoC -------------------------------------------------------------
    cpoc_windows: tuple[tuple[Offset, Offset], ...] | None = None
    """(start, end) of each CPoC window as offsets from the start or absolute datetimes.
    None: one 12-minute window centred in the planned range. () : no window."""
    preserved: tuple[str, ...] | None = None
    """Preserved host labels (8 chars) or addresses. None: ``n_preserved`` light hosts by seed."""
    n_preserved: int = 3
    cpoc_grace_fraction: float = 0.10
    cpoc_generation_fraction: float = 0.50
    cpoc_failure_rate: float = 0.35
    """Failure probability of an attempt on a (preserved, overloaded) host during CPoC."""
    cpoc_receipt_slowdown: float = 4.0
    probe_rate: float = 0.04
    """Share of non-preserved CPoC nonces sent as PoC probes instead of ghosts."""
    cpoc_limiter_reject_rate: float = 0.03
    cpoc_limiter_bypass_rate: float = 0.25
    # --- hedging and failures ---------------------------------------------------------
    hedge_rate: float = 0.3
    """Probability of a pairwise speed-up hedge when the primary host is a slow one."""
    slow_host_fraction: float = 0.35
    ab_sample_rate: float = 0.03
    secondary_faster_rate: float = 0.01
    max_attempts: int = 3
    failure_rate: float = 0.03
    stall_rate: float = 0.01
    unresponsive_window_s: float = 120.0
    secondary_wait_after_winner_ms: int = 600_000
    limiter_reject_rate: float = 0.004
    # --- ghosts outside CPoC ----------------------------------------------------------
    throttled: tuple[str, ...] | None = None
    """Hosts under probe quarantine (labels or addresses). None: one non-preserved host by seed."""
    throttle_ghost_rate: float = 0.5
    stale_ghost_rate: float = 0.25
    """When the next nonce's host was already tried by the request: probability that it is
    burned as a ``no_compatible_request_after_stale`` ghost (else another request takes it)."""
    preserved_slot_rate: float = 0.7
    """Probability that a new escrow without a preserved host gets one in a random slot
    (escrows with no preserved slot have zero capacity during CPoC)."""
    # --- escrows ----------------------------------------------------------------------
    token_price: int = 10
    escrow_amount: int = 1_000_000_000
    balance_threshold: int = 1_000_000
    nonce_limit: int = 19_800
    max_tokens: int = 3072
    rotation_enabled: bool = True
    first_escrow_id: int = 97300
    initial_nonces: tuple[int, ...] | None = None
    """Start nonce of the initial escrows (logs start mid-life). None: random by seed."""
    initial_balances: tuple[int, ...] | None = None
    large_request_rate: float = 0.01
    large_request_bytes: tuple[int, int] = (150_000, 900_000)
    large_request_at: tuple[timedelta, ...] = ()
    """Offsets at which a large request is forced (the first arrival at or after each)."""
    # --- misc -------------------------------------------------------------------------
    dispositions: bool = True
    """Write ``nonce_disposition`` lines (one per classified nonce)."""
    noise_rate: float = 0.0005
    """Non-gateway lines (HTTP server errors) per request."""
    go_microseconds: bool = False
    """Go prefix with ``.ffffff`` (log.Lmicroseconds)."""

    @classmethod
    def compact(cls) -> "Scenario":
        """A small scenario for fixtures: ~4 minutes, a 90-s CPoC window, every line family."""
        return cls(
            duration=timedelta(minutes=4),
            requests_per_second=0.6,
            escrows=3,
            cpoc_windows=((timedelta(seconds=110), timedelta(seconds=200)),),
            initial_nonces=(19_800, 4_100, 9_300),
            initial_balances=(60_000_000, 990_000, 5_000_000),
            escrow_amount=8_000_000,
            large_request_bytes=(600_000, 900_000),
            large_request_at=(timedelta(seconds=30), timedelta(seconds=75)),
            noise_rate=0.02,
            failure_rate=0.06,
            stall_rate=0.05,
            stale_ghost_rate=0.6,
            secondary_wait_after_winner_ms=15_000,
        )


@dataclass
class CPoCWindowInfo:
    start: datetime
    generation_start: datetime
    validation_start: datetime
    end: datetime
    preserved: tuple[str, ...]
    epoch: int
    start_height: int
    end_height: int
    complete: bool = False
    """True when the ``phase inactive`` line was written too."""


@dataclass
class SynthSummary:
    """Ground truth of a generated file; every count is of lines actually written."""

    path: str
    fmt: str
    seed: int
    compressed: bool = False
    lines: int = 0
    bytes: int = 0
    """Uncompressed bytes written."""
    file_bytes: int = 0
    """Bytes on disk (compressed size for .gz)."""
    first_time: datetime | None = None
    last_time: datetime | None = None
    requests: int = 0
    """Requests admitted to the log (``gateway_request_received`` lines)."""
    requests_succeeded: int = 0
    requests_failed: int = 0
    """Requests that reached the runner and failed (``request_failed`` or prepare failure)."""
    limiter_rejected: int = 0
    runtime_select_failed: int = 0
    zero_capacity_429: int = 0
    attempts: int = 0
    """``race_completed`` lines (one per attempt, probes included)."""
    winners: int = 0
    suppressed_losers: int = 0
    """``race_completed winner=false finished=true probe=false``."""
    failed_attempts: int = 0
    cancelled_losers: int = 0
    probes: int = 0
    suppressed_primaries: int = 0
    """Suppressed losers that were the request's primary (the hedge won)."""
    suppressed_loser_tokens: int = 0
    """Σ usage_tokens of suppressed losers (generation thrown away)."""
    multi_attempt_requests: int = 0
    """Requests with two or more non-probe attempts (races and failure retries)."""
    hedged_races: int = 0
    """Requests with a speculative secondary (started by the decision or a receipt timeout,
    not only after a failure)."""
    hedged_races_by_decision: dict[str, int] = field(default_factory=dict)
    secondary_start_reasons: dict[str, int] = field(default_factory=dict)
    """Secondary attempts per start reason: the decision name (immediate start),
    ``receipt_timeout`` (escalation) or ``attempt_failed``."""
    decisions: dict[str, int] = field(default_factory=dict)
    ghost_nonces: int = 0
    ghosts_by_reason: dict[str, int] = field(default_factory=dict)
    escrows_initial: list[int] = field(default_factory=list)
    escrow_rotations: int = 0
    """``escrow_rotation_created`` lines (every mint is a replacement here)."""
    escrow_exhaustions: int = 0
    """``escrow_balance_exhausted`` lines (request-triggered, section 6.2)."""
    spurious_exhaustions: int = 0
    """Exhaustions while the balance was at or above the low-balance threshold (#1800)."""
    replacements_by_reason: dict[str, int] = field(default_factory=dict)
    replacements: list[dict] = field(default_factory=list)
    """One dict per retirement: old, new, reason, balance, nonce, time."""
    stages: dict[str, int] = field(default_factory=dict)
    """Stage lines per stage name (the first ``stage=`` token)."""
    events: dict[str, int] = field(default_factory=dict)
    """Raw events per event name (the first token); the free-text lines as the parser names
    them: ``chain_phase_gate``, ``devshard_deactivated``, ``gateway_zero_capacity``."""
    phase_gate_events: dict[str, int] = field(default_factory=dict)
    """``chain phase gate: <event> …`` lines per event (``phase active``, ``phase updated``,
    ``phase inactive``, ``preserved participants loaded``)."""
    templates: dict[str, int] = field(default_factory=dict)
    """Lines per generator template (finer than ``stages``, e.g. ``race_completed_failed``)."""
    noise_lines: int = 0
    cpoc_windows: list[CPoCWindowInfo] = field(default_factory=list)
    """Windows whose ``phase active`` line was written; end fields are the phase-inactive time."""
    preserved: tuple[str, ...] = ()
    throttled: tuple[str, ...] = ()
    hosts: dict[str, str] = field(default_factory=dict)
    """label -> address."""
    elapsed_s: float = 0.0
    mb_per_s: float = 0.0

    def to_dict(self) -> dict:
        d = asdict(self)

        def conv(x):
            if isinstance(x, datetime):
                return x.isoformat()
            if isinstance(x, dict):
                return {k: conv(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [conv(v) for v in x]
            return x
        return conv(d)


# --------------------------------------------------------------------------------------
# Value rendering (gateway-logs.md 1.1)
# --------------------------------------------------------------------------------------

_GO_ESC = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\a": "\\a",
           "\b": "\\b", "\f": "\\f", "\v": "\\v"}


def go_quote(s: str) -> str:
    """Go ``%q`` / ``strconv.Quote`` for the strings the generator produces (printable
    Unicode is kept, other control characters become ``\\xNN`` or ``\\uNNNN``)."""
    out = ['"']
    for ch in s:
        e = _GO_ESC.get(ch)
        if e is not None:
            out.append(e)
        elif ch < " " or ch == "\x7f":
            out.append("\\x%02x" % ord(ch))
        elif "\x80" <= ch <= "\x9f" or ch in "\u2028\u2029\ufeff":
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def sanitize_value(s: str) -> str:
    """A stage-line value as ``logging.Stage`` writes it: ``""`` for empty, ``%q`` when it
    contains a space, tab, newline, carriage return or double quote, else bare."""
    if s == "":
        return '""'
    if " " in s or '"' in s or "\t" in s or "\n" in s or "\r" in s:
        return go_quote(s)
    return s


def _json_inner(s: str) -> str:
    """Body of a JSON string (Go slog: no HTML escaping, UTF-8 kept)."""
    if '"' in s or "\\" in s or any(c < " " for c in s):
        out = []
        for ch in s:
            if ch == '"':
                out.append('\\"')
            elif ch == "\\":
                out.append("\\\\")
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\r":
                out.append("\\r")
            elif ch == "\t":
                out.append("\\t")
            elif ch < " ":
                out.append("\\u%04x" % ord(ch))
            else:
                out.append(ch)
        return "".join(out)
    return s


# --------------------------------------------------------------------------------------
# Templates: one spec, rendered for text and JSON
# --------------------------------------------------------------------------------------
# Field kinds: s = safe token (bare in text, JSON string); q = caller-rendered string
# (text: sanitized, JSON: escaped inner -> use Gen.Q / Gen.EMPTY); i = int; b = 'true'/'false';
# n = number preformatted as text (JSON number).

_RC = ("host:s host_idx:i participant:s model:s input_tokens:i winner:b finished:b responsive:b "
       "has_receipt:b confirmed_at:i attempt_ms:i output_chunks:i content_chunks:i output_bytes:i "
       "stream_bytes_read:i usage_tokens:i max_gap_ms:i mean_gap_ms:i content_source:q error_source:q "
       "probe:b suspicious:b")
_DISP = ("disposition:s dispatch_phase:q timeout_evaluation_phase:q quarantine_mode:q no_send_reason:q "
         "failure_origin:q timeout_kind:q timeout_outcome:q timeout_reason:q detail_reason:q "
         "participant:s model:s lag_ms:i trace_id:q span_id:q")

# (template id, stage name, has request=, inference (escrow= nonce= prefix), fields)
_STAGE_SPECS: list[tuple[str, str, bool, bool, str]] = [
    ("gateway_request_received", "gateway_request_received", True, False,
     "model:s input_tokens:i api_key_suffix:s api_key_kind:s"),
    ("gateway_limiter_acquired", "gateway_limiter_acquired", True, False, ""),
    ("gateway_limiter_rejected", "gateway_limiter_rejected", True, False,
     "model:s input_tokens:i reason:s in_flight:i limit:i"),
    ("gateway_limiter_bypassed_during_poc", "gateway_limiter_bypassed_during_poc", True, False,
     "input_tokens:i reason:s"),
    ("gateway_runtime_selected", "gateway_runtime_selected", True, False, "escrow:s"),
    ("gateway_runtime_select_failed", "gateway_runtime_select_failed", True, False, ""),
    ("gateway_request_forwarded", "gateway_request_forwarded", True, False, "escrow:s path:s"),
    ("proxy_request_started", "proxy_request_started", True, False,
     "escrow:s model:s stream:b input_tokens:i"),
    ("proxy_stream_failed", "proxy_stream_failed", True, False, "escrow:s error:q"),
    ("runner_started", "runner_started", True, False, "escrow:s input_tokens:i model:s"),
    ("runner_prepare_failed", "runner_prepare_failed", True, False, "escrow:s error:q"),
    ("decision_made", "decision_made", True, True,
     "host:s decision:s delay_ms:i max_attempts:i group_size:i"),
    ("secondary_immediate_start_req", "secondary_immediate_start", True, False,
     "escrow:s decision:s attempt_index:i immediate_attempts:i"),
    ("secondary_immediate_start", "secondary_immediate_start", True, True, "host:s"),
    ("receipt_timeout_wait_elapsed", "receipt_timeout_wait_elapsed", True, True, "host:s delay_ms:i"),
    ("attempt_failed", "attempt_failed", True, True, "host:s"),
    ("escalation_skipped", "escalation_skipped", True, True,
     "host:s stage:s reason:s current_attempts:i max_attempts:i"),
    ("picker_exhausted", "picker_exhausted", True, False,
     "escrow:s decision:s tried_participants:i unique_participants:i group_size:i reason_err:q"),
    ("secondary_prepare_failed", "secondary_prepare_failed", True, False, "escrow:s decision:s error:q"),
    ("pairwise_winner_hold_candidate", "pairwise_winner_hold_candidate", True, False,
     "escrow:s from_nonce:i from_host:s to_nonce:i to_host:s speedup:n samples:i hold_ms:i"),
    ("prepared", "prepared", True, True, "host:s"),
    ("poc_probe_prepared", "poc_probe_prepared", True, True, "host:s max_tokens:i poc_reason:s"),
    ("started", "started", True, True, "host:s"),
    ("receipt_received", "receipt_received", True, True, "host:s elapsed_ms:i"),
    ("first_token", "first_token", True, True, "host:s route:s winner_nonce:i"),
    ("winner_selected", "winner_selected", True, True, ""),
    ("stream_forwarding_started", "stream_forwarding_started", True, True, "host:s"),
    ("stream_suppressed", "stream_suppressed", True, True, "host:s winner_nonce:i"),
    ("send_completed", "send_completed", True, True,
     "host:s output_chunks:i content_chunks:i output_bytes:i stream_bytes_read:i max_gap_ms:i "
     "max_gap_at_chunk:i mean_gap_ms:i"),
    ("send_failed_http", "send_failed", True, True,
     "host:s output_chunks:i content_chunks:i output_bytes:i stream_bytes_read:i poc_reason:q "
     "poc_generation:b failure_reason:s http_status:i host_path:s error:q"),
    ("send_failed", "send_failed", True, True,
     "host:s output_chunks:i content_chunks:i output_bytes:i stream_bytes_read:i poc_reason:q "
     "poc_generation:b failure_reason:s error:q"),
    ("empty_stream", "empty_stream", True, True,
     "host:s output_chunks:i content_chunks:i output_bytes:i stream_bytes_read:i usage_tokens:i "
     "max_gap_ms:i mean_gap_ms:i content_source:q poc_reason:q poc_generation:b "
     "started_before_poc_generation:b request_flags:s"),
    ("error_stream", "error_stream", True, True,
     "host:s output_chunks:i output_bytes:i error_source:s error_code:i error_type:s error_message:q "
     "response_body_sample:q response_body_sample_truncated:b poc_reason:q poc_generation:b "
     "request_flags:s"),
    ("race_completed", "race_completed", True, True, _RC),
    ("race_completed_failed", "race_completed", True, True, _RC + " failure_reason:s"),
    ("race_completed_stalls", "race_completed", True, True, _RC + " stall_count:i stalls:q"),
    ("request_returned_while_speculation_pending", "request_returned_while_speculation_pending", True,
     False, "escrow:s winner_nonce:i pending:i max_wait_ms:i decision:s"),
    ("request_succeeded", "request_succeeded", True, False, "escrow:s winner_nonce:i decision:s"),
    ("request_failed", "request_failed", True, False, "escrow:s error:q"),
    ("request_fully_settled", "request_fully_settled", True, False,
     "escrow:s winner_nonce:i decision:s outcome:s"),
    ("speculative_attempt_canceled", "speculative_attempt_canceled", True, True, "reason:s"),
    ("session_picker_ghost_probe", "session_picker_ghost_probe", False, False,
     "reason:s host_idx:i nonce:i queue_depth:i"),
    ("session_picker_ghost_probe_throttled", "session_picker_ghost_probe", False, False,
     "reason:s host_idx:i nonce:i queue_depth:i no_send:b participant_key:s model_id:s"),
    ("nonce_disposition", "nonce_disposition", False, True, _DISP),
]

# (template id, event name for the summary, text format). Values substituted into these are
# ids, hashes, ints, model names and labels: none needs escaping. Free-text lines are named
# like the parser (auditor.sources.gatewaylog_parse) names them: chain_phase_gate (with the
# words before the first key after a colon here), devshard_deactivated, gateway_zero_capacity.
_EVENT_SPECS: list[tuple[str, str, str]] = [
    ("escrow_balance_exhausted", "escrow_balance_exhausted", "escrow_balance_exhausted escrow=%s"),
    ("gateway_replacing_exhausted_escrow", "gateway_replacing_exhausted_escrow",
     "gateway_replacing_exhausted_escrow escrow=%s"),
    ("escrow_depletion_deactivated", "escrow_depletion_deactivated",
     'escrow_depletion_deactivated escrow=%s reason="%s" deactivated_in_store=%s settlement_due=%s'),
    ("escrow_rotation_created", "escrow_rotation_created",
     'escrow_rotation_created role=%s epoch=%d model="%s" escrow=%s tx_hash=%s'),
    ("escrow_depletion_replacement_created", "escrow_depletion_replacement_created",
     'escrow_depletion_replacement_created old_escrow=%s new_escrow=%s model="%s" reason="%s" tx_hash=%s'),
    ("devshard_deactivated", "devshard_deactivated", "devshard %s deactivated: escrow balance exhausted"),
    ("runtime_retired", "runtime_retired", 'runtime_retired escrow=%s reason="escrow balance exhausted"'),
    ("escrow_balance_low", "escrow_balance_low",
     "escrow_balance_low escrow=%s balance=%d threshold=%d \u2014 deactivating before replacement"),
    ("escrow_nonce_high", "escrow_nonce_high",
     "escrow_nonce_high escrow=%s nonce=%d limit=%d \u2014 deactivating before replacement"),
    ("settlement_queued_waiting_for_drain", "settlement_queued_waiting_for_drain",
     "settlement_queued_waiting_for_drain escrow=%s"),
    ("settlement_drain_complete", "settlement_drain_complete", "settlement_drain_complete escrow=%s"),
    ("auto_settle_confirmed", "auto_settle_confirmed", "auto_settle_confirmed escrow=%s tx_hash=%s"),
    ("phase_gate_active", "chain_phase_gate:phase active",
     "chain phase gate: phase active reason=%s chain_phase=%s confirmation_poc_phase=%s epoch=%d "
     "block_height=%d requests_blocked=%s max_attempts=%d"),
    ("phase_gate_updated", "chain_phase_gate:phase updated",
     "chain phase gate: phase updated reason=%s chain_phase=%s confirmation_poc_phase=%s epoch=%d "
     "block_height=%d requests_blocked=%s max_attempts=%d"),
    ("phase_gate_inactive", "chain_phase_gate:phase inactive",
     "chain phase gate: phase inactive reason=%s chain_phase=%s confirmation_poc_phase=%s epoch=%d "
     "block_height=%d requests_blocked=%s max_attempts=%d"),
    ("phase_gate_preserved", "chain_phase_gate:preserved participants loaded",
     "chain phase gate: preserved participants loaded reason=%s count=%d participants=%s "
     "excluded_count=%d excluded_participants=%s"),
    ("zero_capacity", "gateway_zero_capacity",
     "gateway: all %d candidate escrow(s) at zero capacity, returning 429; per-escrow weights: %s"),
]
_NOISE_SPECS: list[tuple[str, str]] = [
    ("noise_tls", "http: TLS handshake error from 10.0.%d.%d:%d: EOF"),
    ("noise_superfluous", "http: superfluous response.WriteHeader call from main.(*gateway).proxy (proxy.go:%d)"),
]


class _Templates:
    """Compiled per-format format strings; ids are indexes."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.text: list[str] = []
        self.json: list[str] = []
        self.family: list[tuple[str, str]] = []  # (kind, name)
        self.extra_bytes: list[int] = []  # UTF-8 bytes beyond one per character (em dash)
        for tid, stage, req, inf, spec in _STAGE_SPECS:
            t = ["request=%s " if req else "", "stage=", stage]
            j = ['"level":"INFO","msg":"', stage, '"', ',"request":"%s"' if req else "",
                 ',"stage":"', stage, '"']
            if inf:
                t.append(" escrow=%s nonce=%d")
                j.append(',"escrow":"%s","nonce":%d')
            for f in spec.split():
                k, kind = f.split(":")
                t.append(" %s=%s" % (k, "%d" if kind == "i" else "%s"))
                if kind == "i":
                    j.append(',"%s":%%d' % k)
                elif kind in "bn":
                    j.append(',"%s":%%s' % k)
                else:
                    j.append(',"%s":"%%s"' % k)
            self._add(tid, "".join(t), "".join(j), ("stage", stage))
        for tid, name, fmt in _EVENT_SPECS:
            self._add(tid, fmt, '"level":"INFO","msg":"' + _json_inner(fmt) + '"', ("event", name))
        for tid, fmt in _NOISE_SPECS:
            self._add(tid, fmt, '"level":"ERROR","msg":"' + _json_inner(fmt) + '"', ("noise", tid))

    def _add(self, tid: str, text: str, js: str, fam: tuple[str, str]) -> None:
        self.ids[tid] = len(self.text)
        self.text.append(text)
        self.json.append(js)
        self.family.append(fam)
        self.extra_bytes.append(len(text.encode()) - len(text))


TPL = _Templates()
_T = TPL.ids


# --------------------------------------------------------------------------------------
# Simulation state
# --------------------------------------------------------------------------------------

class _Host:
    __slots__ = ("label", "addr", "weight", "tps", "rcpt_ms", "slow", "unresp_until", "preserved",
                 "throttled", "flaky")

    def __init__(self, addr: str, weight: int) -> None:
        self.addr = addr
        self.label = addr[-8:] if len(addr) > 8 else addr
        self.weight = weight
        self.tps = 0.0
        self.rcpt_ms = 0.0
        self.slow = False
        self.unresp_until = 0
        self.preserved = False
        self.throttled = False
        self.flaky = 1.0


class _Escrow:
    __slots__ = ("id", "model", "slots", "nonce", "balance", "active", "hosts", "pres_slots", "created",
                 "pending")

    def __init__(self, eid: int, model: str, slots: list[_Host], nonce: int, balance: int) -> None:
        self.id = eid
        self.model = model
        self.slots = slots
        self.nonce = nonce
        self.balance = balance
        self.active = True
        self.hosts = frozenset(h.label for h in slots)
        self.pres_slots = sum(1 for h in slots if h.preserved)
        self.created = 0
        self.pending: list = []


class _Att:
    __slots__ = ("nonce", "slot", "host", "start", "mode", "rcpt", "first", "end", "usage", "probe",
                 "winner", "cancelled", "phase", "gen", "reason")

    def __init__(self, nonce, slot, host, start, phase, gen):
        self.nonce = nonce
        self.slot = slot
        self.host = host
        self.start = start
        self.phase = phase
        self.gen = gen
        self.mode = "ok"
        self.rcpt = 0
        self.first = 0
        self.end = 0
        self.usage = 0
        self.probe = False
        self.winner = False
        self.cancelled = False
        self.reason = "primary"


def _as_offset_ns(x: Offset, start: datetime) -> int:
    if isinstance(x, datetime):
        if x.tzinfo is None:
            x = x.replace(tzinfo=UTC)
        return int(round((x - start).total_seconds() * NS))
    return int(round(x.total_seconds() * NS))


_PHASE_NAMES = ("normal", "CONFIRMATION_POC_GRACE_PERIOD", "CONFIRMATION_POC_GENERATION",
                "CONFIRMATION_POC_VALIDATION")


class _Gen:
    """The simulator. ``emit`` renders each line at once and keeps it in a per-second
    bucket until no later event can precede it; buckets are flushed in time order."""

    def __init__(self, seed: int, fmt: str, start: datetime, sc: Scenario, target_bytes: int | None,
                 sink) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        self.sc = sc
        self.fmt = fmt
        self.sink = sink
        self.rng = random.Random(seed)
        self.seed = seed
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        self.start_dt = start
        self.t0 = int(round(start.timestamp() * NS))
        self.end = self.t0 + int(sc.duration.total_seconds() * NS)
        self.target = target_bytes
        self.tpl = TPL.json if fmt == "json" else TPL.text
        self.extra = TPL.extra_bytes
        self.counts = [0] * len(TPL.text)
        self.nlines = 0
        self.buckets: dict[int, list] = {}
        self.flushed_upto = self.t0 // NS  # seconds < this are flushed
        self.first_ns: int | None = None
        self.last_ns = 0
        self.sched: list = []  # heap of (t, seq, fn, args)
        self._sseq = 0
        self.req_seq = 20000 + self.rng.randrange(10000)
        if fmt == "json":
            self.Q = _json_inner
            self.EMPTY = ""
        elif fmt == "dockerjson":
            # the text line inside a JSON string: escape the templates' literal quotes once and
            # the rendered values in Q; ids, numbers and vocabulary tokens need no escaping
            self.tpl = [_json_inner(x) for x in TPL.text]
            self.Q = lambda v: _json_inner(sanitize_value(v))
            self.EMPTY = '\\"\\"'
        else:
            self.Q = sanitize_value
            self.EMPTY = '""'
        self.sm = SynthSummary(path="", fmt=fmt, seed=seed)
        self.ghost_reasons: dict[str, int] = {}
        self.emit = self._make_emit()
        self._setup()

    # ---- setup -------------------------------------------------------------------
    def _setup(self) -> None:
        sc, rng = self.sc, self.rng
        pool = list(sc.host_addresses[: sc.hosts])
        while len(pool) < sc.hosts:
            addr = "gonka1" + "".join(rng.choice(_BECH32) for _ in range(38))
            pool.append((addr, int(rng.lognormvariate(9.5, 1.3))))
        self.hosts = [_Host(a, w) for a, w in pool]
        known = {h.label: h for h in self.hosts}
        known.update({h.addr: h for h in self.hosts})

        def by_label(names: tuple[str, ...], what: str) -> list[_Host]:
            bad = [p for p in names if p not in known]
            if bad:
                raise ValueError(f"{what}: unknown host(s) {', '.join(bad)}; known labels: "
                                 f"{', '.join(h.label for h in self.hosts)}")
            return [known[p] for p in names]
        for h in self.hosts:
            h.tps = rng.uniform(18.0, 95.0)
            h.rcpt_ms = rng.uniform(120.0, 700.0)
            h.flaky = rng.uniform(0.4, 1.8)
        order = sorted(self.hosts, key=lambda h: h.tps)
        for h in order[: int(round(sc.slow_host_fraction * len(order)))]:
            h.slow = True
        if sc.preserved is None:
            light = sorted(self.hosts, key=lambda h: (h.weight, h.addr))[: max(len(self.hosts) // 2, sc.n_preserved)]
            pres = rng.sample(light, min(sc.n_preserved, len(light)))
        else:
            pres = by_label(sc.preserved, "preserved")
        for h in pres:
            h.preserved = True
        self.preserved = tuple(sorted(h.label for h in pres))
        if sc.throttled is None:
            # one non-preserved host, likely to hold slots (weighted like slot assignment)
            cand = [h for h in self.hosts if not h.preserved]
            thr = rng.choices(cand, weights=[math.sqrt(max(h.weight, 1)) for h in cand]) if cand else []
        else:
            thr = by_label(sc.throttled, "throttled")
        for h in thr:
            h.throttled = True
        self.throttled = tuple(sorted(h.label for h in thr))
        self.slot_w = [math.sqrt(max(h.weight, 1)) for h in self.hosts]
        self.cum_w = []
        acc = 0.0
        for w in self.slot_w:
            acc += w
            self.cum_w.append(acc)
        self.total_weight = sum(h.weight for h in self.hosts)
        self.api_keys = ["%04x" % rng.getrandbits(16) for _ in range(12)]
        # CPoC windows: (start, gen_start, val_start, end)
        if sc.cpoc_windows is None:
            mid = self.t0 + (self.end - self.t0) // 2
            wins = [(mid - 6 * 60 * NS, mid + 6 * 60 * NS)]
        else:
            wins = [(self.t0 + _as_offset_ns(a, self.start_dt), self.t0 + _as_offset_ns(b, self.start_dt))
                    for a, b in sc.cpoc_windows]
        self.windows = []
        for a, b in sorted(wins):
            ln = b - a
            g = a + int(ln * sc.cpoc_grace_fraction)
            v = g + int(ln * sc.cpoc_generation_fraction)
            self.windows.append((a, g, v, b))
        self.win_starts = [w[0] for w in self.windows]
        for i, w in enumerate(self.windows):
            self._at(w[0], self._phase_change, i, 1)
            self._at(w[1], self._phase_change, i, 2)
            self._at(w[2], self._phase_change, i, 3)
            self._at(w[3], self._phase_change, i, 0)
        self.cur_phase = 0
        self.large_at = sorted(self.t0 + _as_offset_ns(x, self.start_dt) for x in sc.large_request_at)
        # escrows
        self.escrows: list[_Escrow] = []
        self.next_eid = sc.first_escrow_id
        for i in range(sc.escrows):
            model = sc.models[i % len(sc.models)]
            nonce = (sc.initial_nonces[i] if sc.initial_nonces and i < len(sc.initial_nonces)
                     else rng.randrange(1, 15_000))
            if sc.initial_balances and i < len(sc.initial_balances):
                bal = sc.initial_balances[i]
            else:
                bal = int(sc.escrow_amount * rng.uniform(0.05, 1.0))
            e = self._new_escrow(model, nonce, bal)
            self.escrows.append(e)
            self.sm.escrows_initial.append(e.id)
        self._at(self.t0 + rng.randrange(30 * NS), self._balance_check)

    def _new_escrow(self, model: str, nonce: int, balance: int) -> _Escrow:
        self.next_eid += self.rng.randrange(3, 60)
        rnd, cum, hosts = self.rng.random, self.cum_w, self.hosts
        tot = cum[-1]
        slots = [hosts[bisect.bisect_right(cum, rnd() * tot)] for _ in range(self.sc.slots)]
        pres = [h for h in hosts if h.preserved]
        if pres and not any(h.preserved for h in slots) and rnd() < self.sc.preserved_slot_rate:
            slots[int(rnd() * len(slots))] = pres[int(rnd() * len(pres))]
        return _Escrow(self.next_eid, model, slots, nonce, balance)

    def _at(self, t: int, fn, *args) -> None:
        self._sseq += 1
        heapq.heappush(self.sched, (t, self._sseq, fn, args))

    def phase(self, t: int) -> int:
        """0 normal, 1 grace, 2 generation, 3 validation."""
        i = bisect.bisect_right(self.win_starts, t) - 1
        if i < 0:
            return 0
        a, g, v, b = self.windows[i]
        if t >= b:
            return 0
        return 1 if t < g else (2 if t < v else 3)

    def window_end(self, t: int) -> int:
        i = bisect.bisect_right(self.win_starts, t) - 1
        return self.windows[i][3] if i >= 0 else 0

    def height(self, t: int) -> int:
        return self.sc.first_block_height + int((t - self.t0) / NS / self.sc.block_time_s)

    # ---- rendering -----------------------------------------------------------------
    def _make_emit(self):
        """Build ``emit(t_ns, template_id, values)`` specialised for the output format.

        The line is rendered at once (prefix parts cached per second) and kept in its
        second's bucket; ``flush_before`` writes buckets in time order."""
        fmt, tpl, counts, extra, buckets = self.fmt, self.tpl, self.counts, self.extra, self.buckets
        micro = self.sc.go_microseconds
        cache: dict[int, object] = {}
        gen = self
        nch = 0

        def chars() -> int:
            return nch
        self.chars = chars
        fromts = datetime.fromtimestamp

        def parts(s: int):
            if len(cache) > 8192:
                cache.clear()
            go = fromts(s, UTC).strftime("%Y/%m/%d %H:%M:%S")
            iso = "%s-%s-%sT%s" % (go[0:4], go[5:7], go[8:10], go[11:])
            if fmt == "text":
                p = go if micro else go + " "
            elif fmt == "bare":
                p = ""
            elif fmt == "docker":
                p = (iso + ".", "Z " + go + (" " if not micro else ""))
            elif fmt == "json":
                p = '{"time":"' + iso
            else:
                p = ('{"log":"' + go + (" " if not micro else ""), '\\n","stream":"stderr","time":"' + iso)
            cache[s] = p
            return p

        def store(s: int, t: int, line: str) -> None:
            if s < gen.flushed_upto:
                raise AssertionError("emit into an already flushed second")
            buckets[s] = [(t, line)]

        if fmt in ("text", "bare") and not micro:
            def emit(t: int, tid: int, vals: tuple) -> None:
                nonlocal nch
                s = t // NS
                p = cache.get(s)
                if p is None:
                    p = parts(s)
                line = p + (tpl[tid] % vals) + "\n"
                b = buckets.get(s)
                if b is None:
                    store(s, t, line)
                else:
                    b.append((t, line))
                counts[tid] += 1
                nch += len(line) + extra[tid]
        elif fmt == "text":
            def emit(t: int, tid: int, vals: tuple) -> None:
                nonlocal nch
                s, ns = divmod(t, NS)
                p = cache.get(s)
                if p is None:
                    p = parts(s)
                line = "%s.%06d %s\n" % (p, ns // 1000, tpl[tid] % vals)
                b = buckets.get(s)
                if b is None:
                    store(s, t, line)
                else:
                    b.append((t, line))
                counts[tid] += 1
                nch += len(line) + extra[tid]
        elif fmt == "docker":
            def emit(t: int, tid: int, vals: tuple) -> None:
                nonlocal nch
                s, ns = divmod(t, NS)
                p = cache.get(s)
                if p is None:
                    p = parts(s)
                if micro:
                    line = "%s%09d%s.%06d %s\n" % (p[0], ns, p[1], ns // 1000, tpl[tid] % vals)
                else:
                    line = "%s%09d%s%s\n" % (p[0], ns, p[1], tpl[tid] % vals)
                b = buckets.get(s)
                if b is None:
                    store(s, t, line)
                else:
                    b.append((t, line))
                counts[tid] += 1
                nch += len(line) + extra[tid]
        elif fmt == "json":
            def emit(t: int, tid: int, vals: tuple) -> None:
                nonlocal nch
                s, ns = divmod(t, NS)
                p = cache.get(s)
                if p is None:
                    p = parts(s)
                frac = ("." + ("%09d" % ns).rstrip("0")) if ns else ""
                line = "%s%sZ\",%s}\n" % (p, frac, tpl[tid] % vals)
                b = buckets.get(s)
                if b is None:
                    store(s, t, line)
                else:
                    b.append((t, line))
                counts[tid] += 1
                nch += len(line) + extra[tid]
        else:  # dockerjson
            def emit(t: int, tid: int, vals: tuple) -> None:
                nonlocal nch
                s, ns = divmod(t, NS)
                p = cache.get(s)
                if p is None:
                    p = parts(s)
                body = tpl[tid] % vals
                frac = ("." + ("%09d" % ns).rstrip("0")) if ns else ""
                if micro:
                    line = '%s.%06d %s%s%sZ"}\n' % (p[0], ns // 1000, body, p[1], frac)
                else:
                    line = '%s%s%s%sZ"}\n' % (p[0], body, p[1], frac)
                b = buckets.get(s)
                if b is None:
                    store(s, t, line)
                else:
                    b.append((t, line))
                counts[tid] += 1
                nch += len(line) + extra[tid]
        return emit

    def flush_before(self, sec: int) -> None:
        bk = self.buckets
        out = []
        s = self.flushed_upto
        while s < sec:
            b = bk.pop(s, None)
            if b:
                b.sort(key=itemgetter(0))
                out.extend([x[1] for x in b])
                if self.first_ns is None:
                    self.first_ns = b[0][0]
                self.last_ns = b[-1][0]
            s += 1
            if not bk and s < sec:
                s = sec
        self.flushed_upto = max(self.flushed_upto, sec)
        if out:
            self.nlines += len(out)
            self.sink(out)

    def flush_all(self) -> None:
        if self.buckets:
            self.flush_before(max(self.buckets) + 1)

    # ---- scheduled events ---------------------------------------------------------
    def run_sched(self, t: int) -> None:
        sched = self.sched
        while sched and sched[0][0] <= t:
            tt, _, fn, args = heapq.heappop(sched)
            fn(tt, *args)

    def _phase_change(self, t: int, wi: int, ph: int) -> None:
        E, T = self.emit, _T
        sc = self.sc
        h = self.height(t)
        self.cur_phase = ph
        if ph == 1:
            E(t, T["phase_gate_active"], ("confirmation_poc", "Inference", _PHASE_NAMES[1], sc.epoch, h,
                                          "false", sc.max_attempts))
            E(t + 310_000, T["phase_gate_preserved"], ("confirmation_poc", len(self.preserved),
                                                       ",".join(self.preserved), 0, ""))
            a, g, v, b = self.windows[wi]
            self.sm.cpoc_windows.append(CPoCWindowInfo(
                start=self._dt(a), generation_start=self._dt(g), validation_start=self._dt(v),
                end=self._dt(b), preserved=self.preserved, epoch=sc.epoch,
                start_height=h, end_height=self.height(b)))
        elif ph in (2, 3):
            E(t, T["phase_gate_updated"], ("confirmation_poc", "Inference", _PHASE_NAMES[ph], sc.epoch, h,
                                           "false", sc.max_attempts))
        else:
            for w in self.sm.cpoc_windows:
                if w.end == self._dt(t):
                    w.complete = True
            E(t, T["phase_gate_inactive"], ("", "Inference", "CONFIRMATION_POC_COMPLETED", sc.epoch, h,
                                            "false", sc.max_attempts))

    def _balance_check(self, t: int) -> None:
        sc = self.sc
        if sc.rotation_enabled:
            for e in list(self.escrows):
                if not e.active:
                    continue
                if e.balance < sc.balance_threshold:
                    self.emit(t, _T["escrow_balance_low"], (e.id, max(e.balance, 0), sc.balance_threshold))
                    self._retire(t + 40_000, e, "low_balance")
                elif e.nonce >= sc.nonce_limit:
                    self.emit(t, _T["escrow_nonce_high"], (e.id, e.nonce, sc.nonce_limit))
                    self._retire(t + 40_000, e, "high_nonce")
        self._at(t + 30 * NS, self._balance_check)

    def _retire(self, t: int, e: _Escrow, reason: str) -> None:
        """Deactivate escrow ``e`` at ``t`` and mint its replacement (rotation enabled)."""
        E, T, rng, sc = self.emit, _T, self.rng, self.sc
        e.active = False
        self.escrows.remove(e)
        new = self._new_escrow(e.model, 0, sc.escrow_amount)
        rec = {"old": e.id, "new": new.id, "reason": reason, "balance": e.balance, "nonce": e.nonce,
               "time": self._dt(t).isoformat()}
        self.sm.replacements.append(rec)
        self.sm.replacements_by_reason[reason] = self.sm.replacements_by_reason.get(reason, 0) + 1
        if sc.rotation_enabled:
            E(t, T["escrow_depletion_deactivated"], (e.id, reason, "true", "true"))
            tc = t + rng.randrange(3 * NS, 8 * NS)
            txh = "%064X" % rng.getrandbits(256)
            E(tc, T["escrow_rotation_created"], ("regular", sc.epoch, e.model, new.id, txh))
            E(tc + rng.randrange(200_000, 3 * MS), T["escrow_depletion_replacement_created"],
              (e.id, new.id, e.model, reason, txh))
            tq = t + rng.randrange(1 * NS, 15 * NS)
            E(tq, T["settlement_queued_waiting_for_drain"], (e.id,))
            td = tq + rng.randrange(20 * NS, 90 * NS)
            E(td, T["settlement_drain_complete"], (e.id,))
            E(td + rng.randrange(5 * NS, 15 * NS), T["auto_settle_confirmed"], (e.id, "%064X" % rng.getrandbits(256)))
            new.created = tc
        else:
            new.created = t + rng.randrange(30 * NS, 120 * NS)  # operator mints by hand, no log line
        self._at(new.created, self._activate, new)

    def _activate(self, t: int, e: _Escrow) -> None:
        self.escrows.append(e)

    def _dt(self, t: int) -> datetime:
        return datetime.fromtimestamp(t // NS, UTC) + timedelta(microseconds=(t % NS) // 1000)

    # ---- picker ---------------------------------------------------------------------
    def dispatch(self, e: _Escrow, t: int, excluded: set, rid: str, probes: list):
        """The escrow's picker: consume nonces of ``e`` in order from ``t`` until one can be
        sent to a host outside ``excluded``. Burned nonces become ghost lines (or PoC probes);
        a nonce this request cannot take is usually taken by another queued request (kept in
        ``e.pending`` for the next dispatch), else burned as a stale ghost. Returns
        (nonce, slot, host, t, phase) or None when no slot of the escrow can take the request.
        The phase is re-read as the picker's clock advances, so no CPoC ghost falls after
        the window's end."""
        ph = self.phase(t)
        cpoc = ph != 0
        cend = self.window_end(t) if cpoc else 0
        eligible = e.hosts - excluded
        if cpoc:
            eligible = {h for h in eligible if h in self.preserved}
        if not eligible:
            return None
        rnd = self.rng.random
        E, T = self.emit, _T
        sc = self.sc
        nslots = len(e.slots)
        disp = sc.dispositions
        gr = self.ghost_reasons
        pend = e.pending
        if pend:
            i = 0
            while i < len(pend):
                n, slot, h = pend[i]
                if cpoc and not h.preserved:
                    del pend[i]
                    E(t, T["session_picker_ghost_probe"], ("poc_unavailable_host", slot, n, 1 + int(rnd() * 6)))
                    gr["poc_unavailable_host"] = gr.get("poc_unavailable_host", 0) + 1
                    if disp:
                        self._disp_ghost(t, e, n, h, "confirmation_poc", "none", "poc_unavailable_host")
                    t += 150_000 + int(rnd() * 400_000)
                    continue
                if h.label not in excluded:
                    del pend[i]
                    return n, slot, h, t, ph
                i += 1
        for _ in range(64 * nslots):
            if cpoc and t >= cend:
                ph = self.phase(t)
                cpoc = ph != 0
            e.nonce += 1
            n = e.nonce
            slot = n % nslots
            h = e.slots[slot]
            if cpoc and not h.preserved:
                if rnd() < sc.probe_rate and h.label not in excluded:
                    probes.append(self._probe(e, n, slot, h, t, ph, rid))
                else:
                    E(t, T["session_picker_ghost_probe"], ("poc_unavailable_host", slot, n, 1 + int(rnd() * 6)))
                    gr["poc_unavailable_host"] = gr.get("poc_unavailable_host", 0) + 1
                    if disp:
                        self._disp_ghost(t, e, n, h, "confirmation_poc", "none", "poc_unavailable_host")
                t += 150_000 + int(rnd() * 400_000)
                continue
            if h.label in excluded:
                if rnd() >= sc.stale_ghost_rate and len(pend) < 8:
                    pend.append((n, slot, h))
                    continue
                t += 200 * MS  # pickerStaleThreshold
                E(t, T["session_picker_ghost_probe"], ("no_compatible_request_after_stale", slot, n, 1))
                gr["no_compatible_request_after_stale"] = gr.get("no_compatible_request_after_stale", 0) + 1
                if disp:
                    self._disp_ghost(t, e, n, h, "confirmation_poc" if cpoc else "normal", "none",
                                     "no_compatible_request_after_stale")
                t += 100_000
                continue
            if h.throttled and not cpoc and rnd() < sc.throttle_ghost_rate:
                E(t, T["session_picker_ghost_probe_throttled"],
                  ("participant_throttled_no_send", slot, n, 1 + int(rnd() * 4), "true", h.addr, e.model))
                gr["participant_throttled_no_send"] = gr.get("participant_throttled_no_send", 0) + 1
                if disp:
                    self._disp_ghost(t, e, n, h, "normal", "probe", "participant_throttled_no_send")
                t += 100_000 + int(rnd() * 300_000)
                continue
            return n, slot, h, t, ph
        return None

    def _disp_ghost(self, t, e, n, h, phase, qmode, reason):
        X = self.EMPTY
        self.emit(t + (1 + int(self.rng.random() * 40)) * NS, _T["nonce_disposition"],
                  (e.id, n, "ghost", phase, X, qmode, reason, X, X, X, X, X, h.addr, e.model,
                   1 + int(self.rng.random() * 8), X, X))

    def _probe(self, e, n, slot, h, t, ph, rid):
        """A PoC probe on a non-preserved slot: tiny max_tokens, stream never forwarded."""
        E, T, rnd = self.emit, _T, self.rng.random
        a = _Att(n, slot, h, t, ph, ph in (1, 2))
        a.probe = True
        E(t, T["poc_probe_prepared"], (rid, e.id, n, h.label, 1, "confirmation_poc"))
        E(t + 400_000, T["started"], (rid, e.id, n, h.label))
        rc = t + int(h.rcpt_ms * (1.0 + rnd()) * MS)
        E(rc, T["receipt_received"], (rid, e.id, n, h.label, (rc - t) // MS))
        ft = rc + int((80 + rnd() * 400) * MS)
        E(ft, T["first_token"], (rid, e.id, n, h.label, "probe", 0))
        a.rcpt, a.first, a.end, a.usage = rc, ft, ft + int((20 + rnd() * 100) * MS), 1
        return a

    # ---- requests -------------------------------------------------------------------
    def request(self, t: int) -> None:
        sc, rng = self.sc, self.rng
        rnd = rng.random
        E, T = self.emit, _T
        sm = self.sm
        self.req_seq += 1
        rid = "req-%d-%d" % (t, self.req_seq)
        ph = self.phase(t)
        cpoc = ph != 0
        model = sc.models[int(rnd() * len(sc.models))] if len(sc.models) > 1 else sc.models[0]
        # request size (bytes of the normalized body)
        large = False
        if self.large_at and t >= self.large_at[0]:
            self.large_at.pop(0)
            large = True
        elif rnd() < sc.large_request_rate:
            large = True
        if large:
            nbytes = rng.randrange(*sc.large_request_bytes)
        else:
            nbytes = int(min(120_000, max(180, rng.lognormvariate(8.4, 0.9))))
        est = (nbytes + 3) // 4
        if rnd() < sc.noise_rate:
            if rnd() < 0.7:
                E(t, T["noise_tls"], (int(rnd() * 250), int(rnd() * 250), 30000 + int(rnd() * 30000)))
            else:
                E(t, T["noise_superfluous"], (300 + int(rnd() * 400),))
        E(t, T["gateway_request_received"], (rid, model, est, self.api_keys[int(rnd() * 12)], "user"))
        t += 40_000 + int(rnd() * 200_000)
        # limiter
        rej = sc.cpoc_limiter_reject_rate if cpoc else sc.limiter_reject_rate
        if rnd() < rej:
            per = 10 if ph in (1, 2) else 5
            w = sum(h.weight for h in self.hosts if h.preserved) if cpoc else self.total_weight
            limit = w * per // 10000
            reason = "max_concurrent_requests" if rnd() < 0.8 or limit == 0 else "max_input_tokens_in_flight"
            if limit == 0:
                reason = "zero_live_weight"
            E(t, T["gateway_limiter_rejected"], (rid, model, est, reason, limit, limit))
            sm.limiter_rejected += 1
            return
        if cpoc and rnd() < sc.cpoc_limiter_bypass_rate:
            E(t, T["gateway_limiter_bypassed_during_poc"], (rid, est, "confirmation_poc"))
        else:
            E(t, T["gateway_limiter_acquired"], (rid,))
        # escrow selection (capacity weight: during CPoC only preserved slots count)
        cands = [e for e in self.escrows if e.model == model and e.nonce < sc.nonce_limit] or \
            [e for e in self.escrows if e.model == model]
        if cpoc:
            wts = [e.pres_slots for e in cands]
            if cands and not any(wts):
                t += 100_000
                E(t, T["zero_capacity"], (len(cands), " ".join("%d=0" % e.id for e in cands)))
                sm.zero_capacity_429 += 1
                return
        else:
            wts = [1] * len(cands)
        if not cands:
            E(t + 50_000, T["gateway_runtime_select_failed"], (rid,))
            sm.runtime_select_failed += 1
            return
        x = rnd() * sum(wts)
        for e, w in zip(cands, wts):
            x -= w
            if x < 0:
                break
        t += 30_000 + int(rnd() * 100_000)
        E(t, T["gateway_runtime_selected"], (rid, e.id))
        E(t + 20_000, T["gateway_request_forwarded"], (rid, e.id, "/v1/chat/completions"))
        t += 60_000 + int(rnd() * 300_000)
        E(t, T["proxy_request_started"], (rid, e.id, model, "true", nbytes))
        E(t + 15_000, T["runner_started"], (rid, e.id, nbytes, model))
        t += 200_000 + int(rnd() * 800_000)
        price = sc.token_price
        reserve = (nbytes + sc.max_tokens) * price
        if reserve > e.balance:
            E(t, T["runner_prepare_failed"], (rid, e.id, self.Q(INSUFFICIENT)))
            self._exhaust(t + 300_000 + int(rnd() * 2 * MS), e)
            E(t + 600_000 + int(rnd() * MS), T["proxy_stream_failed"], (rid, e.id, self.Q(INSUFFICIENT)))
            sm.requests_failed += 1
            return
        # primary
        probes: list[_Att] = []
        excluded: set = set()
        got = self.dispatch(e, t, excluded, rid, probes)
        if got is None:
            E(t, T["picker_exhausted"], (rid, e.id, "receipt_timeout", 0, 0, len(e.slots), self.Q(ERR_NO_AVAILABLE)))
            E(t + 100_000, T["request_failed"], (rid, e.id, self.Q(ERR_NO_AVAILABLE)))
            sm.requests_failed += 1
            return
        n, slot, h, t, ph = got
        excluded.add(h.label)
        usage_target = int(min(sc.max_tokens, max(8, rng.lognormvariate(6.9, 0.7))))
        # decision (section 4.1)
        imm = 0
        delay = 0
        if h.unresp_until > t:
            dec, imm = "primary_unresponsive", 1
        elif h.slow and rnd() < sc.hedge_rate:
            dec, imm = "pairwise_budgeted_speedup", (2 if rnd() < 0.08 else 1)
        elif rnd() < sc.ab_sample_rate:
            dec, imm = "pairwise_ab_sample", 1
        elif rnd() < sc.secondary_faster_rate:
            dec, imm = "secondary_faster", 1
        else:
            dec = "receipt_timeout"
            delay = 10000 if nbytes > 100_000 else 5000
        sm.decisions[dec] = sm.decisions.get(dec, 0) + 1
        E(t, T["decision_made"], (rid, e.id, n, h.label, dec, delay, sc.max_attempts, len(e.slots)))
        atts: list[_Att] = []
        prim = self._start_attempt(rid, e, n, slot, h, t, nbytes, usage_target, ph)
        atts.append(prim)
        ts = t + 300_000
        for k in range(1, imm + 1):
            if len(atts) >= sc.max_attempts:
                break
            E(ts, T["secondary_immediate_start_req"], (rid, e.id, dec, k, imm))
            E(ts + 5_000, T["secondary_immediate_start"], (rid, e.id, n, h.label))
            a2 = self._secondary(rid, e, ts + 20_000, excluded, probes, nbytes, usage_target, dec, dec,
                                 pair_from=(prim if dec.startswith("pairwise") else None))
            if a2 is None:
                break
            atts.append(a2)
            ts = a2.start + 200_000
        if imm == 0:
            # receipt timeout escalation: the primary has no receipt when the delay elapses
            te = prim.start + delay * MS
            if (prim.rcpt == 0 or prim.rcpt > te) and prim.end > te and len(atts) < sc.max_attempts:
                E(te, T["receipt_timeout_wait_elapsed"], (rid, e.id, n, h.label, delay))
                a2 = self._secondary(rid, e, te + 50_000, excluded, probes, nbytes, usage_target, dec,
                                     "receipt_timeout")
                if a2 is not None:
                    atts.append(a2)
        # failure escalation while nothing succeeds
        while not any(a.mode == "ok" for a in atts):
            last = max(atts, key=lambda a: a.end)
            if len(atts) >= sc.max_attempts:
                E(last.end + 30_000, T["escalation_skipped"],
                  (rid, e.id, last.nonce, last.host.label, "attempt_failed", "attempt_limit", len(atts),
                   sc.max_attempts))
                break
            E(last.end + 30_000, T["attempt_failed"], (rid, e.id, last.nonce, last.host.label))
            a2 = self._secondary(rid, e, last.end + 80_000, excluded, probes, nbytes, usage_target, dec,
                                 "attempt_failed")
            if a2 is None:
                break
            atts.append(a2)
        self._finish(rid, e, atts, probes, dec, nbytes)

    def _exhaust(self, t: int, e: _Escrow) -> None:
        """Section 6.2: the balance-exhausted callback of a failed prepare."""
        sc, E, T = self.sc, self.emit, _T
        E(t, T["escrow_balance_exhausted"], (e.id,))
        self.sm.escrow_exhaustions += 1
        if e.balance >= sc.balance_threshold:
            self.sm.spurious_exhaustions += 1
        if sc.rotation_enabled:
            E(t + 20_000, T["gateway_replacing_exhausted_escrow"], (e.id,))
            self._retire(t + 700_000 + int(self.rng.random() * 3 * MS), e, "balance_exhausted")
        else:
            E(t + 20_000, T["devshard_deactivated"], (e.id,))
            E(t + 60_000, T["runtime_retired"], (e.id,))
            self._retire(t + 60_000, e, "balance_exhausted")

    def _secondary(self, rid, e, t, excluded, probes, nbytes, usage_target, dec, reason, pair_from=None):
        sc = self.sc
        reserve = (nbytes + sc.max_tokens) * sc.token_price
        if reserve > e.balance:
            self.emit(t, _T["secondary_prepare_failed"], (rid, e.id, dec, self.Q(INSUFFICIENT)))
            return None
        got = self.dispatch(e, t, excluded, rid, probes)
        if got is None:
            uniq = len(excluded)
            err = ERR_ALL_EXCLUDED if not (e.hosts - excluded) else ERR_NO_AVAILABLE
            self.emit(t, _T["picker_exhausted"], (rid, e.id, dec, uniq, uniq, len(e.slots), self.Q(err)))
            return None
        n, slot, h, t2, ph = got
        excluded.add(h.label)
        if pair_from is not None:
            p = pair_from
            sp = max(0.1, h.tps / p.host.tps)
            self.emit(t2, _T["pairwise_winner_hold_candidate"],
                      (rid, e.id, p.nonce, p.host.label, n, h.label, "%g" % round(sp, 2),
                       6 + int(self.rng.random() * 60), 500))
        a = self._start_attempt(rid, e, n, slot, h, t2 + 10_000, nbytes, usage_target, ph)
        a.reason = reason
        sr = self.sm.secondary_start_reasons
        sr[reason] = sr.get(reason, 0) + 1
        return a

    def _start_attempt(self, rid, e, n, slot, h, t, nbytes, usage_target, ph) -> _Att:
        """Decide the attempt's fate and log its start lines; the rest follows in _finish."""
        sc, rnd, E, T = self.sc, self.rng.random, self.emit, _T
        a = _Att(n, slot, h, t, ph, ph in (1, 2))
        E(t, T["prepared"], (rid, e.id, n, h.label))
        t += 100_000 + int(rnd() * 400_000)
        a.start = t
        E(t, T["started"], (rid, e.id, n, h.label))
        cpoc = ph != 0
        slow = sc.cpoc_receipt_slowdown if cpoc else 1.0
        rcpt = t + int(h.rcpt_ms * slow * (0.6 + rnd() * 0.9) * MS)
        pf = sc.cpoc_failure_rate if cpoc else min(0.9, sc.failure_rate * h.flaky)
        usage = max(1, int(usage_target * (0.97 + rnd() * 0.06)))
        a.usage = usage
        e.balance -= (nbytes + usage) * sc.token_price
        if rnd() < pf:
            r = rnd()
            if cpoc:
                mode = ("empty_stream" if r < 0.45 else "not_finished" if r < 0.65 else
                        "http_503" if r < 0.85 else "no_receipt")
            else:
                mode = ("http_503" if r < 0.3 else "empty_stream" if r < 0.5 else "error_stream" if r < 0.7
                        else "no_receipt" if r < 0.85 else "not_finished")
            a.mode = mode
            if mode == "http_503":
                a.end = t + int((60 + rnd() * 500) * MS)
            elif mode == "no_receipt":
                a.end = t + int((25 + rnd() * 10) * NS)
            else:
                a.rcpt = rcpt
                if mode == "error_stream":
                    a.end = rcpt + int((50 + rnd() * 500) * MS)
                elif mode == "empty_stream":
                    a.end = rcpt + int((15 + rnd() * 25) * NS)
                else:
                    a.end = rcpt + int((10 + rnd() * 60) * NS)
            if a.rcpt == 0:
                h.unresp_until = t + int(sc.unresponsive_window_s * NS)
        else:
            a.rcpt = rcpt
            ttft = (150 + nbytes * 0.012 * (60.0 / h.tps)) * (2.5 if cpoc else 1.0) * (0.7 + rnd() * 0.6)
            a.first = rcpt + int(ttft * MS)
            a.end = a.first + int(usage / h.tps * (0.85 + rnd() * 0.3) * NS)
        return a

    def _finish(self, rid, e, atts, probes, dec, nbytes) -> None:
        sc, rng, E, T, X, sm = self.sc, self.rng, self.emit, _T, self.EMPTY, self.sm
        rnd = rng.random
        model = e.model
        ok = [a for a in atts if a.mode == "ok"]
        win = min(ok, key=lambda a: a.first) if ok else None
        grace = sc.secondary_wait_after_winner_ms * MS
        if len(atts) >= 2:
            sm.multi_attempt_requests += 1
            if any(a.reason != "attempt_failed" for a in atts[1:]):
                sm.hedged_races += 1
                sm.hedged_races_by_decision[dec] = sm.hedged_races_by_decision.get(dec, 0) + 1
        wn = win.nonce if win else 0
        disp = sc.dispositions
        for a in atts:
            h, n = a.host, a.nonce
            lbl = h.label
            preason = "confirmation_poc" if a.phase else X
            pgen = "true" if a.gen else "false"
            dphase = "confirmation_poc" if a.phase else "normal"
            if a.rcpt:
                E(a.rcpt, T["receipt_received"], (rid, e.id, n, lbl, (a.rcpt - a.start) // MS))
                h.unresp_until = 0 if a.mode == "ok" else h.unresp_until
            if a.mode == "ok":
                is_w = a is win
                a.winner = is_w
                chunks = max(2, int(a.usage / 3.1)) + 7
                cchunks = chunks - 7
                obytes = int(a.usage * (66 + rnd() * 8)) + 600
                sbr = int(obytes * 1.0226)
                gen_ms = (a.end - a.first) // MS
                mean_gap = max(1, gen_ms // max(1, chunks))
                max_gap = mean_gap * (3 + int(rnd() * 6))
                stall = rnd() < sc.stall_rate
                if stall:
                    max_gap = 30_000 + int(rnd() * 25_000)
                    a.end += max_gap * MS
                    gen_ms += max_gap
                if is_w:
                    E(a.first, T["first_token"], (rid, e.id, n, lbl, "winner", n))
                    E(a.first + 20_000, T["winner_selected"], (rid, e.id, n))
                    E(a.first + 40_000, T["stream_forwarding_started"], (rid, e.id, n, lbl))
                else:
                    E(a.first, T["first_token"], (rid, e.id, n, lbl, "loser", wn))
                    E(a.first + 30_000, T["stream_suppressed"], (rid, e.id, n, lbl, wn))
                    if a.end > win.end + grace:
                        a.cancelled = True
                        a.end = win.end + grace
                end = a.end
                attempt_ms = (end - a.start) // MS
                if a.cancelled:
                    E(end, T["speculative_attempt_canceled"], (rid, e.id, n, "winner_grace_expired"))
                    done = int((end - a.first) / NS * h.tps)
                    E(end + 10_000, T["race_completed_failed"],
                      (rid, e.id, n, lbl, a.slot, h.addr, model, nbytes, "false", "false", "true", "true",
                       a.rcpt // MS, attempt_ms, done // 3, done // 3 - 2, done * 70, int(done * 71.6), 0,
                       max_gap, mean_gap, "delta.content", X, "false", "false", "client_cancelled"))
                    sm.cancelled_losers += 1
                    sm.failed_attempts += 1
                    if disp:
                        self._disp(end, e, a, "unfinished_execution", dphase, "client", "execution", "skipped",
                                   "context_canceled", "client_cancelled")
                    continue
                E(end, T["send_completed"], (rid, e.id, n, lbl, chunks, cchunks, obytes, sbr, max_gap,
                                             int(rnd() * chunks), mean_gap))
                vals = (rid, e.id, n, lbl, a.slot, h.addr, model, nbytes, "true" if is_w else "false", "true",
                        "true", "true", a.rcpt // MS, attempt_ms, chunks, cchunks, obytes, sbr, a.usage,
                        max_gap, mean_gap, "delta.content", X, "false", "false")
                if stall:
                    st = '[{"at_chunk":%d,"gap_ms":%d}]' % (int(rnd() * cchunks), max_gap)
                    E(end + 15_000, T["race_completed_stalls"], vals + (1, self.Q(st)))
                else:
                    E(end + 15_000, T["race_completed"], vals)
                if is_w:
                    sm.winners += 1
                    if disp:
                        self._disp(end, e, a, "finished_used", dphase, X, X, X, X, X)
                else:
                    sm.suppressed_losers += 1
                    sm.suppressed_loser_tokens += a.usage
                    if a.reason == "primary":
                        sm.suppressed_primaries += 1
                    if disp:
                        self._disp(end, e, a, "finished_unused", dphase, X, X, X, X, X)
                continue
            # failed attempt
            mode = a.mode
            end = a.end
            attempt_ms = (end - a.start) // MS
            sm.failed_attempts += 1
            if mode == "http_503":
                E(end, T["send_failed_http"], (rid, e.id, n, lbl, 0, 0, 0, 0, preason, pgen, "http_503", 503,
                                               "/v1/chat/completions", self.Q("host returned status 503")))
                rc = (0, 0, 0, 0, 0, 0, 0, 0, X, "http")
            elif mode == "no_receipt":
                E(end, T["send_failed"], (rid, e.id, n, lbl, 0, 0, 0, 0, preason, pgen, "no_receipt",
                                          self.Q("context deadline exceeded (Client.Timeout exceeded while awaiting headers)")))
                rc = (0, 0, 0, 0, 0, 0, 0, 0, X, "transport")
            elif mode == "empty_stream":
                gap = int((end - a.rcpt) // MS)
                E(end, T["empty_stream"], (rid, e.id, n, lbl, 2, 0, 301, 355, 0, gap, gap // 2, X, preason, pgen,
                                           "true" if a.gen else "false", "stream"))
                rc = (2, 0, 301, 355, 0, gap, gap // 2, 0, X, X)
            elif mode == "error_stream":
                E(end, T["error_stream"], (rid, e.id, n, lbl, 1, 188, "sse", 500, "server_error",
                                           self.Q("model backend unavailable"),
                                           self.Q('{"error":{"message":"model backend unavailable"}}'),
                                           "false", preason, pgen, "stream"))
                rc = (1, 0, 188, 240, 0, 0, 0, 0, X, "sse")
            else:  # not_finished
                E(end, T["send_failed"], (rid, e.id, n, lbl, 1, 0, 120, 160, preason, pgen, "not_finished",
                                          self.Q("stream ended without finish_reason")))
                rc = (1, 0, 120, 160, 0, int((end - a.rcpt) // MS), 0, 0, X, "stream")
            has_r = "true" if a.rcpt else "false"
            E(end + 15_000, T["race_completed_failed"],
              (rid, e.id, n, lbl, a.slot, h.addr, model, nbytes, "false", "false", has_r, has_r,
               a.rcpt // MS, attempt_ms, rc[0], rc[1], rc[2], rc[3], rc[4], rc[5], rc[6], rc[8] or X,
               rc[9] or X, "false", "false", mode))
            if disp:
                if a.rcpt:
                    kind, dis = "execution", "unfinished_execution"
                else:
                    kind, dis = "refused", "unfinished_refused"
                r = rnd()
                outcome, treason = (("applied", X) if r < 0.85 else ("insufficient_votes", "unknown") if r < 0.95
                                    else ("skipped", "unknown"))
                tj = end + int((60 + rnd() * 120) * NS)
                self._disp(tj, e, a, dis, dphase, "host_response", kind, outcome, treason, mode,
                           teval="confirmation_poc" if self.phase(tj) else "normal")
        # probes
        for a in probes:
            E(a.end, T["race_completed"],
              (rid, e.id, a.nonce, a.host.label, a.slot, a.host.addr, model, nbytes, "false", "true", "true",
               "true", a.rcpt // MS, (a.end - a.start) // MS, 3, 1, 412, 480, 1, 40, 20, "delta.content", X,
               "true", "false"))
            sm.probes += 1
            if disp:
                self._disp(a.end, e, a, "finished_unused", "confirmation_poc", X, X, X, X, X)
        last_end = max(a.end for a in atts)
        if probes:
            last_end = max(last_end, max(a.end for a in probes))
        if win is not None:
            pending = sum(1 for a in atts if a is not win and a.end > win.end)
            tw = win.end + 60_000
            if pending:
                E(tw, T["request_returned_while_speculation_pending"],
                  (rid, e.id, wn, pending, sc.secondary_wait_after_winner_ms, dec))
            E(tw + 20_000, T["request_succeeded"], (rid, e.id, wn, dec))
            E(max(last_end, tw) + 80_000, T["request_fully_settled"], (rid, e.id, wn, dec, "success"))
            sm.requests_succeeded += 1
        else:
            err = self.Q("all attempts failed: %s" % atts[-1].mode)
            E(last_end + 60_000, T["request_failed"], (rid, e.id, err))
            E(last_end + 70_000, T["proxy_stream_failed"], (rid, e.id, err))
            E(last_end + 90_000, T["request_fully_settled"], (rid, e.id, 0, dec, "failed"))
            sm.requests_failed += 1

    def _disp(self, t, e, a, dis, dphase, origin, kind, outcome, treason, detail, teval=None):
        X = self.EMPTY
        lag = 1 + int(self.rng.random() * 9)
        self.emit(t + lag * MS, _T["nonce_disposition"],
                  (e.id, a.nonce, dis, dphase, teval or X, "none", X, origin or X, kind or X, outcome or X,
                   treason or X, detail or X, a.host.addr, e.model, lag, X, X))

    # ---- main loop ------------------------------------------------------------------
    def run(self) -> None:
        sc, rng = self.sc, self.rng
        t = self.t0
        target = self.target
        nreq = 0
        if target:
            prior = {"text": 5200, "bare": 4500, "docker": 6800, "json": 7800, "dockerjson": 8800}[self.fmt]
        while True:
            if target:
                nchars = self.chars()
                if nchars >= target:
                    break
                rem_t = (self.end - t) / NS
                bpr = nchars / nreq if nreq >= 50 else prior
                rate = (target - nchars) / bpr / max(rem_t, 1.0)
                rate = min(max(rate, 1e-4), 5000.0)
            else:
                rate = sc.requests_per_second
            t += int(rng.expovariate(rate) * NS) + 1
            if not target and t >= self.end:
                break
            self.run_sched(t)
            self.flush_before(t // NS)
            self.request(t)
            nreq += 1
        # phase changes and escrow activations inside the tail of the written range
        last = max(self.buckets) + 1 if self.buckets else t // NS
        while self.sched and self.sched[0][0] < last * NS:
            tt, _, fn, args = heapq.heappop(self.sched)
            if fn == self._balance_check:
                continue
            fn(tt, *args)
        self.flush_all()


def _finish_summary(g: _Gen, bytes_written: int) -> SynthSummary:
    sm = g.sm
    sm.lines = g.nlines
    sm.bytes = bytes_written
    sm.preserved = g.preserved
    sm.throttled = g.throttled
    sm.hosts = {h.label: h.addr for h in g.hosts}
    if g.first_ns is not None:
        sm.first_time = g._dt(g.first_ns)
        sm.last_time = g._dt(g.last_ns)
    stages: dict[str, int] = {}
    events: dict[str, int] = {}
    templates: dict[str, int] = {}
    pg: dict[str, int] = {}
    names = {v: k for k, v in _T.items()}
    for tid, c in enumerate(g.counts):
        if not c:
            continue
        kind, name = TPL.family[tid]
        templates[names[tid]] = c
        if kind == "stage":
            stages[name] = stages.get(name, 0) + c
        elif kind == "event":
            name, _, sub = name.partition(":")
            events[name] = events.get(name, 0) + c
            if sub:
                pg[sub] = pg.get(sub, 0) + c
        else:
            sm.noise_lines += c
    sm.stages = dict(sorted(stages.items()))
    sm.events = dict(sorted(events.items()))
    sm.phase_gate_events = dict(sorted(pg.items()))
    sm.templates = dict(sorted(templates.items()))
    sm.requests = stages.get("gateway_request_received", 0)
    sm.attempts = stages.get("race_completed", 0)
    sm.ghost_nonces = stages.get("session_picker_ghost_probe", 0)
    sm.ghosts_by_reason = dict(sorted(g.ghost_reasons.items()))
    sm.escrow_rotations = events.get("escrow_rotation_created", 0)
    sm.decisions = dict(sorted(sm.decisions.items()))
    return sm


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------

DEFAULT_START = datetime(2026, 9, 30, 8, 0, 0, tzinfo=UTC)


def write_logs(path: str | Path, target_bytes: int | None, *, seed: int = 0, fmt: str = "text",
               start: datetime | None = None, scenario: Scenario | None = None,
               gzip_level: int = 1) -> SynthSummary:
    """Write a synthetic gateway log to ``path`` (gzip when it ends with ``.gz``).

    ``target_bytes``: uncompressed size to reach (the last requests are completed, so the
    file exceeds it by at most one request's lines); None writes ``scenario.duration`` at
    ``scenario.requests_per_second``. Returns the ground-truth summary."""
    path = Path(path)
    sc = scenario or Scenario()
    start = start or DEFAULT_START
    compressed = path.suffix == ".gz"
    t_begin = _time.perf_counter()
    written = [0]
    with open(path, "wb") as raw:
        out = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=gzip_level, mtime=0) \
            if compressed else raw
        buf: list[str] = []
        size = [0]

        def sink(lines: list[str]) -> None:
            buf.extend(lines)
            size[0] += len(lines)
            if size[0] >= 20000:
                drain()

        def drain() -> None:
            if buf:
                data = "".join(buf).encode("utf-8")
                written[0] += len(data)
                out.write(data)
                buf.clear()
                size[0] = 0

        g = _Gen(seed, fmt, start, sc, target_bytes if target_bytes else None, sink)
        g.run()
        drain()
        if compressed:
            out.close()
    sm = _finish_summary(g, written[0])
    sm.path = str(path)
    sm.compressed = compressed
    sm.file_bytes = path.stat().st_size
    sm.elapsed_s = _time.perf_counter() - t_begin
    sm.mb_per_s = (sm.bytes / 1e6) / sm.elapsed_s if sm.elapsed_s > 0 else 0.0
    return sm


def generate_lines(target_bytes: int | None = None, *, seed: int = 0, fmt: str = "text",
                   start: datetime | None = None, scenario: Scenario | None = None) -> tuple[list[str], SynthSummary]:
    """The same output in memory: (lines without newlines, summary). For small tests."""
    sc = scenario or Scenario.compact()
    chunks: list[str] = []
    g = _Gen(seed, fmt, start or DEFAULT_START, sc, target_bytes if target_bytes else None, chunks.extend)
    g.run()
    text = "".join(chunks)
    sm = _finish_summary(g, len(text.encode("utf-8")))
    sm.path = "<memory>"
    return text.splitlines(), sm


def write_excerpt(path: str | Path, fmt: str = "text", *, seed: int = 0, start: datetime | None = None,
                  scenario: Scenario | None = None) -> SynthSummary:
    """A compact fixture (``Scenario.compact()``: ~4 minutes, one CPoC window, every line family)."""
    return write_logs(path, None, seed=seed, fmt=fmt, start=start, scenario=scenario or Scenario.compact())


_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_size(text: str) -> int:
    """'500MB', '1GB', '64MiB' or a plain byte count -> bytes."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"bad size {text!r}; e.g. 500MB, 1GB, 64MiB, 1000000")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])
