"""Executor-loop benchmarks: the whole ExecutorCore loop per watch event, at scale.

    .venv-airflow/bin/python benchmarks/bench_executor.py   # with the provider comparison
    .venv/bin/python benchmarks/bench_executor.py           # ours only (the comparison SKIPs)
    ... bench_executor.py --quick                           # smaller sizes, shorter loops

Every target is a ratio against a baseline measured in the same run; nothing asserts on
timing (each target prints PASS or MISS and the script exits 0).

The events are the task pod of ``bench_events`` as the API server sends it (template,
override, ``managedFields``, a full status), one pod per workload (its task id and name
varied), three events per workload: MODIFIED Running, MODIFIED Succeeded and, after the
executor deleted it, DELETED. They arrive as JSON lines.

Targets:

1. **The whole loop vs the provider's.** Ours: ``ExecutorCore.feed_event(line)`` for every
   event and, every 50 events (a ``sync()``), ``next_request`` until ``NothingToDo``,
   answering ``ReadStates`` from a dict and performing nothing else (no I/O on either
   side). The provider's: for the same lines, what its watcher and executor do per event:
   ``Watch.unmarshal_event(line, "V1Pod")``, ``KubernetesJobWatcher.process_status`` as
   ``_run`` calls it (onto its ``multiprocessing.Manager`` watcher queue, as the provider
   makes it), then the scheduler side: ``annotations_to_key``, the result queue (a manager
   queue too) and ``KubernetesExecutor._change_state`` (its task-instance read patched to
   a dict look-up, its pod calls doing nothing). Times are this process's CPU time: the
   manager process's share of the provider's work is not counted (a bias in its favour).
   Target: the provider's time per event / ours **>= 50**.
2. **Scale.** Our time per event for the same 1,000 workloads' events, with 100,000 other
   workloads in flight (10,000 with ``--quick``) against 1,000: ratio **<= 1.3**.
3. **Memory.** (a) Traced memory of a core per workload in flight, 100,000 against 10,000
   workloads (10,000 / 1,000 with ``--quick``): ratio **<= 1.2** (linear). (b) Handling
   1,000,000 events (100,000 with ``--quick``) that leave the in-flight count unchanged
   (callback RUNNING events read as "already running", task Running events) grows traced
   memory by **< 64 KiB** after the first 10,000.
"""

from __future__ import annotations

import datetime
import gc
import json
import sys
import time
import tracemalloc
import uuid
from typing import TYPE_CHECKING, Any

from _harness import (
    POD_ID,
    TASK_ID,
    TIMES,
    Outcome,
    header,
    parse_mode,
    print_environment,
    summarize,
    traced_growth,
    verdict,
)
from _provider_watch import provider_executor, provider_modules, provider_watcher, watch_report
from bench_events import STATUSES, stored_pod

from k8s_workloads import (
    CallbackKey,
    CallbackState,
    ExecutorConfig,
    ExecutorCore,
    KubernetesJob,
    NothingToDo,
    ReadStates,
    TaskInstanceKey,
    TaskInstanceState,
    WorkloadKey,
)
from k8s_workloads.pods import construct_callback_pod

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

NOW = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)
SYNC_EVERY = 50
SPEEDUP_TARGET = 50.0
SCALE_TARGET = 1.3
LINEAR_TARGET = 1.2
GROWTH_BUDGET = 64 * 1024
MEASURED_WORKLOADS = 1_000
WHOLE_LOOP = f"whole loop >= {SPEEDUP_TARGET:.0f}{TIMES} the provider's"
DAG = "warehouse_daily"
RUN = "scheduled__2026-06-07T00:00:00+00:00"


def _task_key(index: int) -> TaskInstanceKey:
    return TaskInstanceKey(DAG, f"t{index:06d}", RUN, 1)


def _templates() -> dict[str, str]:
    """Each event's JSON text, with the task id and pod name left to fill in."""
    texts: dict[str, str] = {}
    for name, status_name in (("running", "Running"), ("succeeded", "Succeeded")):
        pod = stored_pod(STATUSES[status_name])
        texts[name] = json.dumps({"type": "MODIFIED", "object": pod}, separators=(",", ":"))
    gone = stored_pod(STATUSES["Succeeded"])
    gone["metadata"]["deletionTimestamp"] = "2026-06-07T00:15:00Z"
    texts["deleted"] = json.dumps({"type": "DELETED", "object": gone}, separators=(",", ":"))
    return texts


TEXTS = _templates()


def _line(kind: str, index: int, version: int) -> str:
    text = TEXTS[kind].replace(POD_ID, f"pod-{index:06d}").replace(TASK_ID, f"t{index:06d}")
    return text.replace('"resourceVersion":"48213977"', f'"resourceVersion":"{version}"')


