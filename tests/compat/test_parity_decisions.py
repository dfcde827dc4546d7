"""Parity of task result handling with the released provider (10.25.0).

``decide_task`` is run next to the provider's ``KubernetesExecutor._change_state`` on the
same result, configuration, running set, attempt record and database state. The provider's
executor is built without starting it (``KubernetesExecutor.__new__``, then only the
attributes ``_change_state`` reads); its kube scheduler and task queue are recording fakes,
``_get_task_instance_state`` is patched to return the generated database state and the
session is a sentinel, so nothing touches Kubernetes or a database. Our
:class:`LookUpState` is answered by deciding again with the same database state.

Both sides are reduced to the same effects: the events written (state only: the info text
differs by design), pods deleted, pods patched ``airflow_executor_done=True``, jobs
requeued, whether the key is still in ``running``, and the attempt record left for the key.
They must be equal except for these documented deliberate differences, each asserted
precisely (``_expected_provider_effects`` and ``check``):

* (a) a terminal result (Failed, Succeeded) for a key not in ``running``: the provider
  still deletes or patches the pod (and drops the attempt record), ours does nothing;
* (b) with the defaults (``delete_worker_pods=True``,
  ``delete_worker_pods_on_failure=False``) a Failed pod: the provider leaves it, ours
  patches the done label (``mark_kept_failed_pods_done=True``; with False ours matches);
* (c) a duplicate Failed for a pod whose failure was already requeued: the provider
  deletes or patches it again before ignoring it, ours ignores it without cleanup;
* (d) a Succeeded result whose task instance has no state in the database: the provider
  writes ``(None, info)`` to the event buffer, ours emits nothing.

Differences outside that list, found by this module and pinned so that they stay visible
(the provider's behaviour is asserted as it is, not endorsed):

* (e) a duplicate Failed for an already-requeued pod that is *not* a pre-execution failure
  (the database state is not QUEUED, or the container reason is excluded, e.g. ``Error``):
  the provider cleans the pod up, drops the record, frees the slot and reports the task
  FAILED — for a key whose requeued pod may be running fine; ours ignores it as a
  duplicate, as in (c);
* (f) a pre-execution Failed for a key not in ``running`` that still has an attempt
  record: the provider requeues the job (and counts the attempt) for a key it no longer
  tracks, or, for an already-requeued pod, keeps the record; ours does nothing, as in (a);
* (g) an adopted completed pod (``"completed"``): both only clean the pod up, but the
  provider also drops the attempt record and, when the key is in ``running``, frees the
  slot and writes the string ``"completed"`` to the event buffer as the task's state; ours
  leaves the slot, the record and the events alone.

* (h) an ADOPTED result (DELETED without a deletion timestamp) for the pod whose failure
  was requeued: that pod leaves the watch when it is labelled done, so this is not an
  adoption; the provider frees the slot (and drops the record) of the relaunched pod,
  whose result it then ignores as a duplicate; ours changes nothing.

A deliberate difference that is not the provider's doing:

* (i) a Failed result of a pod that is still Pending (a container waiting for a reason
  that does not pass: a failed pull): ours deletes the pod whatever the options say, as
  kept it would start once its cause passed and run the task again; the provider keeps
  it (``delete_worker_pods_on_failure`` off) or labels it done (``delete_worker_pods``
  off). Everything else is the same.

Ours also never reads the database where the provider does not (``lookups``).

The module runs only where the provider is importable (``.venv-airflow``).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import types
from typing import TYPE_CHECKING, Literal, TypeAlias

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "airflow.providers.cncf.kubernetes.executors.kubernetes_executor",
    reason="provider parity runs in the Airflow environment (.venv-airflow)",
)

from airflow.models.taskinstancekey import TaskInstanceKey as AirflowKey
from airflow.providers.cncf.kubernetes.executors import kubernetes_executor as provider
from airflow.providers.cncf.kubernetes.executors.kubernetes_executor_types import ADOPTED
from airflow.utils.state import TaskInstanceState as AirflowState

from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions import decide_task
from k8s_workloads.decisions.actions import (
    DeletePod,
    EmitEvent,
    FreeSlot,
    LookUpState,
    PatchLabels,
    RequeueJob,
)
from k8s_workloads.decisions.attempts import Attempt, Attempts
from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.pods.labels import POD_EXECUTOR_DONE_LABEL, TRUE_LABEL_VALUE
from k8s_workloads.states import (
    ExecutorPseudoState,
    FailureDetails,
    KubernetesJob,
    TaskInstanceState,
    TaskResult,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.parity

ResultKind: TypeAlias = Literal["failed", "succeeded", "adopted", "running", "completed"]
RESULT_KINDS: tuple[ResultKind, ...] = ("failed", "succeeded", "adopted", "running", "completed")
CONTAINER_REASONS = (None, "Error", "OOMKilled", "ErrImagePull")
DB_STATES = (
    None,
    TaskInstanceState.QUEUED,
    TaskInstanceState.RUNNING,
    TaskInstanceState.SUCCESS,
    TaskInstanceState.FAILED,
)
DEFAULT_EXCLUDED = frozenset({"Error"})

KEY = TaskInstanceKey("warehouse_daily", "aggregate_orders", "scheduled__2026-06-07", 1)
POD = "warehouse-daily-aggregate-orders-k3j9x2pq"
OTHER_POD = "warehouse-daily-aggregate-orders-7c1mz0aa"
NAMESPACE = "airflow"
COMMAND = ("python", "-m", "airflow.sdk.execution_time.execute_workload", "--json-string", "{}")

_OURS_STATE: dict[ResultKind, TaskInstanceState | ExecutorPseudoState] = {
    "failed": TaskInstanceState.FAILED,
    "succeeded": ExecutorPseudoState.LOOKUP,
    "adopted": ExecutorPseudoState.ADOPTED,
    "running": TaskInstanceState.RUNNING,
    "completed": ExecutorPseudoState.COMPLETED,
}
_PROVIDER_STATE: dict[ResultKind, AirflowState | str | None] = {
    "failed": AirflowState.FAILED,
    "succeeded": None,
    "adopted": ADOPTED,
    "running": AirflowState.RUNNING,
    "completed": "completed",
}

_QUIET = logging.getLogger("tests.compat.test_parity_decisions.provider")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
_QUIET.setLevel(logging.CRITICAL + 1)

KeyFields: TypeAlias = tuple[str, str, str | None, int, int]
Record: TypeAlias = tuple[int, str | None]
"""An attempt record as (attempts, requeued_for_pod)."""

# --------------------------------------------------------------------------------------
# Inputs and effects


@dataclasses.dataclass(frozen=True)
class Case:
    """One result with everything the executor knows when it handles it."""

    kind: ResultKind
    failure_details: FailureDetails | None
    delete_worker_pods: bool = True
    delete_worker_pods_on_failure: bool = False
    retries: int = 1
    excluded: frozenset[str] = DEFAULT_EXCLUDED
    running: bool = True
    record: Record | None = None
    db_state: TaskInstanceState | None = TaskInstanceState.QUEUED
    key: TaskInstanceKey = KEY
    pod_name: str = POD
    namespace: str = NAMESPACE

    @property
    def pre_execution(self) -> bool:
        """The provider's ``_is_pre_execution_failure`` on this case."""
        if self.kind != "failed" or self.db_state is not TaskInstanceState.QUEUED:
            return False
        reason = (self.failure_details or {}).get("container_reason")
        return not (reason and reason in self.excluded)

    @property
    def requeue_tracked(self) -> bool:
        """A Failed with an attempt record while requeueing is on: the requeue rule applies."""
        return self.kind == "failed" and self.record is not None and self.retries != 0

    @property
    def duplicate(self) -> bool:
        """The attempt record says this very pod's failure was requeued already."""
        return self.record is not None and self.record[1] == self.pod_name

    @property
    def may_retry(self) -> bool:
        return self.record is not None and (self.retries == -1 or self.record[0] < self.retries)


