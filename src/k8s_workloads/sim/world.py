"""The simulated world: the cluster, the kubelet, the task process, Airflow, and the
shipped executor core, tick by tick.

* **The cluster** is the test kit's :class:`~k8s_workloads.testing.FakeCluster`: pods by
  namespace and name, ``resourceVersion`` bumped on every change, watch events per
  selector as the API server sends them (a pod that stops matching, after a label patch,
  arrives as ``DELETED`` with its previous content and no ``deletionTimestamp``). Scripted
  creation errors fail the executor's create calls.
* **The kubelet** moves each pod through its script (``steps``), writing a realistic
  ``status`` (phase, reason, conditions, container states); a step's events may be
  delivered twice or late (so they arrive out of order).
* **The task process** writes to the fake database as the real one does: the task
  instance becomes ``running`` when its pod runs and ``success`` when the pod succeeds.
  Callbacks write nothing: like Airflow 3.3's scheduler, only executor events move a
  callback (``queued`` → ``running`` → ``success``/``failed``).
* **The scheduler and executor**: an :class:`~k8s_workloads.executor.ExecutorCore` per
  scheduler, fed every watch event and asked for its requests, which the simulator
  performs on the cluster and the database. ``EmitEvent`` is the scheduler processing the
  event at once: it is logged and applied to the database as Airflow applies it.
* **Scheduler restarts** lose everything in memory (the core and undelivered watch
  events); a new scheduler job id starts, lists the pods of the dead schedulers with the
  adoption selectors, hands the core the task instances queued or running under them and
  the callbacks still active, resets the task instances it could not adopt (rescheduled
  with the next try number, as Airflow does) and watches.
* **Watch errors**: the events in flight are lost and the core re-lists (a 410, or any
  other ERROR event, which the provider also answers with a fresh watch).

Findings are *anomalies*, not hidden (:func:`~k8s_workloads.sim.run_simulation_cli`
exits 1 when there are any): ``unfinished``, ``unexpected_end_state``,
``double_terminal_event``, ``overwritten_final_state``, ``contradicting_event``,
``left_running``, ``slot_leak`` (a result for a running key whose workload is final was
only ignored), ``lost_result`` (the final result of a workload's current pod was ignored
because the key was not running), ``false_adoption`` (an ``ADOPTED`` result freed the slot
of a pod this scheduler still owns), ``lost_in_resync`` (after a re-list a running key has
no pod left), ``completed_callback_not_reported``, ``attempt_record_leak``, ``crash`` (a
library function raised: the scheduler dies and restarts; five make a ``crash_loop``),
``event_storm`` and ``timeout``.
"""

from __future__ import annotations

import dataclasses
import datetime
import heapq
import math
import random
from typing import TYPE_CHECKING, Any

from k8s_workloads.actions import (
    Action,
    DeletePod,
    EmitEvent,
    FreeSlot,
    PatchLabels,
    TrackRunning,
    describe_action,
)
from k8s_workloads.events import Outcome, Resolution
from k8s_workloads.executor import (
    CreatePod,
    ExecutorConfig,
    ExecutorCore,
    Handled,
    ListPods,
    ReadStates,
    Request,
)
from k8s_workloads.io.kit import ClusterCalls
from k8s_workloads.io.policy import failure_is_done
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.labels import (
    AIRFLOW_WORKER_LABEL,
    POD_EXECUTOR_DONE_LABEL,
    TRUE_LABEL_VALUE,
    make_safe_label_value,
    watcher_selector,
)
from k8s_workloads.pods import BASE_CONTAINER_NAME, workload_command_args
from k8s_workloads.sim.report import (
    Anomaly,
    EmittedEvent,
    SimulationResult,
    TimelineEntry,
    WorkloadReport,
)
from k8s_workloads.sim.spec import (
    ContainerSpec,
    PodScript,
    RestartSpec,
    Scenario,
    Step,
    WatchErrorSpec,
    WorkloadSpec,
    is_terminal,
)
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    TASK_ADOPTABLE_STATES,
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    KubernetesJob,
    TaskInstanceState,
    WorkloadResult,
    WorkloadState,
)
from k8s_workloads.testing import FAILURES, FakeAirflowDB, FakeCluster, FakeWatch, Fault

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["simulate"]

Manifest = dict[str, Any]

_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
_MAX_CRASHES = 5
_MAX_EVENTS_PER_TICK = 1_000_000
_INIT_CONTAINER_NAME = "init"


def _describe_key(key: WorkloadKey) -> str:
    # One run per timeline line: the run id would only repeat itself.
    return key.to_text(run_id=False)


def _shorten(text: str, key: WorkloadKey) -> str:
    """A decision's reason with the key's long repr replaced by its short description."""
    return text.replace(repr(key), _describe_key(key))


def _action_texts(actions: Iterable[Action], key: WorkloadKey) -> tuple[str, ...]:
    return tuple(_shorten(describe_action(action), key) for action in actions)


def _compact(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


# --- the run -----------------------------------------------------------------------------


@dataclasses.dataclass
class _Live:
    """A workload while the run goes on; survives scheduler restarts."""

    spec: WorkloadSpec
    key: WorkloadKey
    launches: int = 0
    create_calls: int = 0
    pods: list[str] = dataclasses.field(default_factory=list)
    events: list[str] = dataclasses.field(default_factory=list)
    terminal_events: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)
    completed_by_adoption: set[str] = dataclasses.field(default_factory=set)
    lost_reported: bool = False

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


