"""Today's gateway's lines (issue 34; gateway-logs.md section 14): escrow holds, funding
refusals, retention retirements, the skipped replacement, the zero-capacity 503, the
per-escrow route family and the em-dash tail of escrow_balance_low read loosely, each into
its line table, with Go durations in seconds.

Each format has an exact-line test (the line as the source's format string writes it:
escrow_hold.go, gateway.go, the funding-fallback CI test), collected through the CLI, and is
in the property test, which fills the format with generated values, checks that every parse
path reads the line alike (check_block) and that the line table holds the values written."""

from __future__ import annotations

import json
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.progress import Progress
from auditor.sources import gatewaylog
from auditor.sources.gatewaylog_parse import Reject, parse_block, parse_line
from auditor.store import Store
from tools.synth import go_quote
from conftest import q, run_cli
from test_gatewaylog_parse import check_block

MM = "MiniMaxAI/MiniMax-M2.7"
T = "2026/10/08 05:56:21 "


def collect(tmp_path: Path, *lines: str) -> Path:
    log = tmp_path / "gateway.log"
    log.write_text("".join(T + line + "\n" for line in lines), encoding="utf-8")
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(log), db=db)
    assert r.returncode == 0, r.stderr
    return db


def row(db: Path, table: str, cols: str) -> tuple:
    rows = q(db, f"SELECT {cols} FROM {table} ORDER BY file_id, line_no")
    assert len(rows) == 1, rows
    return rows[0]


# -- exact lines ------------------------------------------------------------------------
HOLD_STARTED = ('escrow_hold_started escrow=41701 reason="balance_exhausted" balance=1800000 '
                "recoverable_in_flight=2400000 release_balance=2310720 on_hold_since=2026-10-08T05:56:21.627000001Z")
HOLD_RELEASED = 'escrow_hold_released escrow=41701 reason="balance_recovered"'
HOLD_UNRECOVERABLE = ("escrow_hold_unrecoverable escrow=41702 balance=850000 recoverable_in_flight=0 "
                      "release_balance=2310720 held_for=1m0.2s pending=1 pending_cost=250000 started=2 "
                      "started_cost=40000 challenged=3 challenged_cost=7000 overdue_pending=1 "
                      "overdue_pending_cost=250000 latest_pending_deadline=none")
HOLD_EXPIRED = "escrow_hold_expired escrow=41702 balance=850000 recoverable_in_flight=12 held_for=10.002118s"
HOLD_RESTORED = "escrow_hold_restored escrow=41703 on_hold_since=2026-10-08T06:26:21.629Z"
TOP_UP = f'escrow_hold_top_up_created model="{MM}" role=regular epoch=417 escrow=41710 serving=2 held=1'


def test_escrow_hold_started_and_released(tmp_path):
    db = collect(tmp_path, HOLD_STARTED, HOLD_RELEASED)
    got = q(db, "SELECT event, escrow, reason, balance, recoverable_in_flight, release_balance, on_hold_since "
                "FROM log_escrow_holds ORDER BY line_no")
    assert got[0][:6] == ("escrow_hold_started", 41701, "balance_exhausted", 1_800_000, 2_400_000, 2_310_720)
    assert got[0][6] == datetime(2026, 10, 8, 5, 56, 21, 627000, tzinfo=timezone.utc)
    assert got[1][:3] == ("escrow_hold_released", 41701, "balance_recovered") and got[1][3:] == (None,) * 4


def test_escrow_hold_unrecoverable_with_its_breakdown(tmp_path):
    db = collect(tmp_path, HOLD_UNRECOVERABLE)
    assert row(db, "log_escrow_holds", "event, escrow, balance, recoverable_in_flight, release_balance, held_for, "
                                       "held_for_s, pending, pending_cost, started, started_cost, challenged, "
                                       "challenged_cost, overdue_pending, overdue_pending_cost, "
                                       "latest_pending_deadline") == \
        ("escrow_hold_unrecoverable", 41702, 850_000, 0, 2_310_720, "1m0.2s", 60.2, 1, 250_000, 2, 40_000, 3, 7_000,
         1, 250_000, None)