@dataclasses.dataclass(frozen=True)
class Effects:
    """What handling one result did, reduced to what both executors can be compared on."""

    events: tuple[tuple[KeyFields, str | None], ...] = ()
    deleted: tuple[tuple[str, str], ...] = ()
    patched_done: tuple[tuple[str, str], ...] = ()
    requeued: tuple[KeyFields, ...] = ()
    running: bool = False
    record: Record | None = None
    lookups: int = dataclasses.field(default=0, compare=False)
    """Database look-ups: not an effect, compared separately (ours never asks more)."""


def _provider_key(key: TaskInstanceKey) -> AirflowKey:
    dag_id, task_id, run_id, try_number, map_index = key.as_tuple()
    assert run_id is not None
    return AirflowKey(dag_id, task_id, run_id, try_number, map_index)


def _state_value(state: object) -> str | None:
    if state is None:
        return None
    value = getattr(state, "value", state)
    assert isinstance(value, str)
    return value


class RecordingScheduler:
    """The two kube scheduler calls ``_change_state`` makes, recorded."""

    def __init__(self) -> None:
        self.deleted: list[tuple[str, str]] = []
        self.patched_done: list[tuple[str, str]] = []

    def delete_pod(self, *, pod_name: str, namespace: str) -> None:
        self.deleted.append((pod_name, namespace))

    def patch_pod_executor_done(self, *, pod_name: str, namespace: str) -> None:
        self.patched_done.append((pod_name, namespace))