@dataclasses.dataclass
class _PodRun:
    """A pod the kubelet drives through its script."""

    namespace: str
    name: str
    live: _Live
    key: WorkloadKey
    script: PodScript
    created: int
    step: int = 0
    phase: str = "Pending"
    started: int | None = None
    ready: bool = False
    ready_since: int = 0


class _Scheduler:
    """What one scheduler holds in memory: its executor core and its watch."""

    def __init__(self, job_id: int, core: ExecutorCore, watch: FakeWatch) -> None:
        self.job_id = job_id
        self.core = core
        self.watch = watch
        self.due: list[tuple[int, int, Manifest]] = []  # (tick, order, event)
        self.order = 0
        self.handled: list[Handled] = []
        self.relisted = False

    @property
    def label(self) -> str:
        return make_safe_label_value(str(self.job_id))

    def push(self, tick: int, event: Manifest) -> None:
        self.order += 1
        heapq.heappush(self.due, (tick, self.order, event))

    def pop_due(self, tick: int) -> Manifest | None:
        if self.due and self.due[0][0] <= tick:
            return heapq.heappop(self.due)[2]
        return None

    def drop_all(self) -> list[Manifest]:
        dropped = [event for _, _, event in sorted(self.due, key=lambda item: item[:2])]
        self.due = []
        dropped.extend(self.watch.events(copy=False))
        return dropped


class _Crash(Exception):
    """Raised inside the simulation to unwind after a scheduler crash."""


