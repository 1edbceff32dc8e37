"""The chain's binomial miss test, reimplemented exactly (chain-api.md sections 10 and 11).

When the chain settles epoch N it picks one network-wide p0 (``getDynamicP0``, section
10.2) and runs ``MissedStatTest(missed, total, p0)`` for every participant; a failure sets
the participant's epoch reward to 0. This module recomputes both from the epoch's
performance summary and says, per participant, whether the test zeroed the reward, the
reward was zero for another reason, or it was paid.

Pure functions (no database): :func:`load_tables`, :func:`critical_misses`,
:func:`missed_stat_test`, :func:`chain_binomial_p_value`, :func:`dynamic_p0`.
The analysis: :func:`run` (reads ``queries/misstest_inputs.sql``), also the ``miss_test``
section of ``auditor epoch N``. Findings: ``reward_zeroed_miss_test`` (error) for every
participant the test zeroed, ``miss_test_discrepancy`` (warn) for one that fails the
recomputed test and was paid all the same.

Fidelity notes, checked against the chain source (``calculations/stats.go``,
``keeper/bitcoin_rewards.go``, ``keeper/accountsettle.go``):

* Table path: ``floor(p0 x 1000)`` (shopspring ``IntPart``) in {50, 100, 200, 300, 400, 500};
  step-function lookup in the packaged tables; above n = 990 the rate rule
  ``missed x den <= total x num`` in integers.
* ``decimalToPermilleCeil`` returns 0 when ``IntPart(gov x 1000) <= 0``, so a governance p0
  in (0, 0.001) falls back to 100 permille, not to 50 as ``ceil(gov x 1000)`` would suggest.
* Exact path (only reachable through ``dynamic_p0`` when governance p0 > 0.5): the chain
  computes with shopspring decimals: ``Mul``/``Add`` exact, ``Div`` rounded half away from
  zero to 16 decimal places (``DivisionPrecision``), ``pow`` rounds its result to 16 decimal
  places, the final sum is rounded to 16 decimal places and compared with 0.05. We do the
  same rounding at the same points; everything between is carried as exact integers or as
  integer interval bounds that are refined until the 16-place rounding is decided (and
  computed exactly as a last resort), so the p-value equals the chain's digit for digit.
  Consequence worth knowing: ``p0^k`` and ``(1-p0)^(n-k)`` rounded to 16 places underflow
  to 0 (e.g. 0.6^73, 0.4^42), which makes the chain's p-value 0 and fails the participant
  even when its miss share is below p0; the tables never have this problem.
"""

from __future__ import annotations

import bisect
import csv
import io
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from importlib.resources import files
from types import MappingProxyType
from typing import Any

from ..result import Finding, Result, Table
from .frame import Options, epoch_state, not_stored

# -- constants of the chain (chain-api.md section 10) ---------------------------------------
SUPPORTED_PERMILLE = (50, 100, 200, 300, 400, 500)
RATE_RULE_ABOVE = 990                      # n_total > 990: rate rule instead of the table
ALPHA = Decimal("0.05")                    # exact path: pass iff p_value >= alpha
PRECISION = 16                             # shopspring decimal places (stats.go and Div)
DEFAULT_BINOM_TEST_P0 = Decimal("0.10")    # types/params.go code default
MARGIN_PERMILLE = 20                       # dynamicP0MarginPermille
MIN_TOTAL_REQUESTS = 1000                  # dynamicP0MinTotalRequests
MIN_PARTICIPANTS = 5                       # dynamicP0MinParticipantsWithTotal
UINT64_MAX = 2**64 - 1

PATH_GOVERNANCE = "governance (T<1000 or n<5)"
PATH_DYNAMIC = "dynamic"
PATH_EXACT = "exact (gov > 0.5)"

TABLES_FILE = "binom_critical_tables.csv"
TABLE_COLUMNS = ("p0_permille", "n_total_lower_bound", "critical_misses_max_allowed")


@dataclass(frozen=True)
class GraceUpgrade:
    """An upgrade that installed a punishment grace epoch (``keeper/punishment_grace_epochs.go``).

    The grace epoch is the epoch that was *effective* at the upgrade height
    (``GetEffectiveEpochIndex`` in the upgrade handler). There is no REST query for grace
    epochs, so they are known only through this list (chain-api.md section 10.5).
    """

    name: str
    height: int | None             # None: not documented, cannot be detected
    binom_test_p0: Decimal | None  # None: the p0 override (if any) is not documented


GRACE_UPGRADES: tuple[GraceUpgrade, ...] = (
    GraceUpgrade("v0.2.10", None, Decimal("0.5")),
    GraceUpgrade("upgrade at 4,133,422 (proposal 52)", 4_133_422, None),
    GraceUpgrade("v0.2.13", 4_267_300, Decimal("0.5")),
)


