"""A whole executor built from the library, driven by hypothesis against a fake cluster.

The machine owns three worlds:

* the executor's memory: ``running``, the attempt records, the pod-creation queue with its
  retry counters, results whose handling failed, and the watch events not yet delivered;
* a fake cluster: pod manifests built by :func:`construct_task_pod` /
  :func:`construct_callback_pod`, whose changes produce watch events the way the API
  server does for the watcher's selector (``airflow-worker=<me>,airflow_executor_done!=True``):
  a pod entering the selection is ADDED, one leaving it (a label patch) is DELETED without a
  deletion timestamp, a deleted pod is MODIFIED with its deletion timestamp, then DELETED;
* a fake Airflow database: task instance states (set by the "task process" in the pod and
  by the executor's events) and callback states (set only by the executor's events, as
  Airflow 3.3's scheduler does).

Every event goes ``resolve_event`` → ``Resolution.to_result`` → ``decide`` (a
``LookUpState`` is answered from the database); the actions are performed on the worlds.
Delivery may be reordered and duplicated; the watch may expire (410: unread events are lost,
the watcher re-lists and ``plan_relist`` settles running workloads whose pods vanished in
the gap); database reads and pod API calls may fail for a while (``handling_failed``,
retried on later passes); the scheduler may restart (memory lost; ``plan_adoption`` with
the queued/running task instances). At the end everything is drained and every workload
must have been reported exactly once, nothing may still run, and no finished pod of this
scheduler may be left in the watch when the configuration promises to clean it up.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from k8s_workloads.adoption import TrackRunning, plan_adoption, plan_relist
from k8s_workloads.decisions import (
    UNKNOWN,
    Action,
    Attempts,
    DecisionConfig,
    DeletePod,
    EmitEvent,
    FreeSlot,
    Ignore,
    LookUpState,
    PatchLabels,
    RequeueJob,
    RetryLater,
    classify_create_error,
    decide,
    handling_failed,
    requeue_after_create_error,
)
from k8s_workloads.events import Outcome, ResolverConfig, resolve_event
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.labels import AIRFLOW_WORKER_LABEL, POD_EXECUTOR_DONE_LABEL, TRUE_LABEL_VALUE
from k8s_workloads.pods import construct_callback_pod, construct_task_pod
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    TASK_FINISHED_STATES,
    CallbackState,
    ExecutorPseudoState,
    KubernetesJob,
    TaskInstanceState,
    WorkloadResult,
)
from tests.event_factory import terminated, waiting

VERSION = "3.3.2"
NS = "airflow"
RESOLVER = ResolverConfig(airflow_version=VERSION)
DELETION_TIMESTAMP = "2026-06-07T00:00:00Z"
CREATED_EPOCH = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)
POD_LAUNCH_FAILURE_RETRIES = 1
CALLBACK_LAUNCH_FAILURE_RETRIES = 1
TASK_PUBLISH_MAX_RETRIES = 1
MAX_HANDLING_RETRIES = DecisionConfig().max_handling_retries

Pod = dict[str, Any]
Event = dict[str, Any]

PENDING: dict[str, Any] = {"phase": "Pending"}
PULL_FAILED: dict[str, Any] = {
    "phase": "Pending",
    "containerStatuses": [waiting("base", "ErrImagePull", "rpc error: code = NotFound")],
}
RUNNING: dict[str, Any] = {
    "phase": "Running",
    "containerStatuses": [{"name": "base", "state": {"running": {}}}],
}
SUCCEEDED: dict[str, Any] = {
    "phase": "Succeeded",
    "containerStatuses": [terminated("base", 0, "Completed")],
}
OOM_KILLED: dict[str, Any] = {
    "phase": "Failed",
    "containerStatuses": [terminated("base", 137, "OOMKilled")],
}
EVICTED: dict[str, Any] = {
    "phase": "Failed",
    "reason": "Evicted",
    "message": "The node was low on resource: memory.",
}
EXPIRED: Event = {
    "type": "ERROR",
    "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
}
CREATE_ERRORS: list[tuple[int | None, str, dict[str, str] | None]] = [
    (500, '{"kind": "Status", "message": "etcdserver: request timed out"}', None),
    (429, "Too many requests", {"Retry-After": "1"}),
    (403, '{"kind": "Status", "message": "pods \\"p\\" is forbidden: exceeded quota: q"}', None),
    (None, "", None),  # connection reset
    (422, '{"kind": "Status", "message": "Pod \\"p\\" is invalid"}', None),
    (409, '{"kind": "Status", "message": "pods \\"p\\" already exists"}', None),
]


class Outage(Exception):
    """A database read or pod API call failed while a result was being handled."""


F = TypeVar("F", bound=Callable[..., None])


def step(function: F) -> F:
    """Remember that a step raised, so teardown does not drain a broken run."""

    @functools.wraps(function)
    def wrapper(self: ExecutorMachine, *args: Any, **kwargs: Any) -> None:
        try:
            function(self, *args, **kwargs)
        except BaseException:
            self.broken = True
            raise

    return wrapper  # type: ignore[return-value]


def snapshot(value: Any) -> Any:
    """A deep copy of a JSON-like value (several times faster than ``copy.deepcopy``)."""
    return json.loads(json.dumps(value))


def phase(pod: Pod) -> str:
    value = pod["status"]["phase"]
    assert isinstance(value, str)
    return value


def is_pending(pod: Pod) -> bool:
    """Pending and not stuck: it may still start."""
    return bool(pod["status"] == PENDING)


def is_running(pod: Pod) -> bool:
    return phase(pod) == "Running"


def is_alive(pod: Pod) -> bool:
    return is_pending(pod) or is_running(pod)


def having(condition: Callable[[Pod], bool]) -> Callable[[ExecutorMachine], bool]:
    """A precondition: some pod in the cluster satisfies ``condition``."""
    return lambda machine: bool(machine.pods_where(condition))


def is_terminal(state: object) -> bool:
    return state in {TaskInstanceState.SUCCESS, TaskInstanceState.FAILED} or (
        state in CALLBACK_TERMINAL_STATES
    )


def add_labels(pod: Pod, labels: dict[str, str]) -> None:
    pod["metadata"]["labels"].update(labels)


class ExecutorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.broken = False
        self.config = DecisionConfig(
            pod_launch_failure_retries=POD_LAUNCH_FAILURE_RETRIES,
            callback_launch_failure_retries=CALLBACK_LAUNCH_FAILURE_RETRIES,
            task_publish_max_retries=TASK_PUBLISH_MAX_RETRIES,
        )
        self.know_callback_state = True
        self.scheduler_id = 1
        # --- the executor's memory (lost on restart) ---
        self.running: set[WorkloadKey] = set()
        self.attempts = Attempts()
        self.jobs: list[KubernetesJob[Any]] = []
        self.create_retries: Counter[WorkloadKey] = Counter()
        self.events: list[Event] = []
        self.delivered: list[Event] = []
        self.retry_results: list[tuple[WorkloadResult, int]] = []
        self.launch_requeues: Counter[WorkloadKey] = Counter()
        # --- the cluster ---
        self.pods: dict[str, Pod] = {}
        self.pod_key: dict[str, WorkloadKey] = {}
        self.resource_version = 0
        self.failing_calls = 0
        # --- Airflow's database and the scheduler's view ---
        self.ti_state: dict[TaskInstanceKey, TaskInstanceState] = {}
        self.callback_state: dict[CallbackKey, CallbackState] = {}
        self.workloads: list[WorkloadKey] = []
        self.emitted: dict[WorkloadKey, list[EmitEvent]] = {}
        self.completed_by_adoption: set[WorkloadKey] = set()
        self.counter = 0
        # The state the last handling read before it failed (UNKNOWN: none was read).
        self.state_read: Any = UNKNOWN

    # --- configuration ------------------------------------------------------------------

    @initialize(
        delete_worker_pods=st.sampled_from([True, False]),
        delete_worker_pods_on_failure=st.sampled_from([False, True]),
        mark_kept_failed_pods_done=st.sampled_from([True, False]),
        know_callback_state=st.sampled_from([True, False]),
    )
    @step
    def configure(
        self,
        delete_worker_pods: bool,
        delete_worker_pods_on_failure: bool,
        mark_kept_failed_pods_done: bool,
        know_callback_state: bool,
    ) -> None:
        self.config = DecisionConfig(
            delete_worker_pods=delete_worker_pods,
            delete_worker_pods_on_failure=delete_worker_pods_on_failure,
            mark_kept_failed_pods_done=mark_kept_failed_pods_done,
            pod_launch_failure_retries=POD_LAUNCH_FAILURE_RETRIES,
            callback_launch_failure_retries=CALLBACK_LAUNCH_FAILURE_RETRIES,
            task_publish_max_retries=TASK_PUBLISH_MAX_RETRIES,
        )
        self.know_callback_state = know_callback_state

    # --- the fake cluster and its watch -----------------------------------------------------

    def _me(self) -> str:
        return str(self.scheduler_id)

    def _watched(self, pod: Pod) -> bool:
        labels = pod["metadata"]["labels"]
        return bool(
            labels.get(AIRFLOW_WORKER_LABEL) == self._me()
            and labels.get(POD_EXECUTOR_DONE_LABEL) != TRUE_LABEL_VALUE
        )

    def _send(self, kind: str, pod: Pod) -> None:
        self.events.append({"type": kind, "object": snapshot(pod)})

    def _change(self, name: str, change: Callable[[Pod], None]) -> None:
        pod = self.pods.get(name)
        if pod is None:
            return  # 404: gone already
        before = self._watched(pod)
        change(pod)
        self.resource_version += 1
        pod["metadata"]["resourceVersion"] = str(self.resource_version)
        after = self._watched(pod)
        if before and after:
            self._send("MODIFIED", pod)
        elif after:
            self._send("ADDED", pod)
        elif before:
            # Leaving the watcher's label selection reads as a deletion without a timestamp.
            self._send("DELETED", pod)

    def _set_status(self, name: str, status: dict[str, Any]) -> None:
        self._change(name, lambda pod: pod.__setitem__("status", copy.deepcopy(status)))

    def _delete(self, name: str) -> None:
        pod = self.pods.get(name)
        if pod is None:
            return
        self._change(
            name, lambda pod: pod["metadata"].__setitem__("deletionTimestamp", DELETION_TIMESTAMP)
        )
        del self.pods[name]
        if self._watched(pod):
            self._send("DELETED", pod)

    def _relist(self) -> list[Pod]:
        """The watcher starts over from a list: every watched pod as ADDED."""
        listed = [self.pods[name] for name in sorted(self.pods) if self._watched(self.pods[name])]
        for pod in listed:
            self._send("ADDED", pod)
        return listed

    def pods_where(self, condition: Callable[[Pod], bool]) -> list[str]:
        return sorted(name for name, pod in self.pods.items() if condition(pod))

    def _pick(self, condition: Callable[[Pod], bool], pick: int) -> str:
        names = self.pods_where(condition)
        return names[pick % len(names)]

    # --- the scheduler and its database ------------------------------------------------------

    def _new_workload(self, key: WorkloadKey) -> None:
        self.workloads.append(key)
        self.emitted[key] = []
        self._queue(key)

    def _queue(self, key: WorkloadKey) -> None:
        # The provider's execute_async / _process_workloads: running from now on, an attempt
        # record, a job on the creation queue.
        job: KubernetesJob[Any]
        if isinstance(key, TaskInstanceKey):
            self.ti_state[key] = TaskInstanceState.QUEUED
            job = KubernetesJob(key, ("python", "-m", "x"))
        else:
            self.callback_state[key] = CallbackState.QUEUED
            job = KubernetesJob(key, ("python", "-m", "x"))
        self.running.add(key)
        self.attempts = self.attempts.launched(job)
        self.jobs.append(job)

    def _emit(self, action: EmitEvent) -> None:
        key, history = action.key, self.emitted[action.key]
        earlier_terminal = [event for event in history if is_terminal(event.state)]
        if isinstance(key, CallbackKey):
            assert not earlier_terminal, (
                f"callback {key} reported {action.state.value} after {earlier_terminal[0]}"
            )
        elif is_terminal(action.state):
            assert not earlier_terminal, (
                f"task {key} reported {action.state.value} after {earlier_terminal[0]}"
            )
        if (
            isinstance(key, TaskInstanceKey)
            and action.state is TaskInstanceState.FAILED
            and "gave up" not in (action.info or "")
        ):
            # Only giving up on a result may contradict what the task process recorded.
            assert self.ti_state[key] is not TaskInstanceState.SUCCESS, (
                f"task {key} reported failed, but its process finished it: {action.info}"
            )
        if is_terminal(action.state):
            alive = [name for name in self.pods_where(is_alive) if self.pod_key[name] == key]
            assert not alive, f"{key} reported {action.state.value} while its pod {alive} lives"
        history.append(action)
        if isinstance(key, CallbackKey) and isinstance(action.state, CallbackState):
            # Airflow 3.3's scheduler writes any RUNNING/SUCCESS/FAILED event, unguarded.
            self.callback_state[key] = action.state
        elif (
            isinstance(key, TaskInstanceKey)
            and is_terminal(action.state)
            and self.ti_state[key] not in TASK_FINISHED_STATES
        ):
            assert isinstance(action.state, TaskInstanceState)
            self.ti_state[key] = action.state

    # --- performing decisions -------------------------------------------------------------

    def _perform(self, actions: tuple[Action | TrackRunning, ...], *, create_error: bool) -> None:
        for action in actions:
            if isinstance(action, EmitEvent):
                self._emit(action)
            elif isinstance(action, DeletePod):
                self._delete(action.pod_name)
            elif isinstance(action, PatchLabels):
                self._change(
                    action.pod_name, functools.partial(add_labels, labels=dict(action.labels))
                )
            elif isinstance(action, RequeueJob):
                key = action.job.key
                if create_error:
                    self.create_retries[key] += 1
                    assert self.create_retries[key] <= TASK_PUBLISH_MAX_RETRIES
                else:
                    self.launch_requeues[key] += 1
                    limit = (
                        POD_LAUNCH_FAILURE_RETRIES
                        if isinstance(key, TaskInstanceKey)
                        else CALLBACK_LAUNCH_FAILURE_RETRIES
                    )
                    assert self.launch_requeues[key] <= limit, f"{key} requeued too often"
                self.jobs.append(action.job)
            elif isinstance(action, FreeSlot):
                self.running.discard(action.key)
            elif isinstance(action, TrackRunning):
                self.running.add(action.key)
            else:
                assert isinstance(action, (Ignore, RetryLater)), action

    def _call_out(self, what: str) -> None:
        """A database read or an API call: fails while an outage lasts."""
        if self.failing_calls:
            self.failing_calls -= 1
            raise Outage(f"{what} failed: the service is unavailable")

    def _known_state(self, key: WorkloadKey) -> Any:
        if isinstance(key, CallbackKey) and self.know_callback_state:
            self._call_out("reading the callback's state")
            return self.callback_state.get(key)
        return UNKNOWN

    def _decide_and_perform(self, result: WorkloadResult) -> None:
        key = result.key
        running = key in self.running
        self.state_read = UNKNOWN
        self.state_read = self._known_state(key)
        decision = decide(
            result,
            running=running,
            config=self.config,
            attempts=self.attempts,
            known_state=self.state_read,
        )
        if any(isinstance(action, LookUpState) for action in decision.actions):
            assert isinstance(key, TaskInstanceKey), "a callback key reached a task lookup"
            assert len(decision.actions) == 1, decision
            self._call_out("reading the task instance's state")
            self.state_read = self.ti_state.get(key)
            decision = decide(
                result,
                running=running,
                config=self.config,
                attempts=self.attempts,
                known_state=self.state_read,
            )
            assert not any(isinstance(action, LookUpState) for action in decision.actions)
        if any(isinstance(action, (DeletePod, PatchLabels)) for action in decision.actions):
            # Pod calls come first in every decision: failing the first one performs nothing.
            self._call_out("the pod API call")
        self.attempts = decision.attempts
        self._perform(decision.actions, create_error=False)

    def _handle(self, result: WorkloadResult, failures: int = 0) -> None:
        try:
            self._decide_and_perform(result)
        except Outage as error:
            failure = error
        else:
            return
        # The executor passes what it knows now: is the key still running, and the state
        # it managed to read before the failure (if any).
        decision = handling_failed(
            result,
            failure,
            running=result.key in self.running,
            failures_so_far=failures,
            attempts=self.attempts,
            config=self.config,
            known_state=self.state_read,
        )
        self.attempts = decision.attempts
        for action in decision.actions:
            if isinstance(action, RetryLater):
                assert action.failures == failures + 1 <= MAX_HANDLING_RETRIES
                self.retry_results.append((result, action.failures))
        self._perform(decision.actions, create_error=False)

    def _deliver(self, index: int) -> None:
        event = self.events.pop(index)
        self.delivered.append(event)
        resolution = resolve_event(event, config=RESOLVER)
        if resolution.outcome is Outcome.RESYNC:
            # The watch expired: whatever it had not yet read is lost, and pods that
            # finished and were deleted in the gap are not in the new list.
            self.events.clear()
            listed = self._relist()
            vanished = plan_relist(
                sorted(self.running, key=repr),
                snapshot(listed),
                waiting=[job.key for job in self.jobs],
                attempts=self.attempts,
                airflow_version=VERSION,
            )
            for gone in vanished:
                self._handle(gone)
            return
        assert resolution.outcome not in {Outcome.MALFORMED, Outcome.UNDECODABLE}, resolution
        result = resolution.to_result()
        if result is not None:
            self._handle(result)

    def _create(self, error: tuple[int | None, str, dict[str, str] | None] | None) -> None:
        job = self.jobs.pop(0)
        key = job.key
        if error is not None:
            status, body, headers = error
            verdict = classify_create_error(
                status, body, headers, retries=self.create_retries[key], config=self.config
            )
            decision = requeue_after_create_error(job, verdict, attempts=self.attempts)
            self.attempts = decision.attempts
            self._perform(decision.actions, create_error=True)
            if not verdict.retry:
                self.create_retries.pop(key, None)
                assert self.attempts.get(key) is None
            return
        self.create_retries.pop(key, None)
        self.counter += 1
        name = f"pod-{self.counter}"
        if isinstance(key, TaskInstanceKey):
            pod = construct_task_pod(
                namespace=NS,
                scheduler_job_id=self._me(),
                pod_id=name,
                dag_id=key.dag_id,
                task_id=key.task_id,
                kube_image="airflow:3.3.2",
                try_number=key.try_number,
                args=list(job.command),
                run_id=key.run_id,
                map_index=key.map_index,
                airflow_version=VERSION,
            )
        else:
            pod = construct_callback_pod(
                callback_id=key.id,
                namespace=NS,
                scheduler_job_id=self._me(),
                kube_image="airflow:3.3.2",
                args=list(job.command),
                airflow_version=VERSION,
                pod_id=name,
            )
        self.resource_version += 1
        pod["metadata"]["resourceVersion"] = str(self.resource_version)
        # The API server stamps creation (RFC 3339, whole seconds); one pod per second.
        created = CREATED_EPOCH + datetime.timedelta(seconds=self.counter)
        pod["metadata"]["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
        pod["status"] = copy.deepcopy(PENDING)
        self.pods[name] = pod
        self.pod_key[name] = key
        self._send("ADDED", pod)

    def _sync_pass(self) -> None:
        pending, self.retry_results = self.retry_results, []
        for result, failures in pending:
            self._handle(result, failures)

    # --- the task process in the pod ------------------------------------------------------

    def _start(self, name: str) -> None:
        self._set_status(name, RUNNING)

    def _process_starts(self, name: str) -> None:
        key = self.pod_key[name]
        if isinstance(key, TaskInstanceKey) and self.ti_state[key] is TaskInstanceState.QUEUED:
            self.ti_state[key] = TaskInstanceState.RUNNING

    def _finish(self, name: str, outcome: TaskInstanceState) -> None:
        key = self.pod_key[name]
        if isinstance(key, TaskInstanceKey) and self.ti_state[key] not in TASK_FINISHED_STATES:
            self.ti_state[key] = outcome
        self._set_status(name, SUCCEEDED)

    # --- rules: the scheduler hands work over ---------------------------------------------

    @rule()
    @step
    def queue_task(self) -> None:
        self.counter += 1
        self._new_workload(TaskInstanceKey("etl", f"task_{self.counter}", "manual__1", 1))

    @rule()
    @step
    def queue_callback(self) -> None:
        self.counter += 1
        self._new_workload(CallbackKey(str(uuid.UUID(int=self.counter))))

    @precondition(lambda self: self.jobs)
    @rule(error=st.none() | st.sampled_from(CREATE_ERRORS))
    @step
    def create_pod(self, error: tuple[int | None, str, dict[str, str] | None] | None) -> None:
        self._create(error)

    # --- rules: the cluster ---------------------------------------------------------------

    @precondition(having(is_pending))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_starts(self, pick: int) -> None:
        self._start(self._pick(is_pending, pick))

    @precondition(having(is_running))
    @rule(pick=st.integers(0, 7))
    @step
    def task_process_starts(self, pick: int) -> None:
        self._process_starts(self._pick(is_running, pick))

    @precondition(having(is_running))
    @rule(
        pick=st.integers(0, 7),
        outcome=st.sampled_from([TaskInstanceState.SUCCESS, TaskInstanceState.FAILED]),
    )
    @step
    def pod_succeeds(self, pick: int, outcome: TaskInstanceState) -> None:
        self._finish(self._pick(is_running, pick), outcome)

    @precondition(having(is_running))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_oom_killed(self, pick: int) -> None:
        self._set_status(self._pick(is_running, pick), OOM_KILLED)

    @precondition(having(is_pending))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_fails_before_start(self, pick: int) -> None:
        # The image cannot be pulled: the task instance stays QUEUED.
        self._set_status(self._pick(is_pending, pick), PULL_FAILED)

    @precondition(having(is_alive))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_evicted(self, pick: int) -> None:
        self._set_status(self._pick(is_alive, pick), EVICTED)

    @precondition(having(is_running))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_deleted_while_running(self, pick: int) -> None:
        self._delete(self._pick(is_running, pick))

    # --- rules: the watch -----------------------------------------------------------------

    @precondition(lambda self: self.events)
    @rule(pick=st.integers(0, 7))
    @step
    def deliver_event(self, pick: int) -> None:
        # Usually the oldest; any pending event may overtake the others.
        self._deliver(pick % len(self.events))

    @precondition(lambda self: self.events)
    @rule()
    @step
    def deliver_all_events(self) -> None:
        # One watcher pass: every pending event, in order (what follows is not read).
        for _ in range(len(self.events)):
            if not self.events:
                break  # the watch expired: the rest was lost
            self._deliver(0)

    @precondition(lambda self: self.delivered)
    @rule(pick=st.integers(0, 15))
    @step
    def redeliver_event(self, pick: int) -> None:
        self.events.append(snapshot(self.delivered[-1 - pick % len(self.delivered)]))

    @rule()
    @step
    def watch_expires(self) -> None:
        self.events.append(copy.deepcopy(EXPIRED))

    # --- rules: the executor's own troubles -----------------------------------------------

    @rule(failures=st.integers(1, 2 * (MAX_HANDLING_RETRIES + 1)))
    @step
    def outage(self, failures: int) -> None:
        # The next `failures` database reads and pod API calls fail.
        self.failing_calls = failures

    @precondition(lambda self: self.retry_results)
    @rule()
    @step
    def sync_pass(self) -> None:
        self._sync_pass()

    @rule()
    @step
    def scheduler_restarts(self) -> None:
        # Everything in memory is gone: running, attempts, the job queue, the retry
        # counters, results to retry and events not yet read.
        self.scheduler_id += 1
        self.running = set()
        self.attempts = Attempts()
        self.jobs = []
        self.create_retries = Counter()
        self.events = []
        self.delivered = []
        self.retry_results = []
        self.launch_requeues = Counter()
        expected = [
            key
            for key, state in self.ti_state.items()
            if state in {TaskInstanceState.QUEUED, TaskInstanceState.RUNNING}
        ]
        adoption = plan_adoption(
            [snapshot(self.pods[name]) for name in sorted(self.pods)],
            me=self._me(),
            alive_scheduler_ids=(),
            expected_task_keys=expected,
            expected_callback_keys=[
                key
                for key, state in self.callback_state.items()
                if state not in {CallbackState.SUCCESS, CallbackState.FAILED}
            ],
            airflow_version=VERSION,
        )
        assert adoption.undecodable == ()
        for action in adoption.actions:
            if isinstance(action, PatchLabels):
                # Before the new watcher starts: it lists the pods afterwards.
                self.pods[action.pod_name]["metadata"]["labels"].update(action.labels)
        self._perform(
            tuple(a for a in adoption.actions if not isinstance(a, PatchLabels)),
            create_error=False,
        )
        for result in adoption.completed:
            self.completed_by_adoption.add(result.key)
            self._handle(result)
        # The scheduler resets the task instances no live pod was found for and queues
        # them again; callbacks are never handed over, so do the same for callbacks that
        # no pod at all was left for (their jobs were in the lost queue).
        for key in adoption.not_adopted(expected):
            self._queue(key)
        seen = set(adoption.adopted) | {result.key for result in adoption.completed}
        for callback_key, state in sorted(self.callback_state.items(), key=lambda kv: kv[0].id):
            if state not in CALLBACK_TERMINAL_STATES and callback_key not in seen:
                self._queue(callback_key)
        self._relist()

    # --- invariants -----------------------------------------------------------------------

    @invariant()
    @step
    def handling_retries_are_bounded(self) -> None:
        for _, failures in self.retry_results:
            assert failures <= MAX_HANDLING_RETRIES

    @invariant()
    @step
    def only_known_workloads_run(self) -> None:
        assert self.running <= set(self.workloads)

    # --- the end: drain and check ---------------------------------------------------------

    def _settle(self) -> None:
        self.failing_calls = 0
        for _ in range(5_000):
            if self.retry_results:
                self._sync_pass()
            elif self.events:
                self._deliver(0)
            elif self.jobs:
                self._create(None)
            elif pending := self.pods_where(is_pending):
                self._start(pending[0])
            elif running := self.pods_where(is_running):
                self._process_starts(running[0])
                self._finish(running[0], TaskInstanceState.SUCCESS)
            else:
                return
        raise AssertionError("the executor never settled")

    def teardown(self) -> None:
        if self.broken:
            return
        self._settle()
        assert self.running == set(), f"still running after every pod finished: {self.running}"
        for key in self.workloads:
            terminal = [event for event in self.emitted[key] if is_terminal(event.state)]
            if isinstance(key, TaskInstanceKey) and not terminal:
                # A pod that Succeeded under a dead scheduler: the task process wrote its
                # final state itself and adoption only cleans the pod up.
                assert key in self.completed_by_adoption, f"task {key} was never reported"
                assert self.ti_state[key] in TASK_FINISHED_STATES
                continue
            assert len(terminal) == 1, f"{key} was reported {len(terminal)} times: {terminal}"
        if self.config.mark_kept_failed_pods_done or self.config.delete_worker_pods_on_failure:
            # Every finished pod this scheduler owns was deleted or labelled done.
            left = self.pods_where(self._watched)
            assert not left, f"pods left to be re-reported forever: {left}"


# Twice the profile's examples: 300 derandomised runs of up to 50 steps in the ci profile
# (about 5 s when nothing fails; a failure is shrunk and reported in about 20 s), 6,000
# random ones in the thorough profile. The scenarios below pin each counterexample found.
ExecutorMachine.TestCase.settings = settings(
    max_examples=2 * (settings.default or settings()).max_examples,
    stateful_step_count=50,
    deadline=None,
    report_multiple_bugs=False,
)
TestExecutor = ExecutorMachine.TestCase


# --- the machine's counterexamples, as fixed scenarios ---------------------------------------
# Each one is a minimal run hypothesis found, kept so that it is checked on every run.


def machine(
    *,
    delete_worker_pods: bool = True,
    delete_worker_pods_on_failure: bool = False,
    mark_kept_failed_pods_done: bool = True,
    know_callback_state: bool = True,
) -> ExecutorMachine:
    state = ExecutorMachine()
    state.configure(
        delete_worker_pods=delete_worker_pods,
        delete_worker_pods_on_failure=delete_worker_pods_on_failure,
        mark_kept_failed_pods_done=mark_kept_failed_pods_done,
        know_callback_state=know_callback_state,
    )
    return state


def reported(state: ExecutorMachine) -> list[TaskInstanceState | CallbackState]:
    """The states reported for the scenario's one workload."""
    (key,) = state.workloads
    return [event.state for event in state.emitted[key]]


