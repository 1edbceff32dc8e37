"""Epoch and confirmation-PoC height arithmetic (chain-api.md sections 4 and 6).

Pure functions of heights and epoch params; the chain collector stores what they
return, the reports read it back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EpochParams:
    epoch_length: int
    poc_stage_duration: int
    poc_validation_delay: int
    poc_validation_duration: int
    set_new_validators_delay: int
    poc_exchange_duration: int = 0
    inference_validation_cutoff: int = 0


@dataclass(frozen=True)
class PocStages:
    """The stages of the PoC that starts at ``start`` (S) and creates an epoch."""

    start: int             # S
    gen_end: int           # S + poc_stage_duration (end of generation incl. wind-down)
    val_start: int         # gen_end + poc_validation_delay
    val_end: int           # V: the previous epoch is settled here
    set_new_validators: int  # SNV = V + set_new_validators_delay


def poc_stages(start: int, p: EpochParams) -> PocStages:
    gen_end = start + p.poc_stage_duration
    val_start = gen_end + p.poc_validation_delay
    val_end = val_start + p.poc_validation_duration
    return PocStages(start, gen_end, val_start, val_end, val_end + p.set_new_validators_delay)


@dataclass(frozen=True)
class CpocWindows:
    trigger: int
    gen_start: int     # G: generation starts; [trigger, G) is the grace period
    gen_end: int       # last generation height
    exchange_end: int
    val_start: int
    val_end: int       # last validation height; inference resumes at val_end + 1


def cpoc_windows(trigger: int, p: EpochParams) -> CpocWindows:
    """``x/inference/types/confirmation_poc_event.go``."""
    g = trigger + max(p.inference_validation_cutoff, 1)
    gen_end = g + p.poc_stage_duration - 1
    exchange_end = gen_end + p.poc_exchange_duration
    val_start = exchange_end + p.poc_validation_delay
    return CpocWindows(trigger, g, gen_end, exchange_end, val_start, val_start + p.poc_validation_duration - 1)


# -- the boundary rule of a cPoC window and its phases, for rows already read ----------------------
# queries/views/in_cpoc_window.sql writes the rule for SQL (closed: [w_start, w_end], both ends
# in); these say the same of values in hand, and tests/test_cpoc_window_rule.py holds them to
# the macros and every window consumer to them.
def in_cpoc_window(t, w_start, w_end) -> bool:
    """Whether ``t`` is in the window (or phase) ``[w_start, w_end]``: in_cpoc_window in SQL."""
    return w_start <= t <= w_end


def overlaps_cpoc_window(a_start, a_end, w_start, w_end) -> bool:
    """Whether something running from ``a_start`` to ``a_end`` meets ``[w_start, w_end]``:
    overlaps_cpoc_window in SQL."""
    return a_end >= w_start and a_start <= w_end


def covers_cpoc_window(lo, hi, w_start, w_end) -> bool:
    """Whether the span ``[lo, hi]`` (what logs cover) holds the whole window ``[w_start, w_end]``."""
    return in_cpoc_window(w_start, lo, hi) and in_cpoc_window(w_end, lo, hi)


def epoch_boundaries(start: int, next_start: int | None, p: EpochParams) -> dict[str, int]:
    """Named boundary heights of epoch N given S(N) and S(N+1) (None when N+1 is not known)."""
    this = poc_stages(start, p)
    out = {
        "S(N)": this.start,
        "PoC gen end (N)": this.gen_end,
        "V(N)": this.val_end,
        "SNV(N)": this.set_new_validators,
    }
    if next_start is not None:
        nxt = poc_stages(next_start, p)
        out.update({
            "S(N+1)": nxt.start,
            "V(N+1) settlement": nxt.val_end,
            "SNV(N+1)": nxt.set_new_validators,
        })
    return out