class RecordingQueue:
    """The task queue: jobs put back for pod creation, recorded."""

    def __init__(self) -> None:
        self.jobs: list[provider.KubernetesJob] = []

    def put(self, job: provider.KubernetesJob) -> None:
        self.jobs.append(job)


class UnstartedExecutor(provider.KubernetesExecutor):
    """The provider's executor with its database read patched to the generated state.

    Never instantiated through ``__init__`` (which reads the Airflow configuration): built
    with ``__new__`` and given only what ``_change_state`` reads.
    """

    db_state: AirflowState | None
    lookups: int

    def _get_task_instance_state(self, _key: AirflowKey, *, session: object) -> AirflowState | None:
        assert session is _SESSION
        self.lookups += 1
        return self.db_state


_SESSION = object()
"""Stands in for the database session ``provide_session`` would open."""


def run_provider(case: Case) -> Effects:
    key = _provider_key(case.key)
    scheduler = RecordingScheduler()
    queue = RecordingQueue()
    job = provider.KubernetesJob(key, COMMAND, None, None)
    executor = UnstartedExecutor.__new__(UnstartedExecutor)
    executor.supports_task_instance_uuid = False
    executor._log = _QUIET
    executor.kube_config = types.SimpleNamespace(
        delete_worker_pods=case.delete_worker_pods,
        delete_worker_pods_on_failure=case.delete_worker_pods_on_failure,
    )
    executor.kube_scheduler = scheduler
    executor.task_queue = queue
    executor.running = {key} if case.running else set()
    executor.event_buffer = {}
    executor.pod_launch_attempts = (
        {key: provider._PodLaunchAttempt(job, case.record[0], case.record[1])}
        if case.record is not None
        else {}
    )
    executor.pod_launch_failure_max_retries = case.retries
    executor.pod_launch_failure_excluded_container_reasons = case.excluded
    executor.db_state = AirflowState(case.db_state.value) if case.db_state is not None else None
    executor.lookups = 0
    result = provider.KubernetesResults(
        key, _PROVIDER_STATE[case.kind], case.pod_name, case.namespace, "4711",
        case.failure_details,
    )  # fmt: skip
    executor._change_state(result, session=_SESSION)
    assert set(executor.event_buffer) <= {key}
    assert all(queued is job for queued in queue.jobs)
    attempt = executor.pod_launch_attempts.get(key)
    return Effects(
        events=tuple(
            (case.key.as_tuple(), _state_value(state))
            for state, _info in executor.event_buffer.values()
        ),
        deleted=tuple(scheduler.deleted),
        patched_done=tuple(scheduler.patched_done),
        requeued=tuple(case.key.as_tuple() for _ in queue.jobs),
        running=key in executor.running,
        record=(attempt.attempts, attempt.requeued_for_pod) if attempt is not None else None,
        lookups=executor.lookups,
    )


