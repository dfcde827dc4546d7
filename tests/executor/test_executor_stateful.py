"""The shipped ExecutorCore, driven by hypothesis against the public test kit.

The machine is an executor made of :class:`~k8s_workloads.executor.ExecutorCore` and the
kit's :class:`~k8s_workloads.testing.CoreDriver` (the perform loop), a
:class:`~k8s_workloads.testing.FakeCluster` whose changes stream watch events for the
watcher's selector as the API server does, and a database (the kit's
:class:`~k8s_workloads.testing.FakeAirflowDB`, checking every reported event as it
arrives). Rules queue tasks and callbacks, create pods (with the six kinds of creation
errors), move pods (start, succeed, OOMKill, fail before start, eviction, deletion),
deliver watch events out of order and twice, expire the watch (410: what was not read is
lost; the core re-lists), make database reads and pod calls fail for a while, and
restart the scheduler (memory lost; the new core adopts). At the end everything is
drained and every workload must have been reported exactly once, nothing may still run,
and no finished pod of this scheduler may be left in the watch when the configuration
promises to clean it up.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import pathlib
import random
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs
import hypothesis
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import k8s_workloads
from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import EmitEvent, PatchLabels
from k8s_workloads.executor import ExecutorConfig, ExecutorCore
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.labels import (
    AIRFLOW_WORKER_LABEL,
    POD_EXECUTOR_DONE_LABEL,
    TRUE_LABEL_VALUE,
)
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    TASK_FINISHED_STATES,
    CallbackState,
    KubernetesJob,
    TaskInstanceState,
)
from k8s_workloads.testing import FAILURES, CoreDriver, FakeAirflowDB, FakeCluster
from tests.support.event_factory import EVICTED, OOM_KILLED, PULL_FAILED, RUNNING, SUCCEEDED

VERSION = "3.3.2"
NS = "airflow"
T0 = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)
POD_LAUNCH_FAILURE_RETRIES = 1
CALLBACK_LAUNCH_FAILURE_RETRIES = 1
TASK_PUBLISH_MAX_RETRIES = 1
MAX_HANDLING_RETRIES = DecisionConfig().max_handling_retries

Pod = dict[str, Any]
Event = dict[str, Any]

CreateError = tuple[int | None, str, dict[str, str] | None]
CREATE_ERRORS: list[CreateError] = [
    (500, "etcdserver: request timed out", None),
    (429, "Too many requests", {"Retry-After": "1"}),
    (403, 'pods "p" is forbidden: exceeded quota: q', None),
    (None, "", None),  # connection reset
    (422, 'Pod "p" is invalid', None),
    (409, 'pods "p" already exists', None),
]
OUTAGE_TARGETS = ["database", "delete_pod", "patch_pod"]
NETWORK_FAULTS: list[tuple[str, dict[str, Any]]] = [
    # Issue 29: whatever the network does, one pod per attempt and one report per
    # workload, the pod's end state. What each call meets (FakeCluster.fail_next):
    ("create_pod", {"status": None, "applied": True}),  # stored, then the answer is lost
    ("create_pod", {"status": None}),  # reset before it reached the server
    ("create_pod", {"status": None, "refused": True}),  # the API server restarting
    ("create_pod", {"status": 504, "reason": "Timeout", "applied": True}),  # stored, then 504
    ("create_pod", {"status": 503, "reason": "ServiceUnavailable"}),  # not stored
    ("read_pod", {"status": None, "refused": True}),  # the read back meets the outage
    ("read_pod", {"status": 503, "reason": "ServiceUnavailable"}),
    ("delete_pod", {"status": None, "applied": True}),  # deleted, then the answer is lost
    ("delete_pod", {"status": None, "refused": True}),
]


F = TypeVar("F", bound=Callable[..., None])


def step(function: F) -> F:
    """Remember that a step raised, so teardown does not drain a broken run."""

    @functools.wraps(function)
    def wrapper(self: ExecutorMachine, *args: Any, **kwargs: Any) -> None:
        self.now += datetime.timedelta(seconds=1)
        self.cluster.now = self.now
        try:
            function(self, *args, **kwargs)
        except Exception:  # marked, then raised again: teardown must not check a broken run
            self.broken = True
            raise

    return wrapper  # type: ignore[return-value]


def is_terminal(state: object) -> bool:
    return state in {TaskInstanceState.SUCCESS, TaskInstanceState.FAILED} or (
        state in CALLBACK_TERMINAL_STATES
    )


def phase(pod: Pod) -> str:
    return str(pod["status"].get("phase"))


def is_pending(pod: Pod) -> bool:
    """Pending and not stuck: it may still start."""
    return phase(pod) == "Pending" and "containerStatuses" not in pod["status"]


def is_running(pod: Pod) -> bool:
    return phase(pod) == "Running"


def is_alive(pod: Pod) -> bool:
    return is_pending(pod) or is_running(pod)


def having(condition: Callable[[Pod], bool]) -> Callable[[ExecutorMachine], bool]:
    """A precondition: some pod in the cluster (not an orphan) satisfies ``condition``."""
    return lambda machine: bool(
        machine.pods_where(lambda pod: condition(pod) and not machine._orphaned(pod))
    )


class CheckingDB(FakeAirflowDB):
    """The kit's database, checking every event the executor reports as it arrives."""

    def __init__(self, machine: ExecutorMachine) -> None:
        super().__init__()
        self.machine = machine

    def record(self, event: EmitEvent) -> None:
        # A failed check propagates out of the pass: the driver hands the core only the
        # kit's own failures.
        self._check(event)
        super().record(event)

    def _check(self, event: EmitEvent) -> None:
        key, state = event.key, event.state
        earlier = [e for e in self.events if e.key == key and is_terminal(e.state)]
        if isinstance(key, CallbackKey) or is_terminal(state):
            assert not earlier, f"{key} reported {state.value} after {earlier[0]}"
        if (
            isinstance(key, TaskInstanceKey)
            and state is TaskInstanceState.FAILED
            and "gave up" not in (event.info or "")
        ):
            # Only giving up on a result may contradict what the task process recorded.
            assert self.task_states.get(key) is not TaskInstanceState.SUCCESS, (
                f"task {key} reported failed, but its process finished it: {event.info}"
            )
        if is_terminal(state):
            # A dead scheduler's pod whose relabel failed is not counted: the scheduler
            # reset its task and ran it again, as with the provider.
            alive = [
                name
                for name in self.machine.pods_where(
                    lambda pod: is_alive(pod) and not self.machine._orphaned(pod)
                )
                if self.machine.key_of(name) == key
            ]
            assert not alive, f"{key} reported {state.value} while its pod {alive} lives"


def _not_done(pod: Pod) -> bool:
    """A pod whose launch was not handled yet: not labelled done (a failed launch kept
    and requeued, or a reported workload's kept pod, is)."""
    return bool(pod["metadata"]["labels"].get(POD_EXECUTOR_DONE_LABEL) != TRUE_LABEL_VALUE)