def test_requeued_task_survives_its_old_pod_leaving_the_watch() -> None:
    # The done label makes the failed pod leave the watch (DELETED, no timestamp, read as
    # ADOPTED); that used to free the slot of the requeued task, whose SUCCESS was then lost.
    state = machine()
    state.queue_task()
    state.create_pod(error=None)
    state.pod_evicted(pick=0)
    state.deliver_all_events()
    assert len(state.jobs) == 1  # requeued
    assert state.running == {state.workloads[0]}
    state.teardown()
    (key,) = state.workloads
    assert [event.state for event in state.emitted[key]] == [TaskInstanceState.SUCCESS]


def test_requeued_callback_survives_its_old_pod_leaving_the_watch() -> None:
    state = machine()
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_fails_before_start(pick=0)
    state.teardown()
    (key,) = state.workloads
    assert [event.state for event in state.emitted[key]] == [
        CallbackState.RUNNING,
        CallbackState.SUCCESS,
    ]


def test_callback_that_succeeded_under_a_dead_scheduler_is_reported() -> None:
    state = machine()
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_starts(pick=0)
    state.pod_succeeds(pick=0, outcome=TaskInstanceState.SUCCESS)
    state.scheduler_restarts()
    state.teardown()
    (key,) = state.workloads
    assert [event.state for event in state.emitted[key]] == [CallbackState.SUCCESS]


