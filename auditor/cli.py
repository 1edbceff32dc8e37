"""The `auditor` command line: thin. One function per command; the work is in the library.

Exit codes: 0 success; 1 findings at or above --fail-on; 2 usage error;
3 a source or data error that left the answer incomplete (it outranks findings).

Options come in reusable groups (``SOURCES``, ``OUTPUT``): a command declares the groups
it takes with ``@uses(...)`` and receives each as one object. An analysis command's own
flags are its Options class's fields (``option`` in analyses/frame.py), made into its group
by ``_call_group``; it receives them as the one ``Call`` it runs. The global options
(``--db``, ``--quiet``, ``--debug``) are accepted before or after the command.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional

import typer

from .errors import (EXIT_SOURCE, EXIT_USAGE, AuditorError, caused_by_memory, damaged_store, is_damaged_store,
                     is_out_of_memory, out_of_memory)
from .times import MAX_SECONDS      # the bound of every duration option

app = typer.Typer(
    name="auditor",
    help="Audit the Gonka network: what really happened in an epoch, from the chain, "
    "the gateway's accounting API and the gateway's logs, stored in one DuckDB file.\n\n"
    "Global options (--db, --quiet, --debug) may come before or after the command.",
    no_args_is_help=True,
    add_completion=True,            # --install-completion / --show-completion [bash|zsh|fish]
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


class State:
    debug = False
    db: Path | None = None
    quiet = False
    help = False        # --help was asked for: read no config file it does not name
    no_config = False   # --no-config: read no config file at all
    config = None       # the config file applied (config.Found), named on stderr


state = State()


def _formats() -> type[Enum]:
    """--format's choices: every record of report/formats.py (a light module: no format is imported)."""
    from .report.formats import FORMATS

    return Enum("Format", {name: name for name in FORMATS}, type=str)


Format = _formats()


class Severity(str, Enum):
    info = "info"
    warn = "warn"
    error = "error"


# -- option groups ------------------------------------------------------------
@dataclass(frozen=True)
class Group:
    """Options that travel together: ``params`` are typer parameters, ``build`` turns their
    values into the one object the command receives as ``name``."""

    name: str
    params: list[inspect.Parameter]
    build: Callable[..., Any]


