"""The output formats, one record each: ``--format NAME``, the extension of a file of it,
what it renders, and the function below ``report/`` that writes it. Adding a format is one
record here and its module; every command's ``--format`` offers it, and ``report daily``
writes the ones it names by their extension.

The formats call the helpers they share in ``view.py`` (cells, the layout, the findings
table, the legend, JSON and CSV); ``render.py`` dispatches to them: imports run one way,
render -> formats -> view. This module imports none of them: the CLI reads it at start-up."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import IO, Any


@dataclass(frozen=True)
class Format:
    """One output format. ``writer`` is ``module:function`` (imported when used), called
    ``function(result, out, view)`` to write the whole report to the text stream ``out``."""

    name: str
    extension: str
    renders: str
    writer: str

    def write(self, result: Any, out: IO[str], view: Any) -> None:
        module, function = self.writer.split(":")
        getattr(importlib.import_module(module), function)(result, out, view)


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("table", "txt", "the terminal view: the title, header lines, findings and every table, each made to fit "
           "the terminal's width (--wide: every column)", "auditor.report.table:write"),
    Format("json", "json", "the result's data whole, its findings and its coverage, with schema_version; "
           "written as it is made", "auditor.report.view:write_json"),
    Format("csv", "csv", "one table: a command's first table, without its findings; a composed report "
           "(auditor epoch N) its findings alone", "auditor.report.view:write_csv"),
    Format("md", "md", "the whole report as Markdown: every table, the findings with their next step, the "
           "command that made it", "auditor.report.markdown:write"),
    Format("html", "html", "the whole report as one HTML page: every table (sortable), the charts inline, the "
           "command that made it", "auditor.report.html:write"),
)}
