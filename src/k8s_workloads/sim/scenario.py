"""Simulator scenarios: the schema, the YAML reader, and generated scenarios.


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
      creation_batch_size: 1000       # pods the executor creates per pass [1000]
      decisions:                      # any DecisionConfig option, by name, e.g.
        max_handling_retries: 5       #   (the flat keys above are the common ones)
        pod_launch_failure_excluded_container_reasons: [Error]
      resolver:                       # any ResolverConfig option but airflow_version:
        fatal_pending_reasons: [ErrImagePull, InvalidImageName]
        oom_success_is_failure: true  #   pending (as pending_policy), report_callback_running
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
import difflib
import math
import random
import re
import uuid
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeAlias

import attrs
import yaml

from k8s_workloads import _config as _checks
from k8s_workloads._display import shown
from k8s_workloads._limits import MAX_SCENARIO_BYTES, MAX_SCENARIO_ENTRIES
from k8s_workloads._yaml_input import YAMLLimitExceeded, compose_bounded
from k8s_workloads.compat import InvalidVersion, release_tuple, supports_callbacks
from k8s_workloads.config import DecisionConfig
from k8s_workloads.keys import CallbackKey, InvalidKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    TASK_FINISHED_STATES,
    CallbackState,
    TaskInstanceState,
    WorkloadState,
)
from k8s_workloads.watch.failures import PendingPolicy
from k8s_workloads.watch.resolution import ResolverConfig

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "DEFAULT_POD",
    "MAX_SCENARIO_BYTES",
    "MAX_SCENARIO_ENTRIES",
    "PHASES",
    "ContainerSpec",
    "CreateError",
    "PodScript",
    "RestartSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioTooLarge",
    "SimConfig",
    "Step",
    "WatchErrorSpec",
    "WorkloadSpec",
    "bundled_scenarios",
    "default_id",
    "generate_scenario",
    "is_terminal",
    "load_bundled_scenario",
    "load_scenario",
    "parse_scenario",
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
_DEFAULT_RUN_ID = "manual__2026-01-01T00:00:00+00:00"


def is_terminal(state: WorkloadState | None) -> bool:
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


_SIM_CONFIG_CHECKS: tuple[tuple[str, _checks.Validator], ...] = (
    ("airflow_version", _checks.kind(str)),
    ("namespace", _checks.kind(str)),
    ("kube_image", _checks.optional_text),
    ("delete_worker_pods", _checks.boolean),
    ("delete_worker_pods_on_failure", _checks.boolean),
    ("mark_kept_failed_pods_done", _checks.boolean),
    ("pod_launch_failure_retries", _checks.retries),
    ("callback_launch_failure_retries", _checks.retries),
    ("task_publish_max_retries", _checks.retries),
    ("pending_policy", _checks.kind(PendingPolicy, optional=True)),
    ("report_callback_running", _checks.boolean),
    ("tick_seconds", _checks.seconds),
    ("max_ticks", _checks.positive),
    ("reset_orphaned_callbacks", _checks.boolean),
    ("creation_batch_size", _checks.positive),
    ("decisions", _checks.kind(tuple)),
    ("resolver", _checks.kind(tuple)),
)


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
    creation_batch_size: int = 1_000
    """Pods created per executor pass (the provider's ``worker_pods_creation_batch_size``)."""
    decisions: tuple[tuple[str, Any], ...] = ()
    """Any other :class:`DecisionConfig` option (``config.decisions`` in YAML), by name."""
    resolver: tuple[tuple[str, Any], ...] = ()
    """Any other :class:`ResolverConfig` option (``config.resolver`` in YAML), by name."""

    def __post_init__(self) -> None:
        # Checked when made, as every config: an InvalidConfig naming the field.
        for name, check in _SIM_CONFIG_CHECKS:
            _checks.check(self, name, check, getattr(self, name))
        _checks.version("SimConfig", "airflow_version", self.airflow_version)
        self.decision_config()  # the options under config.decisions and config.resolver,
        self.resolver_config()  # checked by the classes they go to

    def decision_config(self) -> DecisionConfig:
        config = DecisionConfig(
            delete_worker_pods=self.delete_worker_pods,
            delete_worker_pods_on_failure=self.delete_worker_pods_on_failure,
            mark_kept_failed_pods_done=self.mark_kept_failed_pods_done,
            pod_launch_failure_retries=self.pod_launch_failure_retries,
            callback_launch_failure_retries=self.callback_launch_failure_retries,
            task_publish_max_retries=self.task_publish_max_retries,
        )
        return attrs.evolve(config, **dict(self.decisions))

    def resolver_config(self) -> ResolverConfig:
        config = ResolverConfig(
            airflow_version=self.airflow_version,
            pending=self.pending_policy,
            report_callback_running=self.report_callback_running,
        )
        return attrs.evolve(config, **dict(self.resolver))

    def image(self) -> str:
        return self.kube_image or f"apache/airflow:{self.airflow_version}"

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, PendingPolicy):
                value = attrs.asdict(value)
            elif field.name in {"decisions", "resolver"}:
                value = {
                    name: sorted(option) if isinstance(option, frozenset) else option
                    for name, option in value
                }
            shown[field.name] = value
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


