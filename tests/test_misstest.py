"""The chain's binomial miss test (chain-api.md sections 10-11): tables, step function,
rate rule, exact binomial path, dynamic p0, and the store-level analysis."""

from __future__ import annotations

import csv
import io
import json
import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from auditor.analyses import epoch_report, misstest as mt
from auditor.analyses.frame import Options
from auditor.report import view
from auditor.store import Store, utcnow

from conftest import ROOT, SHARED

PACKAGE_CSV = ROOT / "auditor" / "data" / "binom_critical_tables.csv"
SHARED_CSV = SHARED / "data" / "binom_critical_tables.csv"
Z = 1.6448536269514722
D = Decimal


def _read_csv(path: Path) -> list[tuple[int, int, int]]:
    """Independent of the module's parser: plain csv over the raw bytes."""
    text = path.read_bytes().decode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == ["p0_permille", "n_total_lower_bound", "critical_misses_max_allowed"]
    return [(int(p), int(n), int(c)) for p, n, c in rows[1:] if p]


def _sources() -> list:
    out = [pytest.param(PACKAGE_CSV, id="package")]
    out.append(pytest.param(SHARED_CSV, id="shared", marks=pytest.mark.skipif(
        not SHARED_CSV.is_file(), reason="shared data folder not present")))
    return out


# -- the tables ---------------------------------------------------------------------------
@pytest.mark.skipif(not SHARED_CSV.is_file(), reason="shared data folder not present")
def test_package_table_is_a_byte_copy_of_the_shared_one():
    assert PACKAGE_CSV.read_bytes() == SHARED_CSV.read_bytes()


def test_load_tables_shape():
    t = mt.load_tables()
    assert sorted(t) == [50, 100, 200, 300, 400, 500]
    assert sum(len(v) for v in t.values()) == 642
    for rows in t.values():
        ns = [n for n, _ in rows]
        assert len(rows) == 107
        assert ns == list(range(2, 11)) + list(range(20, 991, 10))
    assert mt.load_tables() is t  # cached


@pytest.mark.parametrize("path", _sources())
def test_every_table_entry_is_the_boundary_over_its_whole_step(path):
    rows = _read_csv(path)
    assert len(rows) == 642
    by_p: dict[int, list[tuple[int, int]]] = {}
    for p, n, c in rows:
        by_p.setdefault(p, []).append((n, c))
    checked = 0
    for p, entries in by_p.items():
        p0 = D(p).scaleb(-3)
        for i, (n, c) in enumerate(entries):
            n_next = entries[i + 1][0] if i + 1 < len(entries) else 991
            for n_total in range(n, n_next):            # every n inside the step
                assert mt.critical_misses(n_total, p) == c, (p, n_total)
                assert mt.missed_stat_test(c, n_total, p0) is True, (p, n_total, c)
                if c + 1 <= n_total:
                    assert mt.missed_stat_test(c + 1, n_total, p0) is False, (p, n_total, c + 1)
                checked += 1
    assert checked == 6 * 989


def test_readme_formula_holds_at_the_table_n_only():
    for p, n, c in _read_csv(PACKAGE_CSV):
        pp = p / 1000
        f = max(min(math.floor(n * pp + Z * math.sqrt(n * pp * (1 - pp))), n), min(n, 4))
        assert f == c, (p, n, c, f)
    # evaluated at the exact n_total the formula allows more than the chain's step function
    n, pp = 159, 0.1
    assert math.floor(n * pp + Z * math.sqrt(n * pp * (1 - pp))) == 22
    assert mt.critical_misses(159, 100) == 21


def test_critical_misses_edges():
    assert mt.critical_misses(1, 100) is None          # no row: the chain passes
    assert mt.critical_misses(0, 100) is None
    assert mt.critical_misses(990, 100) == 114            # the table's last row for 100 permille
    assert mt.critical_misses(991, 100) == 99            # rate rule: floor(991 / 10)
    assert mt.critical_misses(1200, 100) == 120
    assert mt.critical_misses(1001, 300) == 300          # floor(1001 x 3 / 10)
    with pytest.raises(ValueError):
        mt.critical_misses(100, 150)