def run_ours(case: Case, *, mark_kept_failed_pods_done: bool) -> Effects:
    config = DecisionConfig(
        delete_worker_pods=case.delete_worker_pods,
        delete_worker_pods_on_failure=case.delete_worker_pods_on_failure,
        mark_kept_failed_pods_done=mark_kept_failed_pods_done,
        pod_launch_failure_retries=case.retries,
        pod_launch_failure_excluded_container_reasons=case.excluded,
    )
    job = KubernetesJob(case.key, COMMAND)
    attempts = (
        Attempts({case.key: Attempt(job, case.record[0], case.record[1])})
        if case.record is not None
        else Attempts()
    )
    result = TaskResult(
        case.key, _OURS_STATE[case.kind], case.pod_name, case.namespace, "4711",
        case.failure_details,
    )  # fmt: skip
    decision = decide_task(result, running=case.running, config=config, attempts=attempts)
    lookups = 0
    if decision.look_up is not None:
        # A look-up comes alone, changes nothing, and is answered once.
        lookup = decision.look_up
        assert isinstance(lookup, LookUpState)
        assert decision.actions == ()
        assert decision.ignored is None
        assert lookup.key == case.key
        assert decision.attempts == attempts
        lookups = 1
        decision = decide_task(
            result, running=case.running, config=config, attempts=attempts,
            ti_state=case.db_state,
        )  # fmt: skip
        assert decision.look_up is None

    events: list[tuple[KeyFields, str | None]] = []
    deleted: list[tuple[str, str]] = []
    patched: list[tuple[str, str]] = []
    requeued: list[KeyFields] = []
    running = case.running
    for action in decision.actions:
        if isinstance(action, EmitEvent):
            assert action.key == case.key
            events.append((case.key.as_tuple(), _state_value(action.state)))
        elif isinstance(action, DeletePod):
            deleted.append((action.pod_name, action.namespace))
        elif isinstance(action, PatchLabels):
            assert action.labels == {POD_EXECUTOR_DONE_LABEL: TRUE_LABEL_VALUE}
            patched.append((action.pod_name, action.namespace))
        elif isinstance(action, RequeueJob):
            assert action.job == job
            requeued.append(action.job.key.as_tuple())
        elif isinstance(action, FreeSlot):
            assert action.key == case.key
            running = False
        else:
            pytest.fail(f"not a decision action: {action!r}")
    attempt = decision.attempts.get(case.key)
    assert set(decision.attempts.records) <= {case.key}
    return Effects(
        events=tuple(events),
        deleted=tuple(deleted),
        patched_done=tuple(patched),
        requeued=tuple(requeued),
        running=running,
        record=(attempt.attempts, attempt.requeued_for_pod) if attempt is not None else None,
        lookups=lookups,
    )


# --------------------------------------------------------------------------------------
# The differences, as the provider's effects derived from ours


def _provider_cleanup(case: Case) -> Effects:
    """The delete-or-patch the provider does for every result but Running and adopted."""
    pod = ((case.pod_name, case.namespace),)
    if not case.delete_worker_pods:
        return Effects(patched_done=pod)
    if case.kind != "failed" or case.delete_worker_pods_on_failure:
        return Effects(deleted=pod)
    return Effects()


def _waiting(case: Case) -> bool:
    """A failure of a pod that is still Pending."""
    return case.kind == "failed" and (case.failure_details or {}).get("pod_status") == "Pending"


def difference(case: Case) -> str | None:
    """Which difference applies to ``case`` (ours with mark_kept_failed_pods_done=False)."""
    if case.kind == "completed":
        return "g" if case.running or case.record is not None else None
    if case.kind == "adopted":
        return "h" if case.record is not None and case.record[1] == case.pod_name else None
    if case.kind not in {"failed", "succeeded"}:
        return None
    if not case.running:
        return "f" if case.requeue_tracked and case.pre_execution else "a"
    if case.requeue_tracked and case.duplicate:
        return "c" if case.pre_execution else "e"
    if case.kind == "succeeded" and case.db_state is None:
        return "d"
    if _waiting(case) and not (case.delete_worker_pods and case.delete_worker_pods_on_failure):
        return "i"
    return None


