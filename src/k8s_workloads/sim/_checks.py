"""The simulator's checks on the executor: what it finds after each decision, after a
re-list and at the end of the run, each an :class:`~k8s_workloads.sim.report.Anomaly`
(``slot_leak``, ``lost_result``, ``false_adoption``, ``lost_in_resync``, ...).

The simulation knows what the executor cannot (which pods exist, what the database says,
who owns a pod): these checks compare the executor's decisions with that ground truth,
each given the part of it it reads, and write what they find to the run's
:class:`~k8s_workloads.sim._state.Journal`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from k8s_workloads.decisions.actions import EmitEvent, FreeSlot
from k8s_workloads.pods.labels import (
    AIRFLOW_WORKER_LABEL,
    POD_EXECUTOR_DONE_LABEL,
    TRUE_LABEL_VALUE,
)
from k8s_workloads.sim._state import describe_key, shorten
from k8s_workloads.sim.spec import is_terminal
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    TaskInstanceState,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.executor.requests import Handled
    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.sim._state import Journal, Live, PodRun, Scheduler
    from k8s_workloads.states import WorkloadResult
    from k8s_workloads.testing.cluster import FakeCluster
    from k8s_workloads.testing.database import FakeAirflowDB

__all__ = ["check", "check_adoption", "check_resync", "final_checks"]


def check(
    record: Handled,
    *,
    sched: Scheduler,
    by_key: Mapping[WorkloadKey, Live],
    db: FakeAirflowDB,
    cluster: FakeCluster,
    journal: Journal,
) -> None:
    """Hold the decision ``sched``'s core took (``record``) against the ground truth."""
    result = record.result
    live = by_key.get(record.key)
    if result is None or live is None:
        return
    decision = record.decision
    was_running = any(isinstance(action, FreeSlot) for action in decision.actions) or (
        sched.core.is_running(result.key)
    )
    if result.state is ExecutorPseudoState.COMPLETED:
        live.completed_by_adoption.add(result.pod_name)
        if isinstance(result, CallbackResult):
            reported = any(isinstance(action, EmitEvent) for action in decision.actions)
            state = db.state(result.key)
            if not reported and not is_terminal(state):
                journal.anomaly(
                    "completed_callback_not_reported",
                    f"callback pod {result.pod_name} Succeeded while no scheduler watched; "
                    f"adoption gave a COMPLETED result, the decision only cleans up "
                    f"({decision.reason}), so the callback stays "
                    f"{state.value if state else 'without state'} and never gets SUCCESS",
                    live,
                )
        return
    if result.state is ExecutorPseudoState.ADOPTED and any(
        isinstance(action, FreeSlot) for action in decision.actions
    ):
        check_adoption(result, live, label=sched.label, cluster=cluster, journal=journal)
    # Nothing performed: the decision only ignores the result.
    ignored = not decision.actions and decision.look_up is None and decision.retry is None
    known = db.state(result.key)
    if ignored and was_running and is_terminal(known) and live.terminal_events > 0:
        journal.anomaly(
            "slot_leak",
            f"{describe_key(result.key)} is in running but already "
            f"{known.value if known else '?'}; the decision for its pod {result.pod_name} "
            f"({result.state.value}) only ignores it "
            f"({shorten(decision.reason, result.key)}), so the slot is never freed",
            live,
        )
    final = result.state in {
        ExecutorPseudoState.LOOKUP,
        TaskInstanceState.FAILED,
        TaskInstanceState.SUCCESS,
        CallbackState.FAILED,
        CallbackState.SUCCESS,
    }
    current_pod = bool(live.pods) and live.pods[-1] == result.pod_name
    if (
        final
        and ignored
        and not was_running
        and current_pod
        and live.terminal_events == 0
        and result.pod_name not in live.completed_by_adoption
        and not live.lost_reported
    ):
        live.lost_reported = True
        journal.anomaly(
            "lost_result",
            f"the only final result of {describe_key(result.key)} (pod "
            f"{result.pod_name}: {result.state.value}) was ignored: the key is not in "
            f"running ({shorten(decision.reason, result.key)})",
            live,
        )