def _opt(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


def uses(*groups: Group) -> Callable:
    """Give a command the options of ``groups``: each arrives as one keyword argument."""

    def deco(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name not in {g.name for g in groups}]
        params = own + [p for g in groups for p in g.params]

        @functools.wraps(fn)
        def command(**kw: Any) -> Any:
            for g in groups:
                kw[g.name] = g.build(**{p.name: kw.pop(p.name) for p in g.params})
            return fn(**kw)

        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # typer reads the signature above, not fn's
        return command

    return deco


SOURCE_FLAGS = {"node": "--node", "accounting": "--accounting", "gateway_log": "--gateway-log",
                "metrics": "--metrics", "replay": "--replay", "record": "--record"}


def _typed(name: str) -> bool:
    """Whether option ``name`` of the running command was given on the command line (not by
    an environment variable, auditor.toml or its default)."""
    from ._click import globals as click_globals

    ctx = click_globals.get_current_context(silent=True)
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source is None or source.name == "COMMANDLINE"


def _sources(node, accounting, gateway_log, metrics, replay, record, rate, timeout, offline, refresh):
    from .collect import Sources
    from .errors import UsageError

    given = locals()
    typed = [flag for name, flag in SOURCE_FLAGS.items() if given[name] and _typed(name)]
    if offline and typed:       # one from the environment or auditor.toml is left unused: that is --offline
        raise UsageError(f"--offline collects nothing, so {' and '.join(typed)} would be ignored: "
                         "drop one or the other")
    if replay:      # the recording answers for every URL source not typed with it (not the environment's)
        node, accounting, metrics = ([] if not _typed(name) else value for name, value in
                                     (("node", node), ("accounting", accounting), ("metrics", metrics)))
    if gateway_log and not offline:
        from .sources.gatewaylog_files import absent

        if missing := absent(gateway_log):
            raise UsageError(f"--gateway-log {missing[0]}: no such file (nor a glob, nor - for stdin)")
    return Sources(nodes=list(node or []), accounting=list(accounting or []),
                   gateway_logs=[str(p) for p in gateway_log or []], metrics=list(metrics or []),
                   rate=rate, record=record, replay=list(replay or []), timeout=timeout,
                   offline=offline, refresh=refresh)


SOURCES = Group("sources", [
    _opt("node", Annotated[list[str], typer.Option("--node", envvar="AUDITOR_NODE", metavar="URL",
        help="Chain node base URL, e.g. http://node1.gonka.ai:8000. Repeat for failover, in order. "
             "Several in the env var: space-separated.")], []),
    _opt("accounting", Annotated[list[str], typer.Option("--accounting", envvar="AUDITOR_ACCOUNTING", metavar="URL",
        help="Gateway accounting API base URL (serves /api/v1/epochs). Repeatable: each URL is its own gateway, "
             "collected and stored apart (not failover).")], []),
    _opt("gateway_log", Annotated[list[Path], typer.Option("--gateway-log", envvar="AUDITOR_GATEWAY_LOG", metavar="PATH",
        help="Gateway log file, glob, .gz, or - for stdin. Repeatable. Several in the env var: "
             "separated by the OS path separator.")], []),
    _opt("metrics", Annotated[list[str], typer.Option("--metrics", envvar="AUDITOR_METRICS", metavar="URL",
        help="Gateway /metrics URL to scrape once. Repeatable.")], []),
    _opt("replay", Annotated[list[Path], typer.Option("--replay", metavar="DIR",
        help="Serve --record directories on loopback and collect from them instead of the network. Repeatable.")], []),
    _opt("record", Annotated[Optional[Path], typer.Option("--record", metavar="DIR",
        help="Save every raw response under DIR, to replay later or attach to a bug report.")], None),
    _opt("rate", Annotated[float, typer.Option("--rate", envvar="AUDITOR_RATE", min=0,
        help="Requests per minute per node (burst 200; watch: 20); 0 = unlimited, for a private node.")], 20.0),
    _opt("timeout", Annotated[float, typer.Option("--timeout", min=0.1, max=MAX_SECONDS,
        help="Seconds to wait for one HTTP answer.")], 10.0),
    _opt("offline", Annotated[bool, typer.Option("--offline", help="Use only what the store holds; collect nothing.")], False),
    _opt("refresh", Annotated[bool, typer.Option("--refresh", help="Fetch a finished epoch again even if it is cached.")], False),
], _sources)


@dataclass(frozen=True)
class Output:
    fmt: str
    path: Path | None
    fail_on: str | None
    wide: bool


FailOnOpt = Annotated[Optional[Severity], typer.Option("--fail-on", metavar="info|warn|error",
        help="Exit 1 when a finding (with --mine: one of yours) is at or above this severity "
             "(3, incomplete data, still wins).")]
OUTPUT = Group("out", [
    _opt("fmt", Annotated[Format, typer.Option("--format", "-f", help="Output format.")], Format.table),
    _opt("output", Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE",
        help="Write the report to FILE (atomically: a temp file, then a rename) instead of stdout; a device, "
             "a FIFO or - (stdout) is written in place.")], None),
    _opt("fail_on", FailOnOpt, None),
    _opt("wide", Annotated[bool, typer.Option("--wide",
        help="Table format: every column and full addresses, even when that is wider than the terminal.")], False),
], lambda fmt, output, fail_on, wide: Output(fmt.value, output, fail_on.value if fail_on else None, wide))


def _time_type():
    """The click type of a time option: times.parse_time, the one parser of a time a user gives."""
    from ._click import types

    class Time(types.ParamType):
        name = "time"

        def convert(self, value, param, ctx):
            from .times import parse_time

            try:
                return parse_time(value)
            except ValueError as exc:
                self.fail(str(exc), param, ctx)

    return Time()


# -- shared command bodies ----------------------------------------------------
def _db() -> Path:
    """The store's path: a regular file or a new path on this machine (paths.check_store)."""
    from .paths import check_store
    from .store import default_db_path

    db = state.db or default_db_path()
    check_store(db)
    return db


def _progress():
    """The command's one progress (bars on a terminal, log lines off one; nothing under
    --quiet): the store it opens gets it, and its collect and long work report through it."""
    from .progress import Progress

    return Progress(quiet=state.quiet)


def _collect(store, sources, epochs) -> int:
    """Collect and print each source's run report; 3 if anything is missing."""
    from .collect import collect, resolved
    from .report.collect_report import print_collect_reports

    with resolved(sources) as s:
        reports = collect(store, s, epochs, store.progress, refresh=sources.refresh)
    print_collect_reports(reports, quiet=state.quiet)
    return 0 if all(r.complete for r in reports) else EXIT_SOURCE


def command_line() -> str:
    """The command as the user typed it, credentials masked: the md and html reports print it."""
    import shlex

    from .redact import redact_text

    return redact_text(shlex.join(["auditor", *sys.argv[1:]]))


