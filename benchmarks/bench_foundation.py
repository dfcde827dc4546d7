"""Foundation benchmarks: import cost, label values and the annotation codec.

    .venv-airflow/bin/python benchmarks/bench_foundation.py   # with the provider comparisons
    .venv/bin/python benchmarks/bench_foundation.py           # our numbers only
    ... bench_foundation.py --quick                           # fewer iterations

Every target is a ratio or difference against a baseline measured in the same run, so
the numbers mean the same on a laptop and on a 2-core CI machine. Nothing here asserts
on timing: each target prints PASS or MISS and the script exits 0 whatever the numbers
(it fails only if it cannot run at all, e.g. ``k8s_workloads`` is not importable).

Targets:

1. ``import k8s_workloads`` leaves ``kubernetes`` out of ``sys.modules`` and costs less
   than 10 ms over a bare interpreter start (median of fresh subprocesses, same flags).
2. ``make_safe_label_value`` is no slower per call than the provider's
   (``airflow.providers.cncf.kubernetes.pod_generator``) on one mixed input set.
3. ``annotations_to_key`` is no slower per call than the provider's
   (``airflow.providers.cncf.kubernetes.kubernetes_helper_functions``) on task
   annotations that carry a ``run_id``, so the provider never touches its database.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from typing import TYPE_CHECKING, TypeVar, cast

from _harness import (
    PROVIDER_MISSING,
    REPEATS,
    Outcome,
    header,
    import_optional,
    parse_mode,
    per_call_us,
    print_environment,
    summarize,
    verdict,
)

from k8s_workloads import TaskInstanceKey
from k8s_workloads.pods.codec import annotations_to_key
from k8s_workloads.pods.labels import create_unique_id, make_safe_label_value

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

IMPORT_BUDGET_MS = 10.0
"""Target 1: what ``import k8s_workloads`` may add to the interpreter's own start-up."""
RATIO_TARGET = 1.0
"""Targets 2 and 3: ours / provider's time per call must not exceed this."""

PROVIDER_LABELS_MODULE = "airflow.providers.cncf.kubernetes.pod_generator"
PROVIDER_CODEC_MODULE = "airflow.providers.cncf.kubernetes.kubernetes_helper_functions"
PROVIDER_UNIQUE_ID_MODULE = PROVIDER_CODEC_MODULE

RUN_ID = "manual__2026-06-07T01:50:23.457423+00:00"

LABEL_GROUPS: dict[str, tuple[str, ...]] = {
    # Valid and short: returned unchanged.
    "valid, short": ("example_dag", "extract_orders", "load-to-warehouse.v2", "12345", "True"),
    # Every task pod's run_id label: ':' and '+' are not allowed, so cleaned and hashed.
    "run ids": (
        RUN_ID,
        "scheduled__2026-06-07T00:00:00+00:00",
        "backfill__2026-01-01T00:00:00+00:00",
        "dataset_triggered__2026-06-07T01:50:23.457423+00:00",
    ),
    # Short but invalid: spaces, slashes, non-ASCII, bad ends.
    "short, needs hashing": ("my dag!", "team/etl/daily", "_private_task_", "café_crème", "---"),
    # Over 63 characters, valid characters and not.
    "long (> 63)": (
        "a_really_long_dag_identifier_that_keeps_going_well_past_the_label_value_limit",
        "group.subgroup.task_with_a_name_long_enough_to_need_truncation_and_a_hash_suffix",
        "x" * 64,
        "nested/task/group/" * 6,
    ),
}
LABEL_INPUTS: tuple[str, ...] = tuple(value for group in LABEL_GROUPS.values() for value in group)

CODEC_INPUTS: tuple[dict[str, str], ...] = (
    {"dag_id": "example_dag", "task_id": "extract_orders", "try_number": "1", "run_id": RUN_ID},
    {
        "dag_id": "warehouse_daily",
        "task_id": "transform.clean_rows",
        "try_number": "2",
        "run_id": "scheduled__2026-06-07T00:00:00+00:00",
    },
    {
        "dag_id": "fan_out",
        "task_id": "process_partition",
        "try_number": "1",
        "map_index": "17",
        "run_id": "manual__2026-06-07T01:50:23.457423+00:00",
    },
    {
        "dag_id": "ml_training",
        "task_id": "train_model",
        "try_number": "3",
        "map_index": "0",
        "run_id": "dataset_triggered__2026-06-07T01:50:23.457423+00:00",
    },
)


# --------------------------------------------------------------------------- target 1