def test_stale_running_event_never_reopens_a_finished_callback() -> None:
    state = machine(know_callback_state=False)
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_starts(pick=0)
    state.pod_evicted(pick=0)
    state.deliver_event(pick=2)  # Failed overtakes Running
    state.deliver_all_events()
    state.teardown()
    (key,) = state.workloads
    assert [event.state for event in state.emitted[key]] == [CallbackState.FAILED]


def test_pod_deleted_while_the_watch_was_down_settles_its_task() -> None:
    state = machine()
    state.queue_task()
    state.create_pod(error=None)
    state.pod_starts(pick=0)
    state.task_process_starts(pick=0)
    state.deliver_all_events()
    state.pod_deleted_while_running(pick=0)
    state.watch_expires()
    state.deliver_event(pick=2)  # the 410 first: the deletion events are lost
    state.teardown()
    (key,) = state.workloads
    assert [event.state for event in state.emitted[key]] == [TaskInstanceState.FAILED]


def test_failed_handling_of_a_duplicate_does_not_report_a_finished_callback_again() -> None:
    """Giving up on a result of a workload no longer running reports nothing.

    A callback's pod was evicted and the callback reported FAILED (its pod kept, as the
    provider does). During an outage the watch expires and re-lists the pod; reading the
    callback's state for that duplicate fails four times. ``handling_failed`` used to emit
    FAILED again (after SUCCESS it would have overwritten it); it now takes ``running``.
    """
    state = machine(mark_kept_failed_pods_done=False)
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_evicted(pick=0)
    state.deliver_all_events()
    state.outage(failures=4)
    state.watch_expires()
    state.deliver_all_events()
    state.deliver_all_events()
    state.sync_pass()
    state.sync_pass()
    assert state.retry_results  # one more failure, then the give-up
    state.sync_pass()
    assert not state.retry_results
    state.teardown()
    assert reported(state) == [CallbackState.FAILED]