def _analyse(a, call, sources, out: Output) -> None:
    """Collect the call's epochs from the given sources (unless --offline), run the analysis
    of registry record ``a`` (or the call's variant of it) in one run, render it, and exit:
    3 when the collection or the analysis's data was incomplete, else 1 for findings at or
    above --fail-on, else 0. Without an epoch (an analysis over --since/--until) only the
    gateway sources are collected."""
    from . import mine as mine_
    from .errors import SourceError, StoreError
    from .report import render
    from .store import Store

    db = _db()
    if (sources.offline or not sources.any) and str(db) != ":memory:" and not Path(db).exists():
        # nothing to collect and nothing stored: say so, rather than make an empty store to read
        raise StoreError(f"no database at {db}; run `auditor collect` first, or give the source flags "
                         f"(--node, --gateway-log, ...) without --offline")
    with Store(db, progress=_progress()) as store:
        code = 0
        offline = sources.offline or not sources.any
        if call.pick is not None:       # its epochs depend on the sources: picked before collecting
            if offline:                 # then from the store, by address: resolved first
                call = _resolved_participant(store, call)
            call = call.pick(call, sources, store)
        if not offline:
            code = _collect(store, sources, call.collect_epochs())
        if call.pick is None or not offline:     # once: after collecting, what the store then knows
            call = _resolved_participant(store, call)
        mine = mine_.resolve(store, getattr(call.options, "mine", ()), call.epoch, quiet=state.quiet)
        # written in the same block: a long list (--all-races) is read from the store, and
        # from the analysis's kept tables, as it is written
        with a.reading(store):
            if call.run is not None:
                result = call.run(store, call.epoch, call.options)
            else:
                result = a.run(store, call.epoch, call.options)     # it makes its one run
            if result.unavailable and not result.parts:
                raise SourceError(result.unavailable)
            if mine is not None:
                mine_.mark(result, mine, store, call.epoch)
            # one participant's report is its full detail: nothing dropped (issues 12, 33)
            whole = getattr(call.options, "participant", None) is not None
            render.emit(result, out.fmt, out.path, render.View(wide=out.wide, whole=whole, command=command_line()))
    if not result.complete:         # exit 3 says why: the collection's MISSING lines, and these
        from .report.collect_report import print_incomplete

        print_incomplete(result, sources.offline)
    elif out.fail_on and out.fmt == "csv" and not result.parts and result.failing(out.fail_on):
        # a command's CSV is its first table, without its findings: the exit 1 says why here
        from .daily import print_findings

        print_findings(result, out.fail_on)
    raise typer.Exit(code or result.exit_code(out.fail_on))


def _resolved_participant(store, call):
    """``call`` with its --participant as a full address (``participants.address``)."""
    import dataclasses

    text = getattr(call.options, "participant", None)
    if text is None:
        return call
    if not text.strip():
        from .errors import UsageError

        raise UsageError("--participant is empty: give an address, or the label the tables print")
    from .participants import address as resolved

    address = resolved(store, text)
    if address == text and text.startswith("gonka1"):   # a full address as given: a typo is a usage error
        _known_participant(store, text, call.epoch)
    return dataclasses.replace(call, options=dataclasses.replace(call.options, participant=address))


def _known_participant(store, address: str, epoch: int | None) -> None:
    """A full address given to --participant that no stored source knows for ``epoch`` (its
    chain data, a gateway's accounting of it, or the logs, which carry no epoch) is a usage
    error naming the closest address stored: a typo would otherwise report "Findings: none".
    An epoch the store holds nothing of is left to the analysis to say."""
    from .errors import UsageError
    from .participants import closest

    found = store.query("participant_in_epoch", epoch=epoch, participant=address)[0]
    if found["of_epoch"] or not found["epoch_stored"]:
        return
    stored = store.query("participants_stored")
    if any(r["participant"] == address and r["from_logs"] for r in stored):
        return
    near = closest(address, stored)
    where = f"epoch {epoch}" if epoch is not None else "any stored epoch"
    raise UsageError(f"--participant {address} is no participant of {where}"
                     + (f"; the closest stored address is {near}" if near else "; no stored address is near it"))


# -- commands -----------------------------------------------------------------
def _load_config(ctx: typer.Context, value: Optional[Path]) -> Optional[Path]:
    """--config (eager: read before every other option): the file's defaults (``--config PATH``,
    or the one found) become click's default_map of this command and every command below it.
    --help reads no file unless one is named, and shows the built-in defaults; --no-config
    reads none. A file found in the working directory reaches only its own folder."""
    from . import config
    from .errors import UsageError

    if state.no_config:
        if value is not None:
            raise UsageError("--config and --no-config: give one or the other")
        return value
    if value is None and state.help:
        return value
    found = config.find(None if value is None else str(value))
    if found is not None:
        ctx.default_map = config.default_map(ctx.command, config.load(found.path), found.path, found.folder)
        state.config = found
    return value


