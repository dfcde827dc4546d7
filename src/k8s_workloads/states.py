"""Workload states, the executor's pseudo-states, and typed job/result records.

The values are Airflow's strings, but the enums are plain :class:`enum.Enum` rather than
``str`` subclasses: in Airflow ``CallbackState.FAILED == TaskInstanceState.FAILED ==
"failed"``, which hides a callback result being handled as a task's. Here a state equals
only itself; convert at the boundary with ``TaskInstanceState(value)`` / ``.value``.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypedDict, TypeVar, overload

import attrs

from k8s_workloads.display import REDACTED
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey, WorkloadKey

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "CALLBACK_ACTIVE_STATES",
    "CALLBACK_TERMINAL_STATES",
    "TASK_ADOPTABLE_STATES",
    "TASK_FINISHED_STATES",
    "TASK_UNFINISHED_STATES",
    "CallbackJob",
    "CallbackResult",
    "CallbackState",
    "ExecutorPseudoState",
    "FailureDetails",
    "GenericJob",
    "GenericResult",
    "GenericState",
    "KubernetesJob",
    "KubernetesResult",
    "TaskInstanceState",
    "TaskJob",
    "TaskResult",
    "WorkloadResult",
    "WorkloadState",
    "result_for",
    "state_class_for_key",
]


class TaskInstanceState(enum.Enum):
    """Airflow's task instance states (``airflow.utils.state.TaskInstanceState``)."""

    REMOVED = "removed"
    SCHEDULED = "scheduled"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    RESTARTING = "restarting"
    FAILED = "failed"
    UP_FOR_RETRY = "up_for_retry"
    UP_FOR_RESCHEDULE = "up_for_reschedule"
    UPSTREAM_FAILED = "upstream_failed"
    SKIPPED = "skipped"
    DEFERRED = "deferred"


class CallbackState(enum.Enum):
    """Airflow 3.3's callback states (values fit the 10-character database column)."""

    SCHEDULED = "scheduled"
    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"


TASK_FINISHED_STATES: frozenset[TaskInstanceState] = frozenset(
    {
        TaskInstanceState.SUCCESS,
        TaskInstanceState.FAILED,
        TaskInstanceState.SKIPPED,
        TaskInstanceState.UPSTREAM_FAILED,
        TaskInstanceState.REMOVED,
    }
)
"""Airflow's ``State.finished``."""

TASK_UNFINISHED_STATES: frozenset[TaskInstanceState | None] = frozenset(
    {
        None,
        TaskInstanceState.SCHEDULED,
        TaskInstanceState.QUEUED,
        TaskInstanceState.RUNNING,
        TaskInstanceState.RESTARTING,
        TaskInstanceState.UP_FOR_RETRY,
        TaskInstanceState.UP_FOR_RESCHEDULE,
        TaskInstanceState.DEFERRED,
    }
)
"""Airflow's ``State.unfinished`` (``None``, "no state yet", included as upstream)."""

TASK_ADOPTABLE_STATES: frozenset[TaskInstanceState] = frozenset(
    {TaskInstanceState.QUEUED, TaskInstanceState.RUNNING, TaskInstanceState.RESTARTING}
)
"""Task states whose pods a restarted scheduler may adopt."""

CALLBACK_ACTIVE_STATES: frozenset[CallbackState] = frozenset(
    {CallbackState.PENDING, CallbackState.QUEUED, CallbackState.RUNNING}
)
"""Callback states from which an executor result may still move the callback."""

CALLBACK_TERMINAL_STATES: frozenset[CallbackState] = frozenset(
    {CallbackState.SUCCESS, CallbackState.FAILED}
)
"""Callback states that are final and must never be overwritten."""