def test_escrow_hold_expired_of_older_builds(tmp_path):
    db = collect(tmp_path, HOLD_EXPIRED)
    assert row(db, "log_escrow_holds", "event, escrow, balance, recoverable_in_flight, held_for_s") == \
        ("escrow_hold_expired", 41702, 850_000, 12, 10.002118)


def test_escrow_hold_restored_carries_its_start(tmp_path):
    db = collect(tmp_path, HOLD_RESTORED)
    assert row(db, "log_escrow_holds", "event, escrow, on_hold_since") == \
        ("escrow_hold_restored", 41703, datetime(2026, 10, 8, 6, 26, 21, 629000, tzinfo=timezone.utc))


def test_escrow_hold_top_up_created(tmp_path):
    db = collect(tmp_path, TOP_UP)
    assert row(db, "log_escrow_holds", "event, model, role, epoch, escrow, serving, held") == \
        ("escrow_hold_top_up_created", MM, "regular", 417, 41710, 2, 1)


def test_go_durations_in_seconds(tmp_path):
    durations = {"1m0.2s": 60.2, "10.002118s": 10.002118, "1h2m3s": 3723.0, "0s": 0.0, "850ms": 0.85,
                 "1.5µs": 1.5e-6, "3": None, "soon": None}
    db = collect(tmp_path, *(f"escrow_hold_expired escrow={i} balance=1 recoverable_in_flight=0 held_for={d}"
                             for i, d in enumerate(durations)))
    got = dict(q(db, "SELECT held_for, held_for_s FROM log_escrow_holds"))
    assert got.keys() == durations.keys()
    for d, want in durations.items():
        assert (got[d] is None) if want is None else abs(got[d] - want) < 1e-9, (d, got[d])


def test_funding_refusals_of_the_pooled_route(tmp_path):
    r = "req-1791453981600000000-2000021"
    db = collect(tmp_path,
                 f"request={r} stage=gateway_escrow_refused_funding escrow=41703 model={MM} escrows_refused=1",
                 f"request={r} stage=gateway_all_escrows_refused_funding model={MM} escrows_refused=2 "
                 'retry_after_seconds=10 error="no escrow can fund this request (2 refused)"')
    got = q(db, "SELECT event, request, escrow, model, escrows_refused, retry_after_seconds, error "
                "FROM log_escrow_routing ORDER BY line_no")
    assert got == [("gateway_escrow_refused_funding", r, 41703, MM, 1, None, None),
                   ("gateway_all_escrows_refused_funding", r, None, MM, 2, 10,
                    "no escrow can fund this request (2 refused)")]
    # they are stages of the request, as the CI test reads them ("stage=gateway_escrow_refused_funding escrow=")
    assert q(db, "SELECT DISTINCT kind FROM log_events") == [("stage",)]


def test_zero_capacity_503_counts_affordable_escrows(tmp_path):
    db = collect(tmp_path, "gateway: all 2 affordable escrow(s) at zero capacity (1 skipped as unable to fund the "
                           "request), returning 503; per-escrow weights: 41710=0 41711=0")
    assert row(db, "log_escrow_routing", "event, candidates, skipped_unfundable, status") == \
        ("gateway_zero_capacity", 2, 1, 503)
    assert row(db, "log_limiter_rejections", "source, reason, candidate_escrows, escrow_weights") == \
        ("zero_capacity", "zero_capacity", 2, "41710=0 41711=0")


