"""What a scenario is: its workloads, the pod scripts the kubelet plays, the restarts and
watch errors, and the errors a scenario file can have.

Value types only: :mod:`k8s_workloads.sim.scenario` reads them from YAML,
:mod:`k8s_workloads.sim.generate` makes them at random, :mod:`k8s_workloads.sim.world`
plays them.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, TypeAlias

from k8s_workloads.keys import CallbackKey, GenericKey, WorkloadKey
from k8s_workloads.sim.config import SimConfig
from k8s_workloads.states import (
    CALLBACK_TERMINAL_STATES,
    TASK_FINISHED_STATES,
    CallbackState,
    TaskInstanceState,
    WorkloadState,
)

__all__ = [
    "DEFAULT_POD",
    "DEFAULT_RUN_ID",
    "PHASES",
    "ContainerSpec",
    "CreateError",
    "PodScript",
    "RestartSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioTooLarge",
    "Step",
    "WatchErrorSpec",
    "WorkloadSpec",
    "default_id",
    "is_terminal",
]

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")

_TASK_TERMINAL: frozenset[TaskInstanceState] = TASK_FINISHED_STATES | {
    TaskInstanceState.UP_FOR_RETRY,
    TaskInstanceState.UP_FOR_RESCHEDULE,
}
DEFAULT_RUN_ID = "manual__2026-01-01T00:00:00+00:00"
"""The run id of a task workload whose scenario entry has none."""


def is_terminal(state: WorkloadState | None) -> bool:
    if isinstance(state, CallbackState):
        return state in CALLBACK_TERMINAL_STATES
    return state in _TASK_TERMINAL


def default_id(key: WorkloadKey) -> str:
    if isinstance(key, CallbackKey):
        return f"callback-{key.id[:8]}"
    if isinstance(key, GenericKey):
        return key.id
    mapped = f"[{key.map_index}]" if key.map_index >= 0 else ""
    return f"{key.dag_id}.{key.task_id}{mapped}"


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
class Scenario:
    """A whole scenario: configuration, workloads, restarts and watch errors."""

    name: str
    workloads: tuple[WorkloadSpec, ...]
    seed: int = 0
    config: SimConfig = dataclasses.field(default_factory=SimConfig)
    restarts: tuple[RestartSpec, ...] = ()
    watch_errors: tuple[WatchErrorSpec, ...] = ()
    description: str | None = None


# --- the errors of a scenario file -----------------------------------------------------


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
