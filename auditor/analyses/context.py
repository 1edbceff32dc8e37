"""One run of analyses over one epoch (or a time range): the store, and the facts several
analyses share, each computed once per run.

An ``epoch`` run, an analysis command and a ``watch`` tick each make one :class:`Run` and pass
it to every analysis they run (``run(store, epoch, options, ctx=run)``). An analysis that needs
what another one works out (the miss test, the cPoC windows, the attempts around them) asks the
run for it by name, and the run computes it the first time and hands out the same object after:
no analysis runs another one's queries a second time. Analyses of one run may go on in two
threads (the epoch report), each querying through its own connection (``Store.worker``,
``Run.on``): a fact asked for by both is computed by the first and waited for by the other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:      # annotations only: importing the analysis (its --help) needs no DuckDB
    from ..store import Store


T = TypeVar("T")


class Run:
    """The store and epoch of one run, with a cache of shared facts keyed by name, and the keys
    of the analyses the run makes (an epoch report: all of them; one command: none needed)."""

    def __init__(self, store: Store, epoch: int | None, *, analyses: Iterable[str] = ()) -> None:
        self._store = store
        self.epoch = epoch
        self.analyses = frozenset(analyses)
        self._facts: dict[str, Any] = {}
        self._thread = threading.local()                 # .store: the calling thread's (``on``)
        self._locks: dict[str, threading.RLock] = {}     # per fact: held while it is computed
        self._locking = threading.Lock()

    @property
    def store(self) -> Store:
        """The store the calling thread queries through: the run's, or its worker (``on``)."""
        return getattr(self._thread, "store", None) or self._store

    @contextmanager
    def on(self, store: Store) -> Iterator[None]:
        """Within the block the calling thread's ``store`` is ``store`` (a ``Store.worker`` of
        the run's), for its analyses and the facts they compute."""
        self._thread.store = store
        try:
            yield
        finally:
            del self._thread.store

    def includes(self, key: str) -> bool:
        """Whether the analysis ``key`` is part of this run: another analysis of the run may then
        show what that one works out (the miss test's findings carry the CPoC window misses of
        ``poc_overload`` in an epoch report, and not in ``auditor misstest``)."""
        return key in self.analyses

    def shared(self, name: str, compute: Callable[[], T]) -> T:
        """The fact ``name`` of this run: ``compute()`` the first time it is asked for, the same
        object after. ``name`` says what it is and for which inputs (``"miss_test"``,
        ``"cpoc_windows"``); a fact that depends on options puts them in its name. Another
        thread asking for it meanwhile waits for it."""
        with self._locking:
            lock = self._locks.setdefault(name, threading.RLock())
        with lock:
            if name not in self._facts:
                self._facts[name] = compute()
            return self._facts[name]

    def forget(self, name: str) -> None:
        """Drop the fact ``name``, to compute it again (a wider version of it is needed)."""
        self._facts.pop(name, None)


def run_for(store: Store, epoch: int | None, ctx: Run | None) -> Run:
    """``ctx`` when the caller is part of a run, else a run of its own (an analysis called alone)."""
    if ctx is not None:
        if ctx.store is not store or ctx.epoch != epoch:
            raise ValueError("an analysis was given a run of another store or epoch")
        return ctx
    return Run(store, epoch)