GenericState = CallbackState
"""The states of a :class:`~k8s_workloads.keys.GenericKey` workload: the callback states
under a neutral name (``GenericState.SUCCESS is CallbackState.SUCCESS``). A generic
workload runs once, as a callback does, and is decided by the same rules: the core reports
``RUNNING`` when its pod runs (``ResolverConfig.report_callback_running``), then
``SUCCESS`` or ``FAILED`` once; a :class:`~k8s_workloads.executor.ReadStates` for it is
answered with one of these or None. ``SCHEDULED``, ``PENDING`` and ``QUEUED`` are there
for an executor's own rows; the core never reports them."""


class ExecutorPseudoState(enum.Enum):
    """Results that are not a workload state but tell the executor what happened.

    Airflow passes these through the same ``state`` slot as strings or ``None``; here
    they are their own type so they cannot be mistaken for a workload state.
    """

    ADOPTED = "adopted"
    """The pod is now owned by another scheduler: free the slot, emit nothing."""
    COMPLETED = "completed"
    """An adopted pod that had already Succeeded: only clean it up."""
    VANISHED = "vanished"
    """The pod is gone and its final events were missed (a watch gap): settle the workload."""
    LOOKUP = "lookup"
    """The pod Succeeded; read the workload's real state from Airflow (upstream ``None``)."""


WorkloadState: TypeAlias = TaskInstanceState | CallbackState
"""Either kind of workload state; narrow with ``isinstance``."""


class FailureDetails(TypedDict, total=False):
    """Why a pod failed, as the provider's ``FailureDetails`` (every key optional)."""

    pod_status: str | None
    pod_reason: str | None
    pod_message: str | None
    container_state: str | None
    container_reason: str | None
    container_message: str | None
    exit_code: int | None
    container_type: Literal["init", "main"] | None
    container_name: str | None


K = TypeVar("K", TaskInstanceKey, CallbackKey, GenericKey)
S = TypeVar("S", TaskInstanceState, CallbackState)


def _str_tuple(command: Iterable[str]) -> tuple[str, ...]:
    return tuple(command)


_WORKLOAD_FLAG = "--json-string"


def _workload_flag(arg: str) -> bool:
    # argparse takes any unambiguous prefix of --json-string (not --json-path).
    return len(arg) >= len("--json-s") and _WORKLOAD_FLAG.startswith(arg)


def _command_repr(command: tuple[str, ...]) -> str:
    """The args with the workload JSON (and its Execution API token) left out, so that
    logging a job, a decision or the attempt records never prints a token."""
    shown: list[str] = []
    hide_next = False
    for arg in command:
        flag, equals, _ = arg.partition("=")
        if hide_next:
            shown.append(REDACTED)
        elif equals and _workload_flag(flag):
            shown.append(f"{flag}={REDACTED}")
        else:
            shown.append(arg)
        hide_next = not equals and _workload_flag(arg)
    return repr(tuple(shown))


@attrs.frozen
class KubernetesJob(Generic[K]):
    """A workload waiting for its pod to be created.

    ``command`` is the container ``args``; ``pod_override`` a pod manifest (or None);
    ``pod_template_file`` a template path chosen for this workload (or None);
    ``kube_image`` an image chosen for this workload's queue (or None).
    """

    key: K
    command: tuple[str, ...] = attrs.field(converter=_str_tuple, repr=_command_repr)
    pod_override: Mapping[str, Any] | None = None
    pod_template_file: str | None = None
    kube_image: str | None = None


TaskJob: TypeAlias = KubernetesJob[TaskInstanceKey]
"""A task instance's job."""
CallbackJob: TypeAlias = KubernetesJob[CallbackKey]
"""A callback workload's job."""
GenericJob: TypeAlias = KubernetesJob[GenericKey]
"""A generic workload's job: its pod is the template with ``command`` as the args of the
``base`` container (no Airflow workload in it), and ``pod_override``, ``pod_template_file``
and ``kube_image`` as for a task."""


