"""A deterministic scenario simulator: a fake cluster, a fake Airflow, the library's executor.

The simulator runs an executor built only from this library's public functions —
:func:`~k8s_workloads.pods.construct_task_pod`, :func:`~k8s_workloads.events.resolve_event`,
:func:`~k8s_workloads.decisions.decide`, :func:`~k8s_workloads.adoption.plan_adoption` … —
against an in-memory cluster and an in-memory Airflow database, tick by tick, and prints
what happened. No API server, no clock, no network: the same scenario always gives the
same output (pod names come from a ``random.Random`` seeded by the scenario).

What is simulated
=================

* **The cluster** keeps pods by namespace/name with a resource-version counter and a log of
  raw watch events per pod. A watch filters by label selector as the API server does: a
  pod that starts matching arrives as ADDED, one that stops matching (a label patch) as
  DELETED *with its previous content and no deletionTimestamp*; deleting a pod sends
  DELETED with a deletionTimestamp. Pod creation can fail with scripted API errors.
* **The kubelet** moves each pod through its script (``steps``), writing a realistic
  ``status`` (phase, reason, conditions, container states) and emitting MODIFIED events,
  optionally duplicated or delivered late (so they arrive out of order).
* **The task process** writes to the fake database as the real one does: the task
  instance becomes ``running`` when its pod runs and ``success`` when the pod succeeds.
  Callbacks write nothing: like Airflow 3.3's scheduler, only executor events move a
  callback (``queued`` → ``running`` → ``success``/``failed``).
* **The scheduler and executor**: workloads are queued (database ``queued``, key added to
  ``running``), pods are built and created, every watch event is resolved, turned into a
  result and decided; the actions are performed (``LookUpState`` reads the fake database
  and decides again). ``EmitEvent`` is the scheduler processing the event at once: it is
  logged and applied to the database as Airflow applies it.
* **Scheduler restarts** lose everything in memory (``running``, attempts, the creation
  queue, undelivered watch events); a new scheduler job id starts, lists the pods of the
  dead schedulers with the adoption selectors, performs :func:`plan_adoption` with the
  task instances queued or running under them, resets the task instances it could not
  adopt (they are rescheduled with the next try number, as Airflow does) and watches.
* **Watch errors**: ``410`` drops the events in flight and re-lists (ADDED for every pod
  the watch selects); other codes are reported and the watch continues.

Findings
========

The simulator checks invariants and reports violations as *anomalies* instead of hiding
them (:func:`run_simulation_cli` exits 1 when there are any):

* ``unfinished``: a workload never reached a final state; ``unexpected_end_state``: it
  ended other than the scenario's ``expect``;
* ``double_terminal_event``; ``overwritten_final_state`` (a final callback state changed);
  ``contradicting_event`` (the executor reports failed for a task that succeeded);
* ``left_running``: a key still in ``running`` at the end; ``slot_leak``: a result for a
  running key whose workload is already final was only ignored;
* ``lost_result``: the final result of a workload's current pod was ignored because the
  key was not in ``running``; ``false_adoption``: an ``ADOPTED`` result freed the slot of a
  pod this scheduler still owns; ``lost_in_resync``: after a 410 re-list a running key has
  no pod left; ``completed_callback_not_reported``: a callback pod that succeeded under a
  dead scheduler was only cleaned up; ``attempt_record_leak``: attempt bookkeeping that
  outlives its workload;
* ``crash`` (a library function raised: the scheduler dies and restarts; five make a
  ``crash_loop`` and stop the run), ``lookup_loop``, ``event_storm``, ``timeout``.

Scenario files (YAML)
=====================

Every mapping is checked strictly: an unknown key, a wrong type or an unknown value is an
error naming the file, line and field, e.g.
``scenario.yaml:14: workloads[2].pod.steps[1].phase: unknown phase 'Runing' (expected one
of Pending, Running, Succeeded, Failed, Unknown)``. Times are ticks (integers)::

    name: nightly-etl                 # default: the file name
    seed: 7                           # pod-name randomness (default 0)
    config:                           # all optional; defaults in brackets
      airflow_version: "3.3.2"        # callbacks need 3.3+          ["3.3.2"]
      namespace: airflow                                              [airflow]
      delete_worker_pods: true                                        [true]
      delete_worker_pods_on_failure: false                            [false]
      mark_kept_failed_pods_done: true                                [true]
      pod_launch_failure_retries: 1   # -1 unlimited                  [1]
      callback_launch_failure_retries: 0                              [0]
      task_publish_max_retries: 3     # pod-creation retries, -1 unlimited [0]
      pending_policy: false           # true, or {image_pull_grace: 60, pending_timeout: 600, ...}
      report_callback_running: true                                   [true]
      tick_seconds: 1                 # seconds per tick (Retry-After, grace periods) [1]
      max_ticks: 1000                 # give up (and report) after this many ticks  [1000]
      reset_orphaned_callbacks: true  # see below                     [true]
    workloads:
      - id: load                      # a handle for the timeline and table (default: derived)
        kind: task                    # task | callback
        dag_id: etl                   # tasks: dag_id, task_id (required), run_id,
        task_id: load                 #   map_index [-1], try_number [1]
        at: 0                         # tick at which the scheduler queues it [0]
        expect: success               # optional: the end state the run must reach
        pod:                          # the script of every pod launched for it, or
          create_errors:              # `pods: [script, script, ...]`: launch n uses
            - {status: 429, message: "Too many requests", retry_after: 2}  # the n-th
          steps:                      #   script (the last one repeats)
            - {after: 1, phase: Running}
            - {after: 3, phase: Failed, container: {terminated: OOMKilled, exit_code: 137}}
      - kind: callback                # callbacks: callback_id (a UUID), dag_id, run_id
        callback_id: 019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e
    restarts:
      - {at: 8, down: 2}              # the scheduler dies at tick 8, a new one starts at 10
    watch_errors:
      - {at: 5, code: 410}            # 410 Gone: resync; other codes are only reported

A workload without ``pod``/``pods`` gets a pod that runs for two ticks and succeeds. Each
entry of ``create_errors`` fails one create call of that launch (``status: null`` is a
connection error); ``retry_after`` is the Retry-After header in seconds.

Steps (``after`` ticks after the previous step, or after creation; default 1):

* ``phase``: ``Pending``, ``Running``, ``Succeeded``, ``Failed`` or ``Unknown`` (default:
  unchanged); ``reason`` / ``message``: the pod's ``status.reason`` / ``status.message``.
* ``container`` / ``init_container``: ``{waiting: <reason>, message: ...}``,
  ``{terminated: <reason>, exit_code: <int>, message: ...}`` or ``{running: true}``;
  ``container: null`` means no container statuses (a pod the kubelet rejected). Without
  ``container`` the main container follows the phase (ContainerCreating, running,
  Completed/0, Error/1).
* ``evicted: true``: the kubelet evicted the pod (Failed, reason Evicted, a
  DisruptionTarget condition, containers killed with exit code 137).
* ``deleted: true``: somebody deletes the pod: MODIFIED with a deletionTimestamp, then
  DELETED (a running pod deleted is a failure).
* ``duplicate: true``: the event is delivered twice; ``late: <ticks>``: it is delivered
  that many ticks late, after newer events.
* ``task``: what the task process writes to the database at this step: ``running``,
  ``success``, ``failed``, ``up_for_retry``, ``skipped`` or ``none``. By default it writes
  ``running`` when the pod runs and ``success`` when the pod succeeds (tasks only).

``reset_orphaned_callbacks``: Airflow 3.3.2 resets task instances queued by a dead
scheduler but not callbacks; a callback that was queued but had no pod yet would stay
queued forever. By default the simulator's scheduler re-queues such callbacks (an
assumption, noted on the timeline) so that what is examined is the executor.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import heapq
import json
import math
import random
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TextIO, TypeAlias

import attrs
import yaml

from k8s_workloads.adoption import TrackRunning, plan_adoption, plan_relist
from k8s_workloads.compat import InvalidVersion, release_tuple, supports_callbacks
from k8s_workloads.decisions import (
    UNKNOWN,
    Action,
    Attempts,
    Decision,
    DecisionConfig,
    DeletePod,
    EmitEvent,
    FreeSlot,
    Ignore,
    LookUpState,
    PatchLabels,
    RequeueJob,
    classify_create_error,
    decide,
    describe_action,
    requeue_after_create_error,
)
from k8s_workloads.events import Outcome, ResolverConfig, resolve_event
from k8s_workloads.failures import PendingPolicy
from k8s_workloads.keys import CallbackKey, InvalidKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.labels import (
    AIRFLOW_WORKER_LABEL,
    POD_EXECUTOR_DONE_LABEL,
    TRUE_LABEL_VALUE,
    PodSelector,
    completed_pods_adoption_selector,
    create_unique_id,
    live_pods_adoption_selector,
    make_safe_label_value,
    watcher_selector,
)
from k8s_workloads.pods import (
    BASE_CONTAINER_NAME,
    callback_pod_name,
    construct_callback_pod,
    construct_task_pod,
    workload_command_args,
)
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    TASK_ADOPTABLE_STATES,
    TASK_FINISHED_STATES,
    CallbackResult,
    CallbackState,
    ExecutorPseudoState,
    KubernetesJob,
    TaskInstanceState,
    WorkloadResult,
    WorkloadState,
)

if TYPE_CHECKING:
    from k8s_workloads.reconcile import Manifest

__all__ = [
    "Anomaly",
    "ContainerSpec",
    "CreateError",
    "EmittedEvent",
    "PodScript",
    "RestartSpec",
    "Scenario",
    "ScenarioError",
    "SimConfig",
    "SimulationResult",
    "Step",
    "TimelineEntry",
    "WatchErrorSpec",
    "WorkloadReport",
    "WorkloadSpec",
    "bundled_scenarios",
    "generate_scenario",
    "load_bundled_scenario",
    "load_scenario",
    "parse_scenario",
    "run_simulation_cli",
    "simulate",
    "simulate_generated",
]

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")

_TASK_WRITES: dict[str, TaskInstanceState | None] = {
    "running": TaskInstanceState.RUNNING,
    "success": TaskInstanceState.SUCCESS,
    "failed": TaskInstanceState.FAILED,
    "up_for_retry": TaskInstanceState.UP_FOR_RETRY,
    "skipped": TaskInstanceState.SKIPPED,
    "none": None,
}
_TASK_TERMINAL: frozenset[TaskInstanceState] = TASK_FINISHED_STATES | {
    TaskInstanceState.UP_FOR_RETRY,
    TaskInstanceState.UP_FOR_RESCHEDULE,
}
_EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
_DEFAULT_RUN_ID = "manual__2026-01-01T00:00:00+00:00"
_MAX_CRASHES = 5
_MAX_EVENTS_PER_TICK = 1_000_000
_INIT_CONTAINER_NAME = "init"


def _is_terminal(state: WorkloadState | None) -> bool:
    if isinstance(state, CallbackState):
        return state in CALLBACK_TERMINAL_STATES
    return state in _TASK_TERMINAL


# --- the scenario -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ContainerSpec:
    """One container's state in a step: waiting, terminated or running."""

    state: Literal["waiting", "terminated", "running"]
    reason: str | None = None
    message: str | None = None
    exit_code: int | None = None


