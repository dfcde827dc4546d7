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

This module runs the loop and performs the executor's requests (through the kit's
:class:`~k8s_workloads.testing.cluster_calls.ClusterCalls` and
:class:`~k8s_workloads.testing.FakeAirflowDB`); the parts it calls each have a module:
``_kubelet`` (the pod statuses), ``_airflow`` (the task process's and the scheduler's
database writes), ``_restart`` (adoption and resets), ``_checks`` (the anomalies),
``_timeline`` (the lines about decisions) and ``_state`` (what the run keeps: the
:class:`~k8s_workloads.sim._state.Journal` of what it reports, with the current tick). Each
part takes what it reads and writes as arguments (the journal, Airflow's rows, the
workloads by key, the scheduler's core ...); none of them knows :class:`Simulation`.
"""

from __future__ import annotations

import datetime
import json
import math
import random
from typing import TYPE_CHECKING, Any, cast

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor.config import ExecutorConfig
from k8s_workloads.executor.core import ExecutorCore
from k8s_workloads.executor.requests import CreatePod, ListPods, ReadPod, ReadStates
from k8s_workloads.io.policy import failure_is_done
from k8s_workloads.keys import CallbackKey, WorkloadKey
from k8s_workloads.pods.labels import (
    AIRFLOW_WORKER_LABEL,
    POD_EXECUTOR_DONE_LABEL,
    watcher_selector,
)
from k8s_workloads.pods.workload import workload_command_args
from k8s_workloads.sim import _airflow, _checks, _kubelet, _restart, _timeline
from k8s_workloads.sim._airflow import AirflowRows
from k8s_workloads.sim._state import Crash, Journal, Live, PodRun, Scheduler, describe_key
from k8s_workloads.sim.report import SimulationResult, WorkloadReport
from k8s_workloads.states import KubernetesJob, WorkloadResult
from k8s_workloads.testing.cluster import FakeCluster
from k8s_workloads.testing.cluster_calls import ClusterCalls
from k8s_workloads.testing.database import FakeAirflowDB
from k8s_workloads.testing.errors import FAILURES, Fault
from k8s_workloads.watch.resolution import Outcome

if TYPE_CHECKING:
    from collections.abc import Callable

    from k8s_workloads.executor.requests import Request
    from k8s_workloads.pods.manifest import Manifest
    from k8s_workloads.sim.spec import RestartSpec, Scenario, Step, WatchErrorSpec
    from k8s_workloads.testing.watch import FakeWatch

__all__ = ["Simulation", "simulate"]

_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
_MAX_CRASHES = 5
_MAX_EVENTS_PER_TICK = 1_000_000


class Simulation:
    """One run of a scenario: the world's state, tick by tick (see the module's text)."""

    def __init__(self, scenario: Scenario, *, record_timeline: bool = True) -> None:
        self.scenario = scenario
        self.config = scenario.config
        self.decision_config = scenario.config.decision_config()
        self.resolver_config = scenario.config.resolver_config()
        self.rng = random.Random(scenario.seed)  # noqa: S311 - reproducible pod names
        self.journal = Journal(record_timeline)
        """What the run reports, and the current tick."""
        self.cluster = FakeCluster(now=_EPOCH, namespaces=[self.config.namespace])
        self.calls = ClusterCalls(self.cluster)
        self.rows = AirflowRows(FakeAirflowDB())
        """Airflow's database, with the try each row is at and the job that queued it."""
        self.live = [Live(spec, spec.key) for spec in scenario.workloads]
        self.by_key: dict[WorkloadKey, Live] = {live.key: live for live in self.live}
        self.to_queue = sorted(self.live, key=lambda live: live.spec.at)  # stable: file order
        self.queue_index = 0
        self.sched: Scheduler | None = None
        self.start_at: int | None = 0
        self.next_job_id = 1
        self.dead_ids: list[int] = []
        self.runs: dict[tuple[str, str], PodRun] = {}
        self.requeues: dict[int, list[Live]] = {}
        """Workloads the scheduler queues again at a tick (reset after a restart)."""
        self.kubelet_due: dict[int, list[PodRun]] = {}
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

    @property
    def t(self) -> int:
        """The current tick (the journal's, which writes each entry at it)."""
        return self.journal.t

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
    def scheduler(self) -> Scheduler:
        if self.sched is None:
            raise Crash("no scheduler is running")
        return self.sched

    # --- the main loop ------------------------------------------------------------------

    def run(self) -> SimulationResult:
        while not self.stopped:
            self.tick()
            if self.finished():
                break
            if self.t >= self.config.max_ticks:
                self.journal.anomaly(
                    "timeout", f"still busy after max_ticks={self.config.max_ticks}: stopped"
                )
                break
            self.journal.t += 1
        _checks.final_checks(
            self.sched.core if self.sched is not None else None,
            workloads=self.live,
            by_key=self.by_key,
            db=self.rows.db,
            journal=self.journal,
        )
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
        except Crash:
            pass
        except Exception as error:  # noqa: BLE001 - a library function raising is a finding
            self.crash(error)

    def crash(self, error: BaseException) -> None:
        self.crashes += 1
        job = self.sched.job_id if self.sched else "?"
        self.journal.anomaly("crash", f"scheduler {job} crashed: {type(error).__name__}: {error}")
        self.journal.log("scheduler", f"scheduler {job} CRASHED: {type(error).__name__}: {error}")
        if self.sched is not None:
            self.stop_scheduler("crash")
        if self.crashes >= _MAX_CRASHES:
            self.journal.anomaly("crash_loop", f"{self.crashes} scheduler crashes: stopped")
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
            resource_version=core.resource_version(),
        )

    def stop_scheduler(self, why: str) -> None:
        sched = self.scheduler
        lost_events = len(sched.drop_all())
        core = sched.core
        self.dead_ids.append(sched.job_id)
        self.sched = None
        self.start_at = None
        self.journal.log(
            "scheduler",
            f"scheduler {sched.job_id} stops ({why}): loses running={len(core.running)}, "
            f"{len(core.queued)} jobs waiting for a pod, {lost_events} undelivered watch events",
        )

    def start_scheduler(self) -> None:
        job_id = self.next_job_id
        self.next_job_id += 1
        core = self.new_core(job_id)
        self.sched = Scheduler(job_id, core, self.start_watch(core))
        core.on_decision = self.sched.handled.append
        self.start_at = None
        selector = watcher_selector(job_id).label_selector
        self.journal.log("scheduler", f"scheduler {job_id} starts; watching {selector}")
        self.collect()  # the watch starts with ADDED for the pods it already selects
        if self.dead_ids:
            self.adopt()

    def adopt(self) -> None:
        """The new scheduler takes over what the dead ones left (see ``_restart``)."""
        sched = self.scheduler
        core = sched.core
        plan, expected = _restart.adopt(
            core,
            dead_ids=self.dead_ids,
            cluster=self.cluster,
            namespace=self.config.namespace,
            workloads=self.live,
            rows=self.rows,
            journal=self.journal,
        )
        self.sync(why="adoption: Succeeded under a dead scheduler")
        _restart.claim_adopted(
            plan, core, sched.job_id, by_key=self.by_key, rows=self.rows, journal=self.journal
        )
        requeued = _restart.reset_orphans(
            core,
            core.not_adopted(expected),
            set(self.dead_ids),
            workloads=self.live,
            by_key=self.by_key,
            rows=self.rows,
            journal=self.journal,
            callbacks=self.config.reset_orphaned_callbacks,
        )
        if requeued:
            self.requeues.setdefault(self.t + 1, []).extend(requeued)

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

    def queue(self, live: Live) -> None:
        sched = self.scheduler
        key = live.key
        self.rows.queue(key, sched.job_id)
        workload: dict[str, Any] = {
            "type": "ExecuteCallback" if isinstance(key, CallbackKey) else "ExecuteTask",
            "key": describe_key(key),
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
        self.journal.log("queue", f"queue {describe_key(key)}", workload=live.spec.id)

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
            _checks.check_resync(
                core, cluster=self.cluster, runs=self.runs, by_key=self.by_key, journal=self.journal
            )

    def flush(
        self,
        sched: Scheduler,
        pending: list[tuple[str, dict[str, Any], WorkloadResult | None] | None],
        why: str | None,
        *,
        done: bool,
    ) -> None:
        """Check and log the decisions the core took so far (before their requests)."""
        handled = list(sched.handled)
        sched.handled.clear()
        for record in handled:
            _checks.check(
                record,
                sched=sched,
                by_key=self.by_key,
                db=self.rows.db,
                cluster=self.cluster,
                journal=self.journal,
            )
        event_line = pending[0]
        if event_line is not None:
            _, _, result = event_line
            matched = any(
                record.cause == "result" and result is not None and record.result == result
                for record in handled
            )
            if matched or done or result is None:
                handled = _timeline.log_event_line(self.journal, event_line, handled)
                pending[0] = None
        _timeline.log_handled(self.journal, handled, why, by_key=self.by_key)

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
                self.journal.log("note", what.format(request.pod_name), pod=request.pod_name)
            self.collect()
        elif isinstance(request, EmitEvent):
            _airflow.emit(
                request,
                job_id=self.scheduler.job_id,
                by_key=self.by_key,
                rows=self.rows,
                journal=self.journal,
            )
        elif isinstance(request, ReadStates):
            self.scheduler.core.states_read(request, self.rows.db.read_states(request.keys))
        elif isinstance(request, ReadPod):
            pod = cast("dict[str, Any] | None", self.calls.perform(request))
            found = "found: created" if pod is not None else "not found"
            self.journal.log("note", f"read back {request.pod_name}: {found}", pod=request.pod_name)
            self.scheduler.core.pod_read(request, pod)
        elif isinstance(request, ListPods):
            sched = self.scheduler
            pods, version = self.calls.list_pods(
                request.namespace, label_selector=request.selector.label_selector
            )
            sched.core.pods_listed(request, pods, version)
            sched.watch = self.start_watch(sched.core)
            sched.relisted = True
            self.journal.log("watch", f"re-list: {len(pods)} pods read as ADDED, then watch again")
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
            self.journal.log(
                "create_error",
                f"create {name} for {describe_key(key)}: {what} {error.message!r}",
                pod=name,
                workload=live.spec.id,
            )
            raise Fault(error.status, "Failure", error.message, headers=headers).error()
        live.create_calls = 0
        self.calls.perform(request)
        live.pods.append(name)
        live.launches += 1
        run = PodRun(request.namespace, name, live, key, script, self.t)
        self.runs[run.namespace, name] = run
        self.journal.log(
            "create",
            f"create pod for {describe_key(key)} (launch {live.launches})",
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

    # --- the kubelet and the task process -----------------------------------------------

    def schedule_step(self, run: PodRun) -> None:
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

    def apply_step(self, run: PodRun, step: Step) -> None:
        phase = "Failed" if step.evicted else (step.phase or run.phase)
        if phase == "Running" and run.started is None:
            run.started = self.t
        status = _kubelet.pod_status(
            run, step, phase, t=self.t, timestamp=self.timestamp, image=self.config.image()
        )
        run.phase = phase
        copies = 2 if step.duplicate else 1
        watched = self.watched(run)
        self.cluster.set_status(run.namespace, run.name, status)
        if step.deleted:
            self.cluster.remove_pod(run.namespace, run.name)
        self.collect(late=step.late, copies=copies)
        if not watched:
            self.journal.log(
                "kubelet",
                f"{phase}{' (deleted)' if step.deleted else ''}: no scheduler watches this pod",
                pod=run.name,
                workload=run.live.spec.id,
                phase=phase,
            )
        _airflow.task_process(self.rows.db, self.journal, run, step, phase)

    def watched(self, run: PodRun) -> bool:
        if self.sched is None:
            return False
        pod = self.cluster.pod(run.namespace, run.name, copy=False)
        return pod is not None and self.sched.watch.selects(pod)

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
            self.journal.log(
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
                self.journal.anomaly(
                    "event_storm", f"over {_MAX_EVENTS_PER_TICK} events in one tick"
                )
                self.stopped = True
                return
            self.handle_event(event)

    def handle_event(self, event: Manifest) -> None:
        sched = self.scheduler
        self.events_processed += 1
        # Fed as the kit's watch streams it (FakeWatch.lines): the one way every watch
        # reaches the core. ASCII-escaped, so a scenario's lone surrogate stays a value.
        text = json.dumps(event, separators=(",", ":"))
        resolution = sched.core.feed_event(text, now=self.moment())
        if resolution.outcome in {Outcome.RESYNC, Outcome.WATCH_ERROR}:
            self.journal.log(
                "watch",
                f"ERROR {resolution.error_code} → {resolution.outcome.value}: {resolution.reason}",
                event="ERROR",
                outcome=resolution.outcome.value,
            )
            self.sync()
            return
        line = (
            _timeline.event_line(event, resolution, by_key=self.by_key)
            if self.journal.record_timeline
            else None
        )
        self.sync(event_line=line)

    # --- the end ------------------------------------------------------------------------

    def result(self) -> SimulationResult:
        reports = []
        counts: dict[str, int] = {}
        for live in self.live:
            state = self.rows.db.state(live.key)
            shown = state.value if state is not None else "none"
            counts[shown] = counts.get(shown, 0) + 1
            reports.append(
                WorkloadReport(
                    id=live.spec.id,
                    kind=live.spec.kind,
                    key=describe_key(live.key).split(" ", 1)[1],
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
            timeline=tuple(self.journal.timeline),
            workloads=tuple(reports),
            end_states=dict(sorted(counts.items())),
            events_processed=self.events_processed,
            restarts=self.restarts,
            schedulers=self.next_job_id - 1,
            anomalies=tuple(self.journal.anomalies),
            pods_left=left,
            scheduler_events=tuple(self.journal.event_log),
        )


def simulate(scenario: Scenario, *, record_timeline: bool = True) -> SimulationResult:
    """Run a scenario; the same scenario always gives the same result."""
    return Simulation(scenario, record_timeline=record_timeline).run()
