#!/usr/bin/env python
"""Peak memory of `auditor collect` against two hostile answers (issue 18), measured with
`/usr/bin/time -v` around the real CLI, served over loopback HTTP:

- ``accounting``: a gateway whose participants answer for epoch 403 holds
  ``--participants`` records (default 10^6, 35 MB: ``{"participant":"g00000001","model":"m"}``).
- ``double-gzip``: a chain node serving the epoch-403 recording, except the performance
  summary: ``--inner-mib`` MiB of zeros (default 512) in two gzip layers,
  ``Content-Encoding: gzip, gzip`` (the issue's probe: 8192 MiB, 6.8 KB on the wire).

    python benchmarks/bench_hostile_memory.py [--case accounting|double-gzip|all]
        [--participants N] [--inner-mib M] [--pythonpath DIR]

``--pythonpath DIR`` runs the auditor package found in DIR instead of this checkout (e.g. an
export of an older commit: ``git archive main | tar -x -C /tmp/base``), for a before/after.
Prints, per case: exit code, the last stderr line, peak RSS (MiB) and wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from auditor.sources.replay import _key, load_recording  # noqa: E402

SUMMARY = "/chain-api/productscience/inference/inference/epoch_performance_summary/403"


def accounting_body(participants: int) -> bytes:
    records = b",".join(b'{"participant":"g%08d","model":"m"}' % i for i in range(participants))
    return b'{"schema_version":5,"epoch_index":403,"participants":[' + records + b"]}"


def double_gzip(inner_mib: int) -> bytes:
    """``inner_mib`` MiB of zeros in two gzip layers, compressed a MiB at a time."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"0" * 2**20
    once = b"".join(c.compress(block) for _ in range(inner_mib)) + c.flush()
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(once) + c.flush()


def serve(answers: dict[str, tuple[bytes, dict[str, str]]], recording: dict | None) -> ThreadingHTTPServer:
    """Serve ``answers`` by path; anything else from ``recording`` (or 404)."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            parts = urlsplit(self.path)
            if parts.path in answers:
                body, headers = answers[parts.path]
                status = 200
            else:
                entries = (recording or {}).get(_key(parts.path, parts.query, self.headers.get("x-cosmos-block-height")))
                status, body, headers = ((entries[-1]["status"], entries[-1]["body"].encode(), {}) if entries
                                         else (404, b'{"error": "not found"}', {}))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return httpd


def measure(args: list[str], pythonpath: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")} | {"NO_COLOR": "1"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "auditor", "--quiet", "--db", f"{tmp}/a.duckdb", *args]
        # cwd: not this checkout, so that `python -m` imports the package --pythonpath names
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd=tmp)
        where = subprocess.run([sys.executable, "-c", "import auditor; print(auditor.__file__)"],
                               capture_output=True, text=True, env=env, cwd=tmp).stdout.strip()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr).group(1)
    own = [x for x in done.stderr.splitlines() if x and not x.startswith("\t") and "Command" not in x]
    said = [x for x in own if "MISSING" in x or "error" in x] or own[-1:]
    return {"auditor": str(Path(where).parent), "exit": done.returncode, "said": said[0][:240] if said else "",
            "peak RSS MiB": round(rss / 1024), "wall": wall}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=["accounting", "double-gzip", "all"], default="all")
    ap.add_argument("--participants", type=int, default=1_000_000)
    ap.add_argument("--inner-mib", type=int, default=512)
    ap.add_argument("--pythonpath", help="run the auditor package in this directory instead")
    a = ap.parse_args(argv)
    if a.case in ("accounting", "all"):
        body = accounting_body(a.participants)
        listing = json.dumps({"schema_version": 5, "epochs": [{"epoch_index": 403, "schema_version": 5}]}).encode()
        httpd = serve({"/api/v1/epochs": (listing, {}), "/api/v1/epochs/403/participants": (body, {})}, None)
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        got = measure(["collect", "-e", "403", "--accounting", url, "--rate", "0", "--timeout", "60"], a.pythonpath)
        httpd.shutdown()
        print(f"accounting, {a.participants:,} participants, {len(body) / 1e6:.1f} MB: {got}")
    if a.case in ("double-gzip", "all"):
        bomb = double_gzip(a.inner_mib)
        httpd = serve({SUMMARY: (bomb, {"Content-Encoding": "gzip, gzip"})},
                      load_recording(ROOT / "fixtures" / "chain" / "epoch-403"))
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        got = measure(["collect", "-e", "403", "--node", url, "--rate", "0"], a.pythonpath)
        httpd.shutdown()
        print(f"double-gzip, {a.inner_mib} MiB inside, {len(bomb):,} bytes on the wire: {got}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