def _version(value: bool) -> None:
    if value:
        from . import __version__

        print(f"auditor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    db: Annotated[Optional[Path], typer.Option("--db", metavar="PATH", envvar="AUDITOR_DB",
        help="DuckDB file. [default: ~/.local/share/auditor/auditor.duckdb]")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success (for cron): no progress, log or \"loaded\" lines; "
             "errors, MISSING sources and exit 1's findings still go to stderr.")] = False,
    config: Annotated[Optional[Path], typer.Option("--config", metavar="PATH", is_eager=True,
        callback=_load_config, help="auditor.toml with sources and defaults. [default: ./auditor.toml (its paths stay in its "
             "folder), else ~/.config/auditor/auditor.toml] Flags win over env vars, which win over the file.")] = None,
    no_config: Annotated[bool, typer.Option("--no-config",
        help="Read no auditor.toml, neither ./auditor.toml nor ~/.config/auditor/auditor.toml.")] = False,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version,
        help="Print the version and exit.")] = False,
) -> None:
    state.db, state.debug, state.quiet = db, debug, quiet
    if state.config is not None and (not quiet or state.config.origin == "cwd"):
        # the file a run obeys is named (--quiet: only one found in the working directory,
        # which the user may not have written)
        from .config import applied_line

        print(applied_line(state.config), file=sys.stderr)


@app.command()
@uses(SOURCES)
def collect(
    sources,
    epoch: Annotated[list[int], typer.Option("--epoch", "-e", metavar="N", min=0,
        help="Epoch to collect: from the chain with --node, and (by escrow creation epoch) from --accounting; "
             "without it --accounting collects every epoch it lists. Repeatable.")] = [],
) -> None:
    """Collect chain epochs, accounting, gateway logs and metrics into the store.

    \b
    Example:
      auditor collect --epoch 433 --node http://node1.gonka.ai:8000 --record evidence/433
      auditor collect --gateway-log '/var/log/gateway/app.log*' --accounting http://gw:9000
    """
    from .errors import UsageError
    from .store import Store

    if sources.offline:
        raise UsageError("--offline: collect has nothing to do without its sources")
    with Store(_db(), progress=_progress()) as store:
        code = _collect(store, sources, epoch)
    raise typer.Exit(code)


@app.command()
def prune(
    keep_epochs: Annotated[int, typer.Option("--keep-epochs", metavar="N", min=1,
        help="Keep the gateway log of the newest N epochs the store holds from the chain (1 or more).")],
) -> None:
    """Drop the gateway log lines of old epochs from the store; keep every epoch's chain and accounting.

    The epochs kept are the newest N the store holds from the chain. The log lines timed before
    the start of the oldest of them (its effective start, the block time the chain gives) are
    dropped from log_events and the line tables; a line without a time is kept (unknown is not
    old). The chain, the accounting, escrow probes, watch readings, coverage and each log file's
    read position stay, so collecting the same file again adds none of the dropped lines. The
    kept tables of the analyses are worked out again by the next analysis. A store holding N
    epochs or fewer is left as it is. One transaction: a prune stopped midway changes nothing.
    Prints what it kept and dropped (on stderr; nothing with --quiet).

    The file shrinks only by the free space at its end (DuckDB gives back no other): the next
    collects reuse the rest. Today the prune writes the log rows it keeps again, so the file may
    first grow by about their size (README: Retention, with measured sizes). report daily
    prunes after each collect with retain_epochs (auditor.toml) or --retain-epochs.

    Exit 3, nothing dropped: no chain epoch stored (it cannot tell epochs apart), or the start
    of the oldest kept epoch is not stored; no store at --db; the store locked by another process.

    \b
    Example:
      auditor prune --keep-epochs 7
    """
    from . import prune as prune_
    from .errors import StoreError
    from .store import Store

    db = _db()
    if not Path(db).exists():       # nothing to prune: not a new, empty store made to say so
        raise StoreError(f"no database at {db}; nothing to prune")
    with Store(db, progress=_progress()) as store:
        pruned = prune_.run(store, keep_epochs)
    if not state.quiet:
        for line in pruned.lines():
            print(f"prune: {line}", file=sys.stderr)