def _expected_provider_effects(case: Case, ours: Effects) -> Effects:
    """The provider's effects, from ours and the difference that applies."""
    which = difference(case)
    me = case.key.as_tuple()
    cleanup = _provider_cleanup(case)  # not running, no record: set below where it differs
    if which is None:
        return ours
    if which == "a":
        # Ours: nothing at all. The provider: the cleanup, and the record is dropped.
        assert ours == Effects(running=False, record=case.record)
        return cleanup
    if which == "f":
        assert ours == Effects(running=False, record=case.record)
        assert case.record is not None
        if case.duplicate:  # the provider's duplicate rule: cleanup, keep the record
            return dataclasses.replace(cleanup, record=case.record)
        if case.may_retry:  # a requeue for a key that is not running
            counted = (case.record[0] + 1, case.pod_name)
            return dataclasses.replace(cleanup, requeued=(me,), record=counted)
        return cleanup
    if which == "c":
        # Both ignore the duplicate: the key stays running, the record is unchanged.
        assert ours == Effects(running=True, record=case.record)
        return dataclasses.replace(cleanup, running=True, record=case.record)
    if which == "e":
        assert ours == Effects(running=True, record=case.record)
        return dataclasses.replace(cleanup, events=((me, TaskInstanceState.FAILED.value),))
    if which == "d":
        assert ours.events == ()
        return dataclasses.replace(ours, events=((me, None),))
    if which == "i":
        # Ours deletes the pod; the provider keeps it, or labels it done.
        pod = ((case.pod_name, case.namespace),)
        assert ours.deleted == pod
        assert ours.patched_done == ()
        return dataclasses.replace(ours, deleted=(), patched_done=cleanup.patched_done)
    if which == "h":
        # Ours: the requeued workload's old pod leaving the watch changes nothing. The
        # provider: frees the slot of the relaunched pod and drops the record.
        assert ours == Effects(running=case.running, record=case.record)
        return Effects(running=False, record=None)
    assert which == "g"
    assert ours == dataclasses.replace(cleanup, running=case.running, record=case.record)
    return dataclasses.replace(cleanup, events=((me, "completed"),) if case.running else ())


def _kept_failed_pod_is_patched(case: Case) -> bool:
    """(b): ours, with mark_kept_failed_pods_done=True, labels the kept failed pod done."""
    return (
        case.kind == "failed"
        and case.running
        and case.delete_worker_pods
        and not case.delete_worker_pods_on_failure
        and not (case.requeue_tracked and case.duplicate)
        and not _waiting(case)  # (i): deleted
    )


def check(case: Case) -> str | None:
    """Run both on ``case``, assert the expected relation; return the difference's letter."""
    theirs = run_provider(case)
    strict = run_ours(case, mark_kept_failed_pods_done=False)
    default = run_ours(case, mark_kept_failed_pods_done=True)

    expected_default = strict
    if _kept_failed_pod_is_patched(case):
        assert strict.patched_done == ()
        expected_default = dataclasses.replace(
            strict, patched_done=((case.pod_name, case.namespace),)
        )
    assert default == expected_default, case
    assert default.lookups == strict.lookups, case

    assert theirs == _expected_provider_effects(case, strict), case
    assert strict.lookups <= theirs.lookups, case
    return difference(case)


# --------------------------------------------------------------------------------------
# Exhaustive over a small domain, then generated over a wider one


def _details(reason: str | None) -> FailureDetails:
    details: FailureDetails = {
        "pod_status": "Failed",
        "pod_reason": None,
        "pod_message": None,
        "container_state": "terminated",
        "container_reason": reason,
        "container_message": None,
        "exit_code": 137 if reason == "OOMKilled" else 1,
        "container_type": "main",
        "container_name": "base",
    }
    if reason == "ErrImagePull":
        details["pod_status"] = "Pending"
        details["container_state"] = "waiting"
        details["exit_code"] = None
    return details


def _records() -> Iterator[Record | None]:
    yield None
    for attempts in range(3):
        yield (attempts, None)
        if attempts:  # a pod the record names was requeued, so at least one attempt counted
            yield (attempts, POD)
            yield (attempts, OTHER_POD)


def all_cases() -> Iterator[Case]:
    """The small domain; failure details only vary for Failed results."""
    failed_details: list[FailureDetails | None] = [None, {}, *map(_details, CONTAINER_REASONS)]
    for kind in RESULT_KINDS:
        details = failed_details if kind == "failed" else [None]
        for detail, delete, on_failure, retries, running, record, db_state in itertools.product(
            details, (True, False), (False, True), (-1, 0, 1, 2), (True, False), _records(),
            DB_STATES,
        ):  # fmt: skip
            yield Case(
                kind=kind,
                failure_details=detail,
                delete_worker_pods=delete,
                delete_worker_pods_on_failure=on_failure,
                retries=retries,
                running=running,
                record=record,
                db_state=db_state,
            )


def test_change_state_parity_exhaustive() -> None:
    """Every combination of the small domain, with a tally of the differences that apply."""
    tally: dict[str | None, int] = {}
    for case in all_cases():
        which = check(case)
        tally[which] = tally.get(which, 0) + 1
    assert set(tally) == {None, "a", "c", "d", "e", "f", "g", "h", "i"}, tally
    assert tally[None] == max(tally.values()), tally  # agreement is the common case