class _Simulation:
    def __init__(self, scenario: Scenario, *, record_timeline: bool = True) -> None:
        self.scenario = scenario
        self.config = scenario.config
        self.decision_config = scenario.config.decision_config()
        self.resolver_config = scenario.config.resolver_config()
        self.rng = random.Random(scenario.seed)  # noqa: S311 - reproducible pod names
        self.record_timeline = record_timeline
        self.cluster = FakeCluster(now=_EPOCH, namespaces=[self.config.namespace])
        self.calls = ClusterCalls(self.cluster)
        self.db = FakeAirflowDB()
        self.row_keys: dict[tuple[str, str, str | None, int], TaskInstanceKey] = {}
        """The try each task instance's row is at, by its primary key: Airflow keeps one row
        per task instance (its current try); the kit's database keys rows by the whole key."""
        self.queued_by: dict[WorkloadKey, int] = {}
        """The scheduler job that queued (or adopted) each row: what adoption and resets
        read (Airflow's ``queued_by_job_id``)."""
        self.t = 0
        self.live = [_Live(spec, spec.key) for spec in scenario.workloads]
        self.by_key: dict[WorkloadKey, _Live] = {live.key: live for live in self.live}
        self.to_queue = sorted(self.live, key=lambda live: live.spec.at)  # stable: file order
        self.queue_index = 0
        self.sched: _Scheduler | None = None
        self.start_at: int | None = 0
        self.next_job_id = 1
        self.dead_ids: list[int] = []
        self.runs: dict[tuple[str, str], _PodRun] = {}
        self.requeues: dict[int, list[_Live]] = {}
        """Workloads the scheduler queues again at a tick (reset after a restart)."""
        self.kubelet_due: dict[int, list[_PodRun]] = {}
        self.timeline: list[TimelineEntry] = []
        self.anomalies: list[Anomaly] = []
        self.event_log: list[EmittedEvent] = []
        self.events_processed = 0
        self.restarts = 0
        self.crashes = 0
        self.stopped = False
        self.restarts_at: dict[int, list[RestartSpec]] = {}
        for restart in scenario.restarts:
            self.restarts_at.setdefault(restart.at, []).append(restart)
        self.watch_errors_at: dict[int, list[WatchErrorSpec]] = {}
        for error in scenario.watch_errors:
            self.watch_errors_at.setdefault(error.at, []).append(error)
        self.last_scheduled = max(
            [spec.at + spec.down for spec in scenario.restarts]
            + [spec.at for spec in scenario.watch_errors],
            default=0,
        )

    # --- bookkeeping helpers ------------------------------------------------------------

    def log(self, kind: str, text: str, **fields: Any) -> None:  # noqa: ANN401
        if self.record_timeline:
            self.timeline.append(TimelineEntry(self.t, kind, text, **fields))

    def anomaly(self, kind: str, message: str, live: _Live | None = None) -> None:
        self.anomalies.append(Anomaly(kind, message, self.t, live.spec.id if live else None))
        if live is not None:
            live.note(f"ANOMALY {kind}")

    def moment(self, tick: int | None = None) -> datetime.datetime:
        seconds = (self.t if tick is None else tick) * self.config.tick_seconds
        return _EPOCH + datetime.timedelta(seconds=seconds)

    def timestamp(self, tick: int | None = None) -> str:
        return self.moment(tick).strftime("%Y-%m-%dT%H:%M:%SZ")

    def ticks(self, seconds: float | None) -> int:
        if not seconds:
            return 0
        return math.ceil(seconds / self.config.tick_seconds)

    @property
    def scheduler(self) -> _Scheduler:
        if self.sched is None:
            raise _Crash("no scheduler is running")
        return self.sched

    # --- the main loop ------------------------------------------------------------------

    def run(self) -> SimulationResult:
        while not self.stopped:
            self.tick()
            if self.finished():
                break
            if self.t >= self.config.max_ticks:
                self.anomaly(
                    "timeout", f"still busy after max_ticks={self.config.max_ticks}: stopped"
                )
                break
            self.t += 1
        self.final_checks()
        return self.result()

    def tick(self) -> None:
        self.cluster.now = self.moment()
        for restart in self.restarts_at.get(self.t, ()):
            if self.sched is not None:
                self.stop_scheduler("restart")
                self.restarts += 1
                self.start_at = self.t + restart.down
        if self.sched is None and self.start_at is not None and self.start_at <= self.t:
            self.guarded(self.start_scheduler)
        if self.sched is not None:
            self.guarded(self.queue_due_workloads)
        if self.sched is not None:
            self.guarded(self.sync)  # pod creation, retries of earlier passes
        self.kubelet()
        for error in self.watch_errors_at.get(self.t, ()):
            if self.sched is not None:
                self.inject_watch_error(error)
        if self.sched is not None:
            self.guarded(self.drain)

    def guarded(self, step: Callable[[], None]) -> None:
        try:
            step()
        except _Crash:
            pass
        except Exception as error:  # noqa: BLE001 - a library function raising is a finding
            self.crash(error)

    def crash(self, error: BaseException) -> None:
        self.crashes += 1
        job = self.sched.job_id if self.sched else "?"
        self.anomaly("crash", f"scheduler {job} crashed: {type(error).__name__}: {error}")
        self.log("scheduler", f"scheduler {job} CRASHED: {type(error).__name__}: {error}")
        if self.sched is not None:
            self.stop_scheduler("crash")
        if self.crashes >= _MAX_CRASHES:
            self.anomaly("crash_loop", f"{self.crashes} scheduler crashes: stopped")
            self.stopped = True
            return
        self.start_at = self.t + 1

    def finished(self) -> bool:
        return self.stopped or self.quiescent()

    def quiescent(self) -> bool:
        if self.t < self.last_scheduled or self.sched is None:
            return False
        if self.queue_index < len(self.to_queue) or self.requeues:
            return False
        if self.sched.core.has_work or self.sched.due or len(self.sched.watch):
            return False
        return not any(tick > self.t for tick in self.kubelet_due)

    # --- scheduler lifecycle ------------------------------------------------------------

    def new_core(self, job_id: int) -> ExecutorCore:
        config = self.config
        return ExecutorCore(
            ExecutorConfig(
                scheduler_id=job_id,
                namespace=config.namespace,
                airflow_version=config.airflow_version,
                kube_image=config.image(),
                decisions=self.decision_config,
                resolver=self.resolver_config,
                creation_batch_size=config.creation_batch_size,
                rng=self.rng,
            )
        )

    def start_watch(self, core: ExecutorCore) -> FakeWatch:
        selector = watcher_selector(core.config.scheduler_id)
        return self.cluster.watch(
            core.config.namespace,
            label_selector=selector.label_selector,
            resource_version=core.resource_version,
        )

    def stop_scheduler(self, why: str) -> None:
        sched = self.scheduler
        lost_events = len(sched.drop_all())
        core = sched.core
        self.dead_ids.append(sched.job_id)
        self.sched = None
        self.start_at = None
        self.log(
            "scheduler",
            f"scheduler {sched.job_id} stops ({why}): loses running={len(core.running)}, "
            f"{len(core.queued)} jobs waiting for a pod, {lost_events} undelivered watch events",
        )

    def start_scheduler(self) -> None:
        job_id = self.next_job_id
        self.next_job_id += 1
        core = self.new_core(job_id)
        self.sched = _Scheduler(job_id, core, self.start_watch(core))
        core.on_decision = self.sched.handled.append
        self.start_at = None
        selector = watcher_selector(job_id).label_selector
        self.log("scheduler", f"scheduler {job_id} starts; watching {selector}")
        self.collect()  # the watch starts with ADDED for the pods it already selects
        if self.dead_ids:
            self.adopt()

    def adopt(self) -> None:
        sched = self.scheduler
        listed: list[Manifest] = []
        for selector in sched.core.adoption_selectors(self.dead_ids):
            listing = self.cluster.list_pods(
                self.config.namespace,
                label_selector=selector.label_selector,
                field_selector=selector.field_selector,
            )
            listed.extend(listing["items"])
        # In name order; a pod in two lists is passed twice: the core counts it once.
        pods = sorted(listed, key=lambda pod: str(pod["metadata"]["name"]))
        dead = set(self.dead_ids)
        expected = [
            live.key
            for live in self.live
            if isinstance(live.key, TaskInstanceKey)
            and live.key in self.db.task_states
            and self.db.task_states[live.key] in TASK_ADOPTABLE_STATES
            and self.queued_by.get(live.key) in dead
        ]
        active_callbacks = [
            key
            for key, state in self.db.callback_states.items()
            if state not in CALLBACK_TERMINAL_STATES
        ]
        plan = sched.core.adopt(
            pods,
            expected_task_keys=expected,
            expected_callback_keys=active_callbacks,
        )
        self.log(
            "adopt",
            f"adoption: {len({pod['metadata']['name'] for pod in pods})} pods listed, "
            f"{len(plan.adopted)} adopted, "
            f"{len(plan.completed)} completed, {len(plan.skipped)} skipped, "
            f"{len(plan.undecodable)} undecodable; {len(expected)} task instances to adopt",
        )
        for skipped in (*plan.skipped, *plan.undecodable):
            self.log("adopt", f"left alone: {skipped.reason}", pod=skipped.pod_name)
        self.sync(why="adoption: Succeeded under a dead scheduler")
        for key in plan.adopted:
            if sched.core.is_running(key):
                self.claim(key, sched.job_id)
        for key in self.tracked(plan.actions):
            live = self.by_key.get(key)
            if live is not None:
                live.note(f"adopted by scheduler {sched.job_id}")
            self.log(
                "adopt",
                f"track running ({_describe_key(key)})",
                workload=live.spec.id if live else None,
            )
        self.reset_orphans(sched.core.not_adopted(expected), dead)

    def tracked(self, actions: Iterable[object]) -> list[WorkloadKey]:
        core = self.scheduler.core
        return [
            action.key
            for action in actions
            if isinstance(action, TrackRunning) and core.is_running(action.key)
        ]

    def claim(self, key: WorkloadKey, job_id: int) -> None:
        row_key: WorkloadKey | None
        if isinstance(key, CallbackKey):
            row_key = key if key in self.db.callback_states else None
        else:
            row_key = self.row_keys.get(key.primary)
        if row_key is not None:
            self.queued_by[row_key] = job_id

    def reset_orphans(self, not_adopted: list[TaskInstanceKey], dead: set[int]) -> None:
        for key in not_adopted:
            live = self.by_key[key]
            row_key = self.row_keys[key.primary]
            self.db.task_states[row_key] = None
            self.queued_by.pop(row_key, None)
            new_key = key.with_try_number(key.try_number + 1)
            live.key = new_key
            self.by_key[new_key] = live
            self.requeues.setdefault(self.t + 1, []).append(live)
            live.note(f"reset: no pod to adopt; rescheduled as try {new_key.try_number}")
            self.log(
                "reset",
                f"reset {_describe_key(key)}: no pod to adopt → rescheduled as try "
                f"{new_key.try_number}",
                workload=live.spec.id,
            )
        if not self.config.reset_orphaned_callbacks:
            return
        core = self.scheduler.core
        for live in self.live:
            callback_key = live.key
            if not isinstance(callback_key, CallbackKey) or core.is_running(callback_key):
                continue
            if self.db.callback_states.get(callback_key) is not CallbackState.QUEUED:
                continue
            if self.queued_by.get(callback_key) not in dead:
                continue
            del self.queued_by[callback_key]
            self.requeues.setdefault(self.t + 1, []).append(live)
            live.note("re-queued after restart (simulator's reset_orphaned_callbacks)")
            self.log(
                "reset",
                f"re-queue {_describe_key(callback_key)}: queued, no pod (assumption: "
                "reset_orphaned_callbacks; Airflow 3.3.2 leaves it queued)",
                workload=live.spec.id,
            )

    # --- queueing ---------------------------------------------------------------------

    def queue_due_workloads(self) -> None:
        while self.queue_index < len(self.to_queue):
            live = self.to_queue[self.queue_index]
            if live.spec.at > self.t:
                break
            self.queue_index += 1
            self.queue(live)
        for tick in sorted(tick for tick in self.requeues if tick <= self.t):
            for live in self.requeues.pop(tick):
                self.queue(live)

    def queue(self, live: _Live) -> None:
        sched = self.scheduler
        key = live.key
        if isinstance(key, CallbackKey):
            self.db.add_callback(key)
        else:
            old = self.row_keys.pop(key.primary, None)  # the row moves on to this try
            if old is not None:
                del self.db.task_states[old]
                self.queued_by.pop(old, None)
            self.db.add_task(key)
            self.row_keys[key.primary] = key
        self.queued_by[key] = sched.job_id
        workload: dict[str, Any] = {
            "type": "ExecuteCallback" if isinstance(key, CallbackKey) else "ExecuteTask",
            "key": _describe_key(key),
            "token": "simulated-token",
        }
        if isinstance(key, CallbackKey) and live.spec.dag_id and live.spec.run_id:
            workload["log_path"] = (
                f"executor_callbacks/{live.spec.dag_id}/{live.spec.run_id}/{key.id}"
            )
        args = workload_command_args(workload)
        # KubernetesJob's key type is one kind or the other, never the union.
        if isinstance(key, CallbackKey):
            job: KubernetesJob[Any] = KubernetesJob(key, args)
        else:
            job = KubernetesJob(key, args)
        sched.core.submit(job)
        self.log("queue", f"queue {_describe_key(key)}", workload=live.spec.id)

    # --- the executor's passes --------------------------------------------------------

    def sync(
        self,
        *,
        why: str | None = None,
        event_line: tuple[str, dict[str, Any], WorkloadResult | None] | None = None,
    ) -> None:
        """One executor pass: every request the core has, performed; then the timeline.

        ``event_line`` is the line of the watch event fed before the pass, and its result:
        the decision about that result is told on the same line."""
        sched = self.scheduler
        core = sched.core
        now = self.moment()
        pending = [event_line]  # logged with the first decision about its result

        def perform(request: Request) -> None:
            # The decisions behind this request are logged before what it does.
            self.flush(sched, pending, why, done=False)
            self.perform(request)

        core.run_pass(now, perform, failures=FAILURES)
        self.flush(sched, pending, why, done=True)
        if sched.relisted:
            sched.relisted = False
            self.check_resync()

    def flush(
        self,
        sched: _Scheduler,
        pending: list[tuple[str, dict[str, Any], WorkloadResult | None] | None],
        why: str | None,
        *,
        done: bool,
    ) -> None:
        """Check and log the decisions the core took so far (before their requests)."""
        handled = list(sched.handled)
        sched.handled.clear()
        for record in handled:
            self.check(record)
        event_line = pending[0]
        if event_line is not None:
            _, _, result = event_line
            matched = any(
                record.cause == "result" and result is not None and record.result == result
                for record in handled
            )
            if matched or done or result is None:
                handled = self.log_event_line(event_line, handled)
                pending[0] = None
        self.log_handled(handled, why)

    def log_event_line(
        self,
        event_line: tuple[str, dict[str, Any], WorkloadResult | None],
        handled: list[Handled],
    ) -> list[Handled]:
        """Log the event with the decision about its result; return the other records."""
        text, fields, result = event_line
        if not self.record_timeline:
            return handled
        for index, record in enumerate(handled):
            if record.cause == "result" and result is not None and record.result == result:
                key, decision = record.key, record.decision
                self.log(
                    "event",
                    f"{text} → {_shorten(decision.reason, key)}",
                    actions=_action_texts(decision.actions, key),
                    **fields,
                )
                return handled[:index] + handled[index + 1 :]
        self.log("event", text, **fields)
        return handled

    def log_handled(self, handled: list[Handled], why: str | None) -> None:
        if not self.record_timeline:
            return
        for record in handled:
            key, decision = record.key, record.decision
            live = self.by_key.get(key)
            text = _shorten(decision.reason, key)
            actions = _action_texts(decision.actions, key)
            result = record.result
            if record.cause == "create error":
                self.log(
                    "create_error",
                    f"create failed → {text}",
                    workload=live.spec.id if live else None,
                    actions=actions,
                )
                continue
            if result is None:
                self.log("note", f"{_describe_key(key)}: {text}", actions=actions)
                continue
            state = result.state.value
            prefix = f"{why}: " if why else ""
            if record.cause == "handling failed":
                prefix = "retry after a failed call: "
            self.log(
                "adopt" if why else "event",
                f"{prefix}{state} ({_describe_key(key)}) → {text}",
                pod=result.pod_name or None,
                workload=live.spec.id if live else None,
                state=state,
                actions=actions,
            )

    def perform(self, request: Request) -> None:
        if isinstance(request, CreatePod):
            self.create(request)
        elif isinstance(request, (DeletePod, PatchLabels)):
            try:
                self.calls.perform(request)
            except FAILURES as error:
                if not failure_is_done(request, error):
                    raise
                what = (
                    "delete {}: already gone (404)"
                    if isinstance(request, DeletePod)
                    else "patch {}: not found (404)"
                )
                self.log("note", what.format(request.pod_name), pod=request.pod_name)
            self.collect()
        elif isinstance(request, EmitEvent):
            self.emit(request)
        elif isinstance(request, ReadStates):
            self.scheduler.core.states_read(request, self.db.read_states(request.keys))
        elif isinstance(request, ListPods):
            sched = self.scheduler
            pods, version = self.calls.list_pods(
                request.namespace, label_selector=request.selector.label_selector
            )
            sched.core.pods_listed(request, pods, version)
            sched.watch = self.start_watch(sched.core)
            sched.relisted = True
            self.log("watch", f"re-list: {len(pods)} pods read as ADDED, then watch again")
        # DeleteSecret: the simulator does not use secure payloads.

    def create(self, request: CreatePod) -> None:
        key = request.key
        live = self.by_key[key]
        script = live.spec.script(live.launches)
        name = request.pod_name
        if live.create_calls < len(script.create_errors):
            error = script.create_errors[live.create_calls]
            live.create_calls += 1
            what = "connection error" if error.status is None else f"HTTP {error.status}"
            live.note(f"create failed: {what}")
            headers = (
                {"Retry-After": str(error.retry_after)} if error.retry_after is not None else None
            )
            self.log(
                "create_error",
                f"create {name} for {_describe_key(key)}: {what} {error.message!r}",
                pod=name,
                workload=live.spec.id,
            )
            raise Fault(error.status, "Failure", error.message, headers=headers).error()
        live.create_calls = 0
        self.calls.perform(request)
        live.pods.append(name)
        live.launches += 1
        run = _PodRun(request.namespace, name, live, key, script, self.t)
        self.runs[run.namespace, name] = run
        self.log(
            "create",
            f"create pod for {_describe_key(key)} (launch {live.launches})",
            pod=name,
            workload=live.spec.id,
        )
        self.collect()
        self.schedule_step(run)

    def collect(self, *, late: int = 0, copies: int = 1) -> None:
        """Move the watch's new events onto the delivery schedule."""
        sched = self.sched
        if sched is None:
            return
        for event in sched.watch.events(copy=False):
            for _ in range(copies):
                sched.push(self.t + late, event)

    # --- checks on the core's decisions ---------------------------------------------------

    def check(self, record: Handled) -> None:
        result = record.result
        live = self.by_key.get(record.key)
        if result is None or live is None:
            return
        decision = record.decision
        was_running = any(isinstance(action, FreeSlot) for action in decision.actions) or (
            self.scheduler.core.is_running(result.key)
        )
        if result.state is ExecutorPseudoState.COMPLETED:
            live.completed_by_adoption.add(result.pod_name)
            if isinstance(result, CallbackResult):
                reported = any(isinstance(action, EmitEvent) for action in decision.actions)
                state = self.db.state(result.key)
                if not reported and not is_terminal(state):
                    self.anomaly(
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
            self.check_adoption(result, live)
        # Nothing performed: the decision only ignores the result.
        ignored = not decision.actions and decision.look_up is None and decision.retry is None
        known = self.db.state(result.key)
        if ignored and was_running and is_terminal(known) and live.terminal_events > 0:
            self.anomaly(
                "slot_leak",
                f"{_describe_key(result.key)} is in running but already "
                f"{known.value if known else '?'}; the decision for its pod {result.pod_name} "
                f"({result.state.value}) only ignores it "
                f"({_shorten(decision.reason, result.key)}), so the slot is never freed",
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
            self.anomaly(
                "lost_result",
                f"the only final result of {_describe_key(result.key)} (pod "
                f"{result.pod_name}: {result.state.value}) was ignored: the key is not in "
                f"running ({_shorten(decision.reason, result.key)})",
                live,
            )

    def check_adoption(self, result: WorkloadResult, live: _Live) -> None:
        pod = self.cluster.pod(result.namespace, result.pod_name, copy=False)
        labels = pod["metadata"]["labels"] if pod is not None else {}
        if pod is not None and labels.get(AIRFLOW_WORKER_LABEL) != self.scheduler.label:
            return  # another scheduler owns it now: a real adoption
        cause = (
            "the pod stopped matching the watch selector when the executor patched "
            f"{POD_EXECUTOR_DONE_LABEL}=True on it"
            if labels.get(POD_EXECUTOR_DONE_LABEL) == TRUE_LABEL_VALUE
            else "the pod stopped matching the watch selector"
        )
        where = "still owned by this scheduler" if pod else "gone"
        self.anomaly(
            "false_adoption",
            f"an ADOPTED result for pod {result.pod_name} (DELETED without a "
            f"deletionTimestamp: {cause}; the pod is {where}) freed the slot of "
            f"{_describe_key(result.key)}, which no other scheduler owns",
            live,
        )

    def check_resync(self) -> None:
        # Ground truth the executor does not have: which running keys have no pod left.
        core = self.scheduler.core
        with_pods = {
            self.runs[pod["metadata"]["namespace"], pod["metadata"]["name"]].key
            for pod in self.cluster.pods(copy=False)
            if (pod["metadata"]["namespace"], pod["metadata"]["name"]) in self.runs
        }
        waiting = {job.key for job in core.queued}
        for key in core.running:
            if key in with_pods or key in waiting:
                continue
            self.anomaly(
                "lost_in_resync",
                f"{_describe_key(key)} is in running but its pod is gone: its final events "
                "were among those the 410 lost, and the re-list only shows pods that exist, "
                "so nothing will ever report it",
                self.by_key.get(key),
            )

    # --- the kubelet and the task process -----------------------------------------------

    def schedule_step(self, run: _PodRun) -> None:
        if run.step < len(run.script.steps):
            due = self.t + run.script.steps[run.step].after
            self.kubelet_due.setdefault(due, []).append(run)

    def kubelet(self) -> None:
        while self.t in self.kubelet_due:
            runs = self.kubelet_due.pop(self.t)
            for run in runs:
                if self.cluster.pod(run.namespace, run.name, copy=False) is None:
                    continue  # deleted: its script ends
                step = run.script.steps[run.step]
                run.step += 1
                self.apply_step(run, step)
                self.schedule_step(run)

    def apply_step(self, run: _PodRun, step: Step) -> None:
        phase = "Failed" if step.evicted else (step.phase or run.phase)
        if phase == "Running" and run.started is None:
            run.started = self.t
        status = self.status_for(run, step, phase)
        run.phase = phase
        copies = 2 if step.duplicate else 1
        watched = self.watched(run)
        self.cluster.set_status(run.namespace, run.name, status)
        if step.deleted:
            self.cluster.remove_pod(run.namespace, run.name)
        self.collect(late=step.late, copies=copies)
        if not watched:
            self.log(
                "kubelet",
                f"{phase}{' (deleted)' if step.deleted else ''}: no scheduler watches this pod",
                pod=run.name,
                workload=run.live.spec.id,
                phase=phase,
            )
        self.task_process(run, step, phase)

    def watched(self, run: _PodRun) -> bool:
        if self.sched is None:
            return False
        pod = self.cluster.pod(run.namespace, run.name, copy=False)
        return pod is not None and self.sched.watch.selects(pod)

    def status_for(self, run: _PodRun, step: Step, phase: str) -> dict[str, Any]:
        stamp = self.timestamp()
        status: dict[str, Any] = {"phase": phase, "qosClass": "BestEffort"}
        reason, message = step.reason, step.message
        if step.evicted:
            reason = reason or "Evicted"
            message = message or "The node was low on resource: memory."
        if reason:
            status["reason"] = reason
        if message:
            status["message"] = message
        ready = phase == "Running" and not step.deleted
        if ready != run.ready:
            run.ready, run.ready_since = ready, self.t
        since = self.timestamp(run.ready_since or run.created)
        conditions: list[dict[str, Any]] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp},
            {"type": "Initialized", "status": "True", "lastTransitionTime": since},
            {"type": "ContainersReady", "status": str(ready), "lastTransitionTime": since},
            {"type": "Ready", "status": str(ready), "lastTransitionTime": since},
        ]
        if step.evicted:
            conditions.append(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "TerminationByKubelet",
                    "message": message,
                    "lastTransitionTime": stamp,
                }
            )
        status["conditions"] = conditions
        if run.started is not None:
            status["startTime"] = self.timestamp(run.started)
        image = self.config.image()
        main = self.container_status(BASE_CONTAINER_NAME, image, self.main_spec(step, phase))
        if main is not None:
            status["containerStatuses"] = [main]
        init = self.container_status(_INIT_CONTAINER_NAME, image, step.init_container)
        if init is not None:
            status["initContainerStatuses"] = [init]
        return status

    @staticmethod
    def main_spec(step: Step, phase: str) -> ContainerSpec | None:
        if step.container != "default":
            return step.container
        if step.evicted:
            return ContainerSpec("terminated", "Error", None, 137)
        defaults = {
            "Pending": ContainerSpec("waiting", "ContainerCreating"),
            "Running": ContainerSpec("running"),
            "Succeeded": ContainerSpec("terminated", "Completed", None, 0),
            "Failed": ContainerSpec("terminated", "Error", None, 1),
        }
        return defaults.get(phase)

    def container_status(
        self, name: str, image: str, spec: ContainerSpec | None
    ) -> dict[str, Any] | None:
        if spec is None:
            return None
        stamp = self.timestamp()
        state: dict[str, Any]
        if spec.state == "waiting":
            state = {"waiting": _compact({"reason": spec.reason, "message": spec.message})}
        elif spec.state == "running":
            state = {"running": {"startedAt": stamp}}
        else:
            state = {
                "terminated": _compact(
                    {
                        "exitCode": spec.exit_code if spec.exit_code is not None else 0,
                        "reason": spec.reason,
                        "message": spec.message,
                        "startedAt": stamp,
                        "finishedAt": stamp,
                    }
                )
            }
        return {
            "name": name,
            "image": image,
            "imageID": "",
            "ready": spec.state == "running",
            "restartCount": 0,
            "started": spec.state == "running",
            "state": state,
        }

    def task_process(self, run: _PodRun, step: Step, phase: str) -> None:
        key = run.key
        if not isinstance(key, TaskInstanceKey):
            return
        if key not in self.db.task_states:
            return  # not its row's try any more
        state = self.db.task_states[key]
        if step.task != "default":  # the script says what the process writes
            if step.task is None or step.task is state:
                return
            self.db.task_states[key] = step.task
        elif phase == "Running" and not step.deleted and state is TaskInstanceState.QUEUED:
            self.db.task_started(key)
        elif phase == "Succeeded" and state in {
            TaskInstanceState.QUEUED,
            TaskInstanceState.RUNNING,
        }:
            self.db.task_finished(key, TaskInstanceState.SUCCESS)
        else:
            return
        write = self.db.task_states[key]
        assert write is not None  # noqa: S101 - each branch above wrote a state
        self.log(
            "task",
            f"task process sets {_describe_key(key)} {write.value}",
            pod=run.name,
            workload=run.live.spec.id,
            state=write.value,
        )

    # --- watch events -------------------------------------------------------------------

    def inject_watch_error(self, error: WatchErrorSpec) -> None:
        sched = self.scheduler
        dropped = sched.drop_all()
        reason = "Expired" if error.code == 410 else "InternalError"
        message = error.message or (
            "too old resource version" if error.code == 410 else "watch failed"
        )
        event: dict[str, Any] = {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": message,
                "reason": reason,
                "code": error.code,
            },
        }
        sched.push(self.t, event)
        if dropped:
            shown = ", ".join(
                f"{event['object'].get('metadata', {}).get('name')} {event['type']}"
                for event in dropped[:8]
            )
            more = f" and {len(dropped) - 8} more" if len(dropped) > 8 else ""
            self.log(
                "watch",
                f"watch stream broken: {len(dropped)} events in flight are lost: {shown}{more}",
            )

    def drain(self) -> None:
        sched = self.scheduler
        handled = 0
        while self.sched is sched:
            event = sched.pop_due(self.t)
            if event is None:
                return
            handled += 1
            if handled > _MAX_EVENTS_PER_TICK:
                self.anomaly("event_storm", f"over {_MAX_EVENTS_PER_TICK} events in one tick")
                self.stopped = True
                return
            self.handle_event(event)

    def handle_event(self, event: Manifest) -> None:
        sched = self.scheduler
        self.events_processed += 1
        resolution = sched.core.feed_event(event, now=self.moment())
        if resolution.outcome in {Outcome.RESYNC, Outcome.WATCH_ERROR}:
            self.log(
                "watch",
                f"ERROR {resolution.error_code} → {resolution.outcome.value}: {resolution.reason}",
                event="ERROR",
                outcome=resolution.outcome.value,
            )
            self.sync()
            return
        line = self.event_line(event, resolution) if self.record_timeline else None
        self.sync(event_line=line)

    def event_line(
        self, event: Manifest, resolution: Resolution
    ) -> tuple[str, dict[str, Any], WorkloadResult | None]:
        pod = event["object"]
        metadata = pod.get("metadata", {})
        phase = pod.get("status", {}).get("phase")
        deleting = " (deleting)" if metadata.get("deletionTimestamp") else ""
        shown = resolution.state.value if resolution.state is not None else resolution.outcome.value
        if resolution.outcome is Outcome.FAILED:
            shown = f"failed: {resolution.reason}"
        live = self.by_key.get(resolution.key) if resolution.key is not None else None
        about = f" ({_describe_key(resolution.key)})" if resolution.key is not None else ""
        fields: dict[str, Any] = {
            "pod": metadata.get("name"),
            "workload": live.spec.id if live else None,
            "event": event["type"],
            "phase": phase,
            "outcome": resolution.outcome.value,
            "state": resolution.state.value if resolution.state is not None else None,
        }
        return f"{event['type']} {phase}{deleting} → {shown}{about}", fields, resolution.to_result()

    # --- the scheduler's side of events -------------------------------------------------

    def emit(self, action: EmitEvent) -> None:
        live = self.by_key.get(action.key)
        if live is None:
            self.anomaly("unknown_key", f"event for an unknown key {action.key!r}")
            return
        live.events.append(f"t{self.t}:{action.state.value}")
        if self.record_timeline:
            self.event_log.append(
                EmittedEvent(
                    self.t,
                    self.scheduler.job_id,
                    live.spec.id,
                    _describe_key(action.key),
                    action.state.value,
                    action.info,
                )
            )
        if is_terminal(action.state):
            if action.info:
                live.note(action.info)
            live.terminal_events += 1
            if live.terminal_events == 2:
                self.anomaly(
                    "double_terminal_event",
                    f"a second final event ({action.state.value}) for {_describe_key(action.key)}"
                    f"; events so far: {', '.join(live.events)}",
                    live,
                )
        if isinstance(action.key, CallbackKey):
            self.apply_callback_event(action.key, action.state, live)
        else:
            self.apply_task_event(action.key, action.state, live)

    def apply_callback_event(self, key: CallbackKey, state: WorkloadState, live: _Live) -> None:
        current = self.db.callback_states.get(key)
        if current is None or not isinstance(state, CallbackState):
            self.anomaly("bad_event", f"callback event {state} without a callback row", live)
            return
        # Airflow 3.3's scheduler sets running/success/failed unconditionally.
        if current in CALLBACK_TERMINAL_STATES and state is not current:
            self.anomaly(
                "overwritten_final_state",
                f"{_describe_key(key)} was {current.value}; the event sets {state.value}",
                live,
            )
        if state in {CallbackState.RUNNING, CallbackState.SUCCESS, CallbackState.FAILED}:
            self.db.callback_states[key] = state

    def apply_task_event(self, key: TaskInstanceKey, state: WorkloadState, live: _Live) -> None:
        row_key = self.row_keys.get(key.primary)
        if row_key is None or not isinstance(state, TaskInstanceState):
            self.anomaly("bad_event", f"task event {state} without a task instance row", live)
            return
        if row_key != key:
            live.note(f"event for stale try {key.try_number} ignored by the scheduler")
            return
        if not is_terminal(state):
            return  # the scheduler only logs running/queued events
        current = self.db.task_states[key]
        if current in {TaskInstanceState.QUEUED, TaskInstanceState.RUNNING, None}:
            # "executor reports finished although the task says running"
            self.db.task_states[key] = state
        elif current is not state:
            self.anomaly(
                "contradicting_event",
                f"the executor reports {state.value} for {_describe_key(key)}, "
                f"which the task process set to {current.value}",
                live,
            )

    # --- the end ------------------------------------------------------------------------

    def final_checks(self) -> None:
        if self.sched is not None:
            core = self.sched.core
            for key in core.running:
                live = self.by_key.get(key)
                self.anomaly(
                    "left_running", f"{_describe_key(key)} is still in running at the end", live
                )
            for key, attempt in core.attempts.records.items():
                live = self.by_key.get(key)
                if core.is_running(key) or live is None:
                    continue
                self.anomaly(
                    "attempt_record_leak",
                    f"the executor's attempt record of {_describe_key(key)} (attempts "
                    f"{attempt.attempts}) outlives the workload: no decision removed it",
                    live,
                )
        for live in self.live:
            state = self.db.state(live.key)
            shown = state.value if state is not None else "no state"
            if not is_terminal(state):
                self.anomaly(
                    "unfinished",
                    f"{_describe_key(live.key)} ended {shown}: never reached a final state "
                    f"({live.terminal_events} final events)",
                    live,
                )
            expected = live.spec.expect
            if expected is not None and state is not expected:
                self.anomaly(
                    "unexpected_end_state",
                    f"{_describe_key(live.key)} ended {shown}, expected {expected.value}",
                    live,
                )

    def result(self) -> SimulationResult:
        reports = []
        counts: dict[str, int] = {}
        for live in self.live:
            state = self.db.state(live.key)
            shown = state.value if state is not None else "none"
            counts[shown] = counts.get(shown, 0) + 1
            reports.append(
                WorkloadReport(
                    id=live.spec.id,
                    kind=live.spec.kind,
                    key=_describe_key(live.key).split(" ", 1)[1],
                    end_state=shown,
                    pods=tuple(live.pods),
                    launches=live.launches,
                    terminal_events=live.terminal_events,
                    events=tuple(live.events),
                    notes=tuple(live.notes),
                    expected=live.spec.expect.value if live.spec.expect else None,
                )
            )
        left = tuple(
            f"{pod['metadata']['name']} ({pod['status'].get('phase')}"
            + (", done" if pod["metadata"]["labels"].get(POD_EXECUTOR_DONE_LABEL) else "")
            + f", airflow-worker={pod['metadata']['labels'].get(AIRFLOW_WORKER_LABEL)})"
            for pod in self.cluster.pods(copy=False)
        )
        return SimulationResult(
            name=self.scenario.name,
            seed=self.scenario.seed,
            config=self.config,
            ticks=self.t,
            timeline=tuple(self.timeline),
            workloads=tuple(reports),
            end_states=dict(sorted(counts.items())),
            events_processed=self.events_processed,
            restarts=self.restarts,
            schedulers=self.next_job_id - 1,
            anomalies=tuple(self.anomalies),
            pods_left=left,
            scheduler_events=tuple(self.event_log),
        )


def simulate(scenario: Scenario, *, record_timeline: bool = True) -> SimulationResult:
    """Run a scenario; the same scenario always gives the same result."""
    return _Simulation(scenario, record_timeline=record_timeline).run()
