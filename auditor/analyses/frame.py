"""The contract every analysis follows, and the few rules they share.

An analysis is a module with ``run(store, epoch, options) -> Result`` (``auditor.result``):
it reads the store through its SQL files in ``queries/``, and returns its data, tables,
findings and the coverage it relied on. It never prints. ``registry.py`` lists them, one
record each: ``auditor epoch N`` runs them all in one run; each analysis command runs one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import SourceError

if TYPE_CHECKING:       # not imported at run time: a command's --help reads its Options, not DuckDB
    from ..store import Store


# -- options: each declared once, on its Options field, with its command-line form -----------------
@dataclass(frozen=True)
class Flag:
    """An option's command-line form, on its field (``option``): the CLI's flag, ``--help``,
    the usage the README shows and auditor.toml's key are made from it. ``metavar`` names the
    value (every option that takes one has it; a ``bool`` is a switch and takes none);
    ``repeat``: the flag may be given again (the field is a tuple); ``choices``: the only values."""

    flag: str
    help: str
    metavar: str | None = None
    short: str | None = None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    repeat: bool = False
    envvar: str | None = None           # the environment variable that may give it (a list: space-separated)


def option(default: Any, flag: str, help: str, **form: Any) -> Any:
    """A field of an ``Options`` class that is also a flag of its command (``Flag``): adding an
    option to an analysis is this one line on its Options class."""
    return field(default=default, metadata={"flag": Flag(flag, help, **form)})


@dataclass(frozen=True)
class Arg:
    """The argument of a command: its metavar, help, and whether it may be left out; by
    default the epoch N, else a field of the Options class (``name``, of type ``kind``:
    ``history``'s ADDR)."""

    metavar: str = "N"
    help: str = "Epoch index."
    optional: bool = False
    name: str = "epoch"
    kind: type = int


PARTICIPANT_HELP = ("Only this participant (network-wide figures still come from all): its address, or the label "
                    "the tables print (p86j0skk, gonka1…p86j0skk) when one stored address fits.")


MINE_HELP = ("One of your own hosts: its address, or a label as --participant takes. Repeatable; AUDITOR_MINE: "
             "several, space-separated. Every finding then says whether it is yours (JSON \"mine\"), "
             "--fail-on counts only yours, yours are shown first, and the textfile's per-participant "
             "metrics carry mine=\"1\" or mine=\"0\". One not in the epoch is a note, not an error.")


@dataclass(frozen=True)
class Options:
    """What narrows an analysis. Every analysis accepts these; one that needs more
    subclasses it (with defaults, so the epoch report can build it from these alone).

    A field made with ``option(...)`` is a flag of the analysis's command: declared here
    once, it is a flag of every command (``--participant``, ``--mine``), unless the class leaves it out
    (``WITHOUT``; ``--since``/``--until`` only where ``RANGE``)."""

    participant: str | None = option(None, "--participant", PARTICIPANT_HELP, metavar="ADDR", short="-p")
    since: datetime | None = option(None, "--since", "Start of the time range, for the analyses that work "
                                    "over one (ISO 8601; UTC unless a zone is given), e.g. 2026-10-23T11:35Z.",
                                    metavar="TIME")
    until: datetime | None = option(None, "--until", "End of the time range, exclusive (UTC unless a zone "
                                    "is given).", metavar="TIME")
    mine: tuple[str, ...] = option((), "--mine", MINE_HELP, metavar="ADDR", repeat=True, envvar="AUDITOR_MINE")

    EPOCH: ClassVar[Arg | None] = Arg()          # the command's epoch argument (None: it takes none)
    RANGE: ClassVar[bool] = False                # the command takes --since/--until
    WITHOUT: ClassVar[tuple[str, ...]] = ()      # options of this class its command does not offer

    @classmethod
    def flags(cls) -> list[Field]:
        """The fields that are flags of the command, in declaration order."""
        skip = set(cls.WITHOUT) | (set() if cls.RANGE else {"since", "until"})
        return [f for f in fields(cls) if "flag" in f.metadata and f.name not in skip]

    @classmethod
    def call(cls, epoch: int | None, **values: Any) -> "Call":
        """The command's arguments (``values``: by field name) as the one ``Call`` it runs; a
        class whose flags need checking together, or that runs a variant, overrides it."""
        return Call(epoch, cls(**values))

    @classmethod
    def usage(cls, command: str) -> str:
        """The command's usage, as the README's command table shows it."""
        words = [f"auditor {command}"]
        if cls.EPOCH is not None:
            words.append(f"[{cls.EPOCH.metavar}]" if cls.EPOCH.optional else cls.EPOCH.metavar)
        for f in cls.flags():
            flag = f.metadata["flag"]
            value = f" {'|'.join(flag.choices) if flag.choices else flag.metavar}" if flag.metavar or flag.choices else ""
            words.append(f"[{flag.flag}{value}]" + ("..." if flag.repeat else ""))
        return " ".join([*words, "[source flags] [output flags]"])

    @classmethod
    def of(cls, options: "Options | None") -> "Options":
        """``options`` as this class: itself when it is one, else the shared fields
        (participant, since, until, mine) carried over and the rest at their defaults."""
        if isinstance(options, cls):
            return options
        if options is None:
            return cls()
        return cls(**{f.name: getattr(options, f.name) for f in fields(Options)})


def epoch_state(store: Store, epoch: int) -> tuple[bool, bool] | None:
    """``(settled, complete)`` of a stored epoch, or None when the store does not hold it."""
    row = store.one("SELECT settled, complete FROM chain_epochs WHERE epoch = ?", [epoch])
    return None if row is None else (bool(row[0]), bool(row[1]))


def stored_state(store: Store, epoch: int, ctx: Any = None) -> tuple[bool, bool] | None:
    """:func:`epoch_state`, asked once in a run ``ctx`` (``context.Run``), whichever of its
    analyses asks first."""
    return epoch_state(store, epoch) if ctx is None else ctx.shared("epoch_state", lambda: epoch_state(store, epoch))


def require_epoch(store: Store, epoch: int, ctx: Any = None) -> tuple[bool, bool]:
    """:func:`stored_state`, with a clear error when the epoch is not stored."""
    state = stored_state(store, epoch, ctx)
    if state is None:
        raise SourceError(not_stored(epoch))
    return state


def stored_epochs(store: Store, first: int, last: int) -> list[int]:
    """The epochs of ``first``..``last`` the store holds, in order."""
    return [r["epoch"] for r in store.query("stored_epochs", first=first, last=last)]


def not_stored(epoch: int) -> str:
    """The one message for an epoch the store does not hold."""
    return (f"epoch {epoch} is not in the store; collect it first: "
            f"auditor collect --epoch {epoch} --node URL (or --replay DIR)")


@dataclass(frozen=True)
class Call:
    """What one analysis command asks for, once its flags are checked: the epoch (None for a
    time range), the analysis's options, the epochs to collect first (default: the epoch),
    and, for a variant of the analysis (``targets --epochs A..B``), the function to run
    instead of its ``run`` (called ``fn(store, epoch, options)``). ``pick``: for a call whose
    epochs depend on the sources (``history``'s last 7 settled epochs), ``pick(call, sources,
    store)`` is the call with them, made before anything is collected."""

    epoch: int | None
    options: Any        # the analysis's Options
    collect: tuple[int, ...] | None = None
    run: Callable[..., Any] | None = None
    pick: Callable[..., "Call"] | None = None

    def collect_epochs(self) -> list[int]:
        if self.collect is not None:
            return list(self.collect)
        return [] if self.epoch is None else [self.epoch]


# -- what the charts of the analyses share (their ``charts(result)``, registry.py) ----------------
def chart_label(address: str | None) -> str:
    """A participant on a chart's axis: its last 8 characters."""
    return "?" if not address else address[-8:]


def chart_time(v: Any) -> datetime:
    """A time of a result's data on a chart's axis: a datetime, or its ISO text."""
    from ..times import parse_time

    return parse_time(v)