def workload_lines(first: int, count: int) -> list[str]:
    """Three events per workload, workload by workload: Running, Succeeded, DELETED."""
    lines: list[str] = []
    version = 1_000_000
    for index in range(first, first + count):
        for kind in ("running", "succeeded", "deleted"):
            version += 1
            lines.append(_line(kind, index, version))
    return lines


# ----------------------------------------------------------------------------- ours


def _core(in_flight: int, measured: int) -> ExecutorCore:
    """A core running ``in_flight + measured`` tasks whose pods were all created."""
    core = ExecutorCore(
        ExecutorConfig(
            scheduler_id="4217",
            namespace="airflow",
            airflow_version="3.3.2",
            kube_image="airflow:3.3.2",
            creation_batch_size=in_flight + measured + 1,
        )
    )
    for index in range(in_flight + measured):
        core.submit(KubernetesJob(_task_key(index), ("python", "-m", "x")))
    drain(core, {})  # every CreatePod "succeeds"
    return core


def drain(core: ExecutorCore, states: dict[WorkloadKey, Any]) -> int:
    count = 0
    while not isinstance(request := core.next_request(NOW), NothingToDo):
        count += 1
        if isinstance(request, ReadStates):
            core.states_read(request, {key: states.get(key) for key in request.keys})
    return count


def run_ours(core: ExecutorCore, lines: Sequence[str], states: dict[WorkloadKey, Any]) -> None:
    for start in range(0, len(lines), SYNC_EVERY):
        for line in lines[start : start + SYNC_EVERY]:
            core.feed_event(line, now=NOW)
        drain(core, states)


def time_ours(in_flight: int) -> float:
    """µs per event for the measured workloads' events with ``in_flight`` others running."""
    best = float("inf")
    first = in_flight  # the measured workloads come after the others
    lines = workload_lines(first, MEASURED_WORKLOADS)
    measured = range(first, first + MEASURED_WORKLOADS)
    states: dict[WorkloadKey, Any] = {_task_key(i): TaskInstanceState.SUCCESS for i in measured}
    for _ in range(3):
        core = _core(in_flight, MEASURED_WORKLOADS)
        gc.collect()
        started = time.process_time()
        run_ours(core, lines, states)
        elapsed = time.process_time() - started
        assert len(core.running) == in_flight, "the measured workloads did not all finish"
        best = min(best, elapsed / len(lines) * 1e6)
    return best


# ------------------------------------------------------------------------- provider