_REASONS = st.sampled_from([*CONTAINER_REASONS, "ContainerCannotRun", "CreateContainerError"])
_EXCLUDED = st.sampled_from(
    [DEFAULT_EXCLUDED, frozenset(), frozenset({"Error", "OOMKilled"}), frozenset({"Error", ""})]
)
_DETAILS: st.SearchStrategy[FailureDetails | None] = st.one_of(
    st.none(),
    st.just(FailureDetails()),
    _REASONS.map(_details),
    st.builds(
        lambda reason, pod_reason: FailureDetails(container_reason=reason, pod_reason=pod_reason),
        _REASONS,
        st.sampled_from([None, "Evicted", "DeadlineExceeded"]),
    ),
)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    key = TaskInstanceKey(
        draw(st.sampled_from(["etl", "warehouse_daily"])),
        draw(st.sampled_from(["load", "group.task"])),
        draw(st.sampled_from(["manual__2026-06-07T01:50:23+00:00", "scheduled__2026-06-07"])),
        draw(st.integers(0, 3)),
        draw(st.integers(-1, 3)),
    )
    pod_name = draw(st.sampled_from([POD, OTHER_POD, "p"]))
    record: Record | None = draw(
        st.one_of(
            st.none(),
            st.tuples(st.integers(0, 4), st.sampled_from([None, pod_name, f"{pod_name}-x"])),
        )
    )
    return Case(
        kind=draw(st.sampled_from(RESULT_KINDS)),
        failure_details=draw(_DETAILS),
        delete_worker_pods=draw(st.booleans()),
        delete_worker_pods_on_failure=draw(st.booleans()),
        retries=draw(st.sampled_from([-1, 0, 1, 2, 5])),
        excluded=draw(_EXCLUDED),
        running=draw(st.booleans()),
        record=record,
        db_state=draw(st.sampled_from(DB_STATES)),
        key=key,
        pod_name=pod_name,
        namespace=draw(st.sampled_from([NAMESPACE, "team-a"])),
    )


@settings(max_examples=400)
@given(case=cases())
def test_change_state_parity_generated(case: Case) -> None:
    event(f"difference {difference(case) or 'none'}")
    check(case)


def test_done_label_is_the_providers() -> None:
    assert provider.POD_EXECUTOR_DONE_KEY == POD_EXECUTOR_DONE_LABEL
    assert TRUE_LABEL_VALUE == "True"


# --------------------------------------------------------------------------------------
# Each difference, spelled out on one input


def _effects(case: Case) -> tuple[Effects, Effects]:
    """(provider, ours with the default mark_kept_failed_pods_done=True)."""
    return run_provider(case), run_ours(case, mark_kept_failed_pods_done=True)


ME = KEY.as_tuple()
THE_POD = ((POD, NAMESPACE),)
FAILED = TaskInstanceState.FAILED.value


@pytest.mark.parametrize("kind", ["failed", "succeeded"])
def test_difference_a_terminal_result_for_a_key_not_running(kind: ResultKind) -> None:
    details = _details("Error") if kind == "failed" else None
    case = Case(kind, details, delete_worker_pods_on_failure=True, running=False)
    theirs, ours = _effects(case)
    assert theirs == Effects(deleted=THE_POD)
    assert ours == Effects()
    theirs, ours = _effects(dataclasses.replace(case, delete_worker_pods=False))
    assert theirs == Effects(patched_done=THE_POD)
    assert ours == Effects()


def test_difference_b_kept_failed_pod_is_labelled_done() -> None:
    case = Case("failed", _details("OOMKilled"), db_state=TaskInstanceState.RUNNING)
    theirs, ours = _effects(case)
    assert theirs == Effects(events=((ME, FAILED),))
    assert ours == Effects(events=((ME, FAILED),), patched_done=THE_POD)
    assert run_ours(case, mark_kept_failed_pods_done=False) == theirs
    # The same on the requeue path: the pod is kept and, by ours, labelled done (one that
    # failed while Pending is deleted: difference i).
    launch = Case("failed", _details("OOMKilled"), record=(0, None))
    theirs, ours = _effects(launch)
    assert theirs == Effects(requeued=(ME,), running=True, record=(1, POD))
    assert ours == dataclasses.replace(theirs, patched_done=THE_POD)
    assert run_ours(launch, mark_kept_failed_pods_done=False) == theirs


