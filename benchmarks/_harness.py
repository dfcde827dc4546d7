"""What the ``bench_*.py`` scripts share: outcomes and the summary, timing, the banner.

Private to this folder. Each script imports it by its plain name (``from _harness import
...``): run as ``python benchmarks/bench_x.py``, a script has its own folder first on
``sys.path``, and mypy, given the folder (it has no ``__init__.py``), maps its files to
top-level modules the same way.

Importing it loads neither ``kubernetes`` nor ``k8s_workloads`` (``print_environment``
imports kubernetes when asked to print its version); it holds no benchmark's targets.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib
import os
import platform
import pstats
import sys
import time
import timeit
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence
    from types import ModuleType

REPEATS = 5
"""timeit repeats; the best (minimum) is reported, as the timeit docs recommend."""
FULL_MIN_SECONDS = 0.2
QUICK_MIN_SECONDS = 0.05
"""How long one timing loop must run at least, without and with ``--quick``."""
TIMES = "\N{MULTIPLICATION SIGN}"
PROVIDER_MISSING = "provider not installed: comparison skipped; run with .venv-airflow/bin/python"
# kubernetes' own ApiClient deserializer: the one the provider's deserialize_model_dict and
# the watch stream use. Private and name-mangled, but present (same signature) in
# kubernetes 36 and 37.
DESERIALIZE_MODEL = "_ApiClient__deserialize_model"

REPO_ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------ outcomes, summary

Verdict = Literal["PASS", "MISS", "SKIP", "INFO"]


def verdict(passed: bool | None) -> Verdict:
    """PASS or MISS for a measured target; SKIP (None) for one not measured here."""
    if passed is None:
        return "SKIP"
    return "PASS" if passed else "MISS"


@dataclass(frozen=True)
class Outcome:
    name: str
    verdict: Verdict
    """PASS, MISS, SKIP (not measured here) or INFO (measured, no target)."""

    @classmethod
    def of(cls, name: str, passed: bool | None) -> Outcome:
        """A target's outcome: ``passed`` None means not measured here (SKIP)."""
        return cls(name, verdict(passed))


def header(title: str) -> None:
    print()
    print(title)
    print("-" * len(title))


def summarize(outcomes: Sequence[Outcome]) -> int:
    """Print the Summary section; return the exit code, 0 whatever the numbers."""
    header("Summary")
    for outcome in outcomes:
        print(f"{outcome.verdict}  {outcome.name}")
    measured = [outcome for outcome in outcomes if outcome.verdict in {"PASS", "MISS"}]
    met = sum(outcome.verdict == "PASS" for outcome in measured)
    skipped = sum(outcome.verdict == "SKIP" for outcome in outcomes)
    print(
        f"{met}/{len(measured)} measured targets met, {skipped} skipped"
        " (timings are printed, never asserted)"
    )
    return 0


# ------------------------------------------------------------------- command line, banner


@dataclass(frozen=True)
class Mode:
    quick: bool
    """``--quick``: shorter timing loops (and whatever else the script scales down)."""

    @property
    def name(self) -> str:
        return "quick" if self.quick else "full"

    @property
    def min_seconds(self) -> float:
        return QUICK_MIN_SECONDS if self.quick else FULL_MIN_SECONDS


def parse_mode(description: str, quick_help: str, argv: Sequence[str] | None) -> Mode:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    args = parser.parse_args(argv)
    return Mode(quick=bool(args.quick))


def print_environment(mode: Mode, *, kubernetes: bool = True, details: Sequence[str] = ()) -> None:
    """The banner: Python, then kubernetes' version (if asked), ``details``, cpus and mode."""
    print(f"python {platform.python_version()} ({sys.executable})")
    parts = (
        [f"kubernetes {importlib.import_module('kubernetes').__version__}"] if kubernetes else []
    )
    parts.extend(details)
    parts.append(f"cpus: {os.cpu_count()}, mode: {mode.name}")
    print(", ".join(parts))