def check_adoption(
    result: WorkloadResult, live: Live, *, label: str, cluster: FakeCluster, journal: Journal
) -> None:
    """An ADOPTED result freed a slot: an anomaly unless another scheduler than the one
    whose worker label is ``label`` owns the pod now."""
    pod = cluster.pod(result.namespace, result.pod_name, copy=False)
    labels = pod["metadata"]["labels"] if pod is not None else {}
    if pod is not None and labels.get(AIRFLOW_WORKER_LABEL) != label:
        return  # another scheduler owns it now: a real adoption
    cause = (
        "the pod stopped matching the watch selector when the executor patched "
        f"{POD_EXECUTOR_DONE_LABEL}=True on it"
        if labels.get(POD_EXECUTOR_DONE_LABEL) == TRUE_LABEL_VALUE
        else "the pod stopped matching the watch selector"
    )
    where = "still owned by this scheduler" if pod else "gone"
    journal.anomaly(
        "false_adoption",
        f"an ADOPTED result for pod {result.pod_name} (DELETED without a "
        f"deletionTimestamp: {cause}; the pod is {where}) freed the slot of "
        f"{describe_key(result.key)}, which no other scheduler owns",
        live,
    )


def check_resync(
    core: ExecutorCore,
    *,
    cluster: FakeCluster,
    runs: Mapping[tuple[str, str], PodRun],
    by_key: Mapping[WorkloadKey, Live],
    journal: Journal,
) -> None:
    """After a re-list: each key ``core`` has running needs a pod (``runs``: every pod the
    kubelet plays, by namespace and name) or a place in its queue."""
    # Ground truth the executor does not have: which running keys have no pod left.
    with_pods = {
        runs[pod["metadata"]["namespace"], pod["metadata"]["name"]].key
        for pod in cluster.pods(copy=False)
        if (pod["metadata"]["namespace"], pod["metadata"]["name"]) in runs
    }
    waiting = {job.key for job in core.queued}
    for key in core.running:
        if key in with_pods or key in waiting:
            continue
        journal.anomaly(
            "lost_in_resync",
            f"{describe_key(key)} is in running but its pod is gone: its final events "
            "were among those the 410 lost, and the re-list only shows pods that exist, "
            "so nothing will ever report it",
            by_key.get(key),
        )


def final_checks(
    core: ExecutorCore | None,
    *,
    workloads: Sequence[Live],
    by_key: Mapping[WorkloadKey, Live],
    db: FakeAirflowDB,
    journal: Journal,
) -> None:
    """At the end: what ``core`` (None: no scheduler runs) still holds, and each
    workload's end state in ``db``."""
    if core is not None:
        for key in core.running:
            live = by_key.get(key)
            journal.anomaly(
                "left_running", f"{describe_key(key)} is still in running at the end", live
            )
        for key, attempt in core.attempts.records.items():
            live = by_key.get(key)
            if core.is_running(key) or live is None:
                continue
            journal.anomaly(
                "attempt_record_leak",
                f"the executor's attempt record of {describe_key(key)} (attempts "
                f"{attempt.attempts}) outlives the workload: no decision removed it",
                live,
            )
    for live in workloads:
        state = db.state(live.key)
        shown = state.value if state is not None else "no state"
        if not is_terminal(state):
            journal.anomaly(
                "unfinished",
                f"{describe_key(live.key)} ended {shown}: never reached a final state "
                f"({live.terminal_events} final events)",
                live,
            )
        expected = live.spec.expect
        if expected is not None and state is not expected:
            journal.anomaly(
                "unexpected_end_state",
                f"{describe_key(live.key)} ended {shown}, expected {expected.value}",
                live,
            )
