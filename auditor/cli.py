"""The `auditor` command line: thin. One function per command; the work is in the library.

Exit codes: 0 success; 1 findings at or above --fail-on; 2 usage error;
3 a source or data error that left the answer incomplete.
"""

from __future__ import annotations

import sys
import traceback
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .errors import EXIT_SOURCE, AuditorError

app = typer.Typer(
    name="auditor",
    help="Audit the Gonka network: what really happened in an epoch, from the chain, "
    "the gateway's accounting API and the gateway's logs, stored in one DuckDB file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class State:
    debug = False
    db: Path | None = None
    quiet = False


state = State()


class TableFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    md = "md"


class ReportFormat(str, Enum):
    table = "table"
    json = "json"
    md = "md"


# -- shared options -----------------------------------------------------------
NodeOpt = Annotated[list[str], typer.Option("--node", envvar="AUDITOR_NODE", metavar="URL",
    help="Chain node base URL, e.g. http://node1.gonka.ai:8000. Repeat for failover, in order. Several in the env var: space-separated.")]
AccountingOpt = Annotated[list[str], typer.Option("--accounting", envvar="AUDITOR_ACCOUNTING", metavar="URL",
    help="Gateway accounting API base URL (serves /api/v1/epochs). Repeatable.")]
LogOpt = Annotated[list[Path], typer.Option("--gateway-log", envvar="AUDITOR_GATEWAY_LOG", metavar="PATH",
    help="Gateway log file, glob, .gz, or - for stdin. Repeatable. Several in the env var: separated by the OS path separator.")]
MetricsOpt = Annotated[list[str], typer.Option("--metrics", envvar="AUDITOR_METRICS", metavar="URL",
    help="Gateway /metrics URL to scrape once. Repeatable.")]
RateOpt = Annotated[float, typer.Option("--rate", envvar="AUDITOR_RATE", min=0,
    help="Requests per minute per node (burst 200); 0 = unlimited, for a private node.")]
RecordOpt = Annotated[Optional[Path], typer.Option("--record", metavar="DIR",
    help="Save every raw response under DIR, to replay later or attach to a bug report.")]
ReplayOpt = Annotated[list[Path], typer.Option("--replay", metavar="DIR",
    help="Serve --record directories on loopback and collect from them instead of the network. Repeatable.")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds to wait for one HTTP answer.")]


def _db() -> Path:
    from .store import default_db_path

    return state.db or default_db_path()


def _progress():
    from .progress import Progress

    return Progress(quiet=state.quiet)


def _sources(node, accounting, gateway_log, metrics, rate, record, replay, timeout):
    from .collect import Sources

    return Sources(nodes=list(node or []), accounting=list(accounting or []),
                   gateway_logs=[str(p) for p in gateway_log or []], metrics=list(metrics or []),
                   rate=rate, record=record, replay=list(replay or []), timeout=timeout)


def _collect(store, sources, epochs, refresh=False) -> int:
    """Collect and print each source's run report; 3 if anything is missing."""
    from .collect import collect, resolved
    from .report.collect_report import print_collect_reports

    with resolved(sources) as s:
        reports = collect(store, s, epochs, _progress(), refresh=refresh)
    print_collect_reports(reports)
    return 0 if all(r.complete for r in reports) else EXIT_SOURCE


def _report(sources, epoch: int, offline: bool, analyse, fmt: str) -> None:
    """Collect the epoch from the given sources (unless --offline), analyse, render, exit.
    The exit code is the worse of the collection's (3 if incomplete) and the analysis's."""
    from .report import render
    from .store import Store

    with Store(_db()) as store:
        code = 0
        if not offline and sources.any:
            code = _collect(store, sources, [epoch])
        result = analyse(store)
    render.emit(result, fmt)
    raise typer.Exit(code or result.exit_code)


@app.callback()
def _main(
    db: Annotated[Optional[Path], typer.Option("--db", metavar="PATH", envvar="AUDITOR_DB",
        help="DuckDB file. [default: ~/.local/share/auditor/auditor.duckdb]")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or log lines on stderr.")] = False,
) -> None:
    state.db, state.debug, state.quiet = db, debug, quiet


@app.command()
def collect(
    epoch: Annotated[list[int], typer.Option("--epoch", "-e", metavar="N", min=0,
        help="Epoch to collect: from the chain with --node, and (by escrow creation epoch) from --accounting; without it --accounting collects every epoch it lists. Repeatable.")] = [],
    node: NodeOpt = [],
    accounting: AccountingOpt = [],
    gateway_log: LogOpt = [],
    metrics: MetricsOpt = [],
    rate: RateOpt = 20.0,
    record: RecordOpt = None,
    replay: ReplayOpt = [],
    timeout: TimeoutOpt = 10.0,
    refresh: Annotated[bool, typer.Option("--refresh", help="Fetch a finished epoch again even if it is cached.")] = False,
) -> None:
    """Collect chain epochs, accounting, gateway logs and metrics into the store."""
    from .store import Store

    sources = _sources(node, accounting, gateway_log, metrics, rate, record, replay, timeout)
    with Store(_db()) as store:
        code = _collect(store, sources, epoch, refresh)
    raise typer.Exit(code)


@app.command()
def misstest(
    epoch: Annotated[int, typer.Argument(metavar="N", min=0, help="Epoch index.")],
    node: NodeOpt = [],
    fmt: Annotated[TableFormat, typer.Option("--format", "-f", help="Output format.")] = TableFormat.table,
    offline: Annotated[bool, typer.Option("--offline", help="Use only what the store holds.")] = False,
    participant: Annotated[Optional[str], typer.Option("--participant", "-p", metavar="ADDR",
        help="Only this participant (the network p0 still comes from all).")] = None,
    rate: RateOpt = 20.0,
    replay: ReplayOpt = [],
    timeout: TimeoutOpt = 10.0,
) -> None:
    """Reproduce the chain's binomial miss test for every participant of epoch N."""
    from .analyses import misstest as mt

    sources = _sources(node, [], [], [], rate, None, replay, timeout)
    _report(sources, epoch, offline, lambda store: mt.run(store, epoch, participant=participant), fmt.value)


@app.command()
def epoch(
    n: Annotated[int, typer.Argument(metavar="N", min=0, help="Epoch index.")],
    node: NodeOpt = [],
    accounting: AccountingOpt = [],
    gateway_log: LogOpt = [],
    metrics: MetricsOpt = [],
    fmt: Annotated[ReportFormat, typer.Option("--format", "-f", help="Output format.")] = ReportFormat.table,
    offline: Annotated[bool, typer.Option("--offline", help="Report from the store only; collect nothing.")] = False,
    participant: Annotated[Optional[str], typer.Option("--participant", "-p", metavar="ADDR",
        help="Only this participant in per-participant sections.")] = None,
    rate: RateOpt = 20.0,
    record: RecordOpt = None,
    replay: ReplayOpt = [],
    timeout: TimeoutOpt = 10.0,
) -> None:
    """Collect what is missing for epoch N, then print its report."""
    from .analyses import epoch_report

    sources = _sources(node, accounting, gateway_log, metrics, rate, record, replay, timeout)
    _report(sources, n, offline, lambda store: epoch_report.run(store, n, participant=participant), fmt.value)


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL to run against the store, e.g. \"SELECT * FROM coverage\".")],
    fmt: Annotated[TableFormat, typer.Option("--format", "-f", help="Output format.")] = TableFormat.table,
) -> None:
    """Run a query against the store and print the result."""
    from .report import render
    from .store import Store

    with Store(_db(), read_only=True) as store:
        result = render.query_result(store, query)
    render.emit(result, fmt.value)


@app.command()
def serve(
    directories: Annotated[list[Path], typer.Argument(metavar="DIR...", help="--record directories.")],
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0 = any free port).")] = 8000,
) -> None:
    """Serve a recorded run on loopback, as a stand-in node for --node."""
    import time

    from .sources.replay import ReplayServer

    with ReplayServer(directories, port) as server:
        print(f"serving {len(server.table)} recorded requests at {server.url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one clear line per error and the documented exit code.

    Usage errors are typer's (exit 2); AuditorError subclasses carry their own code;
    anything else is an auditor bug, still one line unless --debug.
    """
    try:
        app(args=sys.argv[1:] if argv is None else argv, prog_name="auditor")
    except AuditorError as exc:
        if state.debug:
            traceback.print_exc()
        print(f"auditor: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("auditor: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:
        if state.debug:
            traceback.print_exc()
        print(f"auditor: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
              file=sys.stderr)
        sys.exit(EXIT_SOURCE)
