"""``auditor.toml``: the sources and defaults, so cron lines and shells stay short.

Where: ``--config PATH``; else ``auditor.toml`` in the working directory; else
``$XDG_CONFIG_HOME/auditor/auditor.toml`` (``~/.config/auditor/auditor.toml``).
Flags win over environment variables, which win over the file. ``--no-config`` reads none.
Every run names on stderr the file it applied (:func:`applied_line`).

A file found in the working directory may have been written by someone else (it came with
an evidence bundle): its paths resolve against its own folder and must stay inside it, so
its ``output`` cannot overwrite, nor its ``gateway_log`` read, anything outside
(:func:`confined`). ``--config PATH`` and the user's own file keep full reach.

A top-level key is the long name of an option (``node``, ``gateway_log``, ``rate``,
``db``, ``format``, ...: dashes or underscores) and applies to every command that has
that option; a table named after a command (``[report.daily]``, ``[epoch]``) applies to
that command only and wins over the top level. A repeatable option takes a list (or one
string). An unknown key or a bad value is one clear line and exit 2.

    db = "/var/lib/auditor/auditor.duckdb"
    node = ["http://node1.gonka.ai:8000", "http://node2.gonka.ai:8000"]
    gateway_log = ["/var/log/gateway/app.log*"]

    [report.daily]
    out = "/srv/reports"
    fail_on = "error"
"""

from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import UsageError

FILE_NAME = "auditor.toml"


@dataclass(frozen=True)
class Found:
    """The config file a run applies, and where it was found: ``flag`` (``--config``),
    ``cwd`` (the working directory: confined to its folder) or ``user`` (``~/.config``)."""

    path: Path
    origin: str

    @property
    def folder(self) -> Path | None:
        """The folder its paths must stay inside, or None when they may go anywhere."""
        return self.path.resolve().parent if self.origin == "cwd" else None


def find(explicit: str | None) -> Found | None:
    if explicit:
        p = Path(explicit).expanduser()
        if not p.is_file():
            raise UsageError(f"--config {p}: no such file")
        return Found(p, "flag")
    here = Path.cwd() / FILE_NAME
    if _is_file(here):
        return Found(here, "cwd")
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    user = Path(base) / "auditor" / FILE_NAME
    return Found(user, "user") if _is_file(user) else None


def _is_file(p: Path) -> bool:
    """Whether ``p`` is a file; a folder on the way this user may not search (an unreadable
    ~/.config) is one line on stderr and no file, not an error of every command."""
    try:
        return p.is_file()
    except OSError as exc:
        print(f"auditor: cannot look for {p}: {exc.strerror or exc}; no config read from there "
              "(--no-config skips the look)", file=sys.stderr)
        return False


def applied_line(found: Found) -> str:
    """The stderr line that names the config file a run applied."""
    if found.origin == "cwd":
        return (f"auditor: config {found.path.resolve()} (found in the working directory: its paths stay "
                f"inside {found.folder}; --no-config reads none)")
    return f"auditor: config {found.path}"


def confined(value: str, folder: Path, key: str, path: Path) -> str:
    """A path ``value`` of a working-directory config (``folder``'s): resolved against the
    folder, and refused (a UsageError) unless it, whatever it links to and, for a glob, every
    file it matches stay inside it. ``-`` (stdin, stdout) stays ``-``."""
    if value == "-":
        return value
    full = os.path.join(folder, os.path.expanduser(value))
    inside = [os.path.realpath(full), *(os.path.realpath(m) for m in glob.glob(full))]
    if any(os.path.commonpath([str(folder), p]) != str(folder) for p in inside):
        raise UsageError(f"{path}: {key} = {value!r} is outside {folder}: a config found in the working "
                         "directory reaches only its own folder (give that path on the command line, with "
                         "--config, or in ~/.config/auditor/auditor.toml)")
    return full