class ScenarioTooLarge(ScenarioError):
    """A scenario past a limit: its file's size, its YAML nesting, or what it expands to."""

    def __init__(
        self, source: str, line: int | None, field: str, problem: str, *, limit: str
    ) -> None:
        self.limit = limit
        """The limit exceeded: ``max_bytes``, ``max_depth`` or ``max_entries``."""
        super().__init__(source, line, field, problem)


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
    return f"; did you mean {shown(close[0])}?" if close else ""


class _Reader:
    """Typed access to composed YAML nodes; every error names the line and field."""

    def __init__(self, source: str, max_entries: int = MAX_SCENARIO_ENTRIES) -> None:
        self.source = source
        self._constructor = yaml.constructor.SafeConstructor()
        self.max_entries = max_entries
        self.entries = 0
        """Entries read so far: workloads, pod scripts, steps, creation errors, restarts..."""

    def spend(self, node: _Node, field: str, count: int) -> None:
        """Count ``count`` more entries (those of the list at ``field``) against the limit."""
        self.entries += count
        if self.entries > self.max_entries:
            raise ScenarioTooLarge(
                self.source,
                node.start_mark.line + 1,
                field,
                f"the scenario expands to more than {self.max_entries:,} entries (workloads, "
                "pod scripts, steps, creation errors, restarts and watch errors, YAML aliases "
                "written out): raise max_entries (simulate --max-entries) if it is meant",
                limit="max_entries",
            )

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
                    f"unknown key {shown(name)} (expected one of {expected})"
                    + _suggest(name, allowed),
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
                f"unknown {what} {shown(value)} (expected one of {', '.join(options)})"
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
        elif name in {"max_ticks", "creation_batch_size"}:
            values[name] = reader.integer(value, field, minimum=1, maximum=10_000_000)
        elif name == "decisions":
            values[name] = _parse_decisions(reader, value)
        elif name == "resolver":
            values[name] = _parse_resolver(reader, value)
    try:
        return SimConfig(**values)
    except _checks.InvalidConfig as error:  # a combination the checks above let through
        reader.fail(node, f"config.{error.field}", str(error))


# Every DecisionConfig option can be set under config.decisions; the flat config keys
# above are the common ones.
_DECISION_KEYS = tuple(attrs.fields_dict(DecisionConfig))
_RESOLVER_KEYS = tuple(
    name for name in attrs.fields_dict(ResolverConfig) if name != "airflow_version"
)


def _strings(reader: _Reader, node: _Node, field: str) -> frozenset[str]:
    return frozenset(
        reader.string(item, f"{field}[{index}]")
        for index, item in enumerate(reader.sequence(node, field))
    )


def _parse_decisions(reader: _Reader, node: _Node) -> tuple[tuple[str, Any], ...]:
    options: list[tuple[str, Any]] = []
    fields = attrs.fields_dict(DecisionConfig)
    for name, value in reader.mapping(node, "config.decisions", _DECISION_KEYS).items():
        field = f"config.decisions.{name}"
        default = fields[name].default
        if isinstance(default, bool):
            options.append((name, reader.boolean(value, field)))
        elif isinstance(default, int):
            minimum = 0 if name == "max_handling_retries" else -1
            options.append((name, reader.integer(value, field, minimum=minimum)))
        elif isinstance(default, float):
            options.append((name, reader.number(value, field, positive=True)))
        else:
            options.append((name, _strings(reader, value, field)))
    return tuple(options)