# -- MissedStatTest ---------------------------------------------------------------------------
@pytest.mark.parametrize("missed,total,expected", [
    (22, 159, False), (21, 159, True), (5, 7, False), (3, 3, True), (1, 1, True), (0, 1, True),
    (120, 1200, True), (121, 1200, False), (0, 0, True),
])
def test_worked_cases_at_p0_0_100(missed, total, expected):
    assert mt.missed_stat_test(missed, total, D("0.100")) is expected


def test_table_choice_uses_the_floor_of_p0_permille():
    assert mt.table_permille(D("0.1005")) == 100
    assert mt.table_permille(D("0.1")) == 100
    assert mt.table_permille(D("0.0999")) is None        # 99 permille: exact binomial path
    assert mt.table_permille(D("0.15")) is None
    assert mt.table_permille(0.1) == 100                  # floats are read by their repr


def test_invalid_input_is_an_error_not_a_fail():
    with pytest.raises(mt.MissTestError):
        mt.missed_stat_test(11, 10, D("0.1"))
    with pytest.raises(mt.MissTestError):
        mt.missed_stat_test(-1, 10, D("0.1"))
    with pytest.raises(mt.MissTestError):                 # exact path, p0 outside (0, 1)
        mt.missed_stat_test(1, 10, D("1.5"))
    assert mt.missed_stat_test(0, 0, D("1.5")) is True    # total 0 is checked first


def _ref_chain_p_value(k: int, n: int, p: Fraction) -> Fraction:
    """stats.go's BinomialPValue written naively with exact Fractions: Div and pow round
    half up to 16 places, Mul and Add are exact, the sum is rounded at the end."""
    def r16(x: Fraction) -> Fraction:
        return Fraction(math.floor(x * 10**16 + Fraction(1, 2)), 10**16)

    def pw(b: Fraction, e: int) -> Fraction:
        return Fraction(1) if e == 0 else b if e == 1 else r16(b**e)

    if k == 0:
        return Fraction(1)
    q = 1 - p
    if k == n:
        prob = pw(p, n)
    else:
        coeff = Fraction(1)
        for i in range(k):
            coeff = r16(coeff * (n - i) / (i + 1))
        prob = coeff * pw(p, k) * pw(q, n - k)
    total, ratio = prob, r16(p / q)
    for i in range(k, n):
        prob = prob * r16(Fraction(n - i, i + 1)) * ratio
        total += prob
    return r16(total)


def _true_tail(k: int, n: int, p: Fraction) -> Fraction:
    return sum((math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1)), Fraction(0))


EXACT_P0 = st.sampled_from(["0.15", "0.07", "0.35", "0.123", "0.0999", "0.55", "0.65", "0.9"])


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 45), data=st.data(), p0=EXACT_P0)
def test_exact_path_matches_a_naive_fraction_emulation(n, data, p0):
    k = data.draw(st.integers(0, n))
    got = mt.chain_binomial_p_value(k, n, D(p0))
    want = _ref_chain_p_value(k, n, Fraction(D(p0)))
    assert Fraction(got) == want
    assert mt.missed_stat_test(k, n, D(p0)) is (want >= Fraction(5, 100))


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 60), data=st.data(), p0=st.sampled_from(["0.15", "0.07", "0.35", "0.123"]))
def test_exact_path_agrees_with_the_true_binomial_tail_away_from_rounding(n, data, p0):
    k = data.draw(st.integers(0, n))
    p = Fraction(D(p0))
    # away from the 16-place underflow of p^k and q^(n-k), and from the 0.05 boundary
    assume(p**k >= Fraction(1, 10**10) and (1 - p) ** (n - k) >= Fraction(1, 10**10))
    tail = _true_tail(k, n, p)
    assume(abs(tail - Fraction(5, 100)) > Fraction(1, 10**4))
    assert abs(Fraction(mt.chain_binomial_p_value(k, n, D(p0))) - tail) < Fraction(1, 10**5)
    assert mt.missed_stat_test(k, n, D(p0)) is (tail >= Fraction(5, 100))