class _ClusterModel(RuleBasedStateMachine):
    """What both machines keep and check: the cluster, the workloads queued and how each
    ended, and the checks at the end of a run."""

    db: FakeAirflowDB

    def __init__(self) -> None:
        super().__init__()
        self.broken = False
        self.now = T0
        self.cluster = FakeCluster(now=T0, namespaces=[NS])
        self.decisions = DecisionConfig(
            pod_launch_failure_retries=POD_LAUNCH_FAILURE_RETRIES,
            callback_launch_failure_retries=CALLBACK_LAUNCH_FAILURE_RETRIES,
            task_publish_max_retries=TASK_PUBLISH_MAX_RETRIES,
        )
        self.workloads: list[WorkloadKey] = []
        self.completed_by_adoption: set[WorkloadKey] = set()
        self.ended: set[WorkloadKey] = set()
        """Workloads whose pod ran them to the end (Succeeded): never to be run again,
        whatever a crash left behind."""
        self.counter = 0

    def pods_where(self, condition: Callable[[Pod], bool]) -> list[str]:
        return [pod["metadata"]["name"] for pod in self.cluster.pods() if condition(pod)]

    def key_of(self, name: str) -> WorkloadKey:
        pod = self.cluster.pod(NS, name)
        assert pod is not None
        annotations = pod["metadata"]["annotations"]
        if "callback_id" in annotations:
            return CallbackKey(annotations["callback_id"])
        return TaskInstanceKey(
            annotations["dag_id"], annotations["task_id"], annotations["run_id"], 1
        )

    def _settled(self, key: WorkloadKey) -> bool:
        return bool(self.db.terminal_reports(key)) or self.db.state(key) in TASK_FINISHED_STATES

    def _check_the_end(self, watched: Callable[[Pod], bool]) -> None:
        """Every workload reported once (or finished by its task process under a dead
        scheduler); with failed pods deleted or labelled done, no finished pod left."""
        for key in self.workloads:
            terminal = self.db.terminal_reports(key)
            if isinstance(key, TaskInstanceKey) and not terminal:
                # A pod that Succeeded under a dead scheduler: the task process wrote its
                # final state itself and adoption only cleans the pod up.
                assert key in self.completed_by_adoption, f"task {key} was never reported"
                assert self.db.task_states[key] in TASK_FINISHED_STATES
                continue
            assert len(terminal) == 1, f"{key} was reported {len(terminal)} times: {terminal}"
        if (
            self.decisions.mark_kept_failed_pods_done
            or self.decisions.delete_worker_pods_on_failure
        ):
            # Every finished pod a live scheduler owns was deleted or labelled done; a
            # second pod of a workload already reported (a task run twice) too
            # (tests/executor/test_executor_findings.py).
            left = self.pods_where(watched)
            assert not left, f"pods left to be re-reported forever: {left}"


