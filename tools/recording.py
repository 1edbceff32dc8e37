"""Write a recording directory in the format ``auditor.sources.replay`` serves: the
fixture builders and the tests use it to make recorded responses by hand."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path


def write_recording(directory: Path | str, entries: Sequence[dict]) -> Path:
    """Write responses as a recording directory, replacing what it held: one file each,
    ``000001.json`` on, in serving order. An entry needs ``path`` and ``body`` (text, or
    anything JSON-able, written compactly); ``query`` defaults to "", ``height`` to null,
    ``status`` to 200 and ``content_type`` to application/json."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.json"):
        old.unlink()
    for i, e in enumerate(entries, 1):
        entry = {"path": e["path"], "query": "", "height": None, "status": 200,
                 "content_type": "application/json", "body": e["body"], **e}
        if not isinstance(entry["body"], str):
            entry["body"] = json.dumps(entry["body"])
        (directory / f"{i:06d}.json").write_text(json.dumps(entry, indent=1) + "\n", encoding="utf-8")
    return directory
