"""``--mine``: the operator's own hosts (issue 33). Given (the flag, ``AUDITOR_MINE`` or
``mine = [...]`` in auditor.toml), every finding says whether it is one of theirs
(``Finding.mine``, ``"mine"`` in the JSON), ``--fail-on`` counts only those
(``Result.failing``), the reports show them first ("Your hosts") and the textfile's
per-participant families carry ``mine="1"`` or ``mine="0"`` (report/promfile.py).

A finding is mine when its subject is one of the addresses, or when its evidence names one
of them as the participant or host (:data:`EVIDENCE_KEYS`, at any depth: a miss-test row's
``participant``); a model's ``preserved_capacity_short`` when the preserved hosts of its
episode include one of them (queries/epoch_preserved_nodes.sql). Any other finding about a
model or an escrow is not: a remint is mine only when its evidence names one of mine, so a
host operator's ``--fail-on`` leaves the gateway's own findings out, on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .result import Finding, Result

# the evidence keys whose values are a participant's (or host's) address, or a list of them
EVIDENCE_KEYS = frozenset({"participant", "participants", "host", "hosts", "preserved_hosts", "executor"})


def resolve(store: Any, texts: Iterable[str], epoch: int | None, *, quiet: bool = False) -> tuple[str, ...] | None:
    """--mine's addresses (``participants.address``: a label as the one stored address it fits),
    each one not in ``epoch`` said on stderr (a note: cron keeps running); None when none given."""
    import sys

    from .participants import address

    if not texts:
        return None
    addresses = tuple(dict.fromkeys(address(store, text, "--mine") for text in texts))
    for note in [] if quiet else absent(store, epoch, addresses):
        print(f"auditor: note: {note}", file=sys.stderr)
    return addresses


def absent(store: Any, epoch: int | None, mine: Iterable[str]) -> list[str]:
    """One note per address of ``mine`` that is no participant of ``epoch`` (excluded, new,
    gone): said, never an error, so that cron keeps running."""
    from .participants import closest

    if epoch is None:
        return []
    notes, stored = [], None
    for a in sorted(set(mine)):         # what --participant's typo check asks (an epoch not stored: nothing)
        found = store.query("participant_in_epoch", epoch=epoch, participant=a)[0]
        if found["epoch_stored"] and not found["of_epoch"]:
            stored = stored if stored is not None else store.query("participants_stored")
            near = closest(a, stored)
            notes.append(f"--mine {a} is no participant of epoch {epoch} (excluded, new or gone): none of its "
                         "findings can be mine" + (f"; the closest stored address is {near}" if near else ""))
    return notes


def mark(result: Result, mine: Iterable[str], store: Any = None, epoch: int | None = None) -> Result:
    """``result`` with each finding (its parts' too) saying whether it is mine, and
    ``result.mine`` set; ``store`` and ``epoch`` let a model's preserved_capacity_short ask
    which hosts were preserved."""
    addresses = frozenset(mine)
    preserved: dict[int, dict[tuple[str, str], set[str]]] = {}      # per epoch (targets --epochs A..B has several)

    def hosts_of(f: Finding) -> set[str]:
        at = f.evidence.get("epoch", epoch)
        if store is None or at is None:
            return set()
        if int(at) not in preserved:
            by = preserved[int(at)] = {}
            for r in store.query("epoch_preserved_nodes", epoch=int(at), participant=None):
                by.setdefault((r["episode"], r["model_id"]), set()).add(r["participant"])
        return preserved[int(at)].get((f.evidence.get("episode"), f.subject["id"]), set())

    def is_mine(f: Finding) -> bool:
        if f.subject.get("kind") == "participant" and f.subject.get("id") in addresses:
            return True
        if named(f.evidence, addresses):
            return True
        return f.code == "preserved_capacity_short" and bool(hosts_of(f) & addresses)

    for part in [result, *result.parts]:
        for f in part.findings:
            f.mine = is_mine(f)
        part.mine = addresses
    return result


def named(evidence: Any, addresses: frozenset[str]) -> bool:
    """Whether ``evidence`` names one of ``addresses`` under a key of EVIDENCE_KEYS, at any depth."""
    if isinstance(evidence, dict):
        for k, v in evidence.items():
            if k in EVIDENCE_KEYS and _addresses(v) & addresses:
                return True
            if isinstance(v, (dict, list, tuple)) and named(v, addresses):
                return True
    elif isinstance(evidence, (list, tuple)):
        return any(named(v, addresses) for v in evidence)
    return False


def _addresses(v: Any) -> set[str]:
    if isinstance(v, str):
        return {v}
    if isinstance(v, (list, tuple, set, frozenset)):
        return {x for x in v if isinstance(x, str)}
    return set()