class ExecutorMachine(_ClusterModel):
    def __init__(self) -> None:
        super().__init__()
        self.db = CheckingDB(self)
        self.read_callback_states = True
        self.scheduler_id = 0
        self.delivered: list[str] = []
        self._start_scheduler()

    # --- the executor -----------------------------------------------------------------

    def _start_scheduler(self) -> None:
        self.scheduler_id += 1
        self.core = ExecutorCore(
            ExecutorConfig(
                scheduler_id=self.scheduler_id,
                namespace=NS,
                airflow_version=VERSION,
                kube_image="airflow:3.3.2",
                decisions=self.decisions,
                read_callback_states=self.read_callback_states,
                creation_batch_size=3,
                rng=random.Random(self.scheduler_id),
            )
        )
        self.driver = CoreDriver(self.core, self.cluster, self.db)
        self.delivered = []

    def sync(self) -> None:
        self.driver.run_pass(self.now)

    # --- the cluster ------------------------------------------------------------------

    def _pick(self, condition: Callable[[Pod], bool], pick: int) -> str:
        # A dead scheduler's pod whose relabel failed stands still in this model until a
        # later adoption takes it (with the provider, its task would be reset and run
        # twice meanwhile: a hazard left as it is).
        names = self.pods_where(lambda pod: condition(pod) and not self._orphaned(pod))
        return names[pick % len(names)]

    def _watched(self, pod: Pod) -> bool:
        labels = pod["metadata"]["labels"]
        return bool(
            labels.get(AIRFLOW_WORKER_LABEL) == str(self.scheduler_id)
            and labels.get(POD_EXECUTOR_DONE_LABEL) != TRUE_LABEL_VALUE
        )

    def _orphaned(self, pod: Pod) -> bool:
        """A dead scheduler's pod, not done (its relabel at adoption failed)."""
        owner = pod["metadata"]["labels"].get(AIRFLOW_WORKER_LABEL)
        done = pod["metadata"]["labels"].get(POD_EXECUTOR_DONE_LABEL) == TRUE_LABEL_VALUE
        return owner != str(self.scheduler_id) and not done

    # kept as the old machine's names, for the pinned scenarios below
    @property
    def running(self) -> set[WorkloadKey]:
        return set(self.core.running)

    @property
    def jobs(self) -> tuple[KubernetesJob[Any], ...]:
        return self.core.queued

    # --- configuration ----------------------------------------------------------------

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
        self.decisions = DecisionConfig(
            delete_worker_pods=delete_worker_pods,
            delete_worker_pods_on_failure=delete_worker_pods_on_failure,
            mark_kept_failed_pods_done=mark_kept_failed_pods_done,
            pod_launch_failure_retries=POD_LAUNCH_FAILURE_RETRIES,
            callback_launch_failure_retries=CALLBACK_LAUNCH_FAILURE_RETRIES,
            task_publish_max_retries=TASK_PUBLISH_MAX_RETRIES,
        )
        self.read_callback_states = know_callback_state
        self.scheduler_id = 0
        self._start_scheduler()

    # --- rules: the scheduler hands work over ------------------------------------------

    def _queue(self, key: WorkloadKey) -> None:
        if isinstance(key, TaskInstanceKey):
            self.db.add_task(key)
        elif isinstance(key, CallbackKey):
            self.db.add_callback(key)
        self.core.submit(KubernetesJob(key, ("python", "-m", "x")))

    @rule()
    @step
    def queue_task(self) -> None:
        self.counter += 1
        key = TaskInstanceKey("etl", f"task_{self.counter}", "manual__1", 1)
        self.workloads.append(key)
        self._queue(key)

    @rule()
    @step
    def queue_callback(self) -> None:
        self.counter += 1
        key = CallbackKey(str(uuid.UUID(int=self.counter)))
        self.workloads.append(key)
        self._queue(key)

    @precondition(lambda self: self.core.queued)
    @rule(error=st.none() | st.sampled_from(CREATE_ERRORS))
    @step
    def create_pod(self, error: CreateError | None) -> None:
        if error is not None:
            status, message, headers = error
            self.cluster.fail_next("create_pod", status, message=message, headers=headers)
        self.sync()

    @rule()
    @step
    def sync_pass(self) -> None:
        self.sync()

    # --- rules: the cluster -----------------------------------------------------------

    @precondition(having(is_pending))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_starts(self, pick: int) -> None:
        self.cluster.set_status(NS, self._pick(is_pending, pick), RUNNING)

    @precondition(having(is_running))
    @rule(pick=st.integers(0, 7))
    @step
    def task_process_starts(self, pick: int) -> None:
        key = self.key_of(self._pick(is_running, pick))
        if isinstance(key, TaskInstanceKey):
            self.db.task_started(key)

    @precondition(having(is_running))
    @rule(
        pick=st.integers(0, 7),
        outcome=st.sampled_from([TaskInstanceState.SUCCESS, TaskInstanceState.FAILED]),
    )
    @step
    def pod_succeeds(self, pick: int, outcome: TaskInstanceState) -> None:
        self._finish(self._pick(is_running, pick), outcome)

    def _finish(self, name: str, outcome: TaskInstanceState) -> None:
        key = self.key_of(name)
        if isinstance(key, TaskInstanceKey):
            self.db.task_finished(key, outcome)
        self.ended.add(key)
        self.cluster.set_status(NS, name, SUCCEEDED)

    @precondition(having(is_running))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_oom_killed(self, pick: int) -> None:
        # Not "ended": the task process never started here, so the executor may requeue it
        # as a launch that failed before the workload ran.
        self.cluster.set_status(NS, self._pick(is_running, pick), OOM_KILLED)

    @precondition(having(is_pending))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_fails_before_start(self, pick: int) -> None:
        # The image cannot be pulled: the task instance stays QUEUED.
        self.cluster.set_status(NS, self._pick(is_pending, pick), PULL_FAILED)

    @precondition(having(is_alive))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_evicted(self, pick: int) -> None:
        self.cluster.set_status(NS, self._pick(is_alive, pick), EVICTED)

    @precondition(having(is_running))
    @rule(pick=st.integers(0, 7))
    @step
    def pod_deleted_while_running(self, pick: int) -> None:
        self.cluster.remove_pod(NS, self._pick(is_running, pick))

    # --- rules: the watch -------------------------------------------------------------

    def _feed(self, event: Event) -> None:
        line = json.dumps(event)
        self.delivered.append(line)
        self.core.feed_event(line, now=self.now)

    @precondition(lambda self: len(self.driver.watch) > 0)
    @rule(pick=st.integers(0, 7))
    @step
    def deliver_event(self, pick: int) -> None:
        # Usually the oldest; any waiting event may overtake the others.
        self._feed(self.driver.watch.drop(pick % len(self.driver.watch)))

    @rule()
    @step
    def deliver_all_events(self) -> None:
        # One watcher pass then one sync: every waiting event, in order.
        for event in self.driver.watch.events():
            self._feed(event)
        self.sync()
        self.driver.ensure_watch()

    @precondition(lambda self: self.delivered)
    @rule(pick=st.integers(0, 15))
    @step
    def redeliver_event(self, pick: int) -> None:
        self.core.feed_event(self.delivered[-1 - pick % len(self.delivered)], now=self.now)

    @rule()
    @step
    def watch_expires(self) -> None:
        self.cluster.expire_watches()

    # --- rules: the executor's own troubles -------------------------------------------

    @rule(
        service=st.sampled_from(OUTAGE_TARGETS),
        failures=st.integers(1, 2 * (MAX_HANDLING_RETRIES + 1)),
    )
    @step
    def outage(self, service: str, failures: int) -> None:
        if service == "database":
            self.db.fail_next(failures)
        else:
            self.cluster.fail_next(service, 503, reason="ServiceUnavailable", times=failures)

    @rule(fault=st.sampled_from(NETWORK_FAULTS), times=st.integers(1, 3))
    @step
    def network_fails(self, fault: tuple[str, dict[str, Any]], times: int) -> None:
        call, how = fault
        self.cluster.fail_next(call, times=times, **how)
        self.sync()

    @rule()
    @step
    def time_passes(self) -> None:
        # Pauses and read backs wait on the clock (the creation pause doubles to 30 s).
        self.now += datetime.timedelta(seconds=5)
        self.cluster.now = self.now
        self.sync()

    @rule()
    @step
    def scheduler_restarts(self) -> None:
        # Everything in memory is gone: running, attempts, the job queue, the retry
        # counters, results to retry and events not yet read.
        dead = [str(job_id) for job_id in range(1, self.scheduler_id + 1)]
        self._start_scheduler()
        expected = [
            key
            for key, state in self.db.task_states.items()
            if state in {TaskInstanceState.QUEUED, TaskInstanceState.RUNNING}
        ]
        active_callbacks = [
            key
            for key, state in self.db.callback_states.items()
            if state not in CALLBACK_TERMINAL_STATES
        ]
        adoption = self.driver.adopt(
            dead,
            now=self.now,
            expected_task_keys=expected,
            expected_callback_keys=active_callbacks,
        )
        assert adoption.plan.undecodable == ()
        self.completed_by_adoption |= {result.key for result in adoption.plan.completed}
        # The scheduler resets the task instances the adoption names and queues them
        # again, and the executor queues the callbacks it names (their jobs were in the
        # lost queue): only workloads with no pod anywhere and nothing reported.
        for key in adoption.rerun:
            pods = [name for name in self.pods_where(_not_done) if self.key_of(name) == key]
            assert not pods, f"{key} is run again beside its pods {pods}"
            assert not self.db.terminal_reports(key), f"{key} is run again after its report"
            assert key not in self.ended, f"{key} ran to its end in a pod, and is run again"
            self._queue(key)

    # --- invariants -------------------------------------------------------------------

    @invariant()
    def retries_are_bounded(self) -> None:
        for key in self.core.running:
            assert self.core.create_retries(key) <= TASK_PUBLISH_MAX_RETRIES
            attempt = self.core.attempts.get(key)
            limit = (
                POD_LAUNCH_FAILURE_RETRIES
                if isinstance(key, TaskInstanceKey)
                else CALLBACK_LAUNCH_FAILURE_RETRIES
            )
            assert attempt is None or attempt.attempts <= limit, f"{key} requeued too often"

    @invariant()
    def only_known_workloads_run(self) -> None:
        assert set(self.core.running) <= set(self.workloads)

    @invariant()
    def one_live_pod_per_workload(self) -> None:
        # A creation whose answer was lost and was made again under a new name would
        # leave two live pods of one workload: the same work twice.
        live = [
            self.key_of(name)
            for name in self.pods_where(
                lambda pod: (
                    is_alive(pod)
                    and self._watched(pod)
                    and "deletionTimestamp" not in pod["metadata"]
                )
            )
        ]
        doubled = {key for key in live if live.count(key) > 1}
        assert not doubled, f"two live pods of one workload: {doubled}"

    # --- the end: drain and check -----------------------------------------------------

    def settle(self) -> None:
        self.cluster._faults.clear()
        self.db._failures = 0
        tried: set[str] = set()
        for _ in range(2_000):
            self.now += datetime.timedelta(seconds=1)
            self.cluster.now = self.now
            if len(self.driver.watch):
                for event in self.driver.watch.events():
                    self._feed(event)
                self.sync()
                self.driver.ensure_watch()
            elif self.core.has_work:
                self.sync()
                self.driver.ensure_watch()
            elif pending := self.pods_where(lambda pod: is_pending(pod) and self._watched(pod)):
                self.cluster.set_status(NS, pending[0], RUNNING)
            elif running := self.pods_where(lambda pod: is_running(pod) and self._watched(pod)):
                key = self.key_of(running[0])
                if isinstance(key, TaskInstanceKey):
                    self.db.task_started(key)
                self._finish(running[0], TaskInstanceState.SUCCESS)
            elif orphans := [
                name
                for name in self.pods_where(self._orphaned)
                if not self._settled(self.key_of(name))
                or is_alive(self.cluster.pod(NS, name) or {})
            ]:
                # A dead scheduler's pod whose relabel failed: the next restart adopts it;
                # one that even that leaves alone (its workload settled, or a newer pod
                # stands for it) an operator removes.
                if orphans[0] in tried:
                    self.cluster.remove_pod(NS, orphans[0])
                else:
                    tried.update(orphans)
                    self.scheduler_restarts.__wrapped__(self)  # type: ignore[attr-defined]
            else:
                return
        raise AssertionError("the executor never settled")

    def teardown(self) -> None:
        if self.broken:
            return
        self.settle()
        assert self.running == set(), f"still running after every pod finished: {self.running}"
        self._check_the_end(self._watched)