@attrs.frozen
class KubernetesResult(Generic[K, S]):
    """What the watcher learned about one workload's pod.

    Use the concrete :class:`TaskResult` and :class:`CallbackResult`: mypy then knows
    that a callback result's ``state`` is a :class:`CallbackState` (or a pseudo-state)
    and ``isinstance`` narrows a :data:`WorkloadResult`.
    """

    key: K
    state: S | ExecutorPseudoState
    pod_name: str
    namespace: str
    resource_version: str
    failure_details: FailureDetails | None = None
    launch: int | None = None
    """Which launch of the workload a ``VANISHED`` result is about: how often its attempt
    record had been requeued when the pod was found missing (None: not tracked). A result
    about an earlier launch is stale once the workload has been requeued since."""
    pod_uid: str | None = None
    """The pod's ``metadata.uid`` (None: not known). Two launches of one workload may share
    a pod name (a fixed ``pod_id`` or an override's ``metadata.name``); never a uid."""

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON object: ``key`` (``key.to_json()``), ``state`` (its
        value), ``pod``, ``namespace``, ``resource_version``, ``failure_details``,
        ``launch`` and ``pod_uid``; the same names as ``Resolution.to_json``'s."""
        details = self.failure_details
        return {
            "key": self.key.to_json(),
            "state": self.state.value,
            "pod": self.pod_name,
            "namespace": self.namespace,
            "resource_version": self.resource_version,
            "failure_details": None if details is None else dict(details),
            "launch": self.launch,
            "pod_uid": self.pod_uid,
        }


@attrs.frozen
class TaskResult(KubernetesResult[TaskInstanceKey, TaskInstanceState]):
    """A result for a task instance pod."""


@attrs.frozen
class CallbackResult(KubernetesResult[CallbackKey, CallbackState]):
    """A result for a callback pod."""


@attrs.frozen
class GenericResult(KubernetesResult[GenericKey, CallbackState]):
    """A result for a generic workload's pod (its state a :data:`GenericState`)."""


WorkloadResult: TypeAlias = TaskResult | CallbackResult | GenericResult
"""Any kind of result; narrow with ``isinstance``."""


@overload
def state_class_for_key(key: TaskInstanceKey) -> type[TaskInstanceState]: ...
@overload
def state_class_for_key(key: CallbackKey | GenericKey) -> type[CallbackState]: ...
def state_class_for_key(key: WorkloadKey) -> type[TaskInstanceState | CallbackState]:
    """The state enum a workload of this key moves through (a generic workload's is
    :data:`GenericState`, the callback states).

    Raises :class:`TypeError` for anything that is not a workload key, as Airflow's
    ``state_class_for_key`` does.
    """
    if isinstance(key, TaskInstanceKey):
        return TaskInstanceState
    if isinstance(key, (CallbackKey, GenericKey)):
        return CallbackState
    raise TypeError(f"Unknown workload key type: {type(key).__name__}")


def result_for(
    key: WorkloadKey,
    state: TaskInstanceState | CallbackState | ExecutorPseudoState,
    pod_name: str,
    namespace: str,
    resource_version: str = "",
    *,
    launch: int | None = None,
) -> WorkloadResult:
    """A result for ``key`` in ``state``, of the result class of its kind (what adoption
    and a re-list make for the decisions): a pseudo-state (``COMPLETED``, ``VANISHED``
    …) or a state of the key's kind (:func:`state_class_for_key`; another kind's is a
    ``TypeError``)."""
    if isinstance(key, TaskInstanceKey):
        if isinstance(state, CallbackState):
            raise TypeError(f"a task's result cannot be in {state!r}")
        return TaskResult(key, state, pod_name, namespace, resource_version, launch=launch)
    if isinstance(state, TaskInstanceState):
        raise TypeError(f"{key!r}'s result cannot be in {state!r}")
    if isinstance(key, CallbackKey):
        return CallbackResult(key, state, pod_name, namespace, resource_version, launch=launch)
    if isinstance(key, GenericKey):
        return GenericResult(key, state, pod_name, namespace, resource_version, launch=launch)
    raise TypeError(f"Unknown workload key type: {type(key).__name__}")