def test_exact_path_underflow_fails_a_host_below_p0_like_the_chain():
    # 0.4^99 rounds to 0 at 16 places: the chain's p-value is 0 although 1 miss in 100 at p0 0.6 is nothing
    assert mt.chain_binomial_p_value(1, 100, D("0.6")) == 0
    assert mt.missed_stat_test(1, 100, D("0.6")) is False
    assert mt.missed_stat_test(0, 100, D("0.6")) is True
    assert mt.missed_stat_test(1, 20, D("0.6")) is True


def test_exact_path_for_large_n_matches_the_true_tail():
    n, p = 300_000, 1e-5
    true_tail = 1 - sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(3))  # P(X >= 3)
    got = mt.chain_binomial_p_value(3, n, D("0.00001"))
    # the chain rounds each power to 16 places, so it may stray from the true tail by ~1e-11
    assert abs(float(got) - true_tail) < 1e-10 and got == got.quantize(D("1e-16"))


@settings(max_examples=300, deadline=None)
@given(permille=st.sampled_from(mt.SUPPORTED_PERMILLE), n=st.integers(1, 3000), data=st.data())
def test_table_path_is_monotonic_in_missed(permille, n, data):
    k = data.draw(st.integers(0, n - 1))
    p0 = D(permille).scaleb(-3)
    if not mt.missed_stat_test(k, n, p0):
        assert not mt.missed_stat_test(k + 1, n, p0)


@settings(max_examples=300, deadline=None)
@given(permille=st.sampled_from(mt.SUPPORTED_PERMILLE), n=st.integers(991, 10**12), data=st.data())
def test_rate_rule_above_990_is_the_exact_integer_inequality(permille, n, data):
    k = data.draw(st.integers(0, n))
    frac = Fraction(permille, 1000)                       # 1/20, 1/10, 1/5, 3/10, 2/5, 1/2
    expected = k * frac.denominator <= n * frac.numerator
    assert mt.missed_stat_test(k, n, D(permille).scaleb(-3)) is expected
    boundary = n * frac.numerator // frac.denominator
    assert mt.missed_stat_test(boundary, n, D(permille).scaleb(-3)) is True
    if boundary + 1 <= n:
        assert mt.missed_stat_test(boundary + 1, n, D(permille).scaleb(-3)) is False


# -- dynamic p0 ---------------------------------------------------------------------------------
def _five(total: int, missed: int) -> list[tuple[int, int]]:
    """Five participants sharing ``total`` requests and ``missed`` misses."""
    return [((total - missed) // 5, missed // 5)] * 5


@pytest.mark.parametrize("missed,p0,skip,baseline", [
    (2100, "0.100", False, 43), (9000, "0.300", False, 187), (18500, "0.500", True, 385),
])
def test_dynamic_p0_examples(missed, p0, skip, baseline):
    r = mt.dynamic_p0(D("0.10"), _five(48_000, missed))
    assert (r.T, r.M, r.n_used) == (48_000, missed, 5)
    assert r.p0 == D(p0) and r.skip is skip and r.baseline_permille == baseline
    assert r.path == mt.PATH_DYNAMIC


def test_dynamic_p0_sample_gate_and_governance():
    r = mt.dynamic_p0(D("0.10"), [(100, 50)] * 4 + [(0, 0)] * 10)   # 4 participants with requests
    assert r.path == mt.PATH_GOVERNANCE and r.p0 == D("0.1") and r.baseline_permille is None
    assert r.n_used == 4 and r.skip is False
    r = mt.dynamic_p0(D("0.10"), [(199, 0)] * 5)                    # T = 995 < 1000
    assert r.path == mt.PATH_GOVERNANCE and r.T == 995
    assert mt.dynamic_p0(D("0.15"), []).p0 == D("0.2")              # ceilToSupported(150)
    assert mt.dynamic_p0(D("0.1004"), []).permille == 200           # ceil: 101 -> 200
    assert mt.dynamic_p0(None, []).permille == 100                  # unset on chain
    assert mt.dynamic_p0(D("0.0005"), []).permille == 100           # IntPart 0 -> code falls back to 100
    assert mt.dynamic_p0(D("0.40"), _five(48_000, 2100)).p0 == D("0.4")  # governance above the dynamic pick


def test_dynamic_p0_grace_and_exact_paths():
    grace = mt.dynamic_p0(D("0.5"), _five(48_000, 2100))            # grace p0 0.5, healthy network
    assert grace.p0 == D("0.5") and grace.skip is False and grace.selected_permille == 100
    exact = mt.dynamic_p0(D("0.6"), _five(48_000, 2100))
    assert exact.path == mt.PATH_EXACT and exact.p0 == D("0.6") and exact.permille is None
    assert exact.skip is False and exact.baseline_permille is None
    assert mt.dynamic_p0(D("0.5001"), []).path == mt.PATH_EXACT     # govCeil 501 ...
    assert mt.table_permille(D("0.5001")) == 500                    # ... yet the test reads the 500 table


def test_dynamic_p0_saturates_like_uint64():
    big = 2**64 - 10
    r = mt.dynamic_p0(D("0.1"), [(big, 5)] * 5)
    assert r.T == 2**64 - 1 and r.M == 25 and r.baseline_permille == 0


@settings(max_examples=300, deadline=None)
@given(gov=st.decimals(min_value=D("0.0001"), max_value=D("0.5"), places=4),
       rows=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 5000)), max_size=12))