# Twice the profile's examples: 300 derandomised runs of up to 50 steps in the ci profile,
# 6,000 random ones in the thorough profile. The scenarios below pin counterexamples.
ExecutorMachine.TestCase.settings = settings(
    max_examples=2 * (settings.default or settings()).max_examples,
    stateful_step_count=50,
    deadline=None,
    report_multiple_bugs=False,
)
TestExecutor = ExecutorMachine.TestCase


class ConcurrentExecutorMachine(ExecutorMachine):
    """The same executor driven with many requests in flight (``start_request``), each
    completed — performed against the kit, then reported — in an order hypothesis picks,
    interleaved with watch events, pod changes, outages and crashes; small budgets, so
    clean-ups and creations also wait for a slot. The invariants and the final checks are
    the serial machine's: never two live pods for one launch, every workload reported
    exactly once, no terminal state overwritten."""

    def __init__(self) -> None:
        self.order = random.Random(0)
        super().__init__()

    def _start_scheduler(self) -> None:
        super()._start_scheduler()
        config = attrs.evolve(
            self.core.config, max_concurrent_creations=2, max_concurrent_cleanups=2
        )
        self.core = ExecutorCore(config)
        self.driver = CoreDriver(self.core, self.cluster, self.db)

    def sync(self) -> None:
        self.driver.run_pass_concurrently(self.now, order=self.order)

    @initialize(order=st.randoms(use_true_random=False))
    def completion_order(self, order: random.Random) -> None:
        self.order = order

    @rule()
    @step
    def start_requests(self) -> None:
        self.driver.start(self.now)

    @precondition(lambda self: self.core.in_flight)
    @rule(pick=st.integers(0, 15))
    @step
    def complete_request(self, pick: int) -> None:
        in_flight = self.core.in_flight
        self.driver.complete(in_flight[pick % len(in_flight)])

    @precondition(lambda self: self.core.in_flight)
    @rule(reached=st.booleans())
    @step
    def crash_with_requests_in_flight(self, reached: bool) -> None:
        # The scheduler dies with requests on the wire: they reached the server (and the
        # answers were lost) or they did not; the new scheduler adopts what is there.
        if reached:
            for request in self.core.in_flight:
                with contextlib.suppress(*FAILURES):
                    self.driver.perform(request)
        self.scheduler_restarts.__wrapped__(self)  # type: ignore[attr-defined]


# The profile's examples (150 derandomised runs in ci, 3,000 in the thorough profile).
ConcurrentExecutorMachine.TestCase.settings = settings(
    max_examples=(settings.default or settings()).max_examples,
    stateful_step_count=50,
    deadline=None,
    report_multiple_bugs=False,
)
TestConcurrentExecutor = ConcurrentExecutorMachine.TestCase


# --- fixed scenarios -------------------------------------------------------------------------


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
    return state.db.reported(key)


def test_requeued_task_survives_its_old_pod_leaving_the_watch() -> None:
    # The done label makes the failed pod leave the watch (DELETED, no timestamp, read as
    # ADOPTED); that used to free the slot of the requeued task, whose SUCCESS was then lost.
    state = machine()
    state.queue_task()
    state.create_pod(error=None)
    state.pod_evicted(pick=0)
    state.deliver_all_events()
    assert state.running == {state.workloads[0]}
    state.teardown()
    assert reported(state) == [TaskInstanceState.SUCCESS]


def test_requeued_callback_survives_its_old_pod_leaving_the_watch() -> None:
    state = machine()
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_fails_before_start(pick=0)
    state.teardown()
    assert reported(state) == [CallbackState.RUNNING, CallbackState.SUCCESS]


def test_callback_that_succeeded_under_a_dead_scheduler_is_reported() -> None:
    state = machine()
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_starts(pick=0)
    state.pod_succeeds(pick=0, outcome=TaskInstanceState.SUCCESS)
    state.scheduler_restarts()
    state.teardown()
    assert reported(state) == [CallbackState.SUCCESS]


def test_stale_running_event_never_reopens_a_finished_callback() -> None:
    state = machine(know_callback_state=False)
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_starts(pick=0)
    state.pod_evicted(pick=0)
    state.deliver_event(pick=2)  # Failed overtakes Running
    state.deliver_all_events()
    state.teardown()
    assert reported(state) == [CallbackState.FAILED]


def test_pod_deleted_while_the_watch_was_down_settles_its_task() -> None:
    state = machine()
    state.queue_task()
    state.create_pod(error=None)
    state.pod_starts(pick=0)
    state.task_process_starts(pick=0)
    state.deliver_all_events()
    state.pod_deleted_while_running(pick=0)
    state.driver.watch.events()  # the deletion events are lost ...
    state.watch_expires()  # ... in a 410
    state.teardown()
    assert reported(state) == [TaskInstanceState.FAILED]


def test_a_relaunched_pod_made_without_an_answer_and_gone_in_a_watch_gap_is_settled() -> None:
    # Found by the ci profile (issue 29): the relaunch's creation lost its answer, its read
    # back met an outage, the watch showed the pod run, then it was deleted in a watch gap;
    # the re-list waited for the read back, which found no pod: made, but never settled.
    state = machine()
    state.watch_expires()
    state.queue_task()
    state.create_pod(error=None)
    state.queue_task()
    state.queue_task()
    state.pod_evicted(pick=0)
    state.queue_task()
    state.network_fails(fault=("read_pod", {"status": None, "refused": True}), times=1)
    state.queue_task()
    state.sync_pass()
    state.deliver_event(pick=0)
    state.network_fails(fault=("create_pod", {"status": None, "applied": True}), times=1)
    state.watch_expires()
    state.pod_starts(pick=0)
    state.queue_task()
    state.pod_deleted_while_running(pick=0)
    state.teardown()
    assert state.running == set()


def test_failed_handling_of_a_duplicate_does_not_report_a_finished_callback_again() -> None:
    """Giving up on a result of a workload no longer running reports nothing."""
    state = machine(mark_kept_failed_pods_done=False)
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_evicted(pick=0)
    state.deliver_all_events()
    assert reported(state) == [CallbackState.FAILED]
    state.outage(service="database", failures=4)
    state.redeliver_event(pick=0)
    for _ in range(4):
        state.sync_pass()
    assert state.core.backlog == 0
    state.teardown()
    assert reported(state) == [CallbackState.FAILED]