# -- the analysis commands: one per registry record with a command (analyses/registry.py) ------
def _call_group(cls) -> Group:
    """The flags of an analysis's command, made from its Options class (analyses/frame.py
    ``option``): its epoch argument, then each option's field as a flag; they build the one
    Call it runs (``cls.call``)."""
    import typing

    params = []
    if cls.EPOCH is not None:
        arg = cls.EPOCH
        bound = {"min": 0} if arg.kind is int else {}
        params.append(_opt(arg.name, Annotated[Optional[arg.kind] if arg.optional else arg.kind, typer.Argument(
            metavar=f"[{arg.metavar}]" if arg.optional else arg.metavar, help=arg.help, **bound)],
            None if arg.optional else inspect.Parameter.empty))
    hints = typing.get_type_hints(cls)
    params += [_flag(f, hints[f.name]) for f in cls.flags()]

    def build(epoch=None, **values):
        from .errors import UsageError

        values = {k: tuple(v) if isinstance(v, list) else v.value if isinstance(v, Enum) else v
                  for k, v in values.items()}
        try:
            return cls.call(epoch, **values)
        except UsageError as exc:       # a time range's: it names what the stored logs cover, to pick one in
            covers = _stored_log_covers() if cls.RANGE else None
            if covers is None:
                raise
            raise UsageError(f"{exc} ({covers})") from None

    return Group("call", params, build)


def _stored_log_covers() -> str | None:
    """What the store's gateway logs cover (``gatewaylog.log_covers``), when there is a store."""
    from .sources.gatewaylog import log_covers
    from .store import Store

    db = _db()
    if str(db) == ":memory:" or not Path(db).exists():
        return None
    try:
        with Store(db, read_only=True) as store:
            return log_covers(store)
    except Exception:  # noqa: BLE001 - a locked or older store: the usage error without it
        return None


def _flag(field, hint) -> inspect.Parameter:
    """One option's typer parameter, from its field's type and ``Flag``."""
    import types as types_
    import typing

    flag = field.metadata["flag"]
    optional = typing.get_origin(hint) in (typing.Union, types_.UnionType)
    kind = next(t for t in typing.get_args(hint) if t is not type(None)) if optional else hint
    default = field.default
    form: dict[str, Any] = {"help": flag.help, "metavar": flag.metavar}
    if flag.repeat:
        kind, default = list[typing.get_args(kind)[0]], list(default)
    elif kind is datetime:
        form["click_type"] = _time_type()
    if flag.choices:
        kind = Enum(field.name, {c: c for c in flag.choices}, type=str)        # typer's choices; build takes .value
        form["metavar"] = flag.metavar or "|".join(flag.choices)
        default = kind(default)
    else:
        form.update({k: getattr(flag, k) for k in ("min", "max") if getattr(flag, k) is not None})
    if kind is not bool and not flag.repeat and default is None:
        kind = Optional[kind]
    if flag.envvar:
        form["envvar"] = flag.envvar
    decls = [flag.flag, *([flag.short] if flag.short else [])]
    return _opt(field.name, Annotated[kind, typer.Option(*decls, **form)], default)


def _watch_command(a) -> Callable:
    """``auditor watch``: live readings of the running epoch, not a one-shot analysis (auditor/watch.py)."""

    @uses(_call_group(a.options_class()), SOURCES, OUTPUT)
    def command(call, sources, out) -> None:
        from . import watch
        from .errors import UsageError

        if call.backtest is not None:
            raise typer.Exit(watch.backtest(_db(), call, sources, out, _collect, command_line(), progress=_progress()))
        if (_typed("gateway_log") and sources.gateway_logs) or (_typed("metrics") and sources.metrics):
            # typed ones only: auditor.toml and AUDITOR_GATEWAY_LOG serve the other commands too
            raise UsageError("watch reads the chain (--node), the accounting API (--accounting) and hosts "
                             "(--host); --gateway-log and --metrics are not among its sources")
        raise typer.Exit(watch.live(_db(), call, sources, out, command_line()))

    return command


def _analysis_command(a) -> Callable:
    """The command of registry record ``a``: its flags, the source and output flags."""
    if a.key == "watch":
        return _watch_command(a)

    @uses(_call_group(a.options_class()), SOURCES, OUTPUT)
    def command(call, sources, out) -> None:
        _analyse(a, call, sources, out)

    return command


class _Lazy:
    """An analysis's command, built when first used: ``auditor --help`` lists its name and
    the first line of its help (the registry's) without importing the analysis, whose
    Options class its flags are made from; anything else asked of it builds it."""

    hidden = deprecated = False

    def __init__(self, a) -> None:
        self.name, self._a, self._built = a.command.name, a, None

    def get_short_help_str(self, limit: int = 45) -> str:
        return typer.core.TyperCommand(self.name, help=inspect.cleandoc(self._a.command.help)).get_short_help_str(limit)

    def built(self):
        if self._built is None:
            from typer.models import CommandInfo

            info = CommandInfo(name=self.name, callback=_analysis_command(self._a), help=self._a.command.help)
            self._built = typer.main.get_command_from_info(info, pretty_exceptions_short=app.pretty_exceptions_short,
                                                            rich_markup_mode=app.rich_markup_mode)
            _strict_types(self._built)
        return self._built

    def __getattr__(self, name: str) -> Any:
        return getattr(self.built(), name)