def provider_path() -> Callable[[Sequence[str]], int] | None:
    """The provider's per-event path (watcher + scheduler + executor), or None here."""
    modules = provider_modules()
    if modules is None:
        return None
    import multiprocessing  # noqa: PLC0415

    manager = multiprocessing.Manager()
    watcher = provider_watcher(modules, manager)
    executor = provider_executor(modules, manager)
    result_queue = manager.Queue()
    helpers, results_type = modules["helpers"], modules["types"].KubernetesResults
    watch: Any = modules["watch"].Watch()
    session = object()

    def run(lines: Sequence[str]) -> int:
        executor.running = {
            helpers.annotations_to_key(
                {"dag_id": DAG, "task_id": f"t{index:06d}", "run_id": RUN, "try_number": "1"}
            )
            for index in range(len(lines) // 3)
        }
        reported = 0
        for line in lines:
            event = watch.unmarshal_event(line, "V1Pod")
            watcher.process_status(**watch_report(event["object"]), event=event)
            while not watcher.watcher_queue.empty():  # the scheduler's process_watcher_task
                found = watcher.watcher_queue.get_nowait()
                key = helpers.annotations_to_key(found.annotations)
                result_queue.put(results_type(
                    key, found.state, found.pod_name, found.namespace,
                    found.resource_version, found.failure_details,
                ))  # fmt: skip
                watcher.watcher_queue.task_done()
            while not result_queue.empty():  # the executor's sync
                executor._change_state(result_queue.get_nowait(), session=session)  # noqa: SLF001
                result_queue.task_done()
                reported += 1
        return reported

    return run


def time_provider(run: Callable[[Sequence[str]], int], lines: Sequence[str]) -> float:
    best = float("inf")
    for _ in range(3):
        gc.collect()
        started = time.process_time()
        run(lines)
        best = min(best, (time.process_time() - started) / len(lines) * 1e6)
    return best


# ----------------------------------------------------------------------------- memory


def core_bytes(in_flight: int) -> float:
    """Traced bytes per workload of a core with ``in_flight`` created workloads."""
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        core = _core(in_flight, 0)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(core.running) == in_flight
    return (after - before) / in_flight


def steady_lines(count: int) -> list[str]:
    """Events that leave the in-flight count alone: task Running, callback Running."""
    callback_pod = construct_callback_pod(
        callback_id=str(uuid.UUID(int=1)),
        namespace="airflow",
        scheduler_job_id="4217",
        kube_image="airflow:3.3.2",
        args=["python", "-m", "x"],
        airflow_version="3.3.2",
        pod_id="callback-00000000-abcdefgh",
    )
    callback_pod["status"] = STATUSES["Running"]
    callback_pod["metadata"]["resourceVersion"] = "7"
    callback_text = json.dumps({"type": "MODIFIED", "object": callback_pod})
    lines = []
    for index in range(count):
        if index % 2:
            lines.append(_line("running", index % 1_000, 2_000_000 + index))
        else:
            number = index % 1_000 + 1
            lines.append(callback_text.replace(str(uuid.UUID(int=1)), str(uuid.UUID(int=number))))
    return lines


def bench_memory(events: int, small: int, large: int) -> list[Outcome]:
    header("3. Memory")
    per_small, per_large = core_bytes(small), core_bytes(large)
    ratio = per_large / per_small
    passed = ratio <= LINEAR_TARGET
    print(f"  bytes per workload in flight, {small:,}: {per_small:10,.0f} B")
    print(f"  bytes per workload in flight, {large:,}: {per_large:10,.0f} B")
    print(f"  ratio: {ratio:.2f} (target: <= {LINEAR_TARGET})  {verdict(passed)}")
    outcomes = [Outcome.of(f"memory per workload linear ({large:,} vs {small:,})", passed)]

    core = _core(1_000, 0)
    for number in range(1, 1_001):
        core.submit(KubernetesJob(CallbackKey(str(uuid.UUID(int=number))), ("x",)))
    drain(core, {})
    states: dict[WorkloadKey, Any] = {
        CallbackKey(str(uuid.UUID(int=number))): CallbackState.RUNNING for number in range(1, 1_001)
    }
    block = steady_lines(10_000)

    def handle(count: int) -> None:
        for _ in range(count // len(block)):
            run_ours(core, block, states)

    print(f"  {events:,} events, the in-flight count unchanged:")
    grew = traced_growth(
        lambda: handle(10_000),
        lambda: handle(events - 10_000),
        budget_bytes=GROWTH_BUDGET,
        labels=("after 10,000 events", f"after {events:,} events", "peak"),
        peak_over="the first level",
        indent="    ",
        width=22,
    )
    assert len(core.running) == 2_000
    outcomes.append(Outcome.of(f"memory flat over {events:,} events", grew))
    return outcomes


# ------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    mode = parse_mode(
        "Print the executor-loop targets as PASS/MISS (never fails).",
        "10,000 workloads in flight, 100,000 events for memory (noisier numbers)",
        argv,
    )
    large = 10_000 if mode.quick else 100_000
    events = 100_000 if mode.quick else 1_000_000
    print_environment(mode)
    outcomes: list[Outcome] = []

    header("1. The whole loop per event, ours vs the provider's watcher + _change_state")
    lines = workload_lines(0, MEASURED_WORKLOADS)
    ours = time_ours(0)
    print(f"  ours (feed_event + next_request), 1,000 workloads: {ours:8.2f} µs/event")
    run = provider_path()
    if run is None:
        print("  provider: not installed here (run with .venv-airflow/bin/python)")
        outcomes.append(Outcome.of(WHOLE_LOOP, None))
    else:
        theirs = time_provider(run, lines)
        speedup = theirs / ours
        passed = speedup >= SPEEDUP_TARGET
        print(f"  provider (unmarshal + process_status + _change_state): {theirs:8.2f} µs/event")
        target = f"(target: >= {SPEEDUP_TARGET:.0f})"
        print(f"  speed-up: {speedup:.1f}{TIMES} {target}  {verdict(passed)}")
        outcomes.append(Outcome.of(WHOLE_LOOP, passed))

    header("2. Per-event cost with many workloads in flight")
    small_us = time_ours(1_000)
    large_us = time_ours(large)
    ratio = large_us / small_us
    passed = ratio <= SCALE_TARGET
    print(f"  1,000 in flight: {small_us:8.2f} µs/event")
    print(f"  {large:,} in flight: {large_us:8.2f} µs/event")
    print(f"  ratio: {ratio:.2f} (target: <= {SCALE_TARGET})  {verdict(passed)}")
    outcomes.append(Outcome.of(f"per-event cost at {large:,} in flight <= {SCALE_TARGET}x", passed))

    outcomes.extend(bench_memory(events, large // 10, large))
    return summarize(outcomes)


if __name__ == "__main__":
    sys.exit(main())