def test_failed_handling_still_cleans_the_pod_up() -> None:
    """After handling gives up, the pod is still deleted or labelled done."""
    state = machine()
    state.queue_callback()
    state.create_pod(error=None)
    state.outage(service="database", failures=4)
    state.pod_evicted(pick=0)
    state.deliver_all_events()
    state.sync_pass()
    state.sync_pass()
    state.sync_pass()
    (pod,) = state.cluster.pods()
    assert pod["metadata"]["labels"][POD_EXECUTOR_DONE_LABEL] == TRUE_LABEL_VALUE
    assert state.running == set()
    assert reported(state) == [CallbackState.FAILED]
    state.teardown()
    assert reported(state) == [CallbackState.FAILED]


def test_kept_failed_callback_pod_is_not_reported_again_after_a_restart() -> None:
    state = machine(mark_kept_failed_pods_done=False, know_callback_state=False)
    state.queue_callback()
    state.create_pod(error=None)
    state.pod_evicted(pick=0)
    state.deliver_all_events()
    state.scheduler_restarts()
    state.deliver_all_events()
    state.teardown()
    assert reported(state) == [CallbackState.FAILED]


@pytest.mark.parametrize("kind", ["task", "callback"])
def test_kept_pod_of_an_earlier_launch_does_not_hide_a_vanished_pod(kind: str) -> None:
    state = machine(mark_kept_failed_pods_done=False)
    if kind == "task":
        state.queue_task()
    else:
        state.queue_callback()
    state.create_pod(error=None)
    state.pod_fails_before_start(pick=0)
    state.deliver_all_events()  # requeued and created again; the failed pod is kept
    state.pod_starts(pick=0)
    state.pod_deleted_while_running(pick=0)
    state.driver.watch.events()  # the deletion events are lost in a 410
    state.watch_expires()
    state.teardown()
    assert reported(state)[-1] in {TaskInstanceState.FAILED, CallbackState.FAILED}


def test_failed_pod_of_an_earlier_launch_is_not_adopted_beside_the_live_one() -> None:
    state = machine(mark_kept_failed_pods_done=False)
    state.queue_task()
    state.create_pod(error=None)
    state.pod_fails_before_start(pick=0)
    state.deliver_all_events()  # requeued; the failed pod is kept, not labelled done
    state.pod_starts(pick=0)
    state.task_process_starts(pick=0)
    state.scheduler_restarts()
    state.deliver_all_events()
    assert state.running == set(state.workloads)
    state.teardown()
    assert reported(state) == [TaskInstanceState.SUCCESS]


def test_a_newer_failed_launch_is_adopted_beside_an_older_stuck_one() -> None:
    """Found by the machine: the requeued first pod is stuck Pending (kept), the second
    fails; after a restart adoption used to skip both and the callback was never reported."""
    state = machine(mark_kept_failed_pods_done=False)
    state.queue_callback()
    state.deliver_all_events()
    state.pod_fails_before_start(pick=0)
    state.deliver_all_events()
    state.pod_evicted(pick=0)
    state.scheduler_restarts()
    state.teardown()
    assert reported(state) == [CallbackState.FAILED]


def test_creation_retried_after_a_429_and_a_task_never_reported_twice() -> None:
    state = machine()
    state.queue_task()
    state.create_pod(error=CREATE_ERRORS[1])  # 429, Retry-After: 1
    assert state.core.create_retries(state.workloads[0]) == 1
    state.teardown()
    assert reported(state) == [TaskInstanceState.SUCCESS]


def test_a_failed_clean_up_of_an_adopted_pod_is_tried_again() -> None:
    # Found by the thorough profile: handling gave up while the database was down (FAILED
    # reported, the delete failed, its retry lost with the scheduler); the new scheduler
    # relabelled the Succeeded pod and its delete failed too, and the pod, remembered as
    # cleaned up, stayed in the watch for ever.
    state = machine()
    state.watch_expires()
    state.outage(failures=1, service="database")
    state.queue_callback()
    state.deliver_all_events()
    state.outage(failures=2, service="delete_pod")
    state.outage(failures=3, service="database")
    state.pod_starts(pick=0)
    state.pod_succeeds(outcome=TaskInstanceState.SUCCESS, pick=0)
    for _ in range(4):
        state.deliver_all_events()
    state.scheduler_restarts()
    state.teardown()
    assert state.cluster.pods() == []


def test_a_fatal_creation_error_reports_failed_once() -> None:
    state = machine()
    state.queue_callback()
    state.create_pod(error=CREATE_ERRORS[4])  # 422
    state.teardown()
    assert reported(state) == [CallbackState.FAILED]


_RUN = """
import sys
sys.path[:0] = {paths!r}
from tests.executor.test_executor_stateful import machine, CREATE_ERRORS
from k8s_workloads.testing import CoreDriver
lines = []
run_pass = CoreDriver.run_pass
def recorded(self, now):
    report = run_pass(self, now)
    lines.extend(repr(request) for request in report.performed)
    return report
CoreDriver.run_pass = recorded
state = machine(mark_kept_failed_pods_done=False)
for _ in range(3):
    state.queue_task()
    state.queue_callback()
state.create_pod(error=CREATE_ERRORS[0])
state.create_pod(error=None)
state.pod_starts(pick=1)
state.pod_fails_before_start(pick=0)
state.deliver_all_events()
state.watch_expires()
state.scheduler_restarts()
state.teardown()
print("\\n".join(lines))
"""


def test_the_same_run_gives_the_same_requests_under_another_hash_seed() -> None:
    # The tests' root, and the package this process runs (a worktree's, not the install's).
    root = str(pathlib.Path(__file__).resolve().parents[2])
    paths = [root, str(pathlib.Path(k8s_workloads.__file__).resolve().parents[1])]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", _RUN.format(paths=paths)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("0", "4242")
    }
    (output,) = outputs
    assert output.count("CreatePod(") >= 6
    assert output.count("ReadStates(") >= 1


# --- several schedulers at once --------------------------------------------------------------
#
# Two or three schedulers, each with its own core, watch and driver, share one cluster and one
# database. One dies (its memory is gone, its pods stay); a live one adopts the dead ones'
# pods, or two live ones try at once from the same listing (the relabel tests the listed
# owner: the loser's test fails, a 422, and it must not track the pod). Tasks may carry a
# fixed pod name (an override's metadata.name), so a requeued launch reuses it; the cluster's
# clock may stop, so pods of one workload are created at the same second; label patches fail
# (500, 409, a connection reset) on demand.

MAX_SCHEDULERS = 5
"""Schedulers started in one run, in all (ids 1 to 5)."""
PATCH_FAULTS: list[tuple[int | None, str, str]] = [
    (500, "InternalError", "etcdserver: request timed out"),
    # What the API server answers a patch that lost an update race (transient).
    (
        409,
        "Conflict",
        (
            'Operation cannot be fulfilled on pods "p": the object has been modified; please '
            "apply your changes to the latest version and try again"
        ),
    ),
    (None, "", ""),  # connection reset
]


