#!/usr/bin/env python
"""Fuzz target for the compiled tokenizer (auditor/_logscan.c), under AddressSanitizer and
UndefinedBehaviorSanitizer, for a bounded time:

    python tests/fuzz/fuzz_logscan.py --seconds 60 [--seed N] [--json FILE]

It builds auditor/_logscan.c with gcc (``-fsanitize=address,undefined``, UB fatal, and
``-DLOGSCAN_BOUNDS``: every write checked against the buffer's allocated size, which
catches the one byte past a bytes object's end that ASan cannot see), then runs itself
again with libasan preloaded and that build in place of the installed one. There it
mutates blocks of log lines (real section-12 lines, every synthetic format, and their
near misses: byte flips, inserted quotes, escapes, separators, dates at the edges,
non-ASCII and NUL bytes, cut lines, blocks without a final newline) and, on every block:

* calls the tokenizer directly, at random line numbers and offsets, and checks that every
  line is either tokenized or handed back, in order;
* parses it with ``parse_block`` (the tokenizer first) and with the reference
  (``parse_line`` for every line) and checks that both give the same rows and rejects.

A sanitizer report or a disagreement ends the run with exit 1 and the failing block
written next to the report (``--out``). Prints the figures (blocks, lines, seconds).
A plain Python mutation loop: nothing to install beyond gcc and its libasan.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "auditor" / "_logscan.c"
CFLAGS = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
          "-DLOGSCAN_BOUNDS", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror"]


def build(out_dir: Path) -> Path:
    so = out_dir / ("_logscan" + sysconfig.get_config_var("EXT_SUFFIX"))
    cmd = ["gcc", *CFLAGS, "-I", sysconfig.get_paths()["include"], str(SRC), "-o", str(so)]
    subprocess.run(cmd, check=True)
    return so


def libasan() -> str:
    path = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        raise SystemExit("fuzz_logscan: gcc has no libasan.so (install libasan / gcc with sanitizers)")
    return path


# -- the child: mutate and compare ------------------------------------------------------------
TOKENS = [b'"', b"\\", b"=", b" ", b"  ", b"\t", b"\r", b"\n", b"\x00", b"\x7f", b"\xff", b"\xc3\xa9", b"\xe2\x80\x94",
          b'\\"', b"\\n", b"\\u00e9", b"\\ud800", b"\\udc00", b"\\x41", b"\\q", b"{", b"}", b",", b":",
          b"stage=", b"request=", b" escrow=", b" nonce=", b" host=", b"-9223372036854775808",
          b"9223372036854775808", b"18446744073709551616", b"2026/02/29 ", b"2024/02/29 23:59:59 ",
          b"2026-09-30T11:02:47.123456789Z ", b"1970/01/01 00:00:00 ", b"9999/12/31 23:59:59.999999 ",
          b"+23:59 ", b"-00:30", b".1234567890", b"\\u0000", b'{"log":"', b'","stream":"stderr","time":"']


def corpus() -> list[bytes]:
    from tools.synth import generate_lines

    lines = []
    for p in sorted((ROOT / "fixtures" / "gateway-logs").glob("*.log")):
        lines += p.read_bytes().splitlines()
    for fmt in ("text", "docker", "bare", "json", "dockerjson"):
        lines += [x.encode() for x in generate_lines(120_000, seed=3, fmt=fmt)[0]]
    return [x for x in lines if x]


def mutate(rng: random.Random, line: bytes) -> bytes:
    b = bytearray(line)
    for _ in range(rng.choice((0, 1, 1, 2, 3, 6))):
        op = rng.random()
        at = rng.randrange(len(b) + 1)
        if op < 0.3 and b:
            b[min(at, len(b) - 1)] = rng.randrange(256)
        elif op < 0.65:
            b[at:at] = rng.choice(TOKENS)
        elif op < 0.8 and b:
            del b[at:at + rng.randrange(1, 8)]
        elif op < 0.9:
            b[at:at] = bytes(rng.choice(b"0123456789") for _ in range(rng.randrange(1, 21)))
        else:
            b = b[:at]
    return bytes(b)


def block(rng: random.Random, lines: list[bytes]) -> bytes:
    """1-29 mutated lines; one block in ten has 100-159, so that the lines the tokenizer
    leaves also reach the vectorised path (gatewaylog_parse.VECTOR_MIN_LINES)."""
    n = rng.randrange(100, 160) if rng.random() < 0.1 else rng.randrange(1, 30)
    picked = [mutate(rng, rng.choice(lines)) for _ in range(n)]
    data = b"\n".join(picked)
    return data + b"\n" if rng.random() < 0.7 else data


def check_scan(gp, data: bytes, base_line: int, base_off: int) -> None:
    out = gp._scan(data, base_line, base_off)
    n_lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    taken = list(memoryview(out["line_no"]).cast("q"))
    left = list(memoryview(out["rest_line_no"]).cast("q"))
    assert out["rows"] == len(taken) and sorted(taken + left) == list(range(base_line, base_line + n_lines))
    assert out["rest"].count(b"\n") == len(left)


def child(so: str, seconds: float, seed: int, out_dir: Path) -> dict:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    spec = importlib.util.spec_from_file_location("auditor._logscan", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules["auditor._logscan"] = mod
    from auditor.sources import gatewaylog_parse as gp
    from test_gatewaylog_parse import check_block   # compiled, polars-only and reference paths agree

    assert gp._logscan is mod, "the sanitized build is not the one in use"
    rng = random.Random(seed)
    lines = corpus()
    stats = {"blocks": 0, "scans": 0, "lines": 0, "bytes": 0, "seed": seed}
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        data = block(rng, lines)
        failing = data
        try:
            for _ in range(10):         # the tokenizer alone is cheap: more of it
                failing = block(rng, lines)
                base_line, base_off = rng.randrange(1, 2**31), rng.randrange(0, 2**40)
                check_scan(gp, failing, base_line, base_off)
                stats["scans"] += 1
            failing = data
            base_line, base_off = rng.choice([(1, 0), (rng.randrange(1, 2**40), rng.randrange(0, 2**50))])
            check_scan(gp, data, base_line, base_off)
            check_block(data, base_line, base_off)
        except AssertionError:
            bad = out_dir / f"fuzz-logscan-mismatch-{seed}-{stats['blocks']}.bin"
            bad.write_bytes(failing)                 # the block that failed, with the bases printed below
            print(f"fuzz_logscan: the compiled and reference parsers disagree on {bad} "
                  f"(base_line {base_line}, base_off {base_off})", file=sys.stderr)
            raise
        stats["blocks"] += 1
        stats["lines"] += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        stats["bytes"] += len(data)
    stats["seconds"] = round(time.monotonic() - t0, 1)
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=None, help="default: random (printed)")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()), help="where failing blocks go")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else random.randrange(2**32)
    if a.child:
        stats = child(a.child, a.seconds, seed, a.out)
        print(json.dumps(stats))
        return 0
    with tempfile.TemporaryDirectory(prefix="fuzz-logscan-") as d:
        so = build(Path(d))
        env = dict(os.environ, LD_PRELOAD=libasan(), PYTHONPATH=str(ROOT),
                   ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1",
                   UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
        env.pop("AUDITOR_NO_COMPILED", None)
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, __file__, "--child", str(so), "--seconds", str(a.seconds),
                            "--seed", str(seed), "--out", str(a.out)], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                           timeout=a.seconds + 300)
    if p.returncode != 0:
        print(f"fuzz_logscan: FAILED (exit {p.returncode}, seed {seed}); the sanitizer's report is above",
              file=sys.stderr)
        return 1
    stats = json.loads(p.stdout.decode().strip().splitlines()[-1])
    stats["wall_s"] = round(time.monotonic() - t0, 1)
    print(f"fuzz_logscan: ok: {stats['blocks']:,} blocks ({stats['lines']:,} lines, {stats['bytes']:,} bytes) "
          f"compared with the reference and {stats['scans']:,} more scanned, in {stats['seconds']} s under "
          f"ASan+UBSan, seed {seed}")
    if a.json:
        a.json.write_text(json.dumps(stats, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
