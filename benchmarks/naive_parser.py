#!/usr/bin/env python
"""The baseline: the gateway-log parser an operator writes today, one line at a time.

    python benchmarks/naive_parser.py LOG [--out FILE]

For every line: strip the optional Docker and Go timestamp prefixes with a regex, split
the rest into ``key=value`` pairs with a regex (Go-quoted values unquoted with
``ast.literal_eval``-like handling), take the stage or raw-event name, the request,
escrow, nonce and host, and write one JSON object per line (the same fields the
auditor stores) to FILE (default: /dev/null). Lines that do not parse are counted.
Prints ``lines parsed rejected`` on stdout.

It is deliberately straightforward and correct for the common lines; it is the "before"
figure of benchmarks/README.md, not part of auditor.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

PREFIX = re.compile(r"^(?:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) )?"
                    r"(?:(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?) )?(.*)$")
PAIR = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)')
EVENT = re.compile(r"^([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?: |$)")


def unquote(v: str) -> str:
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        inner = v[1:-1]
        if "\\" in inner:
            try:
                return json.loads(v)
            except ValueError:
                return inner.encode("latin-1", "backslashreplace").decode("unicode_escape")
        return inner
    return v


def parse(line: str) -> dict | None:
    m = PREFIX.match(line)
    docker_ts, go_ts, body = m.group(1), m.group(2), m.group(3)
    if body.startswith("{"):
        try:
            rec = json.loads(body)
        except ValueError:
            return None
        if not isinstance(rec, dict) or not (rec.get("stage") or rec.get("msg")):
            return None
        name = rec.get("stage") or str(rec.get("msg")).split(" ")[0]
        return {"ts": rec.get("time") or docker_ts or go_ts, "kind": "stage" if rec.get("stage") else "event",
                "name": name, "request": rec.get("request"), "escrow": rec.get("escrow"),
                "nonce": rec.get("nonce"), "host": rec.get("host"), "fields": rec}
    pairs = [(k, unquote(v)) for k, v in PAIR.findall(body)]
    fields = dict(pairs)
    if "stage" in fields:
        kind, name = "stage", fields.pop("stage")
    else:
        e = EVENT.match(body)
        if not e:
            return None
        kind, name = "event", e.group(1)
    return {"ts": docker_ts or go_ts, "kind": kind, "name": name, "request": fields.pop("request", None),
            "escrow": fields.get("escrow"), "nonce": fields.get("nonce"), "host": fields.get("host"),
            "fields": fields}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("--out", default="/dev/null")
    a = ap.parse_args(argv)
    n = ok = bad = 0
    with open(a.log, encoding="utf-8", errors="replace") as f, open(a.out, "w", encoding="utf-8") as out:
        for line in f:
            n += 1
            ev = parse(line.rstrip("\n"))
            if ev is None:
                bad += 1
                continue
            ok += 1
            out.write(json.dumps(ev, ensure_ascii=False))
            out.write("\n")
    print(n, ok, bad)
    return 0


if __name__ == "__main__":
    sys.exit(main())