def multi_step(function: F) -> F:
    """A step of the schedulers' machine: time goes on (the cluster's clock may stand)."""

    @functools.wraps(function)
    def wrapper(self: SchedulersMachine, *args: Any, **kwargs: Any) -> None:
        self._tick()
        try:
            function(self, *args, **kwargs)
        except BaseException:
            self.broken = True
            raise

    return wrapper  # type: ignore[return-value]


def note(what: str) -> None:
    """Count a hard-to-reach case in the statistics (``--hypothesis-show-statistics``)."""
    if currently_in_test_context():
        hypothesis.event(what)


class Scheduler:
    """One scheduler process: its core and driver, and whether it is alive."""

    def __init__(self, job_id: int, core: ExecutorCore, driver: CoreDriver) -> None:
        self.job_id = job_id
        self.core = core
        self.driver = driver
        self.alive = True


class SharedDB(FakeAirflowDB):
    """One metadata database for every scheduler, checking each report as it arrives."""

    def __init__(self, machine: SchedulersMachine) -> None:
        super().__init__()
        self.machine = machine
        self.reporter: dict[int, int] = {}
        """The scheduler that reported each event, by its index in ``events``."""

    def record_by(self, event: EmitEvent, job_id: int) -> None:
        self._check(event, job_id)
        self.reporter[len(self.events)] = job_id
        self.record(event)

    def _check(self, event: EmitEvent, job_id: int) -> None:
        key, state = event.key, event.state
        earlier = [e for e in self.events if e.key == key and is_terminal(e.state)]
        if isinstance(key, CallbackKey) or is_terminal(state):
            assert not earlier, f"{key} reported {state.value} by {job_id} after {earlier[0]}"
        if (
            isinstance(key, TaskInstanceKey)
            and state is TaskInstanceState.FAILED
            and "gave up" not in (event.info or "")
        ):
            assert self.task_states.get(key) is not TaskInstanceState.SUCCESS, (
                f"task {key} reported failed by {job_id}, but its process finished it"
            )
        if not is_terminal(state):
            return
        machine = self.machine
        alive = [
            name
            for name in machine.pods_where(lambda pod: is_alive(pod) and not machine.orphaned(pod))
            if machine.key_of(name) == key
        ]
        # Nothing with a pod left anywhere is run again (its relabel failed: it is tried
        # again, or named), so no workload has two pods to report for.
        assert not alive, f"{key} reported {state.value} by {job_id} while its pod {alive} lives"
        others = [
            other.job_id
            for other in machine.live()
            if other.job_id != job_id and other.core.is_running(key)
        ]
        assert not others, (
            f"{key} reported {state.value} ({event.info}) by scheduler {job_id} while "
            f"scheduler {others} runs it"
        )


class SchedulerDB(FakeAirflowDB):
    """What one scheduler's driver sees of the shared database."""

    def __init__(self, shared: SharedDB, job_id: int) -> None:
        super().__init__()
        self.shared = shared
        self.job_id = job_id

    def record(self, event: EmitEvent) -> None:
        self.shared.record_by(event, self.job_id)

    def read_states(
        self, keys: Iterable[WorkloadKey]
    ) -> dict[WorkloadKey, TaskInstanceState | CallbackState | None]:
        return self.shared.read_states(keys)


