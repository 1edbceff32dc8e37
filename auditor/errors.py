"""Errors a user sees as one line, and the exit codes they map to.

Exit codes (every command): 0 success; 1 findings at or above --fail-on;
2 usage error; 3 a source or data error that left the answer incomplete; 130 Ctrl-C and
143 SIGTERM (interrupt.stopped).
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


class OutputError(AuditorError):
    """A report, a textfile or the store could not be written for a reason that is not the
    path's (a full disk, an I/O error): nothing was lost, the output is missing."""

    exit_code = EXIT_SOURCE


# the path itself cannot be used (the value given is wrong); any other cause is the disk's
_PATH_ERRNOS = {"EACCES", "EPERM", "EROFS", "ENOTDIR", "EISDIR", "ENOENT", "ENAMETOOLONG", "EEXIST", "ELOOP"}


def cannot_write(path: object, exc: OSError) -> AuditorError:
    """The one line for a file that could not be written: it names the path and the cause.
    A usage error (exit 2) when the path cannot be used (permission, read-only, not a
    directory), else an OutputError (exit 3: a full disk, an I/O error)."""
    import errno

    cause = exc.strerror or str(exc)
    if isinstance(exc, FileExistsError):         # mkdir of a parent that is a file
        cause = "a parent of it is a file, not a directory"
    usage = errno.errorcode.get(exc.errno or 0) in _PATH_ERRNOS
    return (UsageError if usage else OutputError)(f"cannot write {path}: {cause}")


def is_out_of_memory(exc: BaseException | None) -> bool:
    """Whether ``exc`` is DuckDB's OutOfMemoryException (past its memory_limit), told by name:
    this module does not import duckdb (the CLI's start-up does not need it)."""
    return type(exc).__name__ == "OutOfMemoryException"


def out_of_memory(exc: BaseException) -> str:
    """The one line for DuckDB running out of the memory it may use (its OutOfMemoryException:
    its own advice is SQL a user of auditor cannot type): what ran out, and the two settings
    that help. Nothing half-done is stored: each step that writes is one transaction."""
    from .limits import memory_limit

    what = str(exc).split("\n", 1)[0].strip().removeprefix("Out of Memory Error: ")
    return f"error: DuckDB ran out of the memory it may use ({memory_limit()}; {what}): {_MORE_MEMORY}"


def caused_by_memory(exc: AuditorError) -> str:
    """What to add to ``exc``'s line when DuckDB running out of memory caused it (a collect's
    step that says what it stored and what it did not), else nothing."""
    if not is_out_of_memory(exc.__cause__):
        return ""
    from .limits import memory_limit

    return f" (DuckDB may use {memory_limit()}: {_MORE_MEMORY})"


def is_damaged_store(exc: BaseException | None) -> bool:
    """Whether ``exc`` is DuckDB finding its file damaged (a block whose checksum does not match:
    a disk's fault, a copy cut short, a write by something else), told by its words."""
    return exc is not None and "Corrupt database file" in str(exc)


def damaged_store(exc: BaseException, db: object) -> str:
    """The one line for a damaged store: what DuckDB found, and what to do (nothing auditor can
    mend: the file is kept as it is, for a backup's place or a bug report)."""
    what = str(exc).split("\n", 1)[0].strip().removeprefix("Corrupt database file: ")
    where = f" {db}" if db else ""
    return (f"the store{where} is damaged ({what}): auditor cannot read all of it; keep the file, and "
            "restore it from a backup or collect again into a new --db")


_MORE_MEMORY = "run the command again with more, e.g. AUDITOR_MEMORY_LIMIT=4GB, or with AUDITOR_THREADS=1"