def _run_python(code: str, flags: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter, fixed code
        [sys.executable, *flags, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )


def _wall_ms(code: str) -> float:
    start = time.perf_counter()
    _run_python(code)
    return (time.perf_counter() - start) * 1000.0


def _direct_external_imports(importtime_log: str) -> list[tuple[int, str, str]]:
    """(cumulative µs, module, our importer) of non-k8s_workloads modules our modules import.

    ``-X importtime`` lists a module after everything it imported, indented by two
    spaces per level; each module appears once, under whichever imported it first.
    """
    pending: dict[int, list[tuple[str, int]]] = {}
    found: list[tuple[int, str, str]] = []
    for line in importtime_log.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        fields = line[len("import time:") :].split("|")
        if len(fields) != 3 or not fields[1].strip().isdigit():
            continue  # the header line
        cumulative = int(fields[1])
        name_field = fields[2].rstrip()
        name = name_field.strip()
        depth = (len(name_field) - len(name) - 1) // 2
        children = pending.pop(depth + 1, [])
        if name.split(".", 1)[0] == "k8s_workloads":
            found.extend(
                (child_us, child, name)
                for child, child_us in children
                if child.split(".", 1)[0] != "k8s_workloads"
            )
        pending.setdefault(depth, []).append((name, cumulative))
    return sorted(found, reverse=True)


def bench_import(runs: int) -> list[Outcome]:
    header(f"1. import k8s_workloads (median of {runs} fresh subprocesses each)")
    print(f"interpreter: {sys.executable}")

    leaked = _run_python("import k8s_workloads, sys; print('kubernetes' in sys.modules)")
    kubernetes_loaded = leaked.stdout.strip() == "True"
    print(
        f"'kubernetes' in sys.modules after import: {kubernetes_loaded}"
        f"  (target: False)  {verdict(not kubernetes_loaded)}"
    )

    baseline_code = "pass"
    import_code = "import k8s_workloads"
    # One untimed run of each warms the file-system cache and writes any missing .pyc.
    _wall_ms(baseline_code)
    _wall_ms(import_code)
    baseline: list[float] = []
    imported: list[float] = []
    for _ in range(runs):  # interleaved, so drift in machine load hits both alike
        baseline.append(_wall_ms(baseline_code))
        imported.append(_wall_ms(import_code))
    base_ms = statistics.median(baseline)
    import_ms = statistics.median(imported)
    cost_ms = import_ms - base_ms
    print(f'python -c "pass"                : {base_ms:8.1f} ms')
    print(f'python -c "import k8s_workloads": {import_ms:8.1f} ms')
    within = cost_ms < IMPORT_BUDGET_MS
    print(
        f"import cost (difference)        : {cost_ms:8.1f} ms"
        f"  (target: < {IMPORT_BUDGET_MS:.0f} ms)  {verdict(within)}"
    )

    # Names load on first use (PEP 562); what the first key costs is attrs, mostly.
    first_use_code = "import k8s_workloads; k8s_workloads.TaskInstanceKey('d', 't', 'r')"
    first_use_ms = statistics.median(_wall_ms(first_use_code) for _ in range(runs))
    print(
        f"first use (import + a TaskInstanceKey): {first_use_ms - base_ms:6.1f} ms"
        "  (info, not a target; attrs is most of it and Airflow has it loaded already)"
    )

    if not within:
        log = _run_python(import_code, ["-X", "importtime"]).stderr
        heaviest = _direct_external_imports(log)[:6]
        if heaviest:
            print("heaviest modules our package imports (-X importtime, one run, cumulative):")
            for micros, module, importer in heaviest:
                print(f"  {micros / 1000.0:7.1f} ms  {module:<24} first imported by {importer}")

    return [
        Outcome.of("import: kubernetes not imported", not kubernetes_loaded),
        Outcome.of(f"import: cost < {IMPORT_BUDGET_MS:.0f} ms", within),
    ]


# ----------------------------------------------------------------------- targets 2, 3


def _load_provider(module: str, attribute: str) -> object | None:
    loaded = import_optional(module)
    if loaded is None:
        return None
    found: object = getattr(loaded, attribute)
    return found


def _report_ratio(label: str, ours_us: float, provider_us: float | None) -> list[Outcome]:
    print(f"ours      : {ours_us:8.3f} µs/call")
    if provider_us is None:
        print(PROVIDER_MISSING)
        return [Outcome(f"{label}: ratio <= {RATIO_TARGET:.1f} (provider not installed)", "SKIP")]
    ratio = ours_us / provider_us
    passed = ratio <= RATIO_TARGET
    print(f"provider  : {provider_us:8.3f} µs/call")
    print(
        f"ratio     : {ratio:8.3f}  (ours / provider; target: <= {RATIO_TARGET:.1f})"
        f"  {verdict(passed)}"
    )
    return [Outcome.of(f"{label}: ratio <= {RATIO_TARGET:.1f}", passed)]


_Input = TypeVar("_Input")


def _loop_us(
    function: Callable[[_Input], object], inputs: Sequence[_Input], seconds: float
) -> float:
    """Best-of-REPEATS µs per call of ``function``, timed in loops over all of ``inputs``."""

    def loop() -> None:
        for value in inputs:
            function(value)

    return per_call_us(loop, seconds, calls_per_loop=len(inputs))


def bench_labels(min_seconds: float) -> list[Outcome]:
    inputs = LABEL_INPUTS
    header(f"2. make_safe_label_value ({len(inputs)} mixed inputs, best of {REPEATS})")

    ours_us = _loop_us(make_safe_label_value, inputs, min_seconds)
    provider = _load_provider(PROVIDER_LABELS_MODULE, "make_safe_label_value")
    theirs = None if provider is None else cast("Callable[[str], str]", provider)
    provider_us = None
    if theirs is not None:
        provider_us = _loop_us(theirs, inputs, min_seconds)
    outcomes = _report_ratio("make_safe_label_value", ours_us, provider_us)

    # Per-group numbers show where the mixed-set ratio comes from; they are not targets.
    print("by input group (info, not a target; shorter loops, so noisier):")
    for group, values in LABEL_GROUPS.items():
        group_ours = _loop_us(make_safe_label_value, values, min_seconds / 4)
        line = f"  {group:<22} ours {group_ours:7.3f} µs"
        if theirs is not None:
            group_theirs = _loop_us(theirs, values, min_seconds / 4)
            line += f"  provider {group_theirs:7.3f} µs  ratio {group_ours / group_theirs:5.2f}"
        print(line)
    if theirs is not None:
        same = sum(make_safe_label_value(value) == theirs(value) for value in inputs)
        print(f"same output as the provider on {same}/{len(inputs)} inputs (info)")
    return outcomes


def bench_codec(min_seconds: float) -> list[Outcome]:
    inputs: tuple[Mapping[str, str], ...] = CODEC_INPUTS
    sets = f"{len(inputs)} task annotation sets with run_id"
    header(f"3. annotations_to_key ({sets}, best of {REPEATS})")

    ours_us = _loop_us(annotations_to_key, inputs, min_seconds)
    provider = _load_provider(PROVIDER_CODEC_MODULE, "annotations_to_key")
    # Takes a dict; returns Airflow's TaskInstanceKey, a named tuple of the same five fields.
    theirs = (
        None
        if provider is None
        else cast("Callable[[Mapping[str, str]], tuple[object, ...]]", provider)
    )
    provider_us = None
    if theirs is not None:
        provider_us = _loop_us(theirs, inputs, min_seconds)
    outcomes = _report_ratio("annotations_to_key", ours_us, provider_us)
    if theirs is not None:
        same = 0
        for pod_annotations in inputs:
            key = annotations_to_key(pod_annotations)
            if isinstance(key, TaskInstanceKey):
                same += key.as_tuple() == tuple(theirs(pod_annotations))
        print(f"same key as the provider on {same}/{len(inputs)} inputs (info)")
    return outcomes


UNIQUE_ID_TARGET = 3.0
# What a scheduler names: the same dag and task ids again and again (tries, map indexes,
# runs), a few long or non-ASCII ones among them.
UNIQUE_ID_INPUTS: tuple[tuple[str, str], ...] = (
    ("etl", "load"),
    ("daily_report_v2", "extract.customers"),
    ("ml_training", "train_model_gpu"),
    ("reporting", "send_email"),
    ("dag_" + "x" * 90, "task_" + "y" * 90),
    ("täglich_bericht", "lädt"),
)


def bench_unique_id(min_seconds: float) -> list[Outcome]:
    inputs = UNIQUE_ID_INPUTS
    header(f"4. create_unique_id ({len(inputs)} dag/task id pairs, best of {REPEATS})")

    def ours(pair: tuple[str, str]) -> str:
        return create_unique_id(*pair)

    ours_us = _loop_us(ours, inputs, min_seconds)
    print(f"ours      : {ours_us:8.3f} µs/call")
    provider = _load_provider(PROVIDER_UNIQUE_ID_MODULE, "create_unique_id")
    label = f"create_unique_id: provider / ours >= {UNIQUE_ID_TARGET:.0f}x"
    if provider is None:
        print(PROVIDER_MISSING)
        return [Outcome(f"{label} (provider not installed)", "SKIP")]
    theirs_function = cast("Callable[[str, str], str]", provider)

    def theirs(pair: tuple[str, str]) -> str:
        return theirs_function(*pair)

    provider_us = _loop_us(theirs, inputs, min_seconds)
    speedup = provider_us / ours_us
    passed = speedup >= UNIQUE_ID_TARGET
    print(f"provider  : {provider_us:8.3f} µs/call")
    print(f"speed-up  : {speedup:8.2f}x  (target: >= {UNIQUE_ID_TARGET:.0f}x)  {verdict(passed)}")
    same = sum(create_unique_id(*pair)[:-9] == theirs_function(*pair)[:-9] for pair in inputs)
    print(f"same name as the provider, random suffix aside, on {same}/{len(inputs)} (info)")
    return [Outcome.of(label, passed)]


# ------------------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> int:
    mode = parse_mode(
        "Print the foundation's performance targets as PASS/MISS (never fails).",
        "fewer subprocesses and shorter timing loops (noisier numbers)",
        argv,
    )
    import_runs = 5 if mode.quick else 15
    min_seconds = mode.min_seconds
    # No kubernetes version: nothing here needs kubernetes (target 1 checks it stays out).
    print_environment(mode, kubernetes=False)

    outcomes = [
        *bench_import(import_runs),
        *bench_labels(min_seconds),
        *bench_codec(min_seconds),
        *bench_unique_id(min_seconds),
    ]
    return summarize(outcomes)


if __name__ == "__main__":
    sys.exit(main())
