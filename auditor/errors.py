"""Errors a user sees as one line, and the exit codes they map to.

Exit codes (every command): 0 success; 1 findings at or above --fail-on;
2 usage error; 3 a source or data error that left the answer incomplete.
"""

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_SOURCE = 3


class AuditorError(Exception):
    """An expected failure: printed as one line, mapped to an exit code."""

    exit_code = EXIT_SOURCE


class UsageError(AuditorError):
    exit_code = EXIT_USAGE


class SourceError(AuditorError):
    """A source (node, accounting API, log file) failed or sent bad data."""

    exit_code = EXIT_SOURCE


class NotFoundError(SourceError):
    """The source answered, and the thing asked for does not exist."""


class StoreError(AuditorError):
    """The DuckDB store could not be opened or written (locked, corrupt)."""

    exit_code = EXIT_SOURCE
