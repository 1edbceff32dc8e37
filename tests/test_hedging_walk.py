"""`auditor hedging` counts its predictability, counterfactuals and rescue latency in SQL
(queries/hedging_predictions.sql) and fetches only the races it lists. This holds those counts
to a walk over every race in Python, race by race in time order, as hedging.py did before:
the walk reads the races `--all-races` lists (their attempts, with the hosts' priors) and
applies predict / predicted_winner (hedging.py's Python rule before, kept here as the
reference) and the remedies' rules to them."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest

from auditor.analyses import hedging as H
from conftest import FIXTURES, run_cli, run_json

LOGS = FIXTURES / "hedging"


def _race(r: dict[str, Any]) -> dict[str, Any]:
    first = r["attempts"][0] if r["attempts"] else None
    r["primary"] = first if first is not None and first["role"] == "primary" else None
    r["winner"] = next((a for a in r["attempts"] if a["winner"]), None)
    r["predicted"] = predicted_winner(r)
    return r


def _enough(a: dict[str, Any]) -> bool:
    return (a["prior_samples"] or 0) >= H.MIN_SAMPLES


def predict(slow: dict[str, Any], fast: dict[str, Any]) -> dict[str, Any] | None:
    """Was ``fast``'s host predicted faster than ``slow``'s before the race? From their prior
    (perf-window) first-token medians and quartiles, and their receipt medians and
    quartiles. None when either host has fewer than H.MIN_SAMPLES prior samples. ``clear``:
    on either signal the median ratio is >= H.CLEAR_RATIO and the quartile ranges are apart.
    The prediction rule as hedging.py applied it in Python before; now only SQL has it
    (views/hedge_prediction.sql), and this walk holds it to that."""
    if not (_enough(slow) and _enough(fast)):
        return None
    out: dict[str, Any] = {"clear": False, "ratio": None, "signal": None}
    for signal in ("ttft", "receipt"):
        sm, fm = slow[f"prior_{signal}_median_ms"], fast[f"prior_{signal}_median_ms"]
        if sm is None or fm is None:
            continue
        ratio = (sm / fm) if fm > 0 else (float("inf") if sm > 0 else 1.0)
        apart = slow[f"prior_{signal}_p25_ms"] > fast[f"prior_{signal}_p75_ms"]
        if out["ratio"] is None:
            out["ratio"], out["signal"] = ratio, signal
        if ratio >= H.CLEAR_RATIO and apart and not out["clear"]:
            out.update(clear=True, ratio=ratio, signal=signal)
    return out if out["signal"] else None


def _speed_key(a: dict[str, Any]) -> tuple:
    return (a["prior_ttft_median_ms"], a["prior_receipt_median_ms"], a["role"] != "primary", a["nonce"])


def predicted_winner(race: dict[str, Any]) -> dict[str, Any] | None:
    """The attempt whose host had the lowest prior first-token median (then receipt median,
    then the primary), among attempts whose host had H.MIN_SAMPLES prior samples; None when
    fewer than two attempts qualify."""
    ok = [a for a in race["attempts"] if _enough(a)
          and a["prior_ttft_median_ms"] is not None and a["prior_receipt_median_ms"] is not None]
    if len(ok) < 2:
        return None
    return min(ok, key=_speed_key)


def _saving() -> dict[str, Any]:
    return dict.fromkeys(("races", "attempts_saved", "attempt_seconds_saved", "output_bytes_saved", "latency_worse",
                          "latency_added_seconds", "latency_better", "latency_saved_seconds", "latency_unknown",
                          "would_fail"), 0)


def _latency(s: dict[str, Any], cf: float | None, actual: float | None) -> None:
    if cf is None or actual is None:
        s["latency_unknown"] += 1
    elif cf > actual:
        s["latency_worse"] += 1
        s["latency_added_seconds"] += (cf - actual) / 1000
    elif cf < actual:
        s["latency_better"] += 1
        s["latency_saved_seconds"] += (actual - cf) / 1000


def _drop(s: dict[str, Any], attempts: list[dict[str, Any]]) -> None:
    s["attempts_saved"] += len(attempts)
    s["attempt_seconds_saved"] += sum(a["attempt_ms"] or 0 for a in attempts) / 1000
    s["output_bytes_saved"] += sum(a["output_bytes"] or 0 for a in attempts)


def _alone(s: dict[str, Any], race: dict[str, Any], chosen: dict[str, Any]) -> None:
    s["races"] += 1
    _drop(s, [a for a in race["attempts"] if a is not chosen])
    if chosen["finished"] or chosen["winner"]:
        _latency(s, chosen["ttft_ms"], race["winner"]["latency_ms"] if race["winner"] else None)
    else:
        s["would_fail"] += 1


def walk(races: list[dict[str, Any]]) -> dict[str, Any]:
    """Predictability per primary host, the four remedies and the rescues, race by race."""
    evaluable = right = 0
    hosts: dict[str, Counter] = defaultdict(Counter)
    requests: dict[str, list[str]] = defaultdict(list)
    cf = {name: _saving() for name, _, _ in H.remedies()}
    history: dict[tuple, Counter] = defaultdict(Counter)
    rescue_ms, never = [], 0
    model_of: dict[str, str | None] = {}
    for race in map(_race, races):                       # the list is in time order
        p, w, pw = race["primary"], race["winner"], race["predicted"]
        for a in race["attempts"]:
            model_of.setdefault(a["host"], race["model"])
        if pw is not None and w is not None and _enough(w):
            evaluable += 1
            right += pw is w
        if p is not None and w is not None and w is not p and not race["rescue"]:
            pr = predict(p, w)
            hosts[p["host"]]["losses"] += 1
            hosts[p["host"]]["with_prediction"] += pr is not None
            hosts[p["host"]]["predictable"] += bool(pr and pr["clear"])
            if pr and pr["clear"]:
                requests[p["host"]].append(race["request"])
        if race["rescue"]:
            if p is None or p["latency_ms"] is None:
                never += 1
            elif w is not None and w["latency_ms"] is not None:
                rescue_ms.append(p["latency_ms"] - w["latency_ms"])
        if p is not None and pw is not None and pw is not p and (pr := predict(p, pw)) and pr["clear"]:
            _alone(cf["speed_aware_primary"], race, pw)
        cand = next((a for a in race["attempts"] if a["role"] == "secondary" and a["start_reason"] == race["decision"]),
                    None) if race["decision"] in H.SPEEDUP_DECISIONS else None
        if p is not None and cand is not None and (pr := predict(p, cand)) and (pr["ratio"] or 0) >= H.REPLACE_RATIO:
            _alone(cf["replace_instead_of_add"], race, cand)
        losers = [a for a in race["attempts"] if not a["winner"] and a["after_winner_ms"] is not None]
        if w is not None and losers:
            cf["cancel_losers"]["races"] += 1
            cf["cancel_losers"]["attempt_seconds_saved"] += sum(a["after_winner_ms"] for a in losers) / 1000
            cf["cancel_losers"]["output_bytes_saved"] += sum(a["output_bytes"] or 0 for a in losers)
        if p is not None and race["decision"] == H.AB_DECISION:
            for c in [a for a in race["attempts"] if a["role"] == "secondary" and a["start_reason"] == H.AB_DECISION]:
                seen = history.get(tuple(sorted((p["host"], c["host"]))))
                n = seen.total() if seen else 0
                if n < H.AB_MIN_COMPARISONS or max(seen.values()) / n < H.AB_AGREEMENT:
                    continue
                cf["stop_ab_sampling"]["races"] += 1
                _drop(cf["stop_ab_sampling"], [c])
                if c is w and p["finished"]:
                    _latency(cf["stop_ab_sampling"], p["latency_ms"], w["latency_ms"])
                elif c is w:
                    cf["stop_ab_sampling"]["would_fail"] += 1
        timed = [a for a in race["attempts"] if a["latency_ms"] is not None]
        for i, a in enumerate(timed):
            for b in timed[i + 1:]:
                if a["host"] != b["host"]:
                    faster = a if a["latency_ms"] <= b["latency_ms"] else b
                    history[tuple(sorted((a["host"], b["host"])))][faster["host"]] += 1
    for s in cf.values():
        for k in ("attempt_seconds_saved", "latency_added_seconds", "latency_saved_seconds"):
            s[k] = round(s[k], 3)
    return {"evaluable_races": evaluable, "prediction_right": right,
            "hosts": {h: {**c, "predictable_requests": requests[h]} for h, c in hosts.items()},
            "counterfactuals": cf,
            "rescue_latency_saved_seconds": round(sum(rescue_ms) / 1000, 3) if rescue_ms else None,
            "rescues_primary_never_delivered": never, "model_of": model_of}


def _report(db, *args: str) -> dict[str, Any]:
    return run_json("hedging", "--offline", *args, "--all-races", "--format", "json", db=db)


def _collect(tmp_path_factory, name: str, *args: str):
    db = tmp_path_factory.mktemp(name) / "a.duckdb"
    r = run_cli("collect", *args, db=db)
    assert r.returncode == 0, r.stderr
    return db


@pytest.fixture(scope="module", params=["incident", "small", "demo"])
def report(request, tmp_path_factory) -> dict[str, Any]:
    if request.param == "demo":
        db = _collect(tmp_path_factory, "demo", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"),
                      "--gateway-log", str(FIXTURES / "demo-epoch-403" / "gateway.log.gz"))
        return _report(db, "403")
    db = _collect(tmp_path_factory, request.param, "--gateway-log", str(LOGS / f"{request.param}.log"))
    span = {"incident": ("2026-10-23T11:00:00", "2026-10-23T13:00:00"),
            "small": ("2026-10-23T08:00:00", "2026-10-23T10:00:00")}[request.param]
    return _report(db, "--since", span[0], "--until", span[1])


def test_the_sql_counts_what_the_walk_over_every_race_counts(report):
    assert report["races_listed"]["which"] == "all" and report["races"]
    want = walk(report["races"])
    pred = report["predictability"]
    assert (pred["evaluable_races"], pred["prediction_right"]) == (want["evaluable_races"], want["prediction_right"])
    got = {h["label"]: {k: h[k] for k in ("losses", "with_prediction", "predictable", "predictable_requests")}
           for h in pred["hosts"]}
    assert got == want["hosts"]
    for c in report["counterfactuals"]:
        assert {k: c[k] for k in want["counterfactuals"][c["remedy"]]} == want["counterfactuals"][c["remedy"]], \
            c["remedy"]
    totals = report["totals"]
    assert totals["rescue_latency_saved_seconds"] == want["rescue_latency_saved_seconds"]
    assert totals["rescues_primary_never_delivered"] == want["rescues_primary_never_delivered"]


def test_the_fixtures_exercise_every_rule(report):
    """Not a vacuous comparison: across the fixtures each count above is non-zero somewhere
    (held per fixture where that fixture is known to have it)."""
    cf = {c["remedy"]: c for c in report["counterfactuals"]}
    assert report["predictability"]["evaluable_races"] > 0
    assert cf["cancel_losers"]["races"] > 0
    if report["range"]["from"] == "--since/--until":               # incident and small: hand-made cases
        assert cf["speed_aware_primary"]["races"] > 0 and cf["stop_ab_sampling"]["races"] > 0


def test_the_listed_races_predictions_are_the_rules(report):
    """Issue 32: each listed race's predicted_winner and loss_predictable come from SQL
    (queries/hedging_race_attempts.sql, by views/hedge_prediction.sql), and they are what the
    Python rule of before says of the race; the fixtures have both kinds of answer."""
    seen = Counter()
    for race in map(_race, report["races"]):
        p, w, pw = race["primary"], race["winner"], race["predicted"]
        assert race["predicted_winner"] == (pw["host"] if pw else None), race["request"]
        pr = None if p is None or w is None or w is p or race["rescue"] else predict(p, w)
        assert race["loss_predictable"] == (None if pr is None else pr["clear"]), race["request"]
        seen[race["loss_predictable"]] += 1
        assert not any(k.startswith("race_") for a in race["attempts"] for k in a)   # taken off into the race
    assert seen[None] and (seen[True] or seen[False])


def test_one_prediction_rule_in_sql_that_every_reader_applies():
    """The prediction rule is written once (views/hedge_prediction.sql); both queries that
    predict apply it, and hedging.py applies none of its own (it passes the thresholds)."""
    import inspect
    import re

    from conftest import ROOT

    queries = ROOT / "queries"
    for name in ("hedging_predictions.sql", "hedging_race_attempts.sql"):
        sql = (queries / name).read_text(encoding="utf-8")
        for macro in ("host_prior(", "prior_enough(", "predicted_attempt(", "hedge_predict("):
            assert macro in sql, f"{name} does not apply {macro}"
        code = "\n".join(line.split("--")[0] for line in sql.splitlines())
        assert not re.search(r">=\s*\$clear_ratio|ttft_p25\s*>|'inf'::DOUBLE", code), \
            f"{name} restates the prediction rule"
    src = inspect.getsource(H)
    assert not hasattr(H, "predict") and not hasattr(H, "predicted_winner")
    assert not re.search(r"median_ms\"\]\s*[<>]|>=\s*CLEAR_RATIO|_p25_ms", src), "hedging.py restates the prediction rule"


def test_the_prediction_rule_at_its_edges():
    """The edges of views/hedge_prediction.sql that neither the fixtures nor the generated
    races reach for sure: a median ratio exactly clear_ratio is clear (>=), quartiles that
    touch are not apart (>), exactly min_samples is enough, and a tie of the medians goes to
    the primary. Breaking any of these (> for >=, the primary after the secondary) fails here."""
    import duckdb

    from conftest import ROOT

    con = duckdb.connect()
    con.execute((ROOT / "queries" / "views" / "hedge_prediction.sql").read_text(encoding="utf-8"))

    def predict_sql(slow: tuple, fast: tuple, samples: int = H.MIN_SAMPLES) -> tuple:
        """hedge_predict of two hosts' first-token quartiles (p25, median, p75), receipt unknown."""
        return con.execute(
            "SELECT p.has_prediction, p.clear, p.ratio FROM (SELECT hedge_predict("
            "host_prior(prior_enough(?, ?), ?::DOUBLE[], [NULL, NULL, NULL]::DOUBLE[]), "
            "host_prior(prior_enough(?, ?), ?::DOUBLE[], [NULL, NULL, NULL]::DOUBLE[]), ?) AS p)",
            [samples, H.MIN_SAMPLES, list(slow), samples, H.MIN_SAMPLES, list(fast), H.CLEAR_RATIO]).fetchone()

    fast = (100.0, 200.0, 250.0)
    at_ratio = (260.0, 200.0 * H.CLEAR_RATIO, 400.0)            # ratio exactly clear_ratio, quartiles apart
    assert predict_sql(at_ratio, fast) == (True, True, H.CLEAR_RATIO)
    assert predict_sql((250.0, 300.0, 400.0), fast)[1] is False   # slow's p25 = fast's p75: not apart
    assert predict_sql(at_ratio, fast, samples=H.MIN_SAMPLES - 1)[0] is False
    # the reference rule of this file says the same of the same quartiles
    row = lambda q, n=H.MIN_SAMPLES: {"prior_samples": n, "prior_ttft_p25_ms": q[0], "prior_ttft_median_ms": q[1],
                                      "prior_ttft_p75_ms": q[2], "prior_receipt_median_ms": None}
    assert predict(row(at_ratio), row(fast))["clear"] is True
    # a tie of both medians: the primary is the predicted attempt, whichever comes first
    for first, second in (("primary", "secondary"), ("secondary", "primary")):
        picked = con.execute(
            "SELECT predicted_attempt(pos, prior_rated(pr), pr, role, nonce, {'pos': pos}) FROM (VALUES "
            "(1, ?, 5), (2, ?, 4)) t(pos, role, nonce), "
            "LATERAL (SELECT host_prior(true, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) AS pr)", [first, second]).fetchone()[0]
        assert picked == (1 if first == "primary" else 2), (first, second)