def test_failed_handling_still_cleans_the_pod_up() -> None:
    """After ``handling_failed`` gives up, the pod is still deleted or labelled done.

    It used to stay in the watch and be re-reported after every watch restart, although
    ``mark_kept_failed_pods_done`` promises otherwise.
    """
    state = machine()
    state.outage(failures=4)
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_evicted(pick=0)
    state.deliver_all_events()
    state.sync_pass()
    state.sync_pass()
    state.sync_pass()
    (name,) = state.pods
    assert state.pods[name]["metadata"]["labels"][POD_EXECUTOR_DONE_LABEL] == TRUE_LABEL_VALUE
    assert state.running == set()
    assert reported(state) == [CallbackState.FAILED]
    state.teardown()
    assert reported(state) == [CallbackState.FAILED]


def test_kept_failed_callback_pod_is_not_reported_again_after_a_restart() -> None:
    """A finished callback's kept Failed pod is not adopted and reported FAILED again.

    Without ``expected_callback_keys`` ``plan_adoption`` adopts every live callback pod of
    a dead scheduler, including the kept (as the provider keeps failed pods) Failed pod of
    a callback already reported, and an executor that does not read callback states when
    deciding reports it once more. The machine passes the active callbacks.
    """
    state = machine(mark_kept_failed_pods_done=False, know_callback_state=False)
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_evicted(pick=0)
    state.deliver_all_events()
    state.scheduler_restarts()
    state.deliver_all_events()
    state.teardown()
    assert reported(state) == [CallbackState.FAILED]


