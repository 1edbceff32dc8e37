"""What DuckDB may use: its memory. Read by the store, which sets it, and by the errors that
say it ran out (errors.out_of_memory): here, below both, so that neither imports the other."""

from __future__ import annotations

import os

MEMORY_LIMIT = "1GB"     # DuckDB's buffers (Store._limit_resources)


def memory_limit() -> str:
    """The memory DuckDB may use for its buffers: ``$AUDITOR_MEMORY_LIMIT``, else MEMORY_LIMIT."""
    return os.environ.get("AUDITOR_MEMORY_LIMIT") or MEMORY_LIMIT