class _Root(typer.core.TyperGroup):
    """The ``auditor`` group: the analyses' commands (registry.commands()) after ``collect``,
    each a ``_Lazy`` until it is used."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        from .analyses import registry

        own, self.commands = self.commands, {}
        for name, cmd in own.items():
            self.commands[name] = cmd
            if name == "collect":
                self.commands.update((a.command.name, _Lazy(a)) for a in registry.commands())


app.info.cls = _Root


report_app = typer.Typer(help="Reports for people and for cron.", no_args_is_help=True)
app.add_typer(report_app, name="report")


def _mine_group() -> Group:
    """--mine as a command outside the registry takes it: the one field of ``frame.Options``."""
    import typing
    from dataclasses import fields

    from .analyses.frame import Options

    field = next(f for f in fields(Options) if f.name == "mine")
    return Group("mine", [_flag(field, typing.get_type_hints(Options)["mine"])], lambda mine: tuple(mine or ()))


@report_app.command("daily")
@uses(SOURCES, _mine_group())
def report_daily(
    sources,
    mine,
    out_dir: Annotated[Path, typer.Option("--out", metavar="DIR", help="Write DIR/<date>/report.{json,md,html}.")],
    day: Annotated[Optional[str], typer.Option("--date", metavar="YYYY-MM-DD",
        help="Report the epoch in force at noon UTC of this date. [default: the latest settled epoch]")] = None,
    epoch: Annotated[Optional[int], typer.Option("--epoch", "-e", metavar="N", min=0,
        help="Report this epoch instead.")] = None,
    fail_on: FailOnOpt = None,
    prom_textfile: Annotated[Optional[Path], typer.Option("--prom-textfile", metavar="PATH",
        help="Also write the findings and key figures as Prometheus metrics (node_exporter textfile).")] = None,
    retain_epochs: Annotated[Optional[int], typer.Option("--retain-epochs", metavar="N", min=1,
        envvar="AUDITOR_RETAIN_EPOCHS",
        help="After collecting, keep the gateway log of the newest N stored epochs (and of the epoch "
             "reported) and drop the older lines, as `auditor prune --keep-epochs N`. "
             "[default: keep all; retain_epochs in auditor.toml]")] = None,
) -> None:
    """Write the day's report for cron: json, md and html in DIR/<date>/, never prompting,
    plain log lines when stderr is not a terminal, one run at a time (a lock in DIR).

    \b
    Example:
      auditor report daily --out /srv/reports --node http://node1.gonka.ai:8000 --fail-on error \\
          --prom-textfile /var/lib/node_exporter/auditor.prom
      auditor report daily --out reports --offline --date 2026-09-23 --mine gonka1... --fail-on error
    """
    from . import daily

    raise typer.Exit(daily.run(_db(), sources, out_dir, day=day, epoch=epoch,
                               fail_on=fail_on.value if fail_on else None, prom_textfile=prom_textfile,
                               progress=_progress(), collect=_collect, command=command_line(),
                               mine=mine, retain_epochs=retain_epochs))


export_app = typer.Typer(help="Write what the store knows for another store to read.", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("demand")
def export_demand(
    epochs: Annotated[str, typer.Option("--epochs", metavar="A..B", help="The epochs whose cPoC windows to write (A..B, or one epoch N).")],
    out: Annotated[Path, typer.Option("--out", metavar="FILE.parquet", help="The bundle to write (atomically).")],
    name: Annotated[Optional[str], typer.Option("--name", metavar="NAME",
        help="The gateway's name, instead of the address that created its escrows.")] = None,
    per_10000: Annotated[Optional[float], typer.Option("--per-10000", min=0.0001, metavar="X",
        help="The gateway's poc_max_concurrent_requests_per_10000_weight, when the store does not know it.")] = None,
) -> None:
    """Write one gateway's PoC-time demand for `auditor targets --bundle` in another store: one small
    Parquet file, written atomically, holding what `targets` needs and nothing more.

    \b
    In it (one table; column `kind`):
      window  each cPoC window of the epochs: epoch, window, heights and times from the chain, and
              covered_from/covered_to: the part the gateway's logs covered (empty: not covered)
      model   per covered window and model: attempts overlapping it and their summed seconds
              (the latency a network estimate from accounting counts needs)
      step    per covered window and model: the in-flight level at the window's start, then its
              net change at each instant attempts started or ended (per-second in flight, max and
              pNN come from these; several gateways' steps add up)
    And in its metadata: the gateway's identity (the address that created its escrows, public on
    chain, or --name), its per_10000 when given (--per-10000), the logs' first and last line and
    file count, the epochs, the tool version, when it was made and a SHA-256 of the content.
    No request id, API key, client address, host label or log line.

    \b
    Example:
      auditor export demand --epochs 420..433 --out gw-demand-420-433.parquet
      auditor export demand --epochs 433..433 --out gw.parquet --name my-gateway --per-10000 10
    """
    from . import demand_bundle
    from .analyses.targets import parse_epoch_range
    from .store import Store

    first, last = parse_epoch_range(epochs)
    with Store(_db(), read_only=True) as store:       # none there: one line, "no database at ..."
        store.refuse_unconverted()
        store.read_kept()
        meta = demand_bundle.export(store, first, last, out, name=name, per_10000=per_10000)
    if not state.quiet:
        print(f"auditor: wrote {out}: gateway {meta['gateway']}, {meta['windows_covered']} of {meta['windows']} "
              f"cPoC window(s) covered by its logs, {meta['rows']} rows, sha256 {meta['content_sha256']}",
              file=sys.stderr)


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL to run against the store, e.g. \"SELECT * FROM coverage\".")],
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE",
        help="Write the result to FILE (atomically; a device, a FIFO or - in place) instead of stdout.")] = None,
    allow_files: Annotated[bool, typer.Option("--allow-files",
        help="Let the query read and write files as DuckDB does (COPY ... TO, read_csv, read_text, "
             "ATTACH); the store itself stays read-only.")] = False,
) -> None:
    """Run a query against the store and print the result.

    Read-only: the store is opened read-only, the query reads and writes no other file
    (unless --allow-files) and cannot change DuckDB's settings. Rows are written as they are
    fetched (table, md and html show the first 10,000). An older auditor's store is brought
    up to date first. The views over the gateway logs that analyses keep as tables
    (hedge_races, log_requests, ...) are read from those tables while they are up to date
    with the stored log.

    \b
    Example:
      auditor sql "SELECT participant, missed_requests FROM chain_performance WHERE epoch = 433"
      auditor sql "SELECT * FROM log_attempts LIMIT 20" --format csv
    """
    from .report import render
    from .store import Store

    with Store.for_query(_db(), files=allow_files, progress=_progress()) as store:
        # written while the store is open: the rows are fetched as they are written
        render.emit(render.query_result(store, query, fmt.value), fmt.value, output)


@app.command()
def serve(
    directories: Annotated[list[Path], typer.Argument(metavar="DIR...", help="--record directories.")],
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0 = any free port).")] = 8000,
) -> None:
    """Serve a recorded run on loopback, as a stand-in node for --node.

    \b
    Example:
      auditor serve evidence/433/chain --port 8000
      auditor epoch 433 --node http://127.0.0.1:8000 --rate 0
    """
    import time

    from .sources.replay import ReplayServer

    with ReplayServer(directories, port) as server:
        print(f"serving {len(server.table)} recorded requests at {server.url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


# -- entry point ----------------------------------------------------------------
GLOBAL_FLAGS = ("--debug", "--quiet", "-q", "--no-config")
GLOBAL_VALUED = ("--db", "--config")


def hoist_globals(argv: list[str]) -> list[str]:
    """Move the global options found after the command to the front, so that a flag
    appended to a copied command works: ``auditor epoch 433 --db x.duckdb``."""
    front, rest = [], []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest.extend(argv[i:])
            break
        if a in GLOBAL_FLAGS or a.startswith(tuple(v + "=" for v in GLOBAL_VALUED)):
            front.append(a)
        elif a in GLOBAL_VALUED and i + 1 < len(argv):
            front.extend(argv[i:i + 2])
            i += 1
        else:
            rest.append(a)
        i += 1
    return front + rest


def _print_traceback() -> None:
    """--debug: the traceback, with credentials masked like every other line."""
    from .redact import redact_text

    sys.stderr.write(redact_text(traceback.format_exc()))


def _strict_types(command) -> None:
    """Every float option of ``command``'s tree (its own type, also used to check the config
    file's value, auditor/config.py) refuses nan and inf as a usage error: no option means
    them, and they fail far from the flag (``--timeout nan``) or pass silently (``--rate nan``).
    Every path option expands ``~`` (once, here, where every path is read: flag, environment
    variable or auditor.toml alike) and drops the empty entries of a list in its environment
    variable (``AUDITOR_GATEWAY_LOG=":app.log"`` is app.log, not ``.`` and app.log)."""
    from ._click import types

    for p in getattr(command, "params", []):
        if isinstance(p.type, types.FloatParamType) and not isinstance(p.type, _Finite):
            _mix(p, _Finite)
        elif getattr(p.type, "name", None) in ("path", "file", "directory") and not isinstance(p.type, _UserPath):
            _mix(p, _UserPath)
    for sub in getattr(command, "commands", {}).values():
        if not isinstance(sub, _Lazy):         # a command not built yet gets it when it is (_Lazy.built)
            _strict_types(sub)


def _mix(param, mixin: type) -> None:
    """Give ``param`` its own copy of its type, with ``mixin`` in front."""
    param.type = copy.copy(param.type)
    param.type.__class__ = type(f"{mixin.__name__[1:]}{type(param.type).__name__}", (mixin, type(param.type)), {})


class _Finite:
    """Mixed into a float option's click type by _strict_types."""

    def convert(self, value, param, ctx):
        from ._click import types

        number = types.FloatParamType.convert(self, value, param, ctx)     # the number, before any range
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