def test_escrow_balance_low_read_loosely_after_the_em_dash(tmp_path):
    tails = {"\u2014 holding or replacing": True, "\u2014 deactivating": False,
             "\u2014 scheduling replacement before deactivation": False,
             "\u2014 deactivating before replacement": False}
    glued = ["escrow_balance_low escrow=9 balance=900000 threshold=1000000\u2014holding or replacing",
             "escrow_balance_low escrow=9 balance=900000 threshold=1000000 -- holding or replacing",
             "escrow_balance_low escrow=9 balance=900000 threshold=1000000 \u00e2\u20ac\u201d holding or replacing"]
    db = collect(tmp_path, *(f"escrow_balance_low escrow=9 balance=900000 threshold=1000000 {t}" for t in tails),
                 *glued)
    got = q(db, "SELECT balance, check_text, check_holds FROM log_escrow_holds ORDER BY line_no")
    assert [b for b, *_ in got] == [900_000] * 7
    assert [h for *_, h in got] == [*tails.values(), True, True, True]
    assert {t for _, t, _ in got} == {"holding or replacing", "deactivating", "deactivating before replacement",
                                      "scheduling replacement before deactivation"}
    # the threshold remints reads, the September lines' exactly as before
    assert q(db, "SELECT threshold FROM log_escrow_events ORDER BY line_no") == [(1_000_000,)] * 7


def test_retention_retirement_and_storage_prune(tmp_path):
    db = collect(tmp_path, "escrow_epoch_retention_retire escrow=41590 creation_epoch=415 current_epoch=417 cutoff=416",
                 'runtime_retired escrow=41590 reason="epoch retention prune"',
                 'runtime_retired escrow=41591 reason="escrow balance exhausted"',
                 "escrow_storage_pruned escrow=41590 dir=/var/lib/devshardctl/escrows/41590 newest_epoch=415 cutoff=416")
    assert q(db, "SELECT event, escrow, reason, creation_epoch, current_epoch, cutoff, newest_epoch, dir "
                 "FROM log_escrow_retirements ORDER BY line_no") == [
        ("escrow_epoch_retention_retire", 41590, None, 415, 417, 416, None, None),
        ("runtime_retired", 41590, "epoch retention prune", None, None, None, None, None),
        ("escrow_storage_pruned", 41590, None, None, None, 416, 415, "/var/lib/devshardctl/escrows/41590")]


def test_replacement_skipped(tmp_path):
    db = collect(tmp_path, f'escrow_depletion_replacement_skipped old_escrow=41704 model="{MM}" role=regular '
                           'reason="target_already_met" target=2')
    assert row(db, "log_escrow_retirements", "event, escrow, model, role, reason, target") == \
        ("escrow_depletion_replacement_skipped", 41704, MM, "regular", "target_already_met", 2)


DEVSHARD_STEPS = ["request_received", "runtime_selected", "limiter_rejected", "limiter_acquired",
                  "limiter_bypassed_during_poc", "cache_hit", "cache_miss", "cache_stored", "cache_skipped"]


def test_per_escrow_route_family(tmp_path):
    r = "req-1791438981600000000-2000017"
    db = collect(tmp_path, *(f"request={r} stage=gateway_devshard_{s} escrow=41701" for s in DEVSHARD_STEPS),
                 f"request={r} stage=gateway_devshard_unavailable escrow=41701 reason=on_hold",
                 f"request={r} stage=gateway_devshard_unavailable escrow=41701 reason=phase=finalizing",
                 "gateway_devshard_unavailable escrow=41702 reason=inactive")       # printed without stage= (13.1)
    got = q(db, "SELECT step, request, escrow, reason FROM log_escrow_routing WHERE step IS NOT NULL ORDER BY line_no")
    assert [g[0] for g in got] == DEVSHARD_STEPS + ["unavailable"] * 3
    assert got[-3:] == [("unavailable", r, 41701, "on_hold"), ("unavailable", r, 41701, "phase=finalizing"),
                        ("unavailable", None, 41702, "inactive")]
    assert q(db, "SELECT count(*) FROM log_events WHERE NOT kind = 'stage'") == [(0,)]


