"""The process's standard output and error, where a reader gone stops nothing.

``auditor epoch 433 | head`` or ``auditor collect ... 2>&1 | head -1``: once the reader of a
stream has gone, what is written to it after goes to /dev/null. The command's work (a
collect's rows) goes on, and its exit code is its run's (0, 1 for findings, 3), not the 1 that
click and rich answer a broken pipe with, which reads as findings. ``auditor watch``, whose
loop prints for as long as someone reads, asks ``reader_gone`` and ends.
"""

from __future__ import annotations

import os
import sys
from typing import Any


class _Guarded:
    """A text stream whose writes a gone reader does not fail; ``gone`` once it went."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        # what the stream still holds, and all written after, goes nowhere and fails no more
        self.gone = True
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self._stream.fileno())
        os.close(null)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard() -> None:
    """Guard ``sys.stdout`` and ``sys.stderr`` (the ``auditor`` command does, first thing)."""
    sys.stdout, sys.stderr = _Guarded(sys.stdout), _Guarded(sys.stderr)


def reader_gone(stream: Any = None) -> bool:
    """Whether the reader of ``stream`` (the standard output) has gone."""
    return bool(getattr(stream if stream is not None else sys.stdout, "gone", False))
