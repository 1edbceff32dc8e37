"""A participant's capability refusals, as its misses' evidence shows them (issue 34, #2107).

A schema-6 gateway's accounting record says, per participant and model, what the host's build
or the model turned away this epoch (``acct_capabilities``): requests for a protocol version it
does not speak, a ``tool_choice`` it does not support, a context over its limit. Each is refused
before any receipt, so each is a miss on chain. ``misstest`` and ``poc-overload`` put them in the
evidence of a participant's miss findings (:func:`evidence`), so that a host operator sees what
its own configuration turned away next to the misses it cost.

Unknown is not zero: without an accounting record of schema 6 or later for the participant in
the epoch, the refusals are ``None`` and ``basis`` says why. Omitted fields of a sent block are
the gateway's false / 0 (omitempty), and a schema-6 record without a block refused nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..result import Finding
from .context import Run

KEY = "capability_refusals"          # the evidence key
QUERY = "queries/capability_refusals.sql"
SINCE_SCHEMA = 6
COUNTS = ("version_refusals", "tool_refusals", "context_refusals")
FLAGS = ("protocol_version_unsupported", "tool_choice_unsupported")


def refusals(run: Run) -> dict[str, dict[str, Any]]:
    """Per participant with an accounting record in the run's epoch: its refusals (the value of
    :data:`KEY`), computed once per run."""
    return run.shared("capability_refusals",
                      lambda: summarise(run.store.query("capability_refusals", epoch=run.epoch), run.epoch))


def summarise(rows: list[Mapping[str, Any]], epoch: int | None) -> dict[str, dict[str, Any]]:
    """``queries/capability_refusals.sql`` rows -> per participant: the refusals of its records of
    schema 6 or later, each model's block, and the models whose records do not report them."""
    by_participant: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_participant.setdefault(r["participant"], []).append(r)
    out = {}
    for p, recs in by_participant.items():
        known = [r for r in recs if r["schema_version"] is not None and r["schema_version"] >= SINCE_SCHEMA]
        older = sorted(r["model"] for r in recs if r not in known)
        if not known:
            versions = sorted({str(r["schema_version"]) for r in recs})
            out[p] = _unknown(f"the accounting records of epoch {epoch} for this participant are of schema "
                              f"{', '.join(versions)}: refusals are reported from schema {SINCE_SCHEMA} on")
            continue
        models = [{"model": r["model"], **{f: bool(r[f]) for f in FLAGS}, "context_limit": r["context_limit"],
                   **{c: int(r[c] or 0) for c in COUNTS}} for r in known if r["block_sent"]]
        totals = {c: sum(m[c] for m in models) for c in COUNTS}
        basis = (f"accounting API schema {SINCE_SCHEMA}+ capability block, escrows created in epoch {epoch} "
                 f"({QUERY}); each refused request was refused before any receipt: a miss (#2107); a model "
                 "without a block refused nothing")
        if older:
            basis += f"; not reported for {', '.join(older)} (records before schema {SINCE_SCHEMA})"
        out[p] = {"refusals": sum(totals.values()), **totals, "models": models, "basis": basis}
    return out


def _unknown(why: str) -> dict[str, Any]:
    return {"refusals": None, **dict.fromkeys(COUNTS), "models": [], "basis": why}


def evidence(run: Run, participant: str) -> dict[str, Any]:
    """The :data:`KEY` value for ``participant``'s finding in the run's epoch."""
    found = refusals(run).get(participant)
    if found is not None:
        return found
    return _unknown(f"no accounting record for this participant in epoch {run.epoch} "
                    "(the accounting API not collected, or it served no record of it)")


def with_refusals(run: Run, findings: list[Finding]) -> list[Finding]:
    """``findings``, each one about a participant given its :data:`KEY` evidence (one that has
    it already is kept as it is)."""
    out = []
    for f in findings:
        if f.subject.get("kind") != "participant" or KEY in f.evidence:
            out.append(f)
            continue
        out.append(Finding(f.code, f.severity, f.subject, f.summary,
                           {**f.evidence, KEY: evidence(run, f.subject["id"])}, f.model))
    return out