def test_dynamic_p0_never_below_governance(gov, rows):
    r = mt.dynamic_p0(gov, rows)
    assert r.path != mt.PATH_EXACT
    assert r.permille in mt.SUPPORTED_PERMILLE and r.p0 == D(r.permille).scaleb(-3)
    assert r.permille >= r.governance_permille
    if Fraction(gov) >= Fraction(1, 1000):
        assert r.permille >= math.ceil(Fraction(gov) * 1000)   # never looser than governance


# -- the analysis, through a real store --------------------------------------------------------
EPOCH = 433


def _perf(participant: str, inference_count: int, missed: int, rewarded: int) -> dict:
    return {"epoch": EPOCH, "participant": participant, "inference_count": inference_count,
            "missed_requests": missed, "earned_coins": 0, "rewarded_coins": rewarded, "burned_coins": 0,
            "validated_inferences": 0, "invalidated_inferences": 0, "claimed": False}


def _store(*, p0: str | None = "0.100", settled: bool = True, effective=(5_000_000, 5_015_391),
           perf: list[dict] | None = None, excluded_coverage: bool = True) -> Store:
    s = Store(":memory:")
    s.insert("chain_epochs", [{
        "epoch": EPOCH, "poc_start_height": effective[0] - 665, "next_poc_start_height": effective[1] - 665,
        "effective_height": effective[0], "next_effective_height": effective[1],
        "settled": settled, "complete": settled}])
    s.insert("chain_params", [{"epoch": EPOCH, "purpose": "settlement",
                               "binom_test_p0": None if p0 is None else D(p0), "height": 5_015_935}])
    s.insert("chain_performance", perf if perf is not None else [
        _perf("gonka1a_ok", 100, 0, 1000),
        _perf("gonka1b_missy", 137, 22, 0),       # 22 of 159 > 21 allowed
        _perf("gonka1c_excluded", 198, 2, 0),
        _perf("gonka1d_idle", 0, 0, 0),
        _perf("gonka1e_noweight", 297, 3, 0),
        _perf("gonka1f_paid", 10, 40, 500),       # fails, yet paid: discrepancy
        _perf("gonka1g_mystery", 396, 4, 0),
    ])
    s.insert("chain_excluded", [{"epoch": EPOCH, "participant": "gonka1c_excluded",
                                 "reason": "failed_confirmation_poc", "exclusion_height": 5_010_001}])
    s.insert("chain_validation_weights", [
        {"epoch": EPOCH, "model_id": "", "participant": p, "weight": 10, "confirmation_weight": 10}
        for p in ("gonka1a_ok", "gonka1b_missy", "gonka1c_excluded", "gonka1d_idle", "gonka1f_paid",
                  "gonka1g_mystery")])
    if excluded_coverage:
        s.insert("coverage", [{"source": "chain", "epoch": EPOCH, "item": "excluded_participants",
                               "status": "ok", "fetched_at": utcnow()}])
    return s