def test_the_successor_gateways_json_is_named_not_read():
    line = '{"time":"2026-10-08T05:56:21.6Z","level":"INFO","msg":"nonce committed","escrow_id":"41701","nonce":"7"}'
    assert parse_line(line) == Reject("successor_json")
    # a devshardctl raw event routed through slog is still read
    ev = parse_line('{"time":"2026-10-08T05:56:21.6Z","level":"INFO","msg":"escrow_hold_released escrow=5 '
                    'reason=\\"balance_recovered\\""}')
    assert ev.name == "escrow_hold_released" and json.loads(ev.fields)["reason"] == "balance_recovered"


# -- every format, generated ----------------------------------------------------------------
def go_duration(ns: int) -> str:
    """Go's time.Duration.String()."""
    if ns == 0:
        return "0s"
    neg, u = ns < 0, abs(ns)
    if u < 1_000_000_000:
        for unit, size in (("ns", 1), ("µs", 1_000), ("ms", 1_000_000)):
            if u < size * 1000:
                whole, frac = divmod(u, size)
                digits = f"{frac:0{len(str(size)) - 1}d}".rstrip("0") if size > 1 else ""
                return ("-" if neg else "") + str(whole) + (f".{digits}" if digits else "") + unit
    secs, frac = divmod(u, 1_000_000_000)
    frac_text = f"{frac:09d}".rstrip("0")
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    out = f"{s}" + (f".{frac_text}" if frac_text else "") + "s"
    if h:
        out = f"{h}h{m}m" + out
    elif m:
        out = f"{m}m" + out
    return ("-" if neg else "") + out


def test_go_duration_formatter_matches_go():
    assert [go_duration(n) for n in (60_200_000_000, 10_002_118_000, 3_723_000_000_000, 0, 850_000_000, 1_500,
                                     7, -7_200_000_000_000)] == \
        ["1m0.2s", "10.002118s", "1h2m3s", "0s", "850ms", "1.5µs", "7ns", "-2h0m0s"]


UINT = st.integers(0, 2**63 - 1)
ID = st.integers(1, 10**12)
# no NUL: a line with one in a value is rejected by design (gatewaylog_parse._reject_nul, nul_char)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"), max_size=20)
WORD = st.from_regex(r"[a-z_]{1,16}", fullmatch=True)
MODEL = st.from_regex(r"[A-Za-z0-9._-]{1,12}/[A-Za-z0-9._-]{1,16}", fullmatch=True)
TIME = st.datetimes(datetime(2024, 6, 1), datetime(2030, 1, 1)).map(lambda t: t.replace(tzinfo=timezone.utc))
NS = st.integers(0, 10**16)


def rfc3339(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}Z"