class MissTestError(ValueError):
    """Input the chain's ``MissedStatTest`` rejects with an error. On an error the chain
    keeps the reward (``CheckAndPunishForDowntime``), so callers must not read it as a fail."""


# -- the tables ---------------------------------------------------------------------------
def parse_tables(text: str) -> Mapping[int, tuple[tuple[int, int], ...]]:
    """Parse the critical-value CSV: p0 permille -> sorted ((n_lower_bound, critical), ...)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != TABLE_COLUMNS:
        raise ValueError(f"unexpected header in {TABLES_FILE}: {header!r}")
    out: dict[int, list[tuple[int, int]]] = {}
    for line_no, row in enumerate(reader, 2):
        if not row:
            continue
        if len(row) != 3:
            raise ValueError(f"{TABLES_FILE} line {line_no}: expected 3 fields, got {row!r}")
        p, n, c = (int(x) for x in row)
        if p not in SUPPORTED_PERMILLE:
            raise ValueError(f"{TABLES_FILE} line {line_no}: unsupported p0 permille {p}")
        out.setdefault(p, []).append((n, c))
    for p, rows in out.items():
        ns = [n for n, _ in rows]
        if ns != sorted(set(ns)):
            raise ValueError(f"{TABLES_FILE}: rows of p0 {p} permille are not strictly increasing in n")
    missing = set(SUPPORTED_PERMILLE) - set(out)
    if missing:
        raise ValueError(f"{TABLES_FILE}: no rows for p0 permille {sorted(missing)}")
    return MappingProxyType({p: tuple(rows) for p, rows in sorted(out.items())})


@lru_cache(maxsize=1)
def load_tables() -> Mapping[int, tuple[tuple[int, int], ...]]:
    """The chain's critical-value tables shipped as package data (``auditor/data``), cached.

    Returns a read-only mapping p0 permille -> rows ``(n_total_lower_bound, critical)``
    sorted by n (107 rows per p0: n = 2..10, 20, 30, ..., 990)."""
    text = (files("auditor") / "data" / TABLES_FILE).read_text(encoding="utf-8")
    return parse_tables(text)


@lru_cache(maxsize=1)
def _bounds() -> Mapping[int, tuple[int, ...]]:
    return MappingProxyType({p: tuple(n for n, _ in rows) for p, rows in load_tables().items()})


def critical_misses(n_total: int, p0_permille: int) -> int | None:
    """The largest ``missed`` that passes for ``n_total`` requests at a table p0.

    The last table row with ``n <= n_total`` (a step function); None when no row applies
    (n_total < 2: the chain passes without a lookup). Above 990 the rate rule applies
    instead of the table: ``floor(n_total x p0_permille / 1000)``.
    """
    tables = load_tables()
    if p0_permille not in tables:
        raise ValueError(f"p0 {p0_permille} permille has no table; supported: {SUPPORTED_PERMILLE}")
    if n_total > RATE_RULE_ABOVE:
        return n_total * p0_permille // 1000
    i = bisect.bisect_right(_bounds()[p0_permille], n_total) - 1
    if i < 0:
        return None
    return tables[p0_permille][i][1]


# -- exact shopspring emulation -------------------------------------------------------------
def _to_decimal(p0: Decimal | int | str | float) -> Decimal:
    if isinstance(p0, Decimal):
        return p0
    if isinstance(p0, float):
        return Decimal(repr(p0))
    return Decimal(p0)


def _int_part(x: Fraction) -> int:
    """shopspring ``IntPart``: truncation toward zero."""
    return int(x)


def table_permille(p0: Decimal | int | str | float) -> int | None:
    """The table ``MissedStatTest`` uses for ``p0``: ``IntPart(p0 x 1000)`` when supported, else None."""
    permille = _int_part(Fraction(_to_decimal(p0)) * 1000)
    return permille if permille in SUPPORTED_PERMILLE else None


def _round16(x: Fraction) -> int:
    """Round a non-negative rational half away from zero to 16 places; the result x 10^16."""
    num, den = x.numerator * 10**PRECISION, x.denominator
    return (2 * num + den) // (2 * den)


def _round16_scaled(v: int, w: int) -> int:
    """Same for ``v / 10^w`` (v >= 0, w >= 16)."""
    return (2 * v * 10**PRECISION + 10**w) // (2 * 10**w)


def _pow16(x: Fraction, e: int) -> Fraction:
    """shopspring-style ``pow(base, exp, 16)`` of stats.go: exp 0 -> 1, exp 1 -> base as is,
    otherwise the exact power rounded half away from zero to 16 decimal places."""
    if e == 0:
        return Fraction(1)
    if e == 1:
        return x
    digits = max(len(str(x.numerator)), len(str(x.denominator)))
    if digits * e <= 4000:                       # small: exact is cheap
        return Fraction(_round16(x**e), 10**PRECISION)
    w = 50 + len(str(e))
    while w < digits * e + 50:
        one = 10**w
        b_lo = x.numerator * one // x.denominator
        b_hi = -(-x.numerator * one // x.denominator)
        r_lo = r_hi = one
        ee = e
        while ee:
            if ee & 1:
                r_lo = r_lo * b_lo // one
                r_hi = -(-r_hi * b_hi // one)
            ee >>= 1
            if ee:
                b_lo = b_lo * b_lo // one
                b_hi = -(-b_hi * b_hi // one)
        lo, hi = _round16_scaled(r_lo, w), _round16_scaled(r_hi, w)
        if lo == hi:
            return Fraction(lo, 10**PRECISION)
        w *= 2
    return Fraction(_round16(x**e), 10**PRECISION)


def _div16(a: Fraction | int, b: Fraction | int) -> int:
    """shopspring ``a.Div(b)`` for positive operands: half away from zero at 16 places (x 10^16)."""
    return _round16(Fraction(a) / Fraction(b))


def chain_binomial_p_value(n_missed: int, n_total: int, p0: Decimal | int | str | float) -> Decimal:
    """``BinomialPValue(k, n, p0, 16)`` of stats.go: P(X >= k), X ~ Binomial(n, p0), with the
    chain's rounding. Returned with 16 decimal places. Raises :class:`MissTestError` where the
    chain returns an error (k outside [0, n], p0 outside (0, 1))."""
    k, n = n_missed, n_total
    p = Fraction(_to_decimal(p0))
    if k < 0 or n < 0 or k > n:
        raise MissTestError(f"invalid input: requires 0 <= missed ({k}) <= total ({n})")
    if p <= 0 or p >= 1:
        raise MissTestError(f"p0 must be in (0, 1), got {_to_decimal(p0)}")
    quantum = Decimal(1).scaleb(-PRECISION)
    if k == 0:
        return Decimal(1).quantize(quantum)
    q = 1 - p
    if k == n:
        prob0 = _pow16(p, n)
    else:
        prob0 = math.comb(n, k) * _pow16(p, k) * _pow16(q, n - k)
    if prob0 == 0:                               # underflow: every later term is 0 too
        return Decimal(0).quantize(quantum)
    ratio = _div16(p, q)
    scale1 = 10**PRECISION
    scale2 = scale1 * scale1

    def factors() -> Iterable[int]:
        # factor_i x ratio, both rounded as Div does: (n-i)/(i+1) and p/q; the product x 10^32
        for i in range(k, n):
            yield (2 * (n - i) * scale1 + (i + 1)) // (2 * (i + 1)) * ratio

    exact_w = 2 * PRECISION * (n - k + 1) + len(str(prob0.denominator)) + 64
    w = 2 * PRECISION + 30 + len(str(n)) + max(0, len(str(prob0.denominator)) - len(str(prob0.numerator)))
    while w < exact_w:
        one = 10**w
        lo = prob0.numerator * one // prob0.denominator
        hi = -(-prob0.numerator * one // prob0.denominator)
        s_lo, s_hi = lo, hi
        negligible = one // 10 ** (PRECISION + 25)
        for m in factors():
            lo = lo * m // scale2
            hi = -(-hi * m // scale2)
            s_lo += lo
            s_hi += hi
            # factors never increase; once below 1/2, the rest sums to at most this term
            if 2 * m < scale2 and hi < negligible:
                s_hi += hi
                break
        r_lo, r_hi = _round16_scaled(s_lo, w), _round16_scaled(s_hi, w)
        if r_lo == r_hi:
            return Decimal(r_lo).scaleb(-PRECISION)
        w *= 2
    # last resort (never needed unless the sum sits within ~1e-40 of a rounding tie): exact
    prob, total = prob0, prob0
    for m in factors():
        prob = prob * m / scale2
        total += prob
    return Decimal(_round16(total)).scaleb(-PRECISION)


def missed_stat_test(n_missed: int, n_total: int, p0: Decimal | int | str | float) -> bool:
    """``MissedStatTest(nMissed, nTotal, p0)`` of the chain (chain-api.md 10.3): True = passed.

    ``nTotal == 0`` passes; then inputs outside ``0 <= missed <= total`` raise
    :class:`MissTestError` (the chain errors and keeps the reward). A table p0
    (``IntPart(p0 x 1000)`` in 50..500) uses the step-function table, or the rate rule
    above 990 requests; any other p0 runs the exact one-sided binomial test with the
    chain's 16-place rounding and passes iff the p-value >= 0.05 (which can also raise
    :class:`MissTestError` for p0 outside (0, 1)).
    """
    return miss_test_detail(n_missed, n_total, p0).passed


@dataclass(frozen=True)
class TestOutcome:
    passed: bool
    critical: int | None = None       # table path: the most misses allowed (None: no row, passes)
    p_value: Decimal | None = None    # exact path: the chain's 16-place p-value
    table: bool = True                # which path decided


def miss_test_detail(n_missed: int, n_total: int, p0: Decimal | int | str | float) -> TestOutcome:
    """:func:`missed_stat_test` with the numbers that decided it."""
    if n_total == 0:
        return TestOutcome(True)
    if n_missed < 0 or n_total < 0 or n_missed > n_total:
        raise MissTestError(f"invalid input: requires 0 <= missed ({n_missed}) <= total ({n_total})")
    permille = table_permille(p0)
    if permille is not None:
        crit = critical_misses(n_total, permille)
        return TestOutcome(crit is None or n_missed <= crit, critical=crit)
    p_value = chain_binomial_p_value(n_missed, n_total, p0)
    return TestOutcome(p_value >= ALPHA, p_value=p_value, table=False)


# -- network-wide dynamic p0 ----------------------------------------------------------------
@dataclass(frozen=True)
class P0Result:
    """The outcome of ``getDynamicP0`` and how it was reached."""

    p0: Decimal                      # the p0 the test runs with
    permille: int | None             # its table (None on the exact path)
    skip: bool                       # outage breaker: nobody is punished
    baseline_permille: int | None    # floor(M x 1000 / T); None when not computed
    T: int                           # Σ (inference_count + missed) over participants with total > 0
    M: int                           # Σ missed over the same participants
    n_used: int                      # how many participants had total > 0
    path: str                        # PATH_GOVERNANCE, PATH_DYNAMIC or PATH_EXACT
    governance_p0: Decimal | None    # the governance value fed in (None: unset on chain)
    governance_permille: int | None  # ceilToSupported(govCeil), 100 when govCeil is 0; None on the exact path
    target_permille: int | None = None
    selected_permille: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("p0", "governance_p0"):
            d[key] = None if d[key] is None else float(d[key])
        return d


def ceil_to_supported(permille: int) -> int:
    """``ceilToSupportedP0Permille``: the smallest table p0 at or above ``permille`` (500 cap)."""
    for p in SUPPORTED_PERMILLE[:-1]:
        if permille <= p:
            return p
    return 500


def permille_ceil(p0: Decimal | None) -> int:
    """``decimalToPermilleCeil``: ceil(p0 x 1000), but 0 when ``IntPart(p0 x 1000) <= 0``."""
    if p0 is None:
        return 0
    x = Fraction(_to_decimal(p0)) * 1000
    floor_part = _int_part(x)
    if floor_part <= 0:
        return 0
    return floor_part + 1 if x > floor_part else floor_part


def dynamic_p0(gov: Decimal | None, rows: Iterable[tuple[int, int]]) -> P0Result:
    """``getDynamicP0`` (chain-api.md 10.2) for governance p0 ``gov`` (None = unset on chain)
    and per-participant ``(inference_count, missed_requests)`` of every active participant."""
    t = m = n_used = 0
    for inference_count, missed in rows:
        total = min(int(inference_count) + int(missed), UINT64_MAX)   # saturating, as the chain
        if total == 0:
            continue
        t = min(t + total, UINT64_MAX)
        m = min(m + int(missed), UINT64_MAX)
        n_used += 1
    gov_ceil = permille_ceil(gov)
    if gov_ceil > 500:
        assert gov is not None
        return P0Result(p0=_to_decimal(gov), permille=table_permille(gov), skip=False, baseline_permille=None,
                        T=t, M=m, n_used=n_used, path=PATH_EXACT, governance_p0=_to_decimal(gov),
                        governance_permille=None)
    gov_permille = ceil_to_supported(gov_ceil) if gov_ceil > 0 else 100
    gov_dec = None if gov is None else _to_decimal(gov)
    if t < MIN_TOTAL_REQUESTS or n_used < MIN_PARTICIPANTS:
        return P0Result(p0=_permille_decimal(gov_permille), permille=gov_permille, skip=False,
                        baseline_permille=None, T=t, M=m, n_used=n_used, path=PATH_GOVERNANCE,
                        governance_p0=gov_dec, governance_permille=gov_permille)
    baseline = m * 1000 // t
    target = min(baseline + MARGIN_PERMILLE, 500)
    selected = ceil_to_supported(target)
    final = max(selected, gov_permille)
    return P0Result(p0=_permille_decimal(final), permille=final, skip=selected == 500,
                    baseline_permille=baseline, T=t, M=m, n_used=n_used, path=PATH_DYNAMIC,
                    governance_p0=gov_dec, governance_permille=gov_permille,
                    target_permille=target, selected_permille=selected)


def _permille_decimal(permille: int) -> Decimal:
    """``permilleToP0Decimal``: {value: permille, exponent: -3}."""
    return Decimal(permille).scaleb(-3)


# -- the analysis ---------------------------------------------------------------------------
VERDICT_ORDER = {"zeroed_by_miss_test": 0, "zero_for_other_reason": 1, "no_requests": 2, "passed": 3}
TABLE_COLUMNS_OUT = ["participant", "total", "missed", "miss_share", "p0", "critical_misses", "passed",
                     "rewarded_coins", "verdict", "reason"]


def grace_upgrades_in(start: int | None, end: int | None) -> list[GraceUpgrade]:
    """Known grace-installing upgrades whose height lies in ``[start, end)``; end None = open."""
    if start is None:
        return []
    return [g for g in GRACE_UPGRADES
            if g.height is not None and start <= g.height and (end is None or g.height < end)]


def _governance_p0(ctx: Mapping[str, Any], epoch: int, notes: list[str]) -> tuple[Decimal, str]:
    if ctx.get("has_settlement_params"):
        v = ctx.get("settlement_binom_test_p0")
        if v is not None:
            h = ctx.get("settlement_params_height")
            return Decimal(v), "settlement params" + (f" at height {h}" if h is not None else "")
        notes.append(f"binom_test_p0 is NULL in the settlement params of epoch {epoch}: "
                     f"using the code default {DEFAULT_BINOM_TEST_P0}")
        return DEFAULT_BINOM_TEST_P0, "code default (binom_test_p0 NULL at settlement)"
    if ctx.get("has_epoch_params") and ctx.get("epoch_binom_test_p0") is not None:
        v = Decimal(ctx["epoch_binom_test_p0"])
        notes.append(f"no settlement params collected for epoch {epoch}: using binom_test_p0 {v:f} "
                     "from the params in force during the epoch (pinned at S(N+1)); "
                     "a change at settlement would not be seen")
        return v, "epoch params (settlement params not collected)"
    notes.append(f"no settlement params collected for epoch {epoch}: using the code default "
                 f"binom_test_p0 {DEFAULT_BINOM_TEST_P0}")
    return DEFAULT_BINOM_TEST_P0, "code default (params not collected)"


def _grace(ctx: Mapping[str, Any], epoch: int, notes: list[str]) -> GraceUpgrade | None:
    """The grace epoch is the epoch effective at the upgrade height: [SNV(N), SNV(N+1))."""
    if not ctx.get("has_epoch_row"):
        notes.append(f"epoch {epoch} has no chain_epochs row: punishment grace epochs cannot be checked")
        return None
    start, end = ctx.get("effective_height"), ctx.get("next_effective_height")
    if start is None:
        start, end = ctx.get("poc_start_height"), ctx.get("next_poc_start_height")
        if start is None:
            notes.append(f"epoch {epoch}'s heights are unknown: punishment grace epochs cannot be checked")
            return None
        notes.append("effective heights unknown: grace epochs checked against [S(N), S(N+1)) instead of "
                     "[SNV(N), SNV(N+1))")
    applied = None
    for g in grace_upgrades_in(start, end):
        if g.binom_test_p0 is None:
            notes.append(f"the {g.name} upgrade at height {g.height:,} falls in this epoch and may have "
                         "installed a punishment grace epoch; its p0 override is not documented, none applied")
            continue
        applied = g
        notes.append(f"punishment grace epoch: the {g.name} upgrade at height {g.height:,} falls in this "
                     f"epoch, so the chain replaced binom_test_p0 with {g.binom_test_p0} (chain-api.md 10.5)")
    return applied


def _fmt_p0(p0: Decimal) -> str:
    """0.100 stays 0.100 (a table p0); 0.100000000000000000 from DECIMAL(38,18) shows as 0.1."""
    text = format(p0, "f")
    return text if len(text) <= 5 else format(p0.normalize(), "f")


def _exclusion_texts(exclusions: Any) -> list[str]:
    out = []
    for x in exclusions or []:
        reason = x.get("reason") or "no reason given"
        h = x.get("height")
        out.append(f"excluded: {reason}" + (f" at height {h}" if h is not None else ""))
    return out


def _assess(r: Mapping[str, Any], p0r: P0Result, excluded_known: bool, root_known: bool) -> dict[str, Any]:
    inference_count = int(r["inference_count"])
    missed = int(r["missed_requests"])
    total = inference_count + missed
    rewarded = int(r["rewarded_coins"])
    share = Decimal(missed) / Decimal(total) if total else None
    p0 = p0r.p0
    crit: int | None = None
    p_value: Decimal | None = None
    test_error: str | None = None

    if total == 0:
        passed, test_text = True, "no requests: the miss test never punishes it"
    elif p0r.skip:
        passed, test_text = True, "outage breaker: the test was skipped for everyone this epoch"
    else:
        try:
            outcome = miss_test_detail(missed, total, p0)
            passed, crit, p_value, table = outcome.passed, outcome.critical, outcome.p_value, outcome.table
        except MissTestError as exc:
            passed, test_error = True, str(exc)
        if test_error is not None:
            test_text = f"the chain's test errors ({test_error}) and keeps the reward"
        elif not table:
            assert p_value is not None
            cmp_ = ">=" if passed else "<"
            shown = format(p_value.normalize(), "f")
            if p_value == 0:
                shown += " (p0^k or (1-p0)^(n-k) rounds to 0 at 16 places)"
            test_text = f"exact binomial p-value {shown} {cmp_} 0.05 at p0 {_fmt_p0(p0)}"
        elif crit is None:
            test_text = f"{total} request(s): below the smallest table row, passes"
        else:
            rule = "rate rule above 990" if total > RATE_RULE_ABOVE else "table"
            word = "within" if passed else "more than"
            test_text = (f"missed {missed} of {total}: {word} the {crit} allowed at p0 {_fmt_p0(p0)} ({rule})")

    causes = _exclusion_texts(r.get("exclusions"))
    root_weight = r.get("root_weight")
    has_root = bool(r.get("has_root_weight_row"))
    if root_known and (not has_root or root_weight is None or int(root_weight) <= 0):
        causes.append("no root validation weight")
    elif has_root and root_weight is not None and int(root_weight) > 0 \
            and r.get("root_confirmation_weight") is not None and int(r["root_confirmation_weight"]) == 0:
        causes.append("root confirmation_weight is 0 (confirmation PoC)")

    discrepancy = None
    if total == 0:
        verdict = "no_requests"
        reason = test_text
        if rewarded == 0:
            reason += "; rewarded 0: " + ("; ".join(causes) if causes else "cause not visible in collected data")
    elif not passed:
        verdict = "zeroed_by_miss_test"
        reason = test_text + ("; also " + "; ".join(causes) if causes else "")
        if rewarded > 0:
            discrepancy = (f"the recomputed test fails but the chain paid {rewarded} rewarded_coins: "
                           "the chain's p0 or inputs differ from these")
    elif rewarded == 0:
        verdict = "zero_for_other_reason"
        if causes:
            reason = "; ".join(causes)
        else:
            unknown = []
            if not excluded_known:
                unknown.append("exclusions not collected")
            if not root_known:
                unknown.append("root weights not collected")
            reason = "passed the miss test but rewarded 0: cause not visible in collected data"
            if unknown:
                reason += f" ({', '.join(unknown)})"
    else:
        verdict = "passed"
        reason = test_text

    return {
        "participant": r["participant"],
        "total": total,
        "missed": missed,
        "inference_count": inference_count,
        "miss_share": share,
        "p0": p0,
        "critical_misses": crit,
        "p_value": p_value,
        "passed": passed,
        "rewarded_coins": rewarded,
        "verdict": verdict,
        "reason": reason,
        "discrepancy": discrepancy,
        "test_error": test_error,
        "exclusions": [{"reason": x.get("reason"), "height": x.get("height")} for x in (r.get("exclusions") or [])],
        "root_weight": None if root_weight is None else int(root_weight),
    }


def _float(v: Decimal | None) -> float | None:
    return None if v is None else float(v)


def _p0_explanation(p0r: P0Result, gov_source: str) -> str:
    p0 = _fmt_p0(p0r.p0)
    gov = "unset" if p0r.governance_p0 is None else _fmt_p0(p0r.governance_p0)
    if p0r.path == PATH_EXACT:
        how = ("yet IntPart(p0 x 1000) = 500 selects the 500‰ table" if p0r.permille is not None
               else "exact binomial test")
        return f"{p0} (governance {gov} from {gov_source} is above 0.5: used as is; {how})"
    gov_part = f"governance {gov} from {gov_source} -> {p0r.governance_permille}‰"
    if p0r.path == PATH_GOVERNANCE:
        return (f"{p0} ({gov_part}; the network sample is too small for the dynamic p0: "
                f"T={p0r.T} < {MIN_TOTAL_REQUESTS} or n_used={p0r.n_used} < {MIN_PARTICIPANTS})")
    return (f"{p0} (dynamic: network baseline {p0r.baseline_permille}‰ + {MARGIN_PERMILLE}‰ margin = "
            f"{p0r.target_permille}‰ -> table {p0r.selected_permille}‰; {gov_part}; the larger is used)")


KEY, TITLE = "miss_test", "Miss test"


def _no_summary_reason(store: Any, epoch: int) -> str:
    """Why there is no performance summary: not collected, not settled yet, or lost."""
    known = epoch_state(store, epoch)
    if known and not known[0]:
        return (f"epoch {epoch} is not settled yet: the chain writes its performance summary at "
                f"settlement (V(N+1)); collect it again after that: auditor collect --epoch {epoch} --node URL")
    if known:
        return (f"epoch {epoch} is in the store without its performance summary; collect it again: "
                f"auditor collect --epoch {epoch} --refresh --node URL")
    return not_stored(epoch)


def _findings(assessed: list[dict[str, Any]], epoch: int) -> list[Finding]:
    out = []
    for a in assessed:
        if a["verdict"] != "zeroed_by_miss_test":
            continue
        evidence = {"total": a["total"], "missed": a["missed"], "miss_share": _float(a["miss_share"]),
                    "critical_misses": a["critical_misses"], "p0": float(a["p0"]), "p_value": _float(a["p_value"]),
                    "rewarded_coins": a["rewarded_coins"]}
        evidence["query"] = "queries/misstest_inputs.sql"
        evidence["row"] = {"epoch": epoch, "participant": a["participant"]}
        subject = {"kind": "participant", "id": a["participant"]}
        if a["discrepancy"]:
            out.append(Finding("miss_test_discrepancy", "warn", subject,
                               f"fails the recomputed miss test yet the chain paid {a['rewarded_coins']} "
                               "rewarded_coins: the chain's p0 or inputs differ", evidence))
        else:
            out.append(Finding("reward_zeroed_miss_test", "error", subject,
                               f"epoch reward zeroed by the miss test: {a['reason']}", evidence))
    return out


def run(store: Any, epoch: int, options: Options | None = None) -> Result:
    """Recompute epoch ``epoch``'s miss test from the store and classify every participant."""
    participant = (options or Options()).participant
    rows = store.query("misstest_inputs", epoch=epoch)
    if not rows:
        return Result.missing_input(KEY, TITLE, _no_summary_reason(store, epoch), ["chain"])
    ctx = rows[0]
    notes: list[str] = []

    if not ctx.get("has_epoch_row"):
        settled = None
    else:
        settled = bool(ctx.get("settled"))
        if not settled:
            notes.append(f"epoch {epoch} is not settled (chain_epochs.settled is false): "
                         "rewarded_coins may not be final")

    gov, gov_source = _governance_p0(ctx, epoch, notes)
    grace = _grace(ctx, epoch, notes)
    if grace is not None:
        assert grace.binom_test_p0 is not None
        gov, gov_source = grace.binom_test_p0, f"punishment grace epoch of {grace.name}"

    p0r = dynamic_p0(gov, [(r["inference_count"], r["missed_requests"]) for r in rows])
    if p0r.skip:
        notes.append(f"outage breaker: the network baseline {p0r.baseline_permille}‰ selects the 500‰ table, "
                     "so the chain punished nobody this epoch")
    if p0r.path == PATH_EXACT and p0r.permille is None:
        notes.append("governance p0 above 0.5: the chain runs the exact binomial test with 16-place "
                      "rounding, where p0^k or (1-p0)^(n-k) can round to 0 and fail a participant")

    excluded_known = bool(ctx.get("excluded_rows")) or ctx.get("excluded_status") == "ok"
    root_known = bool(ctx.get("root_weight_rows")) or ctx.get("root_status") == "ok"
    unknown = []          # inputs the verdicts use that the store does not hold
    if not excluded_known:
        unknown.append("the exclusion list of this epoch was not collected: exclusions are unknown")
    if not root_known:
        unknown.append("root validation weights of this epoch were not collected: missing weights are unknown")
    notes.extend(unknown)

    assessed = [_assess(r, p0r, excluded_known, root_known) for r in rows]
    if participant is not None:
        assessed = [a for a in assessed if a["participant"] == participant]
        if not assessed:
            notes.append(f"participant {participant} has no performance summary in epoch {epoch} "
                         f"(not active in that epoch, or a typo); the network p0 is still computed from all "
                         f"{len(rows)} participants")
    assessed.sort(key=lambda a: (VERDICT_ORDER[a["verdict"]], a["participant"]))

    discrepancies = [a for a in assessed if a["discrepancy"]]
    if discrepancies:
        notes.append(f"{len(discrepancies)} participant(s) fail the recomputed test but were paid: the chain "
                     "used another p0 or other inputs (e.g. a grace epoch this tool cannot detect: the "
                     "v0.2.10 upgrade height is not documented)")
    errors = [a for a in assessed if a["test_error"]]
    if errors:
        notes.append(f"{len(errors)} participant(s): the chain's test returns an error, so it keeps the reward")

    network_share = (p0r.M / p0r.T) if p0r.T else None
    counts: dict[str, int] = {}
    for a in assessed:
        counts[a["verdict"]] = counts.get(a["verdict"], 0) + 1

    participants_json = []
    for a in assessed:
        participants_json.append({
            **{k: v for k, v in a.items() if k not in ("miss_share", "p0", "p_value")},
            "miss_share": _float(a["miss_share"]),
            "p0": float(a["p0"]),
            "p_value": _float(a["p_value"]),
        })
    p0_detail = p0r.to_dict()
    p0_detail["governance_source"] = gov_source
    data = {
        "epoch": epoch,
        "available": True,
        "p0": float(p0r.p0),
        "network_miss_share": network_share,
        "skip": p0r.skip,
        "settled": settled,
        "p0_detail": p0_detail,
        "verdicts": counts,
        "notes": notes,
        "participants": participants_json,
    }

    table_rows = [{**{c: a[c] for c in TABLE_COLUMNS_OUT}, "miss_share": _float(a["miss_share"])}
                  for a in assessed]
    for tr, a in zip(table_rows, assessed):
        if a["discrepancy"]:
            tr["reason"] = f"{a['reason']}; DISCREPANCY: {a['discrepancy']}"
    table = Table(title=TITLE, columns=list(TABLE_COLUMNS_OUT), rows=table_rows, notes=list(notes))

    header = [
        ("epoch", str(epoch)),
        ("settled", "unknown" if settled is None else "yes" if settled else "no"),
        ("p0 used", _p0_explanation(p0r, gov_source)),
        ("network miss share",
         "unknown (no requests)" if network_share is None else f"{p0r.M} / {p0r.T} = {network_share:.4%}"),
        ("T / M / n_used", f"{p0r.T} / {p0r.M} / {p0r.n_used}"),
        ("skip (outage breaker)", "yes: nobody punished" if p0r.skip else "no"),
        ("verdicts", ", ".join(f"{counts[v]} {v}" for v in VERDICT_ORDER if v in counts) or "none"),
    ]
    if discrepancies:
        header.append(("discrepancies", str(len(discrepancies))))
    coverage = {"sources": ["chain"], "missing": [], "unknown": unknown}
    return Result(KEY, TITLE, data, [table], _findings(assessed, epoch), coverage, header=header)


