"""Fuzz the total functions and the CLI for a bounded time (outside CI; see fuzz/README.md).

    .venv/bin/python fuzz/run.py --seconds 60 [--target NAME ...] [--seed N]
    .venv/bin/python fuzz/run.py --target stream --seed 7 --iteration 1234   # one, again

Findings are printed and written to fuzz/findings/<target>-<seed>-<iteration>.json;
the exit status is 1 if there were any, else 0.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the targets live in tests/support/fuzzing.py, beside the suite's

from tests.support.fuzzing import TARGETS, Finding, dump_input, run_iteration  # noqa: E402

FINDINGS = ROOT / "fuzz" / "findings"
SLOW_SECONDS = 5.0
"""An iteration slower than this is reported (not a finding: times vary by machine)."""
KEEP_PER_KIND = 3
"""Findings kept (printed and written) per target and kind of error; the rest are counted."""


def _kind(finding: Finding) -> tuple[str, str]:
    """The target and the error's last line, numbers blanked: findings of one bug."""
    last = finding.error.rstrip().splitlines()[-1] if finding.error.strip() else ""
    return finding.target, re.sub(r"\d+", "N", last)[:120]


def _keep(finding: Finding, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{finding.target}-{finding.seed}-{finding.iteration}.json"
    path.write_text(dump_input(finding), encoding="utf-8")
    return path


def fuzz(names: list[str], seed: int, seconds: float, folder: Path) -> int:
    """Run each target for its share of ``seconds``; the number of findings."""
    found = 0
    kinds: dict[tuple[str, str], int] = {}
    share = seconds / len(names)
    for name in names:
        target = TARGETS[name]
        iteration = 0
        start = time.monotonic()
        while time.monotonic() - start < share:
            began = time.monotonic()
            finding = run_iteration(target, seed, iteration)
            took = time.monotonic() - began
            if took > SLOW_SECONDS:
                print(f"slow: target={name} seed={seed} iteration={iteration} took {took:.1f} s")
            if finding is not None:
                found += 1
                kind = _kind(finding)
                kinds[kind] = kinds.get(kind, 0) + 1
                if kinds[kind] <= KEEP_PER_KIND:
                    print(finding.describe())
                    print(f"  kept as {_keep(finding, folder)}", flush=True)
            iteration += 1
        elapsed = time.monotonic() - start
        print(f"{name}: {iteration} iterations in {elapsed:.1f} s (seed {seed})", flush=True)
    for (name, error), count in kinds.items():
        print(f"{count:6} x {name}: {error}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="in all (default: 60)")
    parser.add_argument(
        "--target",
        action="append",
        choices=sorted(TARGETS),
        help="a target to run (repeatable; default: all, sharing the time)",
    )
    parser.add_argument("--seed", type=int, help="default: a random one, printed")
    parser.add_argument(
        "--iteration", type=int, help="run only this iteration (with --seed and one --target)"
    )
    parser.add_argument(
        "--findings", type=Path, default=FINDINGS, help=f"default: {FINDINGS.relative_to(ROOT)}"
    )
    args = parser.parse_args()
    names = args.target or sorted(TARGETS)
    if args.iteration is not None:
        if args.seed is None or len(names) != 1:
            parser.error("--iteration needs --seed and one --target")
        finding = run_iteration(TARGETS[names[0]], args.seed, args.iteration)
        if finding is None:
            print("no finding")
            return 0
        print(finding.describe())
        return 1
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    print(f"seed {seed}, {args.seconds:g} s over {len(names)} target(s)", flush=True)
    found = fuzz(names, seed, args.seconds, args.findings)
    print(f"{found} finding(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
