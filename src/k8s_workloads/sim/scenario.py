"""Simulator scenarios: the schema, the YAML reader, and generated scenarios.


Every mapping is checked strictly: an unknown key, a wrong type or an unknown value is an
error naming the file, line and field, e.g.
``scenario.yaml:14: workloads[2].pod.steps[1].phase: unknown phase 'Runing' (expected one
of Pending, Running, Succeeded, Failed, Unknown)``. Times are ticks (integers)::

    name: nightly-etl                 # default: the file name
    seed: 7                           # pod-name randomness (default 0)
    config:                           # all optional; the executor's options default to
      airflow_version: "3.3.2"        #   what DecisionConfig, ResolverConfig and
      namespace: airflow              #   ExecutorConfig default to (see SimConfig)
      delete_worker_pods: true
      delete_worker_pods_on_failure: false
      mark_kept_failed_pods_done: true
      pod_launch_failure_retries: 1   # -1 unlimited
      callback_launch_failure_retries: 0
      task_publish_max_retries: 3     # pod-creation retries, -1 unlimited
      pending_policy: false           # true, or {image_pull_grace: 60, pending_timeout: 600, ...}
      report_callback_running: true
      tick_seconds: 1                 # seconds per tick (Retry-After, grace periods)
      max_ticks: 1000                 # give up (and report) after this many ticks
      reset_orphaned_callbacks: true  # see below
      creation_batch_size: 1000       # pods the executor creates per pass (the simulator's
                                      #   default: 1000, ExecutorConfig's is 1)
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
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

import attrs
import yaml

from k8s_workloads import config_checks as _checks
from k8s_workloads.compat import InvalidVersion, release_tuple, supports_callbacks
from k8s_workloads.config import DecisionConfig
from k8s_workloads.display import shown
from k8s_workloads.keys import CallbackKey, InvalidKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.limits import MAX_SCENARIO_BYTES, MAX_SCENARIO_ENTRIES
from k8s_workloads.sim import spec as _spec
from k8s_workloads.sim._reader import BOOL, NULL, Node, Reader
from k8s_workloads.sim.config import SimConfig
from k8s_workloads.sim.generate import generate_scenario
from k8s_workloads.sim.spec import *  # noqa: F403 - the old path of the scenario's types
from k8s_workloads.states import CallbackState, TaskInstanceState, WorkloadState
from k8s_workloads.watch.failures import PendingPolicy
from k8s_workloads.watch.resolution import ResolverConfig
from k8s_workloads.yaml_input import YAMLLimitExceeded, compose_bounded

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [  # noqa: PLE0604 - the scenario's types, still importable from here
    *_spec.__all__,
    "MAX_SCENARIO_BYTES",
    "MAX_SCENARIO_ENTRIES",
    "SimConfig",
    "bundled_scenarios",
    "generate_scenario",
    "load_bundled_scenario",
    "load_scenario",
    "parse_scenario",
]

_TASK_WRITES: dict[str, TaskInstanceState | None] = {
    "running": TaskInstanceState.RUNNING,
    "success": TaskInstanceState.SUCCESS,
    "failed": TaskInstanceState.FAILED,
    "up_for_retry": TaskInstanceState.UP_FOR_RETRY,
    "skipped": TaskInstanceState.SKIPPED,
    "none": None,
}


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
_POD_KEYS = _field_names(_spec.PodScript)
_STEP_KEYS = _field_names(_spec.Step)
_CONTAINER_KEYS = ("waiting", "terminated", "running", "message", "exit_code")
_CREATE_ERROR_KEYS = _field_names(_spec.CreateError)


def _parse_pending(reader: Reader, node: Node, field: str) -> PendingPolicy | None:
    if isinstance(node, yaml.ScalarNode) and node.tag == BOOL:
        return PendingPolicy() if reader.boolean(node, field) else None
    if not isinstance(node, yaml.MappingNode):
        reader.fail(node, field, f"expected true, false or a mapping, got {reader.describe(node)}")
    values: dict[str, float | None] = {}
    for name, value in reader.mapping(node, field, _PENDING_KEYS).items():
        is_null = isinstance(value, yaml.ScalarNode) and value.tag == NULL
        values[name] = None if is_null else reader.number(value, f"{field}.{name}")
    return PendingPolicy(**values)


def _parse_config(reader: Reader, node: Node) -> SimConfig:
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


def _strings(reader: Reader, node: Node, field: str) -> frozenset[str]:
    return frozenset(
        reader.string(item, f"{field}[{index}]")
        for index, item in enumerate(reader.sequence(node, field))
    )


def _parse_decisions(reader: Reader, node: Node) -> tuple[tuple[str, Any], ...]:
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
        elif isinstance(default, tuple):  # (first, most) seconds
            items = reader.sequence(value, field)
            pair = tuple(
                reader.number(item, f"{field}[{index}]", positive=True)
                for index, item in enumerate(items)
            )
            if len(pair) != len(default) or pair[0] > pair[1]:
                reader.fail(value, field, "expected [first, most] seconds, first <= most")
            options.append((name, pair))
        else:
            options.append((name, _strings(reader, value, field)))
    return tuple(options)


def _parse_resolver(reader: Reader, node: Node) -> tuple[tuple[str, Any], ...]:
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


def _parse_container(reader: Reader, node: Node, field: str) -> _spec.ContainerSpec | None:
    if isinstance(node, yaml.ScalarNode) and node.tag == NULL:
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
        return _spec.ContainerSpec("running", message=message)
    reason = reader.string(found[state], f"{field}.{state}")
    if state == "waiting":
        return _spec.ContainerSpec("waiting", reason, message)
    exit_code = (
        reader.integer(found["exit_code"], f"{field}.exit_code", minimum=0, maximum=255)
        if "exit_code" in found
        else (0 if reason == "Completed" else 1)
    )
    return _spec.ContainerSpec("terminated", reason, message, exit_code)


def _parse_step(reader: Reader, node: Node, field: str, kind: str) -> _spec.Step:
    found = reader.mapping(node, field, _STEP_KEYS)
    values: dict[str, Any] = {}
    for name, value in found.items():
        where = f"{field}.{name}"
        if name in {"after", "late"}:
            values[name] = reader.integer(value, where, minimum=0)
        elif name == "phase":
            values[name] = reader.choice(value, where, _spec.PHASES, "phase")
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
    step = _spec.Step(**values)
    if step.evicted and step.phase not in {None, "Failed"}:
        reader.fail(found["phase"], f"{field}.phase", "an evicted pod is Failed")
    if step.evicted and step.deleted:
        reader.fail(found["deleted"], f"{field}.deleted", "a step is evicted or deleted, not both")
    return step


def _parse_create_error(reader: Reader, node: Node, field: str) -> _spec.CreateError:
    found = reader.mapping(node, field, _CREATE_ERROR_KEYS, required=("status",))
    status_node = found["status"]
    status = None
    if not (isinstance(status_node, yaml.ScalarNode) and status_node.tag == NULL):
        status = reader.integer(status_node, f"{field}.status", minimum=400, maximum=599)
    message = reader.string(found["message"], f"{field}.message") if "message" in found else ""
    retry_after = (
        reader.integer(found["retry_after"], f"{field}.retry_after", minimum=0)
        if "retry_after" in found
        else None
    )
    return _spec.CreateError(status, message, retry_after)


def _parse_pod(reader: Reader, node: Node, field: str, kind: str) -> _spec.PodScript:
    found = reader.mapping(node, field, _POD_KEYS)
    steps: tuple[_spec.Step, ...] = _spec.DEFAULT_POD.steps
    if "steps" in found:
        step_nodes = reader.sequence(found["steps"], f"{field}.steps")
        reader.spend(found["steps"], f"{field}.steps", len(step_nodes))
        steps = tuple(
            _parse_step(reader, step, f"{field}.steps[{index}]", kind)
            for index, step in enumerate(step_nodes)
        )
    errors: tuple[_spec.CreateError, ...] = ()
    if "create_errors" in found:
        error_nodes = reader.sequence(found["create_errors"], f"{field}.create_errors")
        reader.spend(found["create_errors"], f"{field}.create_errors", len(error_nodes))
        errors = tuple(
            _parse_create_error(reader, error, f"{field}.create_errors[{index}]")
            for index, error in enumerate(error_nodes)
        )
    return _spec.PodScript(steps, errors)


_TASK_ONLY = ("task_id", "map_index", "try_number")


def _parse_key(
    reader: Reader, node: Node, found: Mapping[str, Node], field: str, kind: str
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
            else _spec.DEFAULT_RUN_ID,
            reader.integer(found["try_number"], f"{field}.try_number", minimum=1)
            if "try_number" in found
            else 1,
            reader.integer(found["map_index"], f"{field}.map_index", minimum=-1)
            if "map_index" in found
            else -1,
        )
    except InvalidKey as error:  # a field the key rejects (the reader checked the types)
        reader.fail(node, field, str(error))


def _parse_workload(
    reader: Reader, node: Node, field: str, config: SimConfig
) -> _spec.WorkloadSpec:
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
    pods: tuple[_spec.PodScript, ...] = (_spec.DEFAULT_POD,)
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
    return _spec.WorkloadSpec(
        id=reader.string(found["id"], f"{field}.id") if "id" in found else _spec.default_id(key),
        key=key,
        at=reader.integer(found["at"], f"{field}.at", minimum=0) if "at" in found else 0,
        pods=pods,
        dag_id=reader.string(found["dag_id"], f"{field}.dag_id") if "dag_id" in found else None,
        run_id=(
            reader.string(found["run_id"], f"{field}.run_id")
            if "run_id" in found
            else (_spec.DEFAULT_RUN_ID if kind == "task" else None)
        ),
        expect=expect,
        line=node.start_mark.line + 1,
    )


def _parse_restarts(reader: Reader, node: Node) -> tuple[_spec.RestartSpec, ...]:
    restarts = []
    for field, found in reader.mappings(node, "restarts", ("at", "down"), required=("at",)):
        at = reader.integer(found["at"], f"{field}.at", minimum=0)
        down = reader.integer(found["down"], f"{field}.down", minimum=0) if "down" in found else 0
        restarts.append(_spec.RestartSpec(at, down))
    return tuple(restarts)


def _parse_watch_errors(reader: Reader, node: Node) -> tuple[_spec.WatchErrorSpec, ...]:
    errors = []
    keys = ("at", "code", "message")
    for field, found in reader.mappings(node, "watch_errors", keys, required=("at",)):
        at = reader.integer(found["at"], f"{field}.at", minimum=0)
        code = (
            reader.integer(found["code"], f"{field}.code", minimum=400, maximum=599)
            if "code" in found
            else 410
        )
        message = (
            reader.string(found["message"], f"{field}.message") if "message" in found else None
        )
        errors.append(_spec.WatchErrorSpec(at, code, message))
    return tuple(errors)


def _check_unique(reader: Reader, nodes: list[Node], workloads: list[_spec.WorkloadSpec]) -> None:
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
) -> _spec.Scenario:
    """Read a scenario from YAML text; :class:`_spec.ScenarioError` names the line and field.

    :class:`_spec.ScenarioTooLarge` (a :class:`_spec.ScenarioError`) refuses YAML nested more than
    100 deep and a scenario of more than ``max_entries`` entries
    (:data:`MAX_SCENARIO_ENTRIES`): workloads, pod scripts, steps, creation errors,
    restarts and watch errors, counted with YAML aliases written out.
    """
    reader = Reader(source, max_entries)
    try:
        root = compose_bounded(text, max_nodes=None)
    except YAMLLimitExceeded as error:
        raise _spec.ScenarioTooLarge(source, None, "", str(error), limit=error.limit) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = ", ".join(part for part in (error.context, error.problem) if part)
        line = mark.line + 1 if mark is not None else None
        raise _spec.ScenarioError(source, line, "", f"not valid YAML: {problem or error}") from None
    except yaml.YAMLError as error:
        raise _spec.ScenarioError(source, None, "", f"not valid YAML: {error}") from None
    if root is None:
        raise _spec.ScenarioError(source, 1, "", "the file is empty: expected a scenario mapping")
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
    return _spec.Scenario(
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
) -> _spec.Scenario:
    """Read a scenario file; :class:`_spec.ScenarioError` for a missing, unreadable or bad file.

    A file over ``max_bytes`` (:data:`MAX_SCENARIO_BYTES`) is :class:`_spec.ScenarioTooLarge`,
    found reading at most one byte more; ``max_entries`` is :func:`parse_scenario`'s.
    """
    try:
        with open(path, "rb") as handle:  # noqa: PTH123
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise _spec.ScenarioError(
            path, None, "", f"cannot read the file: {error.strerror}"
        ) from None
    if len(data) > max_bytes:
        raise _spec.ScenarioTooLarge(
            path, None, "", f"the file is over {max_bytes:,} bytes", limit="max_bytes"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _spec.ScenarioError(path, None, "", "not UTF-8 text") from None
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


def load_bundled_scenario(name: str = "scenario.yaml") -> _spec.Scenario:
    """A bundled scenario by its name in :func:`bundled_scenarios`."""
    text = (
        resources.files("k8s_workloads").joinpath("examples", *name.split("/")).read_text("utf-8")
    )
    return parse_scenario(text, name.rsplit("/", 1)[-1])