def test_difference_c_duplicate_failure_of_a_requeued_pod() -> None:
    case = Case(
        "failed", _details("ErrImagePull"), delete_worker_pods_on_failure=True, record=(1, POD)
    )
    theirs, ours = _effects(case)
    assert theirs == Effects(deleted=THE_POD, running=True, record=(1, POD))
    assert ours == Effects(running=True, record=(1, POD))
    theirs, ours = _effects(dataclasses.replace(case, delete_worker_pods=False))
    assert theirs == Effects(patched_done=THE_POD, running=True, record=(1, POD))
    assert ours == Effects(running=True, record=(1, POD))
    # With the defaults the provider keeps the failed pod, so both do nothing.
    theirs, ours = _effects(dataclasses.replace(case, delete_worker_pods_on_failure=False))
    assert theirs == ours == Effects(running=True, record=(1, POD))


def test_difference_d_succeeded_without_a_database_state() -> None:
    case = Case("succeeded", None, db_state=None, record=(0, None))
    theirs, ours = _effects(case)
    assert theirs == Effects(events=((ME, None),), deleted=THE_POD)
    assert ours == Effects(deleted=THE_POD)


@pytest.mark.parametrize(
    ("reason", "db_state"),
    [("ErrImagePull", TaskInstanceState.RUNNING), ("Error", TaskInstanceState.QUEUED)],
)
def test_difference_e_duplicate_failure_that_is_not_pre_execution(
    reason: str, db_state: TaskInstanceState
) -> None:
    """Found here: the provider's duplicate rule only holds for pre-execution failures.

    After a requeue the new pod runs the task (the database says RUNNING); a late Failed
    event for the old pod then makes the provider report the task FAILED and free its
    slot, while the new pod is still running it.
    """
    case = Case("failed", _details(reason), db_state=db_state, record=(1, POD))
    theirs, ours = _effects(case)
    assert theirs == Effects(events=((ME, FAILED),))
    assert ours == Effects(running=True, record=(1, POD))


def test_difference_f_pre_execution_failure_for_a_key_not_running() -> None:
    """Found here: the provider requeues a job for a key that is not in ``running``."""
    case = Case("failed", _details("ErrImagePull"), running=False, record=(0, None))
    theirs, ours = _effects(case)
    assert theirs == Effects(requeued=(ME,), record=(1, POD))
    assert ours == Effects(record=(0, None))


@pytest.mark.parametrize("running", [True, False])
def test_difference_g_completed_pod(running: bool) -> None:
    """Found here: a "completed" result for a running key ends up in the event buffer."""
    case = Case("completed", None, running=running, record=(0, None))
    theirs, ours = _effects(case)
    assert theirs == Effects(events=((ME, "completed"),) if running else (), deleted=THE_POD)
    assert ours == Effects(deleted=THE_POD, running=running, record=(0, None))


def test_difference_i_a_pod_failed_while_pending_is_deleted() -> None:
    """Ours deletes a pod that failed before it started; the provider keeps it."""
    case = Case("failed", _details("ErrImagePull"), record=(0, None))
    theirs, ours = _effects(case)
    assert theirs == Effects(requeued=(ME,), running=True, record=(1, POD))
    assert ours == Effects(deleted=THE_POD, requeued=(ME,), running=True, record=(1, POD))
    kept = Case("failed", _details("ErrImagePull"), delete_worker_pods=False, db_state=None)
    theirs, ours = _effects(kept)
    assert theirs.patched_done == THE_POD
    assert ours.deleted == THE_POD
    assert ours.patched_done == ()


def test_agreement_on_a_requeue_then_a_fresh_pod() -> None:
    """A walk both agree on: pre-execution failure, requeue, the new pod succeeds."""
    first = Case(
        "failed", _details("ErrImagePull"), delete_worker_pods_on_failure=True, record=(0, None)
    )
    theirs, ours = _effects(first)
    assert theirs == ours == Effects(deleted=THE_POD, requeued=(ME,), running=True, record=(1, POD))
    second = Case(
        "succeeded", None, record=(1, POD), db_state=TaskInstanceState.SUCCESS, pod_name=OTHER_POD
    )
    theirs, ours = _effects(second)
    success = ((ME, TaskInstanceState.SUCCESS.value),)
    assert theirs == ours == Effects(events=success, deleted=((OTHER_POD, NAMESPACE),))