@st.composite
def hold_era_line(draw) -> tuple[str, str, dict]:
    """(line, line table, the values it must hold) for one format of section 14, filled
    (escrow_balance_low: its threshold is log_escrow_events', checked there too)."""
    kind = draw(st.sampled_from(["started", "released", "unrecoverable", "expired", "restored", "top_up",
                                 "refused", "all_refused", "zero_capacity", "balance_low", "retention",
                                 "retired", "pruned", "skipped", "devshard"]))
    e, b, r, rel = draw(ID), draw(UINT), draw(UINT), draw(UINT)
    reason, model, t, ns = draw(TEXT), draw(MODEL), draw(TIME), draw(NS)
    if kind == "started":
        return (f"escrow_hold_started escrow={e} reason={go_quote(reason)} balance={b} recoverable_in_flight={r} "
                f"release_balance={rel} on_hold_since={rfc3339(t)}", "log_escrow_holds",
                {"escrow": e, "reason": reason, "balance": b, "recoverable_in_flight": r, "release_balance": rel,
                 "on_hold_since": t})
    if kind == "released":
        return (f"escrow_hold_released escrow={e} reason={go_quote(reason)}", "log_escrow_holds",
                {"escrow": e, "reason": reason})
    if kind == "unrecoverable":
        counts = draw(st.lists(UINT, min_size=8, max_size=8))
        keys = ["pending", "pending_cost", "started", "started_cost", "challenged", "challenged_cost",
                "overdue_pending", "overdue_pending_cost"]
        deadline = draw(st.one_of(st.none(), TIME))
        return (f"escrow_hold_unrecoverable escrow={e} balance={b} recoverable_in_flight={r} release_balance={rel} "
                f"held_for={go_duration(ns)} " + " ".join(f"{k}={v}" for k, v in zip(keys, counts))
                + f" latest_pending_deadline={'none' if deadline is None else rfc3339(deadline)}",
                "log_escrow_holds", {"escrow": e, "balance": b, "recoverable_in_flight": r, "release_balance": rel,
                                     "held_for_s": ns / 1e9, **dict(zip(keys, counts)),
                                     "latest_pending_deadline": deadline})
    if kind == "expired":
        return (f"escrow_hold_expired escrow={e} balance={b} recoverable_in_flight={r} held_for={go_duration(ns)}",
                "log_escrow_holds", {"escrow": e, "balance": b, "recoverable_in_flight": r, "held_for_s": ns / 1e9})
    if kind == "restored":
        return (f"escrow_hold_restored escrow={e} on_hold_since={rfc3339(t)}", "log_escrow_holds",
                {"escrow": e, "on_hold_since": t})
    if kind == "top_up":
        epoch, serving, held = draw(UINT), draw(UINT), draw(UINT)
        return (f"escrow_hold_top_up_created model={go_quote(model)} role=regular epoch={epoch} escrow={e} "
                f"serving={serving} held={held}", "log_escrow_holds",
                {"model": model, "role": "regular", "epoch": epoch, "escrow": e, "serving": serving, "held": held})
    req = f"req-{draw(UINT)}-{draw(st.integers(0, 99999))}"
    n = draw(st.integers(0, 2**31 - 1))
    if kind == "refused":
        return (f"request={req} stage=gateway_escrow_refused_funding escrow={e} model={model} escrows_refused={n}",
                "log_escrow_routing", {"request": req, "escrow": e, "model": model, "escrows_refused": n})
    if kind == "all_refused":
        s = draw(st.integers(0, 3600))
        return (f"request={req} stage=gateway_all_escrows_refused_funding model={model} escrows_refused={n} "
                f"retry_after_seconds={s} error={go_quote(f'no escrow can fund this request ({n} refused)')}",
                "log_escrow_routing", {"request": req, "model": model, "escrows_refused": n,
                                         "retry_after_seconds": s,
                                         "error": f"no escrow can fund this request ({n} refused)"})
    if kind == "zero_capacity":
        k = draw(st.integers(0, 2**31 - 1))
        return (f"gateway: all {n} affordable escrow(s) at zero capacity ({k} skipped as unable to fund the "
                f"request), returning 503; per-escrow weights: {e}=0", "log_escrow_routing",
                {"event": "gateway_zero_capacity", "candidates": n, "skipped_unfundable": k, "status": 503})
    if kind == "balance_low":
        dash = draw(st.sampled_from(["\u2014 ", "\u2014", " \u2014 ", " -- ", " \u2013 "]))
        tail = draw(st.sampled_from(["holding or replacing", "deactivating", "deactivating before replacement",
                                     "scheduling replacement before deactivation"]))
        return (f"escrow_balance_low escrow={e} balance={b} threshold={rel}" + (" " if dash[0] != " " and
                                                                               draw(st.booleans()) else "")
                + dash + tail, "log_escrow_holds",
                {"escrow": e, "balance": b, "check_holds": "hold" in tail, "check_text": tail,
                 ("log_escrow_events", "threshold"): rel})
    c, cur, cut = draw(UINT), draw(UINT), draw(UINT)
    if kind == "retention":
        return (f"escrow_epoch_retention_retire escrow={e} creation_epoch={c} current_epoch={cur} cutoff={cut}",
                "log_escrow_retirements", {"escrow": e, "creation_epoch": c, "current_epoch": cur, "cutoff": cut})
    if kind == "retired":
        return (f'runtime_retired escrow={e} reason="epoch retention prune"', "log_escrow_retirements",
                {"escrow": e, "reason": "epoch retention prune"})
    if kind == "pruned":
        d = draw(st.from_regex(r"/[a-z0-9/._-]{1,30}", fullmatch=True))
        return (f"escrow_storage_pruned escrow={e} dir={d} newest_epoch={c} cutoff={cut}", "log_escrow_retirements",
                {"escrow": e, "dir": d, "newest_epoch": c, "cutoff": cut})
    if kind == "skipped":
        return (f"escrow_depletion_replacement_skipped old_escrow={e} model={go_quote(model)} role=temp "
                f"reason={go_quote(reason)} target={n}", "log_escrow_retirements",
                {"escrow": e, "model": model, "role": "temp", "reason": reason, "target": n})
    step = draw(st.sampled_from(DEVSHARD_STEPS + ["unavailable"]))
    why = draw(st.sampled_from(["on_hold", "inactive", "finalize_in_flight", "phase=settlement"]))
    return (f"request={req} stage=gateway_devshard_{step} escrow={e}" + (f" reason={why}" if step == "unavailable"
                                                                         else ""),
            "log_escrow_routing", {"request": req, "step": step, "escrow": e,
                                    "reason": why if step == "unavailable" else None})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hold_era_line(), min_size=1, max_size=6), st.sampled_from(["", T, "2026-10-08T05:56:21.5Z " + T]))
