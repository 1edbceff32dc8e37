"""Which pictures the html report draws for each analysis: the charts its registry record
offers (``analyses/registry.py``), drawn by the analysis module's ``charts(result)`` from
its own result, next to the code that makes the data. Presentation only: every number
comes from the result. An analysis without pictures, or one that could not run, gets none."""

from __future__ import annotations

from ..result import Chart, Result


def charts(result: Result) -> list[Chart]:
    from ..analyses.registry import by_key

    if result.unavailable or not isinstance(result.data, (dict, list)):
        return []
    try:
        record = by_key(result.key)
    except KeyError:            # a result of no analysis (a query's)
        return []
    return record.charts_of(result)