def load(path: Path) -> dict[str, Any]:
    import tomllib      # here, not at the top: a run without a file (and --help) never needs it

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:   # tomllib reads UTF-8 only, and raises this for other bytes
        raise UsageError(f"{path}: not valid TOML: not UTF-8 at byte {exc.start}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _key(name: str) -> str:
    return name.replace("-", "_")


def _params(cmd: Any) -> dict[str, Any]:
    """A command's options by the key a file uses: the long flag without its dashes."""
    out = {}
    for p in getattr(cmd, "params", []):
        flags = [o for o in getattr(p, "opts", []) if o.startswith("--")]
        if flags and getattr(p, "param_type_name", "") == "option":
            out[_key(max(flags, key=len)[2:])] = p
    return out


def _all_options(cmd: Any) -> set[str]:
    out = set(_params(cmd))
    for sub in getattr(cmd, "commands", {}).values():
        out |= _all_options(sub)
    return out


def default_map(root: Any, config: dict[str, Any], path: Path, folder: Path | None = None) -> dict[str, Any]:
    """The click ``default_map`` of the command tree ``root`` from a parsed file. A key no
    command has, a table no command is named after, or a bad value is a UsageError. With
    ``folder`` (a working-directory config) every path value is ``confined`` to it."""
    top = {_key(k): v for k, v in config.items() if not isinstance(v, dict)}
    known = _all_options(root)

    def build(cmd: Any, own: dict[str, Any], where: str) -> dict[str, Any]:
        params, subs = _params(cmd), getattr(cmd, "commands", {})
        for k, v in own.items():
            if isinstance(v, dict):
                if k not in subs:
                    raise UsageError(f"{path}: unknown table [{where}{k}] (no command auditor {where.replace('.', ' ')}{k})")
            elif (_key(k) not in params) if where else (_key(k) not in known):
                raise UsageError(f"{path}: unknown key {where}{k!s} (no option --{k.replace('_', '-')}"
                                 + (f" in auditor {where.rstrip('.').replace('.', ' ')})" if where else ")"))
        mine = {_key(k): v for k, v in own.items() if not isinstance(v, dict)}
        out: dict[str, Any] = {}
        for k, p in params.items():
            if k in mine:
                out[p.name] = _value(p, mine[k], path, f"{where}{k}", folder)
            elif k in top:
                out[p.name] = _value(p, top[k], path, k, folder)
        for name, sub in subs.items():
            table = own.get(name)      # `epoch = [3]` is the --epoch option, not the [epoch] table
            out[name] = build(sub, table if isinstance(table, dict) else {}, f"{where}{name}.")
        return out

    return build(root, config, "")


def _value(param: Any, v: Any, path: Path, key: str, folder: Path | None = None) -> Any:
    """``v`` checked against the option's type now, so a bad value names its file and key;
    a path of a working-directory config (``folder``) resolved in it and kept inside it."""
    values = [v] if not getattr(param, "multiple", False) else ([v] if isinstance(v, str) else v)
    if not isinstance(values, list) or any(isinstance(x, (list, dict)) for x in values):
        raise UsageError(f"{path}: {key} = {v!r}: expected " + ("a list of values" if param.multiple else "one value"))
    kinds, what = _toml_kinds(param)
    for x in values:
        if not isinstance(x, kinds) or (isinstance(x, bool) and bool not in kinds):
            raise UsageError(f"{path}: {key} = {x!r}: expected {what}")
        try:
            param.type(x, param, None)
        except Exception as exc:
            raise UsageError(f"{path}: {key} = {x!r}: {getattr(exc, 'message', None) or exc}") from None
    if folder is not None and getattr(param.type, "name", None) in ("path", "file", "directory"):
        values = [confined(x, folder, key, path) for x in values]
        v = values[0]
    return values if param.multiple else v


def _toml_kinds(param: Any) -> tuple[tuple[type, ...], str]:
    """The TOML types a value of ``param`` may have: a flag takes true or false, a number
    option a number, every other option (paths, URLs, choices, times) a string. Click would
    take ``offline = 1`` or ``db = 5`` and fail later, far from the file."""
    from ._click import types
    if getattr(param, "is_flag", False) or isinstance(param.type, types.BoolParamType):
        return (bool,), "true or false"
    if isinstance(param.type, types.IntParamType):
        return (int,), "an integer"
    if isinstance(param.type, types.FloatParamType):
        return (int, float), "a number"
    if getattr(param.type, "name", "") == "time":     # since = 2026-10-23T11:35:00 is a TOML time (cli._time_type)
        return (str, datetime), "a time"
    return (str,), "a string"