def test_every_format_reads_into_its_line_table(lines, prefix):
    data = "".join(prefix + line + "\n" for line, _, _ in lines).encode("utf-8")
    check_block(data)                                   # every parse path reads them alike
    assert parse_block(data).parsed == len(lines)
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "gateway.log"
        log.write_bytes(data)
        store = Store(":memory:")
        try:
            gatewaylog.ingest(store, [str(log)], Progress(quiet=True))
            for i, (line, table, want) in enumerate(lines, 1):
                cur = store.con.execute(f"SELECT * FROM {table} WHERE line_no = ?", [i])
                cols = [c[0] for c in cur.description]
                got = [dict(zip(cols, r)) for r in cur.fetchall()]
                assert len(got) == 1, (line, got)
                for k, v in want.items():
                    if isinstance(k, tuple):            # (another table, its column) of the same line
                        other, k = k
                        g = store.con.execute(f"SELECT {k} FROM {other} WHERE line_no = ?", [i]).fetchone()[0]
                    else:
                        g = got[0][k]
                    if isinstance(v, float):
                        assert abs(g - v) <= 1e-9 * max(1.0, v), (line, k, g, v)
                    elif isinstance(v, datetime):
                        assert g == v.replace(microsecond=v.microsecond), (line, k, g, v)
                    else:
                        assert g == v, (line, k, g, v)
        finally:
            store.close()


PHRASE = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True), min_size=2, max_size=6).map(" ".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(PHRASE, st.dictionaries(st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
                                                  st.one_of(st.integers(0, 10**9), st.text(max_size=10)),
                                                  max_size=3)), min_size=1, max_size=5))
def test_successor_json_records_are_rejected_alike_on_every_path(records):
    """The successor gateway's records (a phrase as the message, no stage) are rejected as
    successor_json, whichever parse path takes them; a devshardctl record beside them is read."""
    lines = [json.dumps({"time": "2026-10-08T05:56:21.6Z", "level": "INFO", "msg": msg,
                         **{k: v for k, v in attrs.items() if k not in ("time", "level", "msg", "stage")}})
             for msg, attrs in records]
    data = ("\n".join(lines) + "\n" + T + HOLD_RELEASED + "\n").encode("utf-8")
    check_block(data)
    res = parse_block(data)
    assert res.rejected == {"successor_json": len(lines)} and res.parsed == 1