def test_succeeded_pod_of_a_callback_given_up_on_is_not_reported_after_restarts() -> None:
    """Giving up on a Succeeded callback pod reports FAILED; no later restart says SUCCESS.

    The pod's clean-up keeps failing until the executor gives up (FAILED, then the pod is
    deleted as a Succeeded pod, not kept as a failed one). Adoption must not turn a left
    Succeeded pod of a settled callback into a COMPLETED result, which would report SUCCESS
    over the FAILED: found by the machine.
    """
    state = machine(mark_kept_failed_pods_done=False, know_callback_state=False)
    state.queue_callback()
    state.create_pod(error=None)
    state.outage(failures=6)
    state.pod_starts(pick=0)
    state.pod_succeeds(outcome=TaskInstanceState.SUCCESS, pick=0)
    state.deliver_all_events()
    state.scheduler_restarts()
    state.scheduler_restarts()
    state.sync_pass()
    state.sync_pass()
    state.sync_pass()
    state.scheduler_restarts()
    state.teardown()
    assert reported(state) == [CallbackState.RUNNING, CallbackState.FAILED]


@pytest.mark.parametrize("kind", ["task", "callback"])
def test_kept_pod_of_an_earlier_launch_does_not_hide_a_vanished_pod(kind: str) -> None:
    """A kept pod of an earlier launch does not stand for the current, vanished one.

    The first pod failed before it ran, was kept (``mark_kept_failed_pods_done=False``, the
    provider's behaviour) and the workload requeued; its second pod is deleted while the
    watch is down. The re-list still shows the kept first pod; ``plan_relist`` used to
    count the workload as present, which left it running for ever. It now takes the
    attempt records and skips pods whose failure was requeued.
    """
    state = machine(mark_kept_failed_pods_done=False)
    if kind == "task":
        state.queue_task()
    else:
        state.queue_callback()
    state.create_pod(error=None)
    state.pod_fails_before_start(pick=0)
    state.deliver_all_events()  # requeued; the failed pod is kept
    state.watch_expires()
    state.create_pod(error=None)
    state.pod_starts(pick=0)
    state.pod_deleted_while_running(pick=0)
    state.teardown()  # the 410 is read first: the deletion events are lost
    assert reported(state)[-1] in {TaskInstanceState.FAILED, CallbackState.FAILED}


