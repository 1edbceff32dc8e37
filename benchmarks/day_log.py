"""A busy gateway's day of log inside the demo chain's epoch 403 (issue 21's benchmark).

    python benchmarks/day_log.py OUT --size 5GB

24 hours from 2026-09-22T18:30Z, inside epoch 403's effective span (18:09:15Z .. next day
19:15:00Z), with the epoch's one confirmation PoC (00:03:36Z .. 00:58:40Z), the epoch's four
real GLM hosts and the one the chain preserved: the demo's story
(fixtures/demo-epoch-403/make_gateway_log.py) at a busy gateway's rate, so that every
analysis of `auditor epoch 403` over the bundled chain recording has work to do.

`--shift K` writes the same day for epoch 403+K of a chain whose epochs repeat epoch 403,
every height K x 15,391 blocks and every time K x 15,391 x 5.87 s later, its escrows numbered
from 97,300 + K x 100,000 (a gateway's escrow ids only grow: a later day's escrows are new, as
on mainnet): bench_day.py's epochs 404.. for `targets --epochs`.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout, for tools/
from tools import synth  # noqa: E402
from tools.synth import Scenario, write_logs  # noqa: E402

START = datetime(2026, 9, 22, 18, 30, tzinfo=timezone.utc)
HOURS = 24
SPAN = ("2026-09-22T18:09:15Z", "2026-09-23T19:15:00Z")   # epoch 403's effective span in the recording
EPOCH_BLOCKS, BLOCK_S = 15_391, 5.87                        # the recording's epoch length and block time
EPOCH_TIME = timedelta(seconds=EPOCH_BLOCKS * BLOCK_S)      # 25 h 5 min 45.17 s


def scenario(shift: int = 0) -> Scenario:
    demo = ROOT / "fixtures" / "demo-epoch-403"
    sys.path.insert(0, str(demo))
    import make_gateway_log as m   # the demo log's hosts and window

    dt = shift * EPOCH_TIME
    return Scenario(duration=timedelta(hours=HOURS), models=("zai-org/GLM-5.3-Flash",),
                    hosts=len(m.GLM_HOSTS), host_addresses=m.GLM_HOSTS,
                    preserved=tuple(m.STORY["glm_preserved_cpoc"]), cpoc_windows=((m.TRIGGER + dt, m.VAL_END + dt),),
                    epoch=403 + shift,
                    first_block_height=6_214_805 + shift * EPOCH_BLOCKS,   # the recording's height at 18:30
                    block_time_s=BLOCK_S, escrows=4, first_escrow_id=97_300 + shift * 100_000)


def write(out: Path, size: int, seed: int = 21, shift: int = 0) -> dict:
    sm = write_logs(out, size, seed=seed + shift, fmt="text", start=START + shift * EPOCH_TIME,
                    scenario=scenario(shift))
    return sm.to_dict()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", type=synth.parse_size, default=synth.parse_size("5GB"))
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--shift", type=int, default=0, help="write the day of epoch 403+K instead (see above)")
    a = ap.parse_args(argv)
    summary = write(a.out, a.size, a.seed, a.shift)
    print(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