def test_run_verdicts_and_contract():
    with _store() as s:
        res = mt.run(s, EPOCH)
    d = res.data
    assert res.key == "miss_test" and res.complete and res.exit_code(None) == 0
    # one finding per participant the test zeroed; the one it fails and the chain paid is a discrepancy
    assert {(f.code, f.subject["id"]) for f in res.findings} == {
        ("reward_zeroed_miss_test", "gonka1b_missy"), ("miss_test_discrepancy", "gonka1f_paid")}
    zeroed = next(f for f in res.findings if f.code == "reward_zeroed_miss_test")
    assert zeroed.severity == "error" and zeroed.subject == {"kind": "participant", "id": "gonka1b_missy"}
    assert (zeroed.evidence["missed"], zeroed.evidence["total"], zeroed.evidence["critical_misses"]) == (22, 159, 21)
    assert res.exit_code("error") == 1 and res.exit_code("warn") == 1
    # T = 1209, M = 71 -> baseline 58 -> target 78 -> table 100 -> p0 0.1
    assert d["p0"] == 0.1 and d["skip"] is False
    assert d["p0_detail"]["path"] == mt.PATH_DYNAMIC and d["p0_detail"]["baseline_permille"] == 58
    assert d["network_miss_share"] == pytest.approx(71 / 1209)
    by = {p["participant"]: p for p in d["participants"]}
    assert by["gonka1a_ok"]["verdict"] == "passed" and by["gonka1a_ok"]["passed"] is True
    b = by["gonka1b_missy"]
    assert (b["verdict"], b["passed"], b["critical_misses"], b["total"], b["missed"]) == \
        ("zeroed_by_miss_test", False, 21, 159, 22)
    c = by["gonka1c_excluded"]
    assert c["verdict"] == "zero_for_other_reason" and c["passed"] is True
    assert "excluded: failed_confirmation_poc at height 5010001" in c["reason"]
    idle = by["gonka1d_idle"]
    assert idle["verdict"] == "no_requests" and idle["miss_share"] is None and idle["critical_misses"] is None
    assert by["gonka1e_noweight"]["verdict"] == "zero_for_other_reason"
    assert "no root validation weight" in by["gonka1e_noweight"]["reason"]
    f = by["gonka1f_paid"]
    assert f["verdict"] == "zeroed_by_miss_test" and f["rewarded_coins"] == 500 and f["discrepancy"]
    g = by["gonka1g_mystery"]
    assert g["verdict"] == "zero_for_other_reason"
    assert g["reason"] == "passed the miss test but rewarded 0: cause not visible in collected data"
    # sorted by verdict severity, then participant
    order = [p["participant"] for p in d["participants"]]
    assert order == ["gonka1b_missy", "gonka1f_paid", "gonka1c_excluded", "gonka1e_noweight",
                     "gonka1g_mystery", "gonka1d_idle", "gonka1a_ok"]
    # JSON: ints stay ints, p0 a number, everything serialisable
    out = json.loads(view.to_json(d))
    assert out["p0"] == 0.1 and isinstance(out["participants"][0]["rewarded_coins"], int)
    assert isinstance(out["participants"][0]["passed"], bool)
    t = res.tables[0]
    assert t.title == "Miss test" and t.columns == ["participant", "total", "missed", "miss_share", "p0",
                                                    "critical_misses", "passed", "rewarded_coins",
                                                    "verdict", "reason"]
    assert [r["participant"] for r in t.rows] == order
    assert "DISCREPANCY" in t.rows[1]["reason"]
    assert view.to_csv(t).splitlines()[0].startswith("participant,total,missed")
    assert dict(res.header)["skip (outage breaker)"] == "no"


def test_run_missing_epoch_is_unavailable_and_incomplete():
    with Store(":memory:") as s:
        res = mt.run(s, 999)
    assert res.unavailable.startswith("epoch 999 is not in the store; collect it first: auditor collect --epoch 999")
    assert res.data == {"available": False, "reason": res.unavailable}
    assert not res.complete and res.exit_code("info") == 3 and res.findings == []