class SchedulersMachine(_ClusterModel):
    db: SharedDB

    def __init__(self) -> None:
        super().__init__()
        self.clock_stopped = False
        self.fixed_names = False
        self.db = SharedDB(self)
        self.schedulers: list[Scheduler] = []
        self.owner: dict[WorkloadKey, int] = {}
        """The scheduler each workload was queued by or handed over to (queued_by_job_id)."""
        """Workloads launched again while a dead scheduler's pod of theirs was left."""

    # --- the schedulers ---------------------------------------------------------------

    def _start(self) -> Scheduler:
        job_id = len(self.schedulers) + 1
        core = ExecutorCore(
            ExecutorConfig(
                scheduler_id=job_id,
                namespace=NS,
                airflow_version=VERSION,
                kube_image="airflow:3.3.2",
                decisions=self.decisions,
                creation_batch_size=3,
                rng=random.Random(job_id),
            )
        )
        driver = CoreDriver(core, self.cluster, SchedulerDB(self.db, job_id))
        scheduler = Scheduler(job_id, core, driver)
        self.schedulers.append(scheduler)
        return scheduler

    def live(self) -> list[Scheduler]:
        return [scheduler for scheduler in self.schedulers if scheduler.alive]

    def _live_pick(self, pick: int) -> Scheduler:
        live = self.live()
        return live[pick % len(live)]

    def _live_ids(self) -> set[str]:
        return {str(scheduler.job_id) for scheduler in self.live()}

    def _dead_ids(self) -> list[str]:
        return [str(s.job_id) for s in self.schedulers if not s.alive]

    # --- the cluster ------------------------------------------------------------------

    def watched(self, pod: Pod) -> bool:
        """A pod a live scheduler watches."""
        labels = pod["metadata"]["labels"]
        return bool(
            labels.get(AIRFLOW_WORKER_LABEL) in self._live_ids()
            and labels.get(POD_EXECUTOR_DONE_LABEL) != TRUE_LABEL_VALUE
        )

    def orphaned(self, pod: Pod) -> bool:
        """A dead scheduler's pod, not done (not adopted yet, or its relabel failed)."""
        labels = pod["metadata"]["labels"]
        done = labels.get(POD_EXECUTOR_DONE_LABEL) == TRUE_LABEL_VALUE
        return labels.get(AIRFLOW_WORKER_LABEL) not in self._live_ids() and not done

    def _pick(self, condition: Callable[[Pod], bool], pick: int) -> str:
        # A dead scheduler's pod stands still until it is adopted.
        names = self.pods_where(lambda pod: condition(pod) and self.watched(pod))
        return names[pick % len(names)]

    # --- configuration ----------------------------------------------------------------

    @initialize(
        schedulers=st.integers(2, 3),
        delete_worker_pods=st.sampled_from([True, False]),
        delete_worker_pods_on_failure=st.sampled_from([True, False]),
        mark_kept_failed_pods_done=st.sampled_from([True, False]),
        clock_stopped=st.booleans(),
        fixed_names=st.booleans(),
    )
    def configure(  # noqa: PLR0917 - hypothesis passes the draws by name
        self,
        schedulers: int,
        delete_worker_pods: bool,
        delete_worker_pods_on_failure: bool,
        mark_kept_failed_pods_done: bool,
        clock_stopped: bool,
        fixed_names: bool,
    ) -> None:
        self.clock_stopped = clock_stopped
        self.fixed_names = fixed_names
        self.decisions = DecisionConfig(
            delete_worker_pods=delete_worker_pods,
            delete_worker_pods_on_failure=delete_worker_pods_on_failure,
            mark_kept_failed_pods_done=mark_kept_failed_pods_done,
            pod_launch_failure_retries=POD_LAUNCH_FAILURE_RETRIES,
            callback_launch_failure_retries=CALLBACK_LAUNCH_FAILURE_RETRIES,
            task_publish_max_retries=TASK_PUBLISH_MAX_RETRIES,
        )
        for _ in range(schedulers):
            self._start()

    def _tick(self) -> None:
        self.now += datetime.timedelta(seconds=1)
        if not self.clock_stopped:
            self.cluster.now = self.now

    # --- rules: work --------------------------------------------------------------------

    def _queue(self, scheduler: Scheduler, key: WorkloadKey, *, fixed_name: bool = False) -> None:
        if isinstance(key, TaskInstanceKey):
            self.db.add_task(key)
        elif isinstance(key, CallbackKey):
            self.db.add_callback(key)
        self.owner[key] = scheduler.job_id
        override = None
        if fixed_name and isinstance(key, TaskInstanceKey):
            override = {"metadata": {"name": f"fixed-{key.task_id.replace('_', '-')}"}}
        scheduler.core.submit(KubernetesJob(key, ("python", "-m", "x"), pod_override=override))

    @rule(on=st.integers(0, 2))
    @multi_step
    def queue_task(self, on: int) -> None:
        self.counter += 1
        key = TaskInstanceKey("etl", f"task_{self.counter}", "manual__1", 1)
        self.workloads.append(key)
        self._queue(self._live_pick(on), key, fixed_name=self.fixed_names)

    @rule(on=st.integers(0, 2))
    @multi_step
    def queue_callback(self, on: int) -> None:
        self.counter += 1
        key = CallbackKey(str(uuid.UUID(int=self.counter)))
        self.workloads.append(key)
        self._queue(self._live_pick(on), key)

    @rule(on=st.integers(0, 2), error=st.none() | st.sampled_from(CREATE_ERRORS))
    @multi_step
    def sync_pass(self, on: int, error: CreateError | None) -> None:
        if error is not None:
            status, message, headers = error
            self.cluster.fail_next("create_pod", status, message=message, headers=headers)
        scheduler = self._live_pick(on)
        scheduler.driver.run_pass(self.now)

    @rule(on=st.integers(0, 2))
    @multi_step
    def deliver_all_events(self, on: int) -> None:
        self._drain(self._live_pick(on))

    def _drain(self, scheduler: Scheduler) -> None:
        driver = scheduler.driver
        driver.deliver(now=self.now)
        driver.run_pass(self.now)
        driver.ensure_watch()

    @rule(on=st.integers(0, 2), pick=st.integers(0, 7))
    @multi_step
    def deliver_event(self, on: int, pick: int) -> None:
        watch = self._live_pick(on).driver.watch
        if len(watch):
            self._live_pick(on).core.feed_event(
                json.dumps(watch.drop(pick % len(watch))), now=self.now
            )

    # --- rules: the cluster -------------------------------------------------------------

    @precondition(lambda self: self.pods_where(lambda p: is_pending(p) and self.watched(p)))
    @rule(pick=st.integers(0, 7))
    @multi_step
    def pod_starts(self, pick: int) -> None:
        self.cluster.set_status(NS, self._pick(is_pending, pick), RUNNING)

    @precondition(lambda self: self.pods_where(lambda p: is_running(p) and self.watched(p)))
    @rule(
        pick=st.integers(0, 7),
        outcome=st.sampled_from([TaskInstanceState.SUCCESS, TaskInstanceState.FAILED]),
    )
    @multi_step
    def pod_succeeds(self, pick: int, outcome: TaskInstanceState) -> None:
        self._finish(self._pick(is_running, pick), outcome)

    def _finish(self, name: str, outcome: TaskInstanceState) -> None:
        key = self.key_of(name)
        if isinstance(key, TaskInstanceKey):
            self.db.task_started(key)
            self.db.task_finished(key, outcome)
        self.ended.add(key)
        self.cluster.set_status(NS, name, SUCCEEDED)

    @precondition(lambda self: self.pods_where(lambda p: is_running(p) and self.watched(p)))
    @rule(pick=st.integers(0, 7), task_started=st.booleans())
    @multi_step
    def pod_oom_killed(self, pick: int, task_started: bool) -> None:
        name = self._pick(is_running, pick)
        key = self.key_of(name)
        if task_started and isinstance(key, TaskInstanceKey):
            self.db.task_started(key)
        self.cluster.set_status(NS, name, OOM_KILLED)

    @precondition(lambda self: self.pods_where(lambda p: is_pending(p) and self.watched(p)))
    @rule(pick=st.integers(0, 7))
    @multi_step
    def pod_fails_before_start(self, pick: int) -> None:
        self.cluster.set_status(NS, self._pick(is_pending, pick), PULL_FAILED)

    @precondition(lambda self: self.pods_where(lambda p: is_pending(p) and self.watched(p)))
    @rule(pick=st.integers(0, 7))
    @multi_step
    def launch_is_requeued(self, pick: int) -> None:
        # A launch fails before it runs and its scheduler reads that at once: the workload
        # is requeued and launched again (under the same name if it is fixed, at the same
        # second if the clock stands), often while the failed pod is kept.
        name = self._pick(is_pending, pick)
        owner = int(self.cluster.pod(NS, name)["metadata"]["labels"][AIRFLOW_WORKER_LABEL])  # type: ignore[index]
        uid = self.cluster.pod(NS, name)["metadata"]["uid"]  # type: ignore[index]
        self.cluster.set_status(NS, name, PULL_FAILED)
        self._drain(self.schedulers[owner - 1])
        self._drain(self.schedulers[owner - 1])
        again = self.cluster.pod(NS, name)
        if again is not None and again["metadata"]["uid"] != uid:
            note("a requeued launch reused its pod name")

    @precondition(lambda self: self.pods_where(lambda p: is_alive(p) and self.watched(p)))
    @rule(pick=st.integers(0, 7))
    @multi_step
    def pod_evicted(self, pick: int) -> None:
        self.cluster.set_status(NS, self._pick(is_alive, pick), EVICTED)

    @precondition(lambda self: self.pods_where(lambda p: is_running(p) and self.watched(p)))
    @rule(pick=st.integers(0, 7))
    @multi_step
    def pod_deleted_while_running(self, pick: int) -> None:
        self.cluster.remove_pod(NS, self._pick(is_running, pick))

    @rule()
    @multi_step
    def watch_expires(self) -> None:
        self.cluster.expire_watches()

    @rule()
    @multi_step
    def clock_stops_or_goes_on(self) -> None:
        # Stopped: every pod is created at the same second, so creation times tie.
        self.clock_stopped = not self.clock_stopped

    @rule(fault=st.sampled_from(PATCH_FAULTS), times=st.integers(1, 3))
    @multi_step
    def patches_fail(self, fault: tuple[int | None, str, str], times: int) -> None:
        status, reason, message = fault
        self.cluster.fail_next("patch_pod", status, reason=reason, message=message, times=times)

    # --- rules: schedulers die, start and adopt -----------------------------------------

    @precondition(lambda self: len(self.live()) >= 2)
    @rule(pick=st.integers(0, 2), adopters=st.integers(0, 2))
    @multi_step
    def scheduler_dies(self, pick: int, adopters: int) -> None:
        # Its memory is gone, its pods stay; at once none, one or two (racing) of the live
        # schedulers adopt them.
        self._live_pick(pick).alive = False
        live = self.live()
        if adopters:
            self._adopt([live[(pick + n) % len(live)] for n in range(min(adopters, len(live)))])

    @precondition(lambda self: len(self.schedulers) < MAX_SCHEDULERS and len(self.live()) < 3)
    @rule()
    @multi_step
    def scheduler_starts(self) -> None:
        # A new scheduler adopts the dead ones' pods as it starts.
        self._adopt([self._start()])

    @precondition(lambda self: any(not s.alive for s in self.schedulers))
    @rule(pick=st.integers(0, 2), race=st.booleans())
    @multi_step
    def adopt_orphans(self, pick: int, race: bool) -> None:
        # One live scheduler adopts the dead ones' pods, or two at once from one listing.
        live = self.live()
        first = live[pick % len(live)]
        adopters = [first]
        if race and len(live) >= 2:
            adopters.append(live[(pick + 1) % len(live)])
        self._adopt(adopters)

    def _adopt(self, adopters: list[Scheduler]) -> None:
        dead = self._dead_ids()
        alive = sorted(self._live_ids())
        expected = [
            key
            for key, state in self.db.task_states.items()
            if state in {TaskInstanceState.QUEUED, TaskInstanceState.RUNNING}
            and str(self.owner[key]) in dead
        ]
        active_callbacks = [
            key
            for key, state in self.db.callback_states.items()
            if state not in CALLBACK_TERMINAL_STATES
        ]
        # Every adopter lists before any relabels: they race on the same versions.
        listings = [self._adoption_listing(adopter, dead, alive) for adopter in adopters]
        for adopter, pods in zip(adopters, listings, strict=True):
            self._note_launches(pods)
            plan = adopter.core.adopt(
                pods,
                alive_scheduler_ids=alive,
                expected_task_keys=expected,
                expected_callback_keys=active_callbacks,
            )
            assert plan.undecodable == ()
            self.completed_by_adoption |= {result.key for result in plan.completed}
        for adopter in adopters:
            report = adopter.driver.run_pass(self.now)
            if any(
                isinstance(request, PatchLabels) and getattr(error, "status", None) == 422
                for request, error in report.failed
            ):
                note(f"adoption by {len(adopters)}: a relabel's owner test failed (422)")
            for key in adopter.core.running:
                self.owner[key] = adopter.job_id
        # The database hands each orphaned task instance to one scheduler: what the first
        # adopter says to run again is reset and queued again there, as are the dead
        # schedulers' active callbacks it names — never one with a pod anywhere or a
        # result reported, and never one another adopter took.
        first = adopters[0]
        tracked = {key for scheduler in self.live() for key in scheduler.core.running}
        orphaned: list[WorkloadKey] = [*expected, *active_callbacks]
        for key in first.core.not_adopted(orphaned):
            if key in tracked or str(self.owner[key]) not in dead:
                continue
            left = [name for name in self.pods_where(_not_done) if self.key_of(name) == key]
            assert not left, f"{key} is run again beside its pods {left}"
            assert not self.db.terminal_reports(key), f"{key} is run again after its report"
            assert key not in self.ended, f"{key} ran to its end in a pod, and is run again"
            self._queue(first, key)

    def _adoption_listing(self, adopter: Scheduler, dead: list[str], alive: list[str]) -> list[Pod]:
        """What ``try_adopt_task_instances`` lists: the lists the core names (the dead
        schedulers' live pods, live callback pods and Succeeded pods no live scheduler
        owns), a pod in two lists passed twice."""
        pods: list[Pod] = []
        for selector in adopter.core.adoption_selectors(dead, alive):
            listing = self.cluster.list_pods(
                NS, label_selector=selector.label_selector, field_selector=selector.field_selector
            )
            pods.extend(listing["items"])
        return pods

    def _note_launches(self, pods: list[Pod]) -> None:
        launches: dict[WorkloadKey, list[str]] = {}
        for pod in pods:
            if phase(pod) != "Succeeded":
                key = self.key_of(pod["metadata"]["name"])
                launches.setdefault(key, []).append(pod["metadata"]["creationTimestamp"])
        for times in launches.values():
            if len(times) > 1:
                note("adoption: a workload with several unfinished launches")
                if len(set(times)) < len(times):
                    note("adoption: launches created at the same second")

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def no_workload_runs_under_two_schedulers(self) -> None:
        seen: dict[WorkloadKey, int] = {}
        for scheduler in self.live():
            for key in scheduler.core.running:
                assert key not in seen, (
                    f"{key} runs under schedulers {seen[key]} and {scheduler.job_id}"
                )
                seen[key] = scheduler.job_id

    @invariant()
    def retries_are_bounded(self) -> None:
        for scheduler in self.live():
            core = scheduler.core
            for key in core.running:
                assert key in self.workloads
                assert core.create_retries(key) <= TASK_PUBLISH_MAX_RETRIES
                attempt = core.attempts.get(key)
                limit = (
                    POD_LAUNCH_FAILURE_RETRIES
                    if isinstance(key, TaskInstanceKey)
                    else CALLBACK_LAUNCH_FAILURE_RETRIES
                )
                assert attempt is None or attempt.attempts <= limit, f"{key} requeued too often"

    # --- the end ------------------------------------------------------------------------

    def settle(self) -> None:
        self.cluster._faults.clear()
        self.db._failures = 0
        self.clock_stopped = False
        if not self.live():
            self._start()
        tried: set[str] = set()
        adopted_unowned = False
        for _ in range(2_000):
            self._tick()
            busy = [
                s
                for s in self.live()
                if len(s.driver.watch) or s.core.has_work or s.driver.watch.closed
            ]
            if busy:
                for scheduler in busy:
                    self._drain(scheduler)
                continue
            if pending := self.pods_where(lambda pod: is_pending(pod) and self.watched(pod)):
                self.cluster.set_status(NS, pending[0], RUNNING)
            elif running := self.pods_where(lambda pod: is_running(pod) and self.watched(pod)):
                self._finish(running[0], TaskInstanceState.SUCCESS)
            elif (
                any(
                    str(self.owner[key]) in self._dead_ids() and not self._settled(key)
                    for key in self.workloads
                )
                and not adopted_unowned
            ):
                # Work a dead scheduler held without a pod (its queue died with it).
                adopted_unowned = True
                self._adopt([self.live()[0]])
            elif orphans := [
                name
                for name in self.pods_where(self.orphaned)
                if not self._settled(self.key_of(name))
                or is_alive(self.cluster.pod(NS, name) or {})
            ]:
                if orphans[0] in tried:
                    self.cluster.remove_pod(NS, orphans[0])
                else:
                    tried.update(orphans)
                    self._adopt([self.live()[0]])
            else:
                return
        raise AssertionError("the executors never settled")

    def teardown(self) -> None:
        if self.broken or not self.schedulers:
            return
        self.settle()
        for scheduler in self.live():
            assert scheduler.core.running == (), (
                f"scheduler {scheduler.job_id} still runs {scheduler.core.running}"
            )
        self._check_the_end(self.watched)


SchedulersMachine.TestCase.settings = settings(
    max_examples=(settings.default or settings()).max_examples,
    stateful_step_count=40,
    deadline=None,
    report_multiple_bugs=False,
)
TestSchedulers = SchedulersMachine.TestCase