DefaultContainer: TypeAlias = Literal["default"]
DefaultTask: TypeAlias = Literal["default"]


@dataclasses.dataclass(frozen=True)
class Step:
    """One change the kubelet makes to a pod, ``after`` ticks after the previous one."""

    after: int = 1
    phase: str | None = None
    reason: str | None = None
    message: str | None = None
    container: ContainerSpec | DefaultContainer | None = "default"
    init_container: ContainerSpec | None = None
    duplicate: bool = False
    late: int = 0
    deleted: bool = False
    evicted: bool = False
    task: TaskInstanceState | DefaultTask | None = "default"


@dataclasses.dataclass(frozen=True)
class CreateError:
    """One failed ``create_namespaced_pod`` call: HTTP status (None: connection error)."""

    status: int | None
    message: str = ""
    retry_after: int | None = None


@dataclasses.dataclass(frozen=True)
class PodScript:
    """What happens to one launch of a workload: creation errors, then the pod's steps."""

    steps: tuple[Step, ...]
    create_errors: tuple[CreateError, ...] = ()


DEFAULT_POD = PodScript((Step(after=1, phase="Running"), Step(after=2, phase="Succeeded")))
"""The pod of a workload whose scenario entry has no ``pod``: runs two ticks, succeeds."""


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    """One workload of the scenario."""

    id: str
    key: WorkloadKey
    at: int = 0
    pods: tuple[PodScript, ...] = (DEFAULT_POD,)
    dag_id: str | None = None
    run_id: str | None = None
    expect: WorkloadState | None = None
    line: int = 0

    @property
    def kind(self) -> str:
        return "callback" if isinstance(self.key, CallbackKey) else "task"

    def script(self, launch: int) -> PodScript:
        return self.pods[min(launch, len(self.pods) - 1)]


@dataclasses.dataclass(frozen=True)
class RestartSpec:
    """The scheduler dies at ``at``; a new one starts ``down`` ticks later."""

    at: int
    down: int = 0


@dataclasses.dataclass(frozen=True)
class WatchErrorSpec:
    """An ERROR event on the watch stream at ``at`` (410: the resource version expired)."""

    at: int
    code: int = 410
    message: str | None = None