class _UserPath:
    """Mixed into a path option's click type by _strict_types."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.startswith("~"):
            import os

            value = os.path.expanduser(value)
        return super().convert(value, param, ctx)

    def split_envvar_value(self, rv):
        return [part for part in super().split_envvar_value(rv) if part]


def _fail(message: str, code: int) -> None:
    """One line on stderr, credentials masked, control characters shown escaped (a message may
    quote outside text: a table name, a path, a server's words), and exit ``code``."""
    from .redact import redact_text
    from .report.text import plain

    print(f"auditor: {plain(redact_text(message))}", file=sys.stderr)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one clear line per error and the documented exit code.

    Usage errors are one plain line (exit 2); AuditorError subclasses carry their own
    code; Ctrl-C is exit 130; anything else is an auditor bug, still one line unless --debug.
    """
    args = hoist_globals(sys.argv[1:] if argv is None else list(argv))
    options = args[:args.index("--")] if "--" in args else args
    state.debug, state.help = "--debug" in options, any(a in ("-h", "--help") for a in options)
    state.no_config, state.config = "--no-config" in options, None
    from ._click import exceptions as click_exc
    from .interrupt import install

    install()           # Ctrl-C stops a DuckDB query at once, not at its end
    try:
        command = typer.main.get_command(app)
        _strict_types(command)
        code = command.main(args=args, prog_name="auditor", standalone_mode=False)
    except getattr(click_exc, "NoArgsIsHelpError", ()) as exc:
        # a bare `auditor` (or `auditor report`): its help, as lines, and the usage error's exit
        print(exc.format_message(), file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except click_exc.UsageError as exc:
        where = f" ({exc.ctx.command_path} --help)" if exc.ctx and exc.ctx.parent else " (auditor --help)"
        _fail(f"error: {exc.format_message()}{where}", EXIT_USAGE)      # the value may be a URL with a password
    except click_exc.ClickException as exc:
        _fail(f"error: {exc.format_message()}", exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _stopped()
    except AuditorError as exc:
        if state.debug:
            _print_traceback()
        _fail(f"error: {exc}{caused_by_memory(exc)}", exc.exit_code)
    except Exception as exc:
        if type(exc).__name__ == "InterruptException" or "Query interrupted" in str(exc):
            _stopped()          # DuckDB's, when Ctrl-C lands inside a query
        if state.debug:
            _print_traceback()
        if is_out_of_memory(exc):
            _fail(out_of_memory(exc), EXIT_SOURCE)
        if is_damaged_store(exc):
            _fail(f"error: {damaged_store(exc, state.db)}", EXIT_SOURCE)
        _fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", EXIT_SOURCE)
    if code == 130:  # typer turns a KeyboardInterrupt inside the command into exit 130
        _stopped()
    sys.exit(code or 0)


def _stopped() -> NoReturn:
    """A run a signal stopped: one line, and its exit code (Ctrl-C 130, SIGTERM 143)."""
    from .interrupt import stopped

    line, code = stopped()
    print(line, file=sys.stderr)
    sys.exit(code)


def entry() -> None:
    """The ``auditor`` command and ``python -m auditor``: ``main``, then the process ends at
    once with its exit code, its output flushed. Python's own shutdown (tearing down every
    module, typer's, rich's and duckdb's objects) took 70-80 ms of the demo's
    ``epoch 403 --offline``; nothing is left for it to do by then: the store is closed,
    files written are closed, and the only threads are daemons. Tests call ``main``."""
    import os

    from .streams import guard

    guard()             # a reader gone (| head) stops nothing, and leaves the run's exit code
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):        # a stream closed, or failing
            pass
    os._exit(code)

