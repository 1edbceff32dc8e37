#!/usr/bin/env python
"""Fuzz target for the compiled tokenizer (auditor/_logscan.c), under AddressSanitizer and
UndefinedBehaviorSanitizer, for a bounded time:

    python tests/fuzz/fuzz_logscan.py --seconds 60 [--seed N|commit] [--blocks N] [--json FILE]

CI (``.ci/run``) runs it deterministically: first the fixed corpus (``tests/fuzz/corpus/``,
every block a run ever found, in the order of their names), then ``--seed commit`` (a seed
from ``git rev-parse HEAD``) for ``--blocks`` random blocks, with ``--seconds`` as a cap
only: the same commit checks the same blocks (or, on a slow machine, the first of them).
Longer random runs are apart from CI: ``--seconds 3600 --blocks 0`` (no count; a random
seed, printed) and ``--add-to-corpus``, which copies a failing block into the corpus under
its next number, its bases in its name (``NNNN-seedS-blockB.L<base_line>.O<base_off>.bin``);
commit it with the fix. Every corpus block is also checked, without sanitizers, by
``tests/test_gatewaylog_parse.py::test_fuzz_corpus_blocks_agree``.

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
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "auditor" / "_logscan.c"
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
CORPUS_NAME = re.compile(r"\.L([0-9]+)\.O([0-9]+)\.bin$")
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
          b"+23:59 ", b"-00:30", b".1234567890", b"\\u0000", b'{"log":"', b'","stream":"stderr","time":"',
          b"\xef\xbb\xbf"]


def corpus_blocks(folder: Path = CORPUS) -> list[tuple[Path, bytes, int, int]]:
    """The fixed corpus: (file, block, base_line, base_off), in the order of the names; the
    bases are in the name (``.L<base_line>.O<base_off>.bin``), else 1 and 0."""
    out = []
    for p in sorted(folder.glob("*.bin")):
        m = CORPUS_NAME.search(p.name)
        out.append((p, p.read_bytes(), *((int(m[1]), int(m[2])) if m else (1, 0))))
    return out


def add_to_corpus(data: bytes, seed: int, n: int, base_line: int, base_off: int, folder: Path = CORPUS) -> Path:
    """Write a failing block into the corpus under its next number (exclusively: never over one)."""
    folder.mkdir(parents=True, exist_ok=True)
    nums = [int(p.name[:4]) for p in folder.glob("*.bin") if p.name[:4].isdigit()]
    path = folder / f"{max(nums, default=0) + 1:04d}-seed{seed}-block{n}.L{base_line}.O{base_off}.bin"
    with open(path, "xb") as f:
        f.write(data)
    return path


def commit_seed() -> int:
    """A seed from the commit checked out (its hash's first 8 hex digits); 0 outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        return int(head[:8], 16)
    except (OSError, subprocess.CalledProcessError, ValueError):
        print("fuzz_logscan: not a git checkout: seed 0", file=sys.stderr)
        return 0


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


def child(so: str, seconds: float, seed: int, out_dir: Path, max_blocks: int, add: bool) -> dict:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    spec = importlib.util.spec_from_file_location("auditor._logscan", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules["auditor._logscan"] = mod
    from auditor.sources import gatewaylog_parse as gp
    from test_gatewaylog_parse import check_block   # compiled, polars-only and reference paths agree

    assert gp._logscan is mod, "the sanitized build is not the one in use"
    t0 = time.monotonic()
    fixed = corpus_blocks()
    for path, data, base_line, base_off in fixed:   # the fixed corpus first, every run
        try:
            check_scan(gp, data, base_line, base_off)
            check_block(data, base_line, base_off)
        except AssertionError:
            print(f"fuzz_logscan: the compiled and reference parsers disagree on the corpus block {path}",
                  file=sys.stderr)
            raise
    rng = random.Random(seed)
    lines = corpus()
    stats = {"corpus_blocks": len(fixed), "blocks": 0, "scans": 0, "lines": 0, "bytes": 0, "seed": seed,
             "cut_by_time": False}
    while not max_blocks or stats["blocks"] < max_blocks:
        if time.monotonic() - t0 >= seconds:
            stats["cut_by_time"] = bool(max_blocks)
            break
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
            n = stats["blocks"]
            bad = out_dir / f"fuzz-logscan-mismatch-{seed}-{n}.L{base_line}.O{base_off}.bin"
            bad.write_bytes(failing)                 # the block that failed, its bases in its name
            print(f"fuzz_logscan: the compiled and reference parsers disagree on {bad} "
                  f"(base_line {base_line}, base_off {base_off})", file=sys.stderr)
            if add:
                print(f"fuzz_logscan: added to the corpus as {add_to_corpus(failing, seed, n, base_line, base_off)}",
                      file=sys.stderr)
            raise
        stats["blocks"] += 1
        stats["lines"] += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        stats["bytes"] += len(data)
    stats["seconds"] = round(time.monotonic() - t0, 1)
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60, help="a cap on the run's time (corpus included)")
    ap.add_argument("--seed", default=None, help="an integer, or 'commit' (from git rev-parse HEAD); "
                                                 "default: random (printed)")
    ap.add_argument("--blocks", type=int, default=0, help="random blocks to compare (0: until --seconds)")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()), help="where failing blocks go")
    ap.add_argument("--add-to-corpus", action="store_true", help=f"also copy a failing block into {CORPUS}")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.seed is None:
        seed = random.randrange(2**32)
    elif a.seed == "commit":
        seed = commit_seed()
    else:
        seed = int(a.seed)
    if a.child:
        stats = child(a.child, a.seconds, seed, a.out, a.blocks, a.add_to_corpus)
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
                            "--seed", str(seed), "--blocks", str(a.blocks), "--out", str(a.out),
                            *(["--add-to-corpus"] if a.add_to_corpus else [])], env=env, cwd=ROOT,
                           stdout=subprocess.PIPE, timeout=a.seconds + 300)
    if p.returncode != 0:
        print(f"fuzz_logscan: FAILED (exit {p.returncode}, seed {seed}); the report is above. "
              f"Again: --seed {seed} --blocks {a.blocks}", file=sys.stderr)
        return 1
    stats = json.loads(p.stdout.decode().strip().splitlines()[-1])
    stats["wall_s"] = round(time.monotonic() - t0, 1)
    cut = f" (cut by --seconds before {a.blocks:,})" if stats["cut_by_time"] else ""
    print(f"fuzz_logscan: ok: the {stats['corpus_blocks']} corpus blocks, then {stats['blocks']:,} random blocks"
          f"{cut} ({stats['lines']:,} lines, {stats['bytes']:,} bytes) compared with the reference and "
          f"{stats['scans']:,} more scanned, in {stats['seconds']} s under ASan+UBSan, seed {seed}")
    if a.json:
        a.json.write_text(json.dumps(stats, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