def test_failed_pod_of_an_earlier_launch_is_not_adopted_beside_the_live_one() -> None:
    """After a restart, a kept Failed pod of a requeued launch does not fail the workload.

    The attempt record that made its failure stale died with the old scheduler; adopting
    it next to the live second pod used to report the task FAILED while that pod ran
    (found by the simulator's generated mode with ``mark_kept_failed_pods_done=False``).
    """
    state = machine(mark_kept_failed_pods_done=False)
    state.queue_task()
    state.create_pod(error=None)
    state.pod_fails_before_start(pick=0)
    state.deliver_all_events()  # requeued; the failed pod is kept, not labelled done
    state.create_pod(error=None)
    state.pod_starts(pick=0)
    state.task_process_starts(pick=0)
    state.scheduler_restarts()
    state.deliver_all_events()
    assert state.running == set(state.workloads)
    state.teardown()
    assert reported(state) == [TaskInstanceState.SUCCESS]


def test_stale_vanished_result_does_not_fail_a_requeued_task() -> None:
    """A VANISHED result is computed from a snapshot; handled late, it can be stale.

    The running pod is deleted; handling its Failed (PodDeleted) result fails (outage), the
    watch expires and ``plan_relist`` reports the task VANISHED, whose handling fails too.
    On the next pass the Failed result is retried first: the task was still QUEUED, so it
    is requeued. The VANISHED result used to report it FAILED and free its slot while its
    new pod was on its way (which then ran untracked); it now records the launch it is
    about and is ignored once the workload has been requeued since.
    """
    state = machine()
    state.outage(failures=2)
    state.queue_task()
    state.create_pod(error=None)
    state.pod_starts(pick=0)
    state.pod_deleted_while_running(pick=0)
    state.watch_expires()
    state.deliver_all_events()
    assert [result.state for result, _ in state.retry_results] == [
        TaskInstanceState.FAILED,
        ExecutorPseudoState.VANISHED,
    ]
    state.sync_pass()
    assert len(state.jobs) == 1  # requeued: the pod failed before the task ran
    assert state.running == set(state.workloads)
    state.teardown()
    assert reported(state) == [TaskInstanceState.SUCCESS]  # the relaunched pod