# -- what the registry reads of a result (analyses/registry.py): its facts, charts and metrics -----
@dataclass(frozen=True)
class Tested:
    """One participant's miss test, as the chart and the textfile read it."""

    participant: str
    total: int
    missed: int
    critical_misses: int | None     # None: the rate rule or the exact test applied, no table bound
    passed: bool


@dataclass(frozen=True)
class MissTestFacts:
    """The typed facts of a miss-test result: built from what ``run`` wrote (a renamed key
    is a KeyError here, next to the code that wrote it, not an empty chart elsewhere)."""

    participants: tuple[Tested, ...]

    @classmethod
    def of(cls, result: Result) -> "MissTestFacts":
        return cls(tuple(Tested(p["participant"], p["total"], p["missed"], p["critical_misses"], p["passed"])
                         for p in result.data["participants"]))


def charts(result: Result) -> list:
    """Each participant's misses against the most the test allowed it (table path)."""
    from ..result import Chart
    from .frame import chart_label as _label

    tested = [p for p in MissTestFacts.of(result).participants if p.total and p.critical_misses is not None]
    if not tested:
        return []
    return [Chart("Misses against the miss test's threshold", "bar", "participant (last 8 characters)",
                  "requests",
                  [{"name": "missed", "points": [[_label(p.participant), p.missed] for p in tested]},
                   {"name": "most allowed", "points": [[_label(p.participant), p.critical_misses] for p in tested]}])]


def metrics(result: Result) -> Iterable[tuple[str, tuple[str, ...], float]]:
    for p in MissTestFacts.of(result).participants:
        yield "auditor_miss_test_passed", (p.participant,), 1 if p.passed else 0
        yield "auditor_miss_test_missed_requests", (p.participant,), p.missed
        if p.critical_misses is not None:
            yield "auditor_miss_test_critical_misses", (p.participant,), p.critical_misses