@dataclasses.dataclass(frozen=True)
class SimConfig:
    """The executor's and the simulator's options."""

    airflow_version: str = "3.3.2"
    namespace: str = "airflow"
    kube_image: str | None = None
    delete_worker_pods: bool = True
    delete_worker_pods_on_failure: bool = False
    mark_kept_failed_pods_done: bool = True
    pod_launch_failure_retries: int = 1
    callback_launch_failure_retries: int = 0
    task_publish_max_retries: int = 0
    pending_policy: PendingPolicy | None = None
    report_callback_running: bool = True
    tick_seconds: float = 1.0
    max_ticks: int = 1000
    reset_orphaned_callbacks: bool = True

    def decision_config(self) -> DecisionConfig:
        return DecisionConfig(
            delete_worker_pods=self.delete_worker_pods,
            delete_worker_pods_on_failure=self.delete_worker_pods_on_failure,
            mark_kept_failed_pods_done=self.mark_kept_failed_pods_done,
            pod_launch_failure_retries=self.pod_launch_failure_retries,
            callback_launch_failure_retries=self.callback_launch_failure_retries,
            task_publish_max_retries=self.task_publish_max_retries,
        )

    def resolver_config(self) -> ResolverConfig:
        return ResolverConfig(
            airflow_version=self.airflow_version,
            pending=self.pending_policy,
            report_callback_running=self.report_callback_running,
        )

    def image(self) -> str:
        return self.kube_image or f"apache/airflow:{self.airflow_version}"

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            shown[field.name] = attrs.asdict(value) if isinstance(value, PendingPolicy) else value
        return shown


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A whole scenario: configuration, workloads, restarts and watch errors."""

    name: str
    workloads: tuple[WorkloadSpec, ...]
    seed: int = 0
    config: SimConfig = SimConfig()
    restarts: tuple[RestartSpec, ...] = ()
    watch_errors: tuple[WatchErrorSpec, ...] = ()
    description: str | None = None


# --- reading scenario files -------------------------------------------------------------


class ScenarioError(ValueError):
    """A scenario file that cannot be read or is not a valid scenario."""

    def __init__(self, source: str, line: int | None, field: str, problem: str) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.problem = problem
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")


_Node: TypeAlias = yaml.Node
_TAG_NAMES = {
    "tag:yaml.org,2002:str": "a string",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a timestamp",
}
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"


def _suggest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class _Reader:
    """Typed access to composed YAML nodes; every error names the line and field."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: _Node, field: str, problem: str) -> NoReturn:
        raise ScenarioError(self.source, node.start_mark.line + 1, field, problem)

    @staticmethod
    def describe(node: _Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a mapping"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        return _TAG_NAMES.get(node.tag, node.tag)

    def mapping(
        self,
        node: _Node,
        field: str,
        allowed: Sequence[str],
        required: Sequence[str] = (),
    ) -> dict[str, _Node]:
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, field, f"expected a mapping, got {self.describe(node)}")
        found: dict[str, _Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR:
                self.fail(key_node, field, f"keys must be strings, got {self.describe(key_node)}")
            name = str(key_node.value)
            where = f"{field}.{name}" if field else name
            if name not in allowed:
                expected = ", ".join(allowed)
                self.fail(
                    key_node,
                    where,
                    f"unknown key {name!r} (expected one of {expected}){_suggest(name, allowed)}",
                )
            if name in found:
                self.fail(key_node, where, "duplicate key")
            found[name] = value_node
        for name in required:
            if name not in found:
                self.fail(node, f"{field}.{name}" if field else name, "required key is missing")
        return found

    def sequence(self, node: _Node, field: str) -> list[_Node]:
        if not isinstance(node, yaml.SequenceNode):
            self.fail(node, field, f"expected a list, got {self.describe(node)}")
        return list(node.value)

    def _scalar(self, node: _Node, field: str, tags: Sequence[str], what: str) -> object:
        if not isinstance(node, yaml.ScalarNode) or node.tag not in tags:
            self.fail(node, field, f"expected {what}, got {self.describe(node)}")
        return self._constructor.construct_object(node)

    def string(self, node: _Node, field: str, *, lenient: bool = False) -> str:
        if lenient and isinstance(node, yaml.ScalarNode) and node.tag in {_INT, _FLOAT}:
            return str(node.value)  # airflow_version: 3.3 reads as the text "3.3"
        value = self._scalar(node, field, (_STR,), "a string")
        if not isinstance(value, str) or not value:
            self.fail(node, field, "expected a non-empty string")
        return value

    def optional_string(self, node: _Node, field: str) -> str | None:
        if isinstance(node, yaml.ScalarNode) and node.tag == _NULL:
            return None
        return self.string(node, field)

    def integer(
        self, node: _Node, field: str, *, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        value = self._scalar(node, field, (_INT,), "an integer")
        if not isinstance(value, int):
            self.fail(node, field, "expected an integer")
        if minimum is not None and value < minimum:
            self.fail(node, field, f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            self.fail(node, field, f"must be at most {maximum}, got {value}")
        return value

    def number(self, node: _Node, field: str, *, positive: bool = False) -> float:
        value = self._scalar(node, field, (_INT, _FLOAT), "a number")
        if not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value):
            self.fail(node, field, "expected a finite number")
        if positive and value <= 0:
            self.fail(node, field, f"must be positive, got {value}")
        if value < 0:
            self.fail(node, field, f"must not be negative, got {value}")
        return float(value)

    def boolean(self, node: _Node, field: str) -> bool:
        value = self._scalar(node, field, (_BOOL,), "true or false")
        if not isinstance(value, bool):
            self.fail(node, field, "expected true or false")
        return value

    def choice(self, node: _Node, field: str, options: Sequence[str], what: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag != _STR:
            self.fail(node, field, f"expected {what} (a string), got {self.describe(node)}")
        value = str(node.value)
        if value not in options:
            self.fail(
                node,
                field,
                f"unknown {what} {value!r} (expected one of {', '.join(options)})"
                f"{_suggest(value, options)}",
            )
        return value


def _field_names(cls: type[Any]) -> tuple[str, ...]:
    """The YAML keys of a mapping read into ``cls(**values)``: its fields, in order."""
    return tuple(field.name for field in dataclasses.fields(cls))


_TOP_KEYS = ("name", "description", "seed", "config", "workloads", "restarts", "watch_errors")
_CONFIG_KEYS = _field_names(SimConfig)
_BOOL_CONFIG = (
    "delete_worker_pods",
    "delete_worker_pods_on_failure",
    "mark_kept_failed_pods_done",
    "report_callback_running",
    "reset_orphaned_callbacks",
)
_RETRY_CONFIG = (
    "pod_launch_failure_retries",
    "callback_launch_failure_retries",
    "task_publish_max_retries",
)
_PENDING_KEYS = tuple(attrs.fields_dict(PendingPolicy))
_WORKLOAD_KEYS = (
    "id",
    "kind",
    "dag_id",
    "task_id",
    "run_id",
    "map_index",
    "try_number",
    "callback_id",
    "at",
    "pod",
    "pods",
    "expect",
)
_POD_KEYS = _field_names(PodScript)
_STEP_KEYS = _field_names(Step)
_CONTAINER_KEYS = ("waiting", "terminated", "running", "message", "exit_code")
_CREATE_ERROR_KEYS = _field_names(CreateError)


def _parse_pending(reader: _Reader, node: _Node, field: str) -> PendingPolicy | None:
    if isinstance(node, yaml.ScalarNode) and node.tag == _BOOL:
        return PendingPolicy() if reader.boolean(node, field) else None
    if not isinstance(node, yaml.MappingNode):
        reader.fail(node, field, f"expected true, false or a mapping, got {reader.describe(node)}")
    values: dict[str, float | None] = {}
    for name, value in reader.mapping(node, field, _PENDING_KEYS).items():
        is_null = isinstance(value, yaml.ScalarNode) and value.tag == _NULL
        values[name] = None if is_null else reader.number(value, f"{field}.{name}")
    return PendingPolicy(**values)


def _parse_config(reader: _Reader, node: _Node) -> SimConfig:
    found = reader.mapping(node, "config", _CONFIG_KEYS)
    values: dict[str, Any] = {}
    for name, value in found.items():
        field = f"config.{name}"
        if name in _BOOL_CONFIG:
            values[name] = reader.boolean(value, field)
        elif name in _RETRY_CONFIG:
            values[name] = reader.integer(value, field, minimum=-1)
        elif name == "airflow_version":
            version = reader.string(value, field, lenient=True)
            try:
                release_tuple(version)
            except InvalidVersion as error:
                reader.fail(value, field, str(error))
            values[name] = version
        elif name in {"namespace", "kube_image"}:
            values[name] = reader.string(value, field)
        elif name == "pending_policy":
            values[name] = _parse_pending(reader, value, field)
        elif name == "tick_seconds":
            values[name] = reader.number(value, field, positive=True)
        elif name == "max_ticks":
            values[name] = reader.integer(value, field, minimum=1, maximum=10_000_000)
    return SimConfig(**values)


def _parse_container(reader: _Reader, node: _Node, field: str) -> ContainerSpec | None:
    if isinstance(node, yaml.ScalarNode) and node.tag == _NULL:
        return None
    found = reader.mapping(node, field, _CONTAINER_KEYS)
    states = [name for name in ("waiting", "terminated", "running") if name in found]
    if len(states) != 1:
        reader.fail(node, field, "give exactly one of waiting, terminated or running")
    state = states[0]
    message = reader.string(found["message"], f"{field}.message") if "message" in found else None
    if "exit_code" in found and state != "terminated":
        reader.fail(found["exit_code"], f"{field}.exit_code", "only a terminated container has one")
    if state == "running":
        if not reader.boolean(found["running"], f"{field}.running"):
            reader.fail(found["running"], f"{field}.running", "write running: true")
        return ContainerSpec("running", message=message)
    reason = reader.string(found[state], f"{field}.{state}")
    if state == "waiting":
        return ContainerSpec("waiting", reason, message)
    exit_code = (
        reader.integer(found["exit_code"], f"{field}.exit_code", minimum=0, maximum=255)
        if "exit_code" in found
        else (0 if reason == "Completed" else 1)
    )
    return ContainerSpec("terminated", reason, message, exit_code)


def _parse_step(reader: _Reader, node: _Node, field: str, kind: str) -> Step:
    found = reader.mapping(node, field, _STEP_KEYS)
    values: dict[str, Any] = {}
    for name, value in found.items():
        where = f"{field}.{name}"
        if name in {"after", "late"}:
            values[name] = reader.integer(value, where, minimum=0)
        elif name == "phase":
            values[name] = reader.choice(value, where, PHASES, "phase")
        elif name in {"reason", "message"}:
            values[name] = reader.string(value, where)
        elif name in {"container", "init_container"}:
            values[name] = _parse_container(reader, value, where)
        elif name in {"duplicate", "deleted", "evicted"}:
            values[name] = reader.boolean(value, where)
        elif name == "task":
            if kind != "task":
                reader.fail(value, where, "only task workloads have a task process")
            values[name] = _TASK_WRITES[reader.choice(value, where, tuple(_TASK_WRITES), "write")]
    step = Step(**values)
    if step.evicted and step.phase not in {None, "Failed"}:
        reader.fail(found["phase"], f"{field}.phase", "an evicted pod is Failed")
    if step.evicted and step.deleted:
        reader.fail(found["deleted"], f"{field}.deleted", "a step is evicted or deleted, not both")
    return step


def _parse_create_error(reader: _Reader, node: _Node, field: str) -> CreateError:
    found = reader.mapping(node, field, _CREATE_ERROR_KEYS, required=("status",))
    status_node = found["status"]
    status = None
    if not (isinstance(status_node, yaml.ScalarNode) and status_node.tag == _NULL):
        status = reader.integer(status_node, f"{field}.status", minimum=400, maximum=599)
    message = reader.string(found["message"], f"{field}.message") if "message" in found else ""
    retry_after = (
        reader.integer(found["retry_after"], f"{field}.retry_after", minimum=0)
        if "retry_after" in found
        else None
    )
    return CreateError(status, message, retry_after)


def _parse_pod(reader: _Reader, node: _Node, field: str, kind: str) -> PodScript:
    found = reader.mapping(node, field, _POD_KEYS)
    steps: tuple[Step, ...] = DEFAULT_POD.steps
    if "steps" in found:
        step_nodes = reader.sequence(found["steps"], f"{field}.steps")
        steps = tuple(
            _parse_step(reader, step, f"{field}.steps[{index}]", kind)
            for index, step in enumerate(step_nodes)
        )
    errors: tuple[CreateError, ...] = ()
    if "create_errors" in found:
        error_nodes = reader.sequence(found["create_errors"], f"{field}.create_errors")
        errors = tuple(
            _parse_create_error(reader, error, f"{field}.create_errors[{index}]")
            for index, error in enumerate(error_nodes)
        )
    return PodScript(steps, errors)


_TASK_ONLY = ("task_id", "map_index", "try_number")


def _parse_key(
    reader: _Reader, node: _Node, found: Mapping[str, _Node], field: str, kind: str
) -> WorkloadKey:
    try:
        if kind == "callback":
            for name in _TASK_ONLY:
                if name in found:
                    reader.fail(found[name], f"{field}.{name}", "only task workloads have one")
            if "callback_id" not in found:
                reader.fail(node, f"{field}.callback_id", "required key is missing")
            callback_id = reader.string(found["callback_id"], f"{field}.callback_id")
            try:
                return CallbackKey(callback_id)
            except InvalidKey as error:
                reader.fail(found["callback_id"], f"{field}.callback_id", str(error))
        if "callback_id" in found:
            reader.fail(found["callback_id"], f"{field}.callback_id", "only callbacks have one")
        for name in ("dag_id", "task_id"):
            if name not in found:
                reader.fail(node, f"{field}.{name}", "required key is missing")
        return TaskInstanceKey(
            reader.string(found["dag_id"], f"{field}.dag_id"),
            reader.string(found["task_id"], f"{field}.task_id"),
            reader.string(found["run_id"], f"{field}.run_id")
            if "run_id" in found
            else _DEFAULT_RUN_ID,
            reader.integer(found["try_number"], f"{field}.try_number", minimum=1)
            if "try_number" in found
            else 1,
            reader.integer(found["map_index"], f"{field}.map_index", minimum=-1)
            if "map_index" in found
            else -1,
        )
    except InvalidKey as error:  # a field the key rejects (the reader checked the types)
        reader.fail(node, field, str(error))


def _default_id(key: WorkloadKey) -> str:
    if isinstance(key, CallbackKey):
        return f"callback-{key.id[:8]}"
    mapped = f"[{key.map_index}]" if key.map_index >= 0 else ""
    return f"{key.dag_id}.{key.task_id}{mapped}"


def _parse_workload(reader: _Reader, node: _Node, field: str, config: SimConfig) -> WorkloadSpec:
    found = reader.mapping(node, field, _WORKLOAD_KEYS, required=("kind",))
    kind = reader.choice(found["kind"], f"{field}.kind", ("task", "callback"), "kind")
    if kind == "callback" and not supports_callbacks(config.airflow_version):
        reader.fail(
            found["kind"],
            f"{field}.kind",
            f"callback workloads need Airflow 3.3+ (config.airflow_version is "
            f"{config.airflow_version})",
        )
    key = _parse_key(reader, node, found, field, kind)
    if "pod" in found and "pods" in found:
        reader.fail(found["pods"], f"{field}.pods", "give pod or pods, not both")
    pods: tuple[PodScript, ...] = (DEFAULT_POD,)
    if "pod" in found:
        pods = (_parse_pod(reader, found["pod"], f"{field}.pod", kind),)
    elif "pods" in found:
        pod_nodes = reader.sequence(found["pods"], f"{field}.pods")
        if not pod_nodes:
            reader.fail(found["pods"], f"{field}.pods", "needs at least one pod script")
        pods = tuple(
            _parse_pod(reader, pod, f"{field}.pods[{index}]", kind)
            for index, pod in enumerate(pod_nodes)
        )
    expect: WorkloadState | None = None
    if "expect" in found:
        states = CallbackState if kind == "callback" else TaskInstanceState
        options = tuple(state.value for state in states)
        expect = states(reader.choice(found["expect"], f"{field}.expect", options, "state"))
    return WorkloadSpec(
        id=reader.string(found["id"], f"{field}.id") if "id" in found else _default_id(key),
        key=key,
        at=reader.integer(found["at"], f"{field}.at", minimum=0) if "at" in found else 0,
        pods=pods,
        dag_id=reader.string(found["dag_id"], f"{field}.dag_id") if "dag_id" in found else None,
        run_id=(
            reader.string(found["run_id"], f"{field}.run_id")
            if "run_id" in found
            else (_DEFAULT_RUN_ID if kind == "task" else None)
        ),
        expect=expect,
        line=node.start_mark.line + 1,
    )


def _parse_restarts(reader: _Reader, node: _Node) -> tuple[RestartSpec, ...]:
    restarts = []
    for index, item in enumerate(reader.sequence(node, "restarts")):
        field = f"restarts[{index}]"
        found = reader.mapping(item, field, ("at", "down"), required=("at",))
        at = reader.integer(found["at"], f"{field}.at", minimum=0)
        down = reader.integer(found["down"], f"{field}.down", minimum=0) if "down" in found else 0
        restarts.append(RestartSpec(at, down))
    return tuple(restarts)


def _parse_watch_errors(reader: _Reader, node: _Node) -> tuple[WatchErrorSpec, ...]:
    errors = []
    for index, item in enumerate(reader.sequence(node, "watch_errors")):
        field = f"watch_errors[{index}]"
        found = reader.mapping(item, field, ("at", "code", "message"), required=("at",))
        at = reader.integer(found["at"], f"{field}.at", minimum=0)
        code = (
            reader.integer(found["code"], f"{field}.code", minimum=400, maximum=599)
            if "code" in found
            else 410
        )
        message = (
            reader.string(found["message"], f"{field}.message") if "message" in found else None
        )
        errors.append(WatchErrorSpec(at, code, message))
    return tuple(errors)


def _check_unique(reader: _Reader, nodes: list[_Node], workloads: list[WorkloadSpec]) -> None:
    ids: dict[str, int] = {}
    keys: dict[WorkloadKey, int] = {}
    for index, (node, spec) in enumerate(zip(nodes, workloads, strict=True)):
        field = f"workloads[{index}]"
        if spec.id in ids:
            reader.fail(node, f"{field}.id", f"id {spec.id!r} is used by workloads[{ids[spec.id]}]")
        primary: WorkloadKey = (
            spec.key.with_try_number(1) if isinstance(spec.key, TaskInstanceKey) else spec.key
        )
        if primary in keys:
            reader.fail(node, field, f"the same workload as workloads[{keys[primary]}]")
        ids[spec.id] = index
        keys[primary] = index


def parse_scenario(text: str, source: str = "scenario.yaml") -> Scenario:
    """Read a scenario from YAML text; :class:`ScenarioError` names the line and field."""
    reader = _Reader(source)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = ", ".join(part for part in (error.context, error.problem) if part)
        line = mark.line + 1 if mark is not None else None
        raise ScenarioError(source, line, "", f"not valid YAML: {problem or error}") from None
    except yaml.YAMLError as error:
        raise ScenarioError(source, None, "", f"not valid YAML: {error}") from None
    if root is None:
        raise ScenarioError(source, 1, "", "the file is empty: expected a scenario mapping")
    found = reader.mapping(root, "", _TOP_KEYS, required=("workloads",))
    config = _parse_config(reader, found["config"]) if "config" in found else SimConfig()
    workload_nodes = reader.sequence(found["workloads"], "workloads")
    if not workload_nodes:
        reader.fail(found["workloads"], "workloads", "needs at least one workload")
    workloads = [
        _parse_workload(reader, item, f"workloads[{index}]", config)
        for index, item in enumerate(workload_nodes)
    ]
    _check_unique(reader, workload_nodes, workloads)
    default_name = re.sub(r"\.ya?ml$", "", source.replace("\\", "/").rsplit("/", 1)[-1])
    return Scenario(
        name=reader.string(found["name"], "name") if "name" in found else default_name,
        description=(
            reader.string(found["description"], "description") if "description" in found else None
        ),
        seed=reader.integer(found["seed"], "seed") if "seed" in found else 0,
        config=config,
        workloads=tuple(workloads),
        restarts=_parse_restarts(reader, found["restarts"]) if "restarts" in found else (),
        watch_errors=(
            _parse_watch_errors(reader, found["watch_errors"]) if "watch_errors" in found else ()
        ),
    )


def load_scenario(path: str) -> Scenario:
    """Read a scenario file; :class:`ScenarioError` for a missing, unreadable or bad file."""
    try:
        with open(path, encoding="utf-8") as handle:  # noqa: PTH123
            text = handle.read()
    except OSError as error:
        raise ScenarioError(path, None, "", f"cannot read the file: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ScenarioError(path, None, "", "not UTF-8 text") from None
    return parse_scenario(text, path)


def bundled_scenarios() -> list[str]:
    """Names of the bundled scenarios: ``scenario.yaml`` (the default) and the extra ones."""
    examples = resources.files("k8s_workloads").joinpath("examples")
    extra = examples.joinpath("scenarios")
    names = ["scenario.yaml"]
    if extra.is_dir():
        names += sorted(
            f"scenarios/{entry.name}" for entry in extra.iterdir() if entry.name.endswith(".yaml")
        )
    return names


def load_bundled_scenario(name: str = "scenario.yaml") -> Scenario:
    """A bundled scenario by its name in :func:`bundled_scenarios`."""
    text = (
        resources.files("k8s_workloads").joinpath("examples", *name.split("/")).read_text("utf-8")
    )
    return parse_scenario(text, name.rsplit("/", 1)[-1])


# --- label and field selectors ----------------------------------------------------------

_REQUIREMENT = re.compile(
    r"^\s*(?:(?P<not>!)\s*(?P<absent>[^\s!=(),]+)"
    r"|(?P<key>[^\s!=(),]+)\s*(?:(?P<op>!=|==|=)\s*(?P<value>[^\s,()]*)"
    r"|\s+(?P<set>notin|in)\s*\((?P<values>[^)]*)\))?)\s*$"
)


@dataclasses.dataclass(frozen=True)
class _Requirement:
    key: str
    op: str  # "in" (also "=", "=="), "notin" (also "!="), "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.op == "exists":
            return value is not None
        if self.op == "!exists":
            return value is None
        found = value is not None and value in self.values
        return found if self.op == "in" else not found


def _split_requirements(selector: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return parts


def _parse_label_selector(selector: str) -> tuple[_Requirement, ...]:
    requirements = []
    for part in _split_requirements(selector):
        match = _REQUIREMENT.match(part)
        if match is None:
            raise ValueError(f"unsupported label selector requirement {part!r}")
        if match["absent"]:
            requirements.append(_Requirement(match["absent"], "!exists"))
        elif match["op"]:
            op = "notin" if match["op"] == "!=" else "in"
            requirements.append(_Requirement(match["key"], op, frozenset({match["value"]})))
        elif match["set"]:
            values = frozenset(value.strip() for value in match["values"].split(","))
            requirements.append(_Requirement(match["key"], match["set"], values))
        else:
            requirements.append(_Requirement(match["key"], "exists"))
    return tuple(requirements)


def _parse_field_selector(selector: str | None) -> tuple[tuple[str, bool, str], ...]:
    if not selector:
        return ()
    fields = []
    for part in selector.split(","):
        negate = "!=" in part
        path, _, value = part.partition("!=" if negate else "=")
        fields.append((path.strip().lstrip("="), negate, value.strip().lstrip("=")))
    return tuple(fields)


@dataclasses.dataclass(frozen=True)
class _Selector:
    """A parsed :class:`~k8s_workloads.labels.PodSelector`: what the API server would select."""

    text: str
    labels: tuple[_Requirement, ...]
    fields: tuple[tuple[str, bool, str], ...]

    @classmethod
    def of(cls, selector: PodSelector) -> _Selector:
        text = selector.label_selector
        if selector.field_selector:
            text += f" ({selector.field_selector})"
        return cls(
            text,
            _parse_label_selector(selector.label_selector),
            _parse_field_selector(selector.field_selector),
        )

    def matches(self, pod: Manifest) -> bool:
        labels = pod["metadata"].get("labels") or {}
        if not all(requirement.matches(labels) for requirement in self.labels):
            return False
        for path, negate, value in self.fields:
            found: object = pod
            for part in path.split("."):
                found = found.get(part) if isinstance(found, Mapping) else None
            if (found == value) == negate:
                return False
        return True


# --- the cluster ------------------------------------------------------------------------


class _Watch:
    """One watch stream: a label selector and the events waiting to be delivered."""

    def __init__(self, selector: _Selector) -> None:
        self.selector = selector
        self._heap: list[tuple[int, int, dict[str, Any]]] = []
        self._seq = 0

    def push(self, due: int, event: dict[str, Any]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, event))

    def pop_due(self, tick: int) -> dict[str, Any] | None:
        if self._heap and self._heap[0][0] <= tick:
            return heapq.heappop(self._heap)[2]
        return None

    def drop_all(self) -> list[dict[str, Any]]:
        dropped = [event for _, _, event in sorted(self._heap, key=lambda item: item[:2])]
        self._heap.clear()
        return dropped

    def __len__(self) -> int:
        return len(self._heap)


def _snapshot(pod: Manifest, *, resource_version: str | None = None) -> Manifest:
    # ``spec`` and ``status`` are never mutated once set (a step replaces the status), so
    # an event may share them; metadata is copied because labels are patched.
    metadata = dict(pod["metadata"])
    metadata["labels"] = dict(metadata.get("labels") or {})
    metadata["annotations"] = dict(metadata.get("annotations") or {})
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod["spec"],
        "status": pod["status"],
    }


class _Cluster:
    """Pods by (namespace, name), a resource-version counter and the active watches."""

    def __init__(self, tick_seconds: float = 1.0) -> None:
        self.tick_seconds = tick_seconds
        self.pods: dict[tuple[str, str], Manifest] = {}
        self.resource_version = 0
        self.watches: list[_Watch] = []
        self.history: dict[str, list[tuple[int, str, str]]] = {}
        """Raw events per pod name: (tick, type, phase), whatever any watch selects."""
        self._uid = 0

    def _next_version(self) -> str:
        self.resource_version += 1
        return str(self.resource_version)

    def _record(self, tick: int, name: str, kind: str, pod: Manifest) -> None:
        self.history.setdefault(name, []).append((tick, kind, str(pod["status"].get("phase"))))

    def _emit(
        self,
        old: Manifest | None,
        new: Manifest,
        *,
        tick: int,
        deleted: bool = False,
        late: int = 0,
        copies: int = 1,
    ) -> None:
        for watch in self.watches:
            old_ok = old is not None and watch.selector.matches(old)
            new_ok = watch.selector.matches(new)
            if deleted:
                event = {"type": "DELETED", "object": _snapshot(new)} if old_ok else None
            elif old_ok and new_ok:
                event = {"type": "MODIFIED", "object": _snapshot(new)}
            elif new_ok:
                event = {"type": "ADDED", "object": _snapshot(new)}
            elif old_ok and old is not None:
                # Stopped matching the selector: the API server sends DELETED with the
                # previous content (and the new resource version), no deletionTimestamp.
                version = new["metadata"]["resourceVersion"]
                event = {"type": "DELETED", "object": _snapshot(old, resource_version=version)}
            else:
                event = None
            if event is not None:
                for _ in range(copies):
                    watch.push(tick + late, event)

    def create(self, pod: Manifest, tick: int) -> None:
        metadata = pod["metadata"]
        self._uid += 1
        metadata["uid"] = f"00000000-0000-4000-8000-{self._uid:012d}"
        metadata["creationTimestamp"] = _timestamp(tick, self.tick_seconds)
        metadata["resourceVersion"] = self._next_version()
        pod["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        self.pods[metadata["namespace"], metadata["name"]] = pod
        self._record(tick, metadata["name"], "ADDED", pod)
        self._emit(None, pod, tick=tick)

    def get(self, namespace: str, name: str) -> Manifest | None:
        return self.pods.get((namespace, name))

    def set_status(
        self,
        namespace: str,
        name: str,
        status: dict[str, Any],
        *,
        tick: int,
        late: int = 0,
        copies: int = 1,
        deleting: bool = False,
    ) -> None:
        pod = self.pods[namespace, name]
        old = _snapshot(pod)
        pod["status"] = status
        if deleting:
            pod["metadata"]["deletionTimestamp"] = _timestamp(tick, self.tick_seconds)
            pod["metadata"]["deletionGracePeriodSeconds"] = 30
        pod["metadata"]["resourceVersion"] = self._next_version()
        self._record(tick, name, "MODIFIED", pod)
        self._emit(old, pod, tick=tick, late=late, copies=copies)

    def patch_labels(self, namespace: str, name: str, labels: Mapping[str, str], tick: int) -> bool:
        pod = self.pods.get((namespace, name))
        if pod is None:
            return False
        old = _snapshot(pod)
        pod["metadata"]["labels"] = {**pod["metadata"]["labels"], **labels}
        pod["metadata"]["resourceVersion"] = self._next_version()
        self._record(tick, name, "MODIFIED", pod)
        self._emit(old, pod, tick=tick)
        return True

    def delete(
        self, namespace: str, name: str, tick: int, *, late: int = 0, copies: int = 1
    ) -> bool:
        pod = self.pods.pop((namespace, name), None)
        if pod is None:
            return False
        old = _snapshot(pod)
        pod["metadata"].setdefault("deletionTimestamp", _timestamp(tick, self.tick_seconds))
        pod["metadata"].setdefault("deletionGracePeriodSeconds", 0)
        pod["metadata"]["resourceVersion"] = self._next_version()
        self._record(tick, name, "DELETED", pod)
        self._emit(old, pod, tick=tick, deleted=True, late=late, copies=copies)
        return True

    def select(self, selector: _Selector) -> list[Manifest]:
        """Snapshots of the pods a list call with this selector returns, by name."""
        return [
            _snapshot(pod) for (_, _), pod in sorted(self.pods.items()) if selector.matches(pod)
        ]


def _moment(tick: int, tick_seconds: float = 1.0) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(seconds=tick * tick_seconds)


def _timestamp(tick: int, tick_seconds: float = 1.0) -> str:
    return _moment(tick, tick_seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the fake Airflow database ----------------------------------------------------------


@dataclasses.dataclass
class _TaskRow:
    state: TaskInstanceState | None
    try_number: int
    queued_by: int | None


@dataclasses.dataclass
class _CallbackRow:
    state: CallbackState
    queued_by: int | None


class _FakeDB:
    """Task instance rows by primary key (current try) and callback rows by id."""

    def __init__(self) -> None:
        self.tasks: dict[tuple[str, str, str | None, int], _TaskRow] = {}
        self.callbacks: dict[str, _CallbackRow] = {}

    def task_row(self, key: TaskInstanceKey) -> _TaskRow | None:
        """The task instance's row if its current try is the key's."""
        row = self.tasks.get(key.primary)
        return row if row is not None and row.try_number == key.try_number else None

    def state(self, key: WorkloadKey) -> WorkloadState | None:
        row = self.callbacks.get(key.id) if isinstance(key, CallbackKey) else self.task_row(key)
        return None if row is None else row.state


# --- results ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TimelineEntry:
    """One line of the timeline."""

    t: int
    kind: str
    """scheduler, queue, create, create_error, event, kubelet, task, adopt, reset, watch."""
    text: str
    pod: str | None = None
    workload: str | None = None
    event: str | None = None
    phase: str | None = None
    outcome: str | None = None
    state: str | None = None
    actions: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {"t": self.t, "kind": self.kind, "text": self.text}
        for name in ("pod", "workload", "event", "phase", "outcome", "state"):
            value = getattr(self, name)
            if value is not None:
                shown[name] = value
        if self.actions:
            shown["actions"] = list(self.actions)
        return shown


@dataclasses.dataclass(frozen=True)
class EmittedEvent:
    """One entry of the scheduler's event log: what an executor reported."""

    t: int
    scheduler: int
    workload: str
    key: str
    state: str
    info: str | None = None

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Anomaly:
    """An invariant the run broke: a likely bug, surfaced rather than hidden."""

    kind: str
    message: str
    t: int
    workload: str | None = None

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {"kind": self.kind, "t": self.t, "message": self.message}
        if self.workload is not None:
            shown["workload"] = self.workload
        return shown


@dataclasses.dataclass(frozen=True)
class WorkloadReport:
    """How one workload ended."""

    id: str
    kind: str
    key: str
    end_state: str
    """The database state at the end: the task instance's (current try) or callback's."""
    pods: tuple[str, ...]
    launches: int
    terminal_events: int
    """Final-state events the executor emitted for the workload (one is right)."""
    events: tuple[str, ...]
    """Every event emitted, as ``t<tick>:<state>``."""
    notes: tuple[str, ...]
    expected: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "kind": self.kind,
            "key": self.key,
            "end_state": self.end_state,
            "expected": self.expected,
            "pods": list(self.pods),
            "launches": self.launches,
            "terminal_events": self.terminal_events,
            "events": list(self.events),
            "notes": list(self.notes),
        }


@dataclasses.dataclass(frozen=True)
class SimulationResult:
    """Everything a run produced; deterministic for a scenario (no wall time)."""

    name: str
    seed: int
    config: SimConfig
    ticks: int
    timeline: tuple[TimelineEntry, ...]
    workloads: tuple[WorkloadReport, ...]
    end_states: Mapping[str, int]
    """Workload count per end state, e.g. ``{"failed": 4, "success": 9}``."""
    events_processed: int
    """Watch events the executors resolved."""
    restarts: int
    schedulers: int
    anomalies: tuple[Anomaly, ...]
    pods_left: tuple[str, ...]
    """Pods still in the cluster at the end (kept for debugging, or orphaned)."""
    scheduler_events: tuple[EmittedEvent, ...] = ()
    """The scheduler's event log: every EmitEvent, in order (empty without a timeline)."""

    @property
    def ok(self) -> bool:
        return not self.anomalies

    def workload(self, workload_id: str) -> WorkloadReport:
        for report in self.workloads:
            if report.id == workload_id:
                return report
        raise KeyError(workload_id)

    def summary(self) -> str:
        states = ", ".join(f"{count} {state}" for state, count in self.end_states.items())
        restarts = f"{self.restarts} restart" + ("" if self.restarts == 1 else "s")
        anomalies = f"{len(self.anomalies)} anomal" + ("y" if len(self.anomalies) == 1 else "ies")
        return (
            f"{len(self.workloads)} workloads: {states} | {self.events_processed} watch events | "
            f"{restarts} | {self.ticks} ticks | {len(self.pods_left)} pods left | {anomalies}"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "seed": self.seed,
            "config": self.config.to_json(),
            "ticks": self.ticks,
            "timeline": [entry.to_json() for entry in self.timeline],
            "workloads": [report.to_json() for report in self.workloads],
            "scheduler_events": [event.to_json() for event in self.scheduler_events],
            "summary": {
                "workloads": len(self.workloads),
                "end_states": dict(self.end_states),
                "events_processed": self.events_processed,
                "restarts": self.restarts,
                "schedulers": self.schedulers,
                "pods_left": list(self.pods_left),
                "anomalies": len(self.anomalies),
                "ok": self.ok,
                "text": self.summary(),
            },
            "anomalies": [anomaly.to_json() for anomaly in self.anomalies],
        }

    def format_text(self) -> str:
        lines = [f"Scenario {self.name} (seed {self.seed}, Airflow {self.config.airflow_version})"]
        width = max((len(entry.pod or "-") for entry in self.timeline), default=1)
        lines.extend(
            f"t={entry.t:>3}  {(entry.pod or '-'):<{width}}  {entry.text}"
            for entry in self.timeline
        )
        lines.append("")
        lines.extend(_table(self.workloads))
        if self.pods_left:
            lines.append("")
            lines.append("pods left in the cluster: " + ", ".join(self.pods_left))
        if self.anomalies:
            lines.append("")
            lines.extend(
                f"ANOMALY t={anomaly.t} {anomaly.kind}"
                + (f" [{anomaly.workload}]" if anomaly.workload else "")
                + f": {anomaly.message}"
                for anomaly in self.anomalies
            )
        lines.append("")
        lines.append(self.summary())
        return "\n".join(lines) + "\n"


def _table(reports: Sequence[WorkloadReport]) -> list[str]:
    header = ("workload", "kind", "key", "end state", "pods", "launches", "final events", "notes")
    rows = [
        (
            report.id,
            report.kind,
            report.key,
            report.end_state
            + (
                f" (expected {report.expected})"
                if report.expected not in {None, report.end_state}
                else ""
            ),
            ", ".join(report.pods) or "-",
            str(report.launches),
            str(report.terminal_events),
            "; ".join(report.notes),
        )
        for report in reports
    ]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    widths[-1] = 0
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


# --- the simulation ---------------------------------------------------------------------


def _describe_key(key: WorkloadKey) -> str:
    if isinstance(key, CallbackKey):
        # Time-ordered UUIDs (v7) share their first digits: keep the head and the tail.
        return f"callback {key.id[:8]}..{key.id[-4:]}"
    return f"task {_default_id(key)} try {key.try_number}"


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


@dataclasses.dataclass
class _QueueEntry:
    job: KubernetesJob[Any]
    not_before: int


@dataclasses.dataclass
class _Scheduler:
    """What one scheduler (and its executor) holds in memory: lost when it dies."""

    job_id: int
    watch: _Watch
    running: dict[WorkloadKey, None] = dataclasses.field(default_factory=dict)
    attempts: Attempts = dataclasses.field(default_factory=Attempts)
    queue: list[_QueueEntry] = dataclasses.field(default_factory=list)
    create_retries: dict[WorkloadKey, int] = dataclasses.field(default_factory=dict)
    paused_until: int = 0

    @property
    def label(self) -> str:
        return make_safe_label_value(str(self.job_id))


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
        self.cluster = _Cluster(scenario.config.tick_seconds)
        self.db = _FakeDB()
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
        self.deferred: list[TimelineEntry] | None = None
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
        if not self.record_timeline:
            return
        entry = TimelineEntry(self.t, kind, text, **fields)
        if self.deferred is not None:
            self.deferred.append(entry)  # a note made while performing an event's actions
        else:
            self.timeline.append(entry)

    def log_after(self, entry_kind: str, text: str, **fields: Any) -> None:  # noqa: ANN401
        """Log an event's line, then the notes its actions made."""
        notes, self.deferred = self.deferred or [], None
        self.log(entry_kind, text, **fields)
        if self.record_timeline:
            self.timeline.extend(notes)

    def anomaly(self, kind: str, message: str, live: _Live | None = None) -> None:
        self.anomalies.append(Anomaly(kind, message, self.t, live.spec.id if live else None))
        if live is not None:
            live.note(f"ANOMALY {kind}")

    def now(self) -> datetime.datetime:
        return _moment(self.t, self.config.tick_seconds)

    def ticks(self, seconds: float | None) -> int:
        if not seconds:
            return 0
        return math.ceil(seconds / self.config.tick_seconds)

    def timestamp(self) -> str:
        return _timestamp(self.t, self.config.tick_seconds)

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
            self.guarded(self.create_pods)
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
        finally:
            if self.deferred is not None:  # raised while performing an event's actions
                self.timeline.extend(self.deferred)
                self.deferred = None

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
        if self.queue_index < len(self.to_queue):
            return False
        if self.requeues:
            return False
        if self.sched.queue or len(self.sched.watch):
            return False
        return not any(tick > self.t for tick in self.kubelet_due)

    # --- scheduler lifecycle ------------------------------------------------------------

    def stop_scheduler(self, why: str) -> None:
        sched = self.scheduler
        lost_events = len(sched.watch.drop_all())
        self.cluster.watches.remove(sched.watch)
        self.dead_ids.append(sched.job_id)
        self.sched = None
        self.start_at = None
        self.log(
            "scheduler",
            f"scheduler {sched.job_id} stops ({why}): loses running={len(sched.running)}, "
            f"{len(sched.queue)} jobs waiting for a pod, {lost_events} undelivered watch events",
        )

    def start_scheduler(self) -> None:
        job_id = self.next_job_id
        self.next_job_id += 1
        selector = _Selector.of(watcher_selector(job_id))
        watch = _Watch(selector)
        self.cluster.watches.append(watch)
        self.sched = _Scheduler(job_id, watch)
        self.start_at = None
        self.log("scheduler", f"scheduler {job_id} starts; watching {selector.text}")
        # The watch starts with a list: ADDED for the pods it already selects.
        for pod in self.cluster.select(selector):
            watch.push(self.t, {"type": "ADDED", "object": pod})
        if self.dead_ids:
            self.adopt()

    def adopt(self) -> None:
        sched = self.scheduler
        listed: dict[str, Manifest] = {}
        selectors = [live_pods_adoption_selector(old) for old in self.dead_ids]
        selectors.append(completed_pods_adoption_selector(sched.job_id))
        for selector in selectors:
            for pod in self.cluster.select(_Selector.of(selector)):
                listed.setdefault(pod["metadata"]["name"], pod)
        pods = [listed[name] for name in sorted(listed)]
        dead = set(self.dead_ids)
        expected = [
            live.key
            for live in self.live
            if isinstance(live.key, TaskInstanceKey)
            and (row := self.db.task_row(live.key)) is not None
            and row.state in TASK_ADOPTABLE_STATES
            and row.queued_by in dead
        ]
        plan = plan_adoption(
            pods,
            me=sched.job_id,
            expected_task_keys=expected,
            airflow_version=self.config.airflow_version,
            config=self.decision_config,
        )
        self.log(
            "adopt",
            f"adoption: {len(pods)} pods listed, {len(plan.adopted)} adopted, "
            f"{len(plan.completed)} completed, {len(plan.skipped)} skipped, "
            f"{len(plan.undecodable)} undecodable; {len(expected)} task instances to adopt",
        )
        for action in plan.actions:
            if isinstance(action, TrackRunning):
                sched.running[action.key] = None
                self.claim(action.key, sched.job_id)
                live = self.by_key.get(action.key)
                if live is not None:
                    live.note(f"adopted by scheduler {sched.job_id}")
                self.log(
                    "adopt",
                    f"track running ({_describe_key(action.key)})",
                    workload=live.spec.id if live else None,
                )
            else:
                self.perform(action, None, None)
        for skipped in (*plan.skipped, *plan.undecodable):
            self.log("adopt", f"left alone: {skipped.reason}", pod=skipped.pod_name)
        for result in plan.completed:
            self.handle_result(result, "adoption: Succeeded under a dead scheduler")
        self.reset_orphans(plan.not_adopted(expected), dead, plan.adopted)

    def claim(self, key: WorkloadKey, job_id: int) -> None:
        if isinstance(key, CallbackKey):
            row = self.db.callbacks.get(key.id)
            if row is not None:
                row.queued_by = job_id
            return
        task_row = self.db.tasks.get(key.primary)
        if task_row is not None:
            task_row.queued_by = job_id

    def reset_orphans(
        self, not_adopted: list[TaskInstanceKey], dead: set[int], adopted: frozenset[WorkloadKey]
    ) -> None:
        for key in not_adopted:
            live = self.by_key[key]
            row = self.db.tasks[key.primary]
            row.state = None
            row.queued_by = None
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
        for live in self.live:
            callback_key = live.key
            if not isinstance(callback_key, CallbackKey) or callback_key in adopted:
                continue
            cb_row = self.db.callbacks.get(callback_key.id)
            if cb_row is None or cb_row.state is not CallbackState.QUEUED:
                continue
            if cb_row.queued_by not in dead:
                continue
            cb_row.queued_by = None
            self.requeues.setdefault(self.t + 1, []).append(live)
            live.note("re-queued after restart (simulator's reset_orphaned_callbacks)")
            self.log(
                "reset",
                f"re-queue {_describe_key(callback_key)}: queued, no pod (assumption: "
                "reset_orphaned_callbacks; Airflow 3.3.2 leaves it queued)",
                workload=live.spec.id,
            )

    # --- queueing and pod creation ------------------------------------------------------

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
            self.db.callbacks[key.id] = _CallbackRow(CallbackState.QUEUED, sched.job_id)
        else:
            self.db.tasks[key.primary] = _TaskRow(
                TaskInstanceState.QUEUED, key.try_number, sched.job_id
            )
        workload = {
            "type": "ExecuteCallback" if isinstance(key, CallbackKey) else "ExecuteTask",
            "key": _describe_key(key),
            "token": "simulated-token",
        }
        args, image = workload_command_args(workload), self.config.image()
        # KubernetesJob's key type is one kind or the other, never the union.
        if isinstance(key, CallbackKey):
            job: KubernetesJob[Any] = KubernetesJob(key, args, kube_image=image)
        else:
            job = KubernetesJob(key, args, kube_image=image)
        sched.running[key] = None
        sched.queue.append(_QueueEntry(job, self.t))
        self.log("queue", f"queue {_describe_key(key)}", workload=live.spec.id)

    def create_pods(self) -> None:
        sched = self.scheduler
        entries, sched.queue = sched.queue, []
        waiting: list[_QueueEntry] = []
        for entry in entries:
            if entry.not_before > self.t or self.t < sched.paused_until:
                waiting.append(entry)
                continue
            self.create(entry)
        sched.queue = waiting + sched.queue

    def pod_name(self, live: _Live) -> str:
        key = live.key
        if isinstance(key, CallbackKey):
            return callback_pod_name(key.id, rng=self.rng)
        return create_unique_id(key.dag_id, key.task_id, rng=self.rng)

    def build_pod(self, job: KubernetesJob[Any], live: _Live, name: str) -> Manifest:
        sched = self.scheduler
        key = job.key
        if isinstance(key, CallbackKey):
            return construct_callback_pod(
                callback_id=key.id,
                namespace=self.config.namespace,
                scheduler_job_id=sched.job_id,
                kube_image=job.kube_image,
                args=job.command,
                airflow_version=self.config.airflow_version,
                dag_id=live.spec.dag_id,
                run_id=live.spec.run_id,
                pod_id=name,
            )
        return construct_task_pod(
            namespace=self.config.namespace,
            scheduler_job_id=sched.job_id,
            pod_id=name,
            dag_id=key.dag_id,
            task_id=key.task_id,
            kube_image=job.kube_image,
            try_number=key.try_number,
            args=job.command,
            airflow_version=self.config.airflow_version,
            run_id=key.run_id,
            map_index=key.map_index,
        )

    def create(self, entry: _QueueEntry) -> None:
        sched = self.scheduler
        key = entry.job.key
        live = self.by_key[key]
        sched.attempts = sched.attempts.launched(entry.job)
        script = live.spec.script(live.launches)
        name = self.pod_name(live)
        pod = self.build_pod(entry.job, live, name)
        if live.create_calls < len(script.create_errors):
            error = script.create_errors[live.create_calls]
            live.create_calls += 1
            self.create_failed(entry, live, name, error)
            return
        live.create_calls = 0
        sched.create_retries.pop(key, None)
        self.cluster.create(pod, self.t)
        live.pods.append(name)
        live.launches += 1
        run = _PodRun(self.config.namespace, name, live, key, script, self.t)
        self.runs[run.namespace, name] = run
        self.log(
            "create",
            f"create pod for {_describe_key(key)} (launch {live.launches})",
            pod=name,
            workload=live.spec.id,
        )
        self.schedule_step(run)

    def create_failed(self, entry: _QueueEntry, live: _Live, name: str, error: CreateError) -> None:
        sched = self.scheduler
        key = entry.job.key
        retries = sched.create_retries.get(key, 0)
        body: object = None
        if error.status is not None:
            body = json.dumps(
                {
                    "kind": "Status",
                    "status": "Failure",
                    "message": error.message,
                    "code": error.status,
                }
            )
        headers = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else None
        verdict = classify_create_error(
            error.status,
            body,
            headers,
            reason=error.message if error.status is None else None,
            retries=retries,
            config=self.decision_config,
        )
        sched.create_retries[key] = retries + 1
        decision = requeue_after_create_error(entry.job, verdict, attempts=sched.attempts)
        sched.attempts = decision.attempts
        actions = decision.actions
        what = "connection error" if error.status is None else f"HTTP {error.status}"
        reason = decision.reason
        if verdict.retry and verdict.delay:
            reason += f"; all pod creation paused {self.ticks(verdict.delay)} ticks"
        live.note(f"create failed: {what}")
        self.log(
            "create_error",
            f"create failed: {what} {error.message!r} → {verdict.reason} → {reason}",
            pod=name,
            workload=live.spec.id,
            actions=_action_texts(actions, key),
        )
        for action in actions:
            self.perform(action, None, live)

    # --- the kubelet and the task process -----------------------------------------------

    def schedule_step(self, run: _PodRun) -> None:
        if run.step < len(run.script.steps):
            due = self.t + run.script.steps[run.step].after
            self.kubelet_due.setdefault(due, []).append(run)

    def kubelet(self) -> None:
        while self.t in self.kubelet_due:
            runs = self.kubelet_due.pop(self.t)
            for run in runs:
                if (run.namespace, run.name) not in self.cluster.pods:
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
        if step.deleted:
            self.cluster.set_status(
                run.namespace, run.name, status, tick=self.t, late=step.late, deleting=True
            )
            self.cluster.delete(run.namespace, run.name, self.t, late=step.late, copies=copies)
        else:
            self.cluster.set_status(
                run.namespace, run.name, status, tick=self.t, late=step.late, copies=copies
            )
        if not self.watched(run):
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
        pod = self.cluster.get(run.namespace, run.name)
        if pod is None:
            return True  # deleted: the watch saw it go if it selected it before
        return self.sched.watch.selector.matches(pod)

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
        since = _timestamp(run.ready_since or run.created, self.config.tick_seconds)
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
            status["startTime"] = _timestamp(run.started, self.config.tick_seconds)
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
        row = self.db.task_row(key)
        if row is None:
            return
        write: TaskInstanceState | None
        if step.task != "default":
            write = step.task
        elif phase == "Running" and not step.deleted and row.state is TaskInstanceState.QUEUED:
            write = TaskInstanceState.RUNNING
        elif phase == "Succeeded" and row.state in {
            TaskInstanceState.QUEUED,
            TaskInstanceState.RUNNING,
        }:
            write = TaskInstanceState.SUCCESS
        else:
            write = None
        if write is None or write is row.state:
            return
        row.state = write
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
        dropped = sched.watch.drop_all() if error.code == 410 else []
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
        sched.watch.push(self.t, event)
        if dropped:
            shown = ", ".join(
                f"{event['object']['metadata']['name']} {event['type']}" for event in dropped[:8]
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
            event = sched.watch.pop_due(self.t)
            if event is None:
                return
            handled += 1
            if handled > _MAX_EVENTS_PER_TICK:
                self.anomaly("event_storm", f"over {_MAX_EVENTS_PER_TICK} events in one tick")
                self.stopped = True
                return
            self.handle_event(event)

    def handle_event(self, event: dict[str, Any]) -> None:
        self.events_processed += 1
        resolution = resolve_event(event, config=self.resolver_config, now=self.now())
        if resolution.outcome in {Outcome.RESYNC, Outcome.WATCH_ERROR}:
            self.log(
                "watch",
                f"ERROR {resolution.error_code} → {resolution.outcome.value}: {resolution.reason}",
                event="ERROR",
                outcome=resolution.outcome.value,
            )
            if resolution.outcome is Outcome.RESYNC:
                self.resync()
            return
        pod = event["object"]
        metadata = pod.get("metadata", {})
        phase = pod.get("status", {}).get("phase")
        deleting = " (deleting)" if metadata.get("deletionTimestamp") else ""
        shown = (
            resolution.state.value if resolution.state is not None else (resolution.outcome.value)
        )
        if resolution.outcome is Outcome.FAILED:
            shown = f"failed: {resolution.reason}"
        head = f"{event['type']} {phase}{deleting} → {shown}"
        result = resolution.to_result()
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
        if result is None:
            self.log("event", head + about, **fields)
            return
        self.deferred = []
        text, actions = self.decide_and_perform(result)
        self.log_after("event", f"{head}{about} → {text}", actions=actions, **fields)

    def resync(self) -> None:
        sched = self.scheduler
        pods = self.cluster.select(sched.watch.selector)
        for pod in pods:
            sched.watch.push(self.t, {"type": "ADDED", "object": pod})
        self.log("watch", f"re-list: {len(pods)} pods → ADDED events, then watch again")
        waiting = {entry.job.key for entry in sched.queue}
        # Running workloads whose pods the re-list no longer shows were settled in the gap.
        for result in plan_relist(
            list(sched.running),
            pods,
            waiting=waiting,
            attempts=sched.attempts,
            airflow_version=self.config.airflow_version,
        ):
            self.handle_result(result, "missing from the re-list")
        # Ground truth the executor does not have: which running keys have no pod left.
        with_pods = {self.runs[ref].key for ref in self.cluster.pods if ref in self.runs}
        for key in sched.running:
            if key in with_pods or key in waiting:
                continue
            live = self.by_key.get(key)
            self.anomaly(
                "lost_in_resync",
                f"{_describe_key(key)} is in running but its pod is gone: its final events "
                "were among those the 410 lost, and the re-list only shows pods that exist, "
                "so nothing will ever report it",
                live,
            )

    def handle_result(self, result: WorkloadResult, why: str) -> None:
        self.deferred = []
        text, actions = self.decide_and_perform(result)
        live = self.by_key.get(result.key)
        self.log_after(
            "adopt",
            f"{why}: {result.state.value} ({_describe_key(result.key)}) → {text}",
            pod=result.pod_name,
            workload=live.spec.id if live else None,
            state=result.state.value,
            actions=actions,
        )

    # --- decisions ----------------------------------------------------------------------

    def decide(self, result: WorkloadResult, *, looked_up: bool) -> Decision:
        sched = self.scheduler
        # Tasks are decided without their state first (LookUpState asks for it); the
        # executor reads a callback's row, so a final state is never overwritten.
        read = looked_up or isinstance(result, CallbackResult)
        return decide(
            result,
            running=result.key in sched.running,
            config=self.decision_config,
            attempts=sched.attempts,
            known_state=self.db.state(result.key) if read else UNKNOWN,
        )

    def decide_and_perform(self, result: WorkloadResult) -> tuple[str, tuple[str, ...]]:
        sched = self.scheduler
        live = self.by_key.get(result.key)
        was_running = result.key in sched.running
        decision = self.decide(result, looked_up=False)
        text = _shorten(decision.reason, result.key)
        if any(isinstance(action, LookUpState) for action in decision.actions):
            looked = self.db.state(result.key)
            decision = self.decide(result, looked_up=True)
            shown = looked.value if looked is not None else "no state"
            text = f"{text} ⇒ {shown} → {_shorten(decision.reason, result.key)}"
            if any(isinstance(action, LookUpState) for action in decision.actions):
                self.anomaly("lookup_loop", f"decide asked for the state again after {shown}", live)
                return text, _action_texts(decision.actions, result.key)
        sched.attempts = decision.attempts
        for action in decision.actions:
            self.perform(action, result, live)
        self.check_result(result, decision, live, was_running=was_running)
        return text, _action_texts(decision.actions, result.key)

    def check_result(
        self, result: WorkloadResult, decision: Decision, live: _Live | None, *, was_running: bool
    ) -> None:
        if live is None:
            return
        if result.state is ExecutorPseudoState.COMPLETED:
            live.completed_by_adoption.add(result.pod_name)
            if isinstance(result, CallbackResult):
                state = self.db.state(result.key)
                if not _is_terminal(state):
                    self.anomaly(
                        "completed_callback_not_reported",
                        f"callback pod {result.pod_name} Succeeded while no scheduler watched; "
                        f"adoption gave a COMPLETED result, the decision only cleans up "
                        f"({decision.reason}), so the callback stays "
                        f"{state.value if state else 'without state'} and never gets SUCCESS",
                        live,
                    )
            return
        ignored = all(isinstance(action, Ignore) for action in decision.actions)
        known = self.db.state(result.key)
        if ignored and was_running and _is_terminal(known) and live.terminal_events > 0:
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

    # --- actions ------------------------------------------------------------------------

    def perform(self, action: Action, result: WorkloadResult | None, live: _Live | None) -> None:
        sched = self.scheduler
        if isinstance(action, EmitEvent):
            self.emit(action)
        elif isinstance(action, DeletePod):
            if not self.cluster.delete(action.namespace, action.pod_name, self.t):
                self.log(
                    "note", f"delete {action.pod_name}: already gone (404)", pod=action.pod_name
                )
        elif isinstance(action, PatchLabels):
            if not self.cluster.patch_labels(
                action.namespace, action.pod_name, action.labels, self.t
            ):
                self.log("note", f"patch {action.pod_name}: not found (404)", pod=action.pod_name)
        elif isinstance(action, RequeueJob):
            delay = self.ticks(action.delay)
            if action.delay is not None:
                sched.paused_until = max(sched.paused_until, self.t + max(delay, 1))
            sched.queue.append(_QueueEntry(action.job, self.t + max(delay, 1)))
            target = self.by_key.get(action.job.key)
            if target is not None:
                target.note(f"requeued: {action.reason}")
        elif isinstance(action, FreeSlot):
            self.free(action, result, live)
        # LookUpState is handled by decide_and_perform; Ignore needs nothing.

    def free(self, action: FreeSlot, result: WorkloadResult | None, live: _Live | None) -> None:
        sched = self.scheduler
        sched.running.pop(action.key, None)
        if result is None or result.state is not ExecutorPseudoState.ADOPTED:
            return
        pod = self.cluster.get(result.namespace, result.pod_name)
        labels = pod["metadata"]["labels"] if pod is not None else {}
        if pod is None or labels.get(AIRFLOW_WORKER_LABEL) == sched.label:
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
                f"{_describe_key(action.key)}, which no other scheduler owns",
                live,
            )

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
        if _is_terminal(action.state):
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
        row = self.db.callbacks.get(key.id)
        if row is None or not isinstance(state, CallbackState):
            self.anomaly("bad_event", f"callback event {state} without a callback row", live)
            return
        # Airflow 3.3's scheduler sets running/success/failed unconditionally.
        if row.state in CALLBACK_TERMINAL_STATES and state is not row.state:
            self.anomaly(
                "overwritten_final_state",
                f"{_describe_key(key)} was {row.state.value}; the event sets {state.value}",
                live,
            )
        if state in {CallbackState.RUNNING, CallbackState.SUCCESS, CallbackState.FAILED}:
            row.state = state

    def apply_task_event(self, key: TaskInstanceKey, state: WorkloadState, live: _Live) -> None:
        row = self.db.tasks.get(key.primary)
        if row is None or not isinstance(state, TaskInstanceState):
            self.anomaly("bad_event", f"task event {state} without a task instance row", live)
            return
        if row.try_number != key.try_number:
            live.note(f"event for stale try {key.try_number} ignored by the scheduler")
            return
        if not _is_terminal(state):
            return  # the scheduler only logs running/queued events
        if row.state in {TaskInstanceState.QUEUED, TaskInstanceState.RUNNING, None}:
            row.state = state  # "executor reports finished although the task says running"
        elif row.state is not state:
            self.anomaly(
                "contradicting_event",
                f"the executor reports {state.value} for {_describe_key(key)}, "
                f"which the task process set to {row.state.value}",
                live,
            )

    # --- the end ------------------------------------------------------------------------

    def final_checks(self) -> None:
        if self.sched is not None:
            for key in self.sched.running:
                live = self.by_key.get(key)
                self.anomaly(
                    "left_running", f"{_describe_key(key)} is still in running at the end", live
                )
            for key, attempt in self.sched.attempts.records.items():
                live = self.by_key.get(key)
                if key in self.sched.running or live is None:
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
            if not _is_terminal(state):
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
            f"{name} ({pod['status'].get('phase')}"
            + (", done" if pod["metadata"]["labels"].get(POD_EXECUTOR_DONE_LABEL) else "")
            + f", airflow-worker={pod['metadata']['labels'].get(AIRFLOW_WORKER_LABEL)})"
            for (_, name), pod in sorted(self.cluster.pods.items())
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


def _compact(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def _shorten(text: str, key: WorkloadKey) -> str:
    """A decision's reason with the key's long repr replaced by its short description."""
    return text.replace(repr(key), _describe_key(key))


def _action_texts(actions: Iterable[Action], key: WorkloadKey) -> tuple[str, ...]:
    # Decision.reason describes each action; a one-action decision describes one.
    return tuple(_shorten(describe_action(action), key) for action in actions)


# --- public entry points ----------------------------------------------------------------


def simulate(scenario: Scenario, *, record_timeline: bool = True) -> SimulationResult:
    """Run a scenario; the same scenario always gives the same result."""
    return _Simulation(scenario, record_timeline=record_timeline).run()


_RUN_ID = "scheduled__2026-01-01T00:00:00+00:00"
_SUCCESS = DEFAULT_POD
_RUN, _SUCCEED = _SUCCESS.steps
_IMAGE_MISSING = PodScript(
    (Step(phase="Pending", container=ContainerSpec("waiting", "ErrImagePull", "not found")),)
)
_OOM = ContainerSpec("terminated", "OOMKilled", None, 137)

_GENERATED_TASKS: dict[str, tuple[tuple[PodScript, ...], TaskInstanceState | None, int]] = {
    # behaviour: (pod scripts, expected end state, weight). A launch retry's bookkeeping
    # lives in the scheduler's memory, so a restart between the two launches fails the
    # workload instead: the retry behaviours expect nothing in particular.
    "success": ((_SUCCESS,), TaskInstanceState.SUCCESS, 46),
    "long": ((PodScript((_RUN, Step(after=9, phase="Succeeded"))),), TaskInstanceState.SUCCESS, 8),
    "duplicate": (
        (
            PodScript(
                (
                    Step(phase="Running", duplicate=True),
                    dataclasses.replace(_SUCCEED, duplicate=True),
                )
            ),
        ),
        TaskInstanceState.SUCCESS,
        6,
    ),
    "late": (
        (PodScript((Step(phase="Running", late=3), Step(after=1, phase="Succeeded"))),),
        TaskInstanceState.SUCCESS,
        5,
    ),
    "oom": (
        (PodScript((_RUN, Step(after=2, phase="Failed", container=_OOM))),),
        TaskInstanceState.FAILED,
        5,
    ),
    "error": ((PodScript((_RUN, Step(phase="Failed"))),), TaskInstanceState.FAILED, 4),
    "image": ((_IMAGE_MISSING,), TaskInstanceState.FAILED, 4),
    "evicted": ((PodScript((_RUN, Step(after=2, evicted=True))),), TaskInstanceState.FAILED, 4),
    "rejected_then_success": (
        (PodScript((Step(phase="Failed", reason="OutOfcpu", container=None),)), _SUCCESS),
        None,
        5,
    ),
    "throttled": (
        (PodScript(_SUCCESS.steps, (CreateError(429, "Too many requests", 1),)),),
        TaskInstanceState.SUCCESS,
        4,
    ),
    "unavailable": (
        (PodScript(_SUCCESS.steps, (CreateError(503, "etcdserver: leader changed"),)),),
        TaskInstanceState.SUCCESS,
        3,
    ),
    "invalid": (
        (PodScript(_SUCCESS.steps, (CreateError(422, "Pod is invalid"),)),),
        TaskInstanceState.FAILED,
        1,
    ),
    "deleted": ((PodScript((_RUN, Step(after=2, deleted=True))),), TaskInstanceState.FAILED, 5),
}
_GENERATED_CALLBACKS: dict[str, tuple[tuple[PodScript, ...], CallbackState | None, int]] = {
    "success": ((_SUCCESS,), CallbackState.SUCCESS, 55),
    "long": ((PodScript((_RUN, Step(after=9, phase="Succeeded"))),), CallbackState.SUCCESS, 15),
    "error": ((PodScript((_RUN, Step(phase="Failed"))),), CallbackState.FAILED, 20),
    "image_then_success": ((_IMAGE_MISSING, _SUCCESS), None, 10),
}
_CALLBACK_SHARE = 0.15


def generate_scenario(
    n_workloads: int, restarts: int, seed: int, *, watch_errors: int = 0
) -> Scenario:
    """A random mix of behaviours (no YAML), each workload with its expected end state.

    About 15% callbacks; tasks succeed, run long, see duplicate or late events, are
    OOM-killed, fail, miss their image, are evicted, rejected before they start, throttled
    or refused at creation, or deleted. Restarts fall while workloads arrive, each with a
    downtime of 0 to 2 ticks; ``watch_errors`` 410 errors break the watch stream.
    """
    if n_workloads < 1 or restarts < 0 or watch_errors < 0:
        raise ValueError("need at least one workload and a non-negative number of restarts")
    rng = random.Random(seed)  # noqa: S311 - a reproducible mix, not a secret
    horizon = max(10, n_workloads // 40)
    task_names = list(_GENERATED_TASKS)
    task_weights = [_GENERATED_TASKS[name][2] for name in task_names]
    callback_names = list(_GENERATED_CALLBACKS)
    callback_weights = [_GENERATED_CALLBACKS[name][2] for name in callback_names]
    workloads = []
    for index in range(n_workloads):
        at = rng.randrange(horizon)
        dag_id = f"dag_{index % 50}"
        key: WorkloadKey
        expect: WorkloadState | None
        if rng.random() < _CALLBACK_SHARE:
            behaviour = rng.choices(callback_names, callback_weights)[0]
            pods, expect, _ = _GENERATED_CALLBACKS[behaviour]
            key = CallbackKey(str(uuid.UUID(int=rng.getrandbits(128), version=4)))
        else:
            behaviour = rng.choices(task_names, task_weights)[0]
            pods, expect, _ = _GENERATED_TASKS[behaviour]
            key = TaskInstanceKey(dag_id, f"task_{index}", _RUN_ID)
        workloads.append(
            WorkloadSpec(f"w{index:05d}-{behaviour}", key, at, pods, dag_id, _RUN_ID, expect)
        )
    ticks = sorted(rng.sample(range(2, horizon + 8), k=min(restarts, horizon + 6)))
    # A restart that fell while the scheduler was still down would be lost: space them.
    specs: list[RestartSpec] = []
    for tick in ticks:
        at = max(tick, specs[-1].at + specs[-1].down + 1) if specs else tick
        specs.append(RestartSpec(at, rng.choice((0, 0, 1, 2))))
    restart_specs = tuple(specs)
    config = SimConfig(
        task_publish_max_retries=3,
        pod_launch_failure_retries=1,
        callback_launch_failure_retries=1,
        max_ticks=horizon + 200 + 3 * restarts,
    )
    return Scenario(
        name=f"generated-{n_workloads}-{restarts}-{seed}",
        workloads=tuple(workloads),
        seed=seed,
        config=config,
        restarts=restart_specs,
        watch_errors=tuple(
            WatchErrorSpec(tick)
            for tick in sorted(rng.sample(range(1, horizon + 1), k=min(watch_errors, horizon)))
        ),
    )


def simulate_generated(
    n_workloads: int, restarts: int, seed: int, *, watch_errors: int = 0
) -> SimulationResult:
    """Run :func:`generate_scenario` without a timeline (for benchmarks and soak tests).

    The result's ``end_states`` counts workloads per end state and ``events_processed``
    the watch events resolved; no wall time is included, so it is deterministic.
    """
    scenario = generate_scenario(n_workloads, restarts, seed, watch_errors=watch_errors)
    return simulate(scenario, record_timeline=False)


def run_simulation_cli(path: str | None, *, out: TextIO, err: TextIO, fmt: str = "text") -> int:
    """``k8s-workloads simulate [PATH] [-o text|json]``: 0 ok, 1 anomalies, 2 bad scenario.

    Without a path the bundled default scenario runs.
    """
    if fmt not in {"text", "json"}:
        err.write(f"k8s-workloads simulate: unknown output format {fmt!r} (text or json)\n")
        return 2
    try:
        scenario = load_scenario(path) if path is not None else load_bundled_scenario()
    except ScenarioError as error:
        err.write(f"k8s-workloads simulate: {error}\n")
        return 2
    result = simulate(scenario)
    if fmt == "json":
        out.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        out.write(result.format_text())
    return 1 if result.anomalies else 0