def _parse_resolver(reader: _Reader, node: _Node) -> tuple[tuple[str, Any], ...]:
    options: list[tuple[str, Any]] = []
    for name, value in reader.mapping(node, "config.resolver", _RESOLVER_KEYS).items():
        field = f"config.resolver.{name}"
        if name == "fatal_pending_reasons":
            options.append((name, _strings(reader, value, field)))
        elif name == "pending":
            options.append((name, _parse_pending(reader, value, field)))
        else:
            options.append((name, reader.boolean(value, field)))
    return tuple(options)


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
        reader.spend(found["steps"], f"{field}.steps", len(step_nodes))
        steps = tuple(
            _parse_step(reader, step, f"{field}.steps[{index}]", kind)
            for index, step in enumerate(step_nodes)
        )
    errors: tuple[CreateError, ...] = ()
    if "create_errors" in found:
        error_nodes = reader.sequence(found["create_errors"], f"{field}.create_errors")
        reader.spend(found["create_errors"], f"{field}.create_errors", len(error_nodes))
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


def default_id(key: WorkloadKey) -> str:
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
        reader.spend(found["pod"], f"{field}.pod", 1)
        pods = (_parse_pod(reader, found["pod"], f"{field}.pod", kind),)
    elif "pods" in found:
        pod_nodes = reader.sequence(found["pods"], f"{field}.pods")
        if not pod_nodes:
            reader.fail(found["pods"], f"{field}.pods", "needs at least one pod script")
        reader.spend(found["pods"], f"{field}.pods", len(pod_nodes))
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
        id=reader.string(found["id"], f"{field}.id") if "id" in found else default_id(key),
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
    items = reader.sequence(node, "restarts")
    reader.spend(node, "restarts", len(items))
    for index, item in enumerate(items):
        field = f"restarts[{index}]"
        found = reader.mapping(item, field, ("at", "down"), required=("at",))
        at = reader.integer(found["at"], f"{field}.at", minimum=0)
        down = reader.integer(found["down"], f"{field}.down", minimum=0) if "down" in found else 0
        restarts.append(RestartSpec(at, down))
    return tuple(restarts)


def _parse_watch_errors(reader: _Reader, node: _Node) -> tuple[WatchErrorSpec, ...]:
    errors = []
    items = reader.sequence(node, "watch_errors")
    reader.spend(node, "watch_errors", len(items))
    for index, item in enumerate(items):
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
            reader.fail(
                node, f"{field}.id", f"id {shown(spec.id)} is used by workloads[{ids[spec.id]}]"
            )
        primary: WorkloadKey = (
            spec.key.with_try_number(1) if isinstance(spec.key, TaskInstanceKey) else spec.key
        )
        if primary in keys:
            reader.fail(node, field, f"the same workload as workloads[{keys[primary]}]")
        ids[spec.id] = index
        keys[primary] = index


def parse_scenario(
    text: str, source: str = "scenario.yaml", *, max_entries: int = MAX_SCENARIO_ENTRIES
) -> Scenario:
    """Read a scenario from YAML text; :class:`ScenarioError` names the line and field.

    :class:`ScenarioTooLarge` (a :class:`ScenarioError`) refuses YAML nested more than
    100 deep and a scenario of more than ``max_entries`` entries
    (:data:`MAX_SCENARIO_ENTRIES`): workloads, pod scripts, steps, creation errors,
    restarts and watch errors, counted with YAML aliases written out.
    """
    reader = _Reader(source, max_entries)
    try:
        root = compose_bounded(text, max_nodes=None)
    except YAMLLimitExceeded as error:
        raise ScenarioTooLarge(source, None, "", str(error), limit=error.limit) from None
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
    reader.spend(found["workloads"], "workloads", len(workload_nodes))
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


def load_scenario(
    path: str, *, max_bytes: int = MAX_SCENARIO_BYTES, max_entries: int = MAX_SCENARIO_ENTRIES
) -> Scenario:
    """Read a scenario file; :class:`ScenarioError` for a missing, unreadable or bad file.

    A file over ``max_bytes`` (:data:`MAX_SCENARIO_BYTES`) is :class:`ScenarioTooLarge`,
    found reading at most one byte more; ``max_entries`` is :func:`parse_scenario`'s.
    """
    try:
        with open(path, "rb") as handle:  # noqa: PTH123
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise ScenarioError(path, None, "", f"cannot read the file: {error.strerror}") from None
    if len(data) > max_bytes:
        raise ScenarioTooLarge(
            path, None, "", f"the file is over {max_bytes:,} bytes", limit="max_bytes"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(path, None, "", "not UTF-8 text") from None
    return parse_scenario(text, path, max_entries=max_entries)


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


# --- generated scenarios ----------------------------------------------------------------

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