def test_run_collected_but_unsettled_epoch_says_so():
    with _store(settled=False, perf=[]) as s:
        res = mt.run(s, EPOCH)
    assert "not settled yet" in res.unavailable and res.exit_code(None) == 3


def test_run_null_p0_unsettled_and_filter():
    with _store(p0=None, settled=False, excluded_coverage=False) as s:
        res = mt.run(s, EPOCH, Options(participant="gonka1b_missy"))
    d = res.data
    assert d["p0"] == 0.1 and d["settled"] is False
    assert any("code default 0.10" in n for n in d["notes"])
    assert any("not settled" in n for n in d["notes"])
    assert [p["participant"] for p in d["participants"]] == ["gonka1b_missy"]
    assert d["p0_detail"]["T"] == 1209                    # p0 still from every participant
    # exclusion rows exist, so the list counts as collected even without a coverage row
    assert not any("exclusion list" in n for n in d["notes"])


def test_run_unknown_participant_is_a_note_not_a_crash():
    with _store() as s:
        res = mt.run(s, EPOCH, Options(participant="gonka1nobody"))
    assert res.data["participants"] == [] and any("gonka1nobody" in n for n in res.data["notes"])


def test_run_grace_epoch_of_v0_2_13():
    with _store(effective=(4_260_000, 4_275_391)) as s:
        res = mt.run(s, EPOCH)
    d = res.data
    assert d["p0"] == 0.5 and d["skip"] is False
    assert any("v0.2.13" in n and "4,267,300" in n for n in d["notes"])
    by = {p["participant"]: p for p in d["participants"]}
    b = by["gonka1b_missy"]                                 # 22 of 159 passes at p0 0.5 (row 150 allows 85)
    assert b["passed"] is True and b["critical_misses"] == 85 and b["verdict"] == "zero_for_other_reason"
    assert by["gonka1f_paid"]["verdict"] == "zeroed_by_miss_test"  # 40 of 50 still fails


def test_run_outage_breaker_punishes_nobody():
    perf = [_perf(f"gonka1p{i}", 120, 80, 7) for i in range(5)]   # baseline 400 permille
    with _store(perf=perf) as s:
        res = mt.run(s, EPOCH)
    d = res.data
    assert d["skip"] is True and d["p0"] == 0.5
    assert all(p["verdict"] == "passed" and p["critical_misses"] is None for p in d["participants"])
    assert dict(res.header)["skip (outage breaker)"].startswith("yes")


def test_run_exact_path_when_governance_p0_is_above_one_half():
    perf = [_perf("gonka1q_one_miss", 99, 1, 0), _perf("gonka1r_clean", 100, 0, 9)]
    with _store(p0="0.6", perf=perf) as s:
        d = mt.run(s, EPOCH).data
    assert d["p0"] == 0.6 and d["p0_detail"]["path"] == mt.PATH_EXACT
    by = {p["participant"]: p for p in d["participants"]}
    q = by["gonka1q_one_miss"]   # the chain's 16-place rounding makes 0.4^99 zero: p-value 0, fails
    assert (q["verdict"], q["passed"], q["critical_misses"], q["p_value"]) == ("zeroed_by_miss_test", False, None, 0)
    assert "rounds to 0 at 16 places" in q["reason"]
    r = by["gonka1r_clean"]
    assert (r["verdict"], r["passed"], r["p_value"]) == ("passed", True, 1)


def test_in_the_epoch_report():
    with _store() as s:
        rep = epoch_report.run(s, EPOCH, Options(participant="gonka1b_missy"))
    assert [p["verdict"] for p in rep.data["miss_test"]["participants"]] == ["zeroed_by_miss_test"]
    assert rep.data["miss_test"]["available"] is True
    assert [(f.code, f.subject["id"]) for f in rep.findings] == [("reward_zeroed_miss_test", "gonka1b_missy")]
    part = next(p for p in rep.parts if p.key == "miss_test")
    assert dict(part.header)["p0 used"].startswith("0.100")