def import_optional(module: str) -> ModuleType | None:
    """``module`` if it can be imported here (the provider, Airflow), else None."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


# ------------------------------------------------------------------------------ timing


def _calibrated(
    call: Callable[[], object], min_seconds: float, clock: Callable[[], float]
) -> tuple[timeit.Timer, int]:
    """A timer for ``call`` and the loop count (a power of 2) that takes ``min_seconds``."""
    timer = timeit.Timer(call, timer=clock)
    call()  # warm-up: first-call imports and caches are not what is measured
    number = 1
    while timer.timeit(number) < min_seconds:
        number *= 2
    return timer, number


def per_call_us(
    call: Callable[[], object], min_seconds: float, *, calls_per_loop: int = 1
) -> float:
    """Best-of-REPEATS wall-clock µs per call, in loops of at least ``min_seconds``.

    ``call`` makes ``calls_per_loop`` calls each time it runs (a loop over an input set).
    """
    timer, number = _calibrated(call, min_seconds, time.perf_counter)
    best = min(timer.repeat(repeat=REPEATS, number=number))
    return best / (number * calls_per_loop) * 1e6


def best_cpu_us(calls: Mapping[str, Callable[[], object]], min_seconds: float) -> dict[str, float]:
    """Best-of-REPEATS µs per call of each callable, their repeats interleaved.

    CPU time of this process (``time.process_time``), in loops of at least ``min_seconds``
    each: everything timed is single-threaded and does no I/O, so CPU time is its cost,
    and other work on a shared 2-core machine does not land on one side of a ratio.
    Interleaving the repeats spreads what is left (cache, frequency) over all of them.
    """
    timers = {
        name: _calibrated(call, min_seconds, time.process_time) for name, call in calls.items()
    }
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(REPEATS):
        for name, (timer, number) in timers.items():
            best[name] = min(best[name], timer.timeit(number) / number * 1e6)
    return best


# ------------------------------------------------------------------------------ memory


def traced_growth(
    warm_up: Callable[[], object],
    measured: Callable[[], object],
    *,
    budget_bytes: int,
    labels: tuple[str, str, str],
    peak_over: str,
    indent: str,
    width: int,
) -> bool:
    """Print traced memory growth (tracemalloc) over ``measured``; True if under budget.

    ``warm_up`` runs first; the growth is what is traced after ``measured`` (after
    ``gc.collect()``) less what was traced after the warm-up. ``labels`` name the rows for
    those two levels and the peak in between; ``peak_over`` says what the peak is over.
    A miss also prints the lines that grew most, for diagnosis.
    """
    first_label, last_label, peak_label = labels
    gc.collect()
    tracemalloc.start()
    try:
        warm_up()
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        before = tracemalloc.take_snapshot()
        tracemalloc.reset_peak()
        measured()
        gc.collect()
        last, peak = tracemalloc.get_traced_memory()
        growth = last - first
        passed = growth < budget_bytes
        rows = (
            (first_label, f"{first:12,d} B", ""),
            (last_label, f"{last:12,d} B", ""),
            (
                "growth",
                f"{growth:+12,d} B",
                f"  (target: < {budget_bytes // 1024} KiB)  {verdict(passed)}",
            ),
            (peak_label, f"{peak:12,d} B", f"  ({peak - first:+,d} B over {peak_over}; info)"),
        )
        for label, value, note in rows:
            print(f"{indent}{label:<{width}}: {value}{note}")
        if not passed:
            print(f"{indent}largest growth by line (diagnosis):")
            after = tracemalloc.take_snapshot()
            for stat in after.compare_to(before, "lineno")[:5]:
                print(
                    f"{indent}  {stat.size_diff:+10,d} B  {stat.count_diff:+7,d} blocks"
                    f"  {stat.traceback[0]}"
                )
    finally:
        tracemalloc.stop()
    return passed


# ------------------------------------------------------------------------------ profile


def _where(file_name: str, line: int) -> str:
    """A profiled function's place: relative to the checkout when it is in it."""
    path = Path(file_name)
    try:
        return f"{path.resolve().relative_to(REPO_ROOT)}:{line}"
    except ValueError:
        return f"{path.name}:{line}" if path.name != "~" else "<built-in>"


def print_profile(
    call: Callable[[], object],
    calls: int,
    *,
    unit: str,
    top: int,
    digits: int,
    skip: Collection[str] = (),
) -> None:
    """cProfile ``calls`` calls of ``call``; print the ``top`` functions by cumulative time.

    Times are µs per ``unit`` (one call of ``call``), with ``digits`` decimals. Built-ins
    and functions named in ``skip`` (the benchmark's own wrappers) are left out.
    """
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    # Keyed by (file, line, name): get_stats_profile() keys by name alone (so same-named
    # functions, such as two modules' _map, overwrite each other) and rounds to the
    # millisecond. (typeshed leaves .stats out.)
    stats = cast(
        "dict[tuple[str, int, str], tuple[Any, ...]]", vars(pstats.Stats(profiler))["stats"]
    )
    total = sum(own for _cc, _nc, own, _cum, _callers in stats.values())
    print(
        f"  {total / calls * 1e6:.1f} µs/{unit} under the profiler (its overhead inflates"
        " small calls); top by cumulative time:"
    )
    columns = (f"cum µs/{unit}", f"own µs/{unit}", f"calls/{unit}")
    print(f"  {' '.join(columns)}  function")
    cum_width, own_width, count_width = (len(column) for column in columns)
    ranked = sorted(stats.items(), key=lambda item: -item[1][3])
    shown = 0
    for (file_name, line, function), (_cc, count, own, cumulative, _callers) in ranked:
        if file_name == "~" or function in skip:
            continue
        print(
            f"  {cumulative / calls * 1e6:{cum_width}.{digits}f}"
            f" {own / calls * 1e6:{own_width}.{digits}f}"
            f" {count / calls:{count_width}.1f}  {function} ({_where(file_name, line)})"
        )
        shown += 1
        if shown == top:
            break


# ------------------------------------------------------------------------ shared inputs

# One task of one DAG run, as bench_pods, bench_events and bench_decisions build its pod.
NAMESPACE = "airflow"
SCHEDULER_JOB_ID = "4217"
IMAGE = "registry.example.com/airflow:3.3.2-python3.11"
DAG_ID = "warehouse_daily"
TASK_ID = "transform.aggregate_orders"
RUN_ID = "scheduled__2026-06-07T00:00:00+00:00"
POD_ID = "warehouse-daily-transform-aggregate-orders-k3j9x2pq"

# What an ExecuteTask workload's JSON looks like on the command line (token included).
TASK_WORKLOAD = {
    "token": "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9." + "x" * 420 + ".signature",
    "ti": {
        "id": "019e9fc6-7a01-7c2e-8f11-2b3c4d5e6f70",
        "task_id": TASK_ID,
        "dag_id": DAG_ID,
        "run_id": RUN_ID,
        "try_number": 1,
        "map_index": -1,
        "pool_slots": 1,
        "queue": "default",
        "priority_weight": 3,
    },
    "dag_rel_path": "warehouse/daily.py",
    "bundle_info": {"name": "dags-folder", "version": None},
    "log_path": f"dag_id={DAG_ID}/run_id={RUN_ID}/task_id={TASK_ID}/attempt=1.log",
    "type": "ExecuteTask",
}
