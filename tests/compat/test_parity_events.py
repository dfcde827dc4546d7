"""Parity of watch-event resolution with the released provider's watcher (10.25.0).

Every generated watch event for a task pod our builder makes goes to ``resolve_event``
(:class:`ResolverConfig` with the provider's fatal pending reasons: ours add two, difference
(f)) and to the provider's
``KubernetesJobWatcher.process_status``, called the way the watcher's ``_run`` calls it:
``event["object"]`` is a ``V1Pod`` the kubernetes client's deserializer builds from the
manifest (:func:`k8s_workloads.adapters.to_v1pod`), ``event["raw_object"]`` the manifest
itself, ``status`` the pod's phase and ``annotations`` the identity annotations ``_run``
keeps. The watcher is made without ``__init__`` (no process is started); it reads only its
queue, the fatal pending reasons of its ``kube_config`` (the provider's default list) and
its logger. Compared, for every event the provider handles without raising:

* the reported state: the provider's ``TaskInstanceState.FAILED`` / ``None`` /
  ``"adopted"`` / nothing put, against ours ``TaskInstanceState.FAILED`` /
  ``ExecutorPseudoState.LOOKUP`` / ``ExecutorPseudoState.ADOPTED`` / ``None``;
* the pod name, namespace and resource version reported, and the key the provider's
  ``annotations_to_key`` makes of the annotations it reports, against ours;
* failure details, wherever the provider reports some (Failed pods), and
  ``collect_pod_failure_details`` against ours for every Failed pod.

Documented differences, each pinned by a test below:

* (a) ours attaches failure details where 10.25.0 reports ``None`` with its FAILED:
  ``ProviderFailed``, a fatal waiting reason in a Pending pod, and a Running pod deleted
  (reference §4.2 row 7a: the 3.4+ line attaches ``pod_reason: PodDeleted`` too);
* (b) the provider raises where ours resolves: a Pending pod with an empty
  ``containerStatuses`` list (``IndexError``) or a container status it checks that has no
  ``state`` (``KeyError``); the exception ends the watcher process. Ours reads both as
  "nothing fatal" for that container, so the pod stays Pending, or is failed for a fatal
  init container the provider never reaches (it collects every status before reading one);
* (c) a Failed pod with a container status without ``state``: the provider's collector
  gives up at that container (``AttributeError`` on ``None``, caught) and reports the
  pod-level fields only, where ours skips that container and reports the next failed one;
* (d) a terminated state without ``exitCode`` never reaches the provider: both kubernetes
  models refuse it (the field is required), so the client's deserializer fails before the
  watcher runs; ours reads it as exit code 0, as §4.3 describes;
* (e) a container status named ``""``: the provider reports ``container_name: ""``, ours
  ``"unknown"`` (as for a missing name);
* (f) by default ours also fails a Pending pod waiting for ``ImagePullBackOff`` or
  ``ErrImageNeverPull`` (``DEFAULT_FATAL_PENDING_REASONS``), which the provider's default
  list leaves Pending; with the provider's list (as compared above) ours agree.

Kubelet always writes a container's ``state`` and a terminated ``exitCode``, and the API
server refuses an empty container name, so (b) to (e) need a hand-made status; the
generated events keep to what a cluster sends, plus empty status lists (b). The module
runs only where the provider is importable (``.venv-airflow``).
"""

from __future__ import annotations

import copy
import logging
import queue
from typing import TYPE_CHECKING, Any, cast

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

pytest.importorskip(
    "airflow.providers.cncf.kubernetes.executors.kubernetes_executor_utils",
    reason="provider parity runs in the Airflow environment (.venv-airflow)",
)

from airflow.providers.cncf.kubernetes.backcompat import get_logical_date_key
from airflow.providers.cncf.kubernetes.executors.kubernetes_executor_types import (
    ADOPTED,
    TASK_INSTANCE_ID_ANNOTATION,
    KubernetesWatch,
)
from airflow.providers.cncf.kubernetes.executors.kubernetes_executor_utils import (
    KubernetesJobWatcher,
    collect_pod_failure_details,
)
from airflow.providers.cncf.kubernetes.kubernetes_helper_functions import (
    annotations_to_key as provider_annotations_to_key,
)
from airflow.utils.state import TaskInstanceState as ProviderTaskInstanceState

from k8s_workloads.adapters import InvalidManifest, to_v1pod
from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.pods import construct_task_pod
from k8s_workloads.states import ExecutorPseudoState, TaskInstanceState
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.failures import (
    DEFAULT_FATAL_PENDING_REASONS,
    PROVIDER_FATAL_PENDING_REASONS,
    collect_failure_details,
)
from k8s_workloads.watch.resolution import Outcome, Resolution, ResolverConfig
from tests.support.event_factory import task_pod

if TYPE_CHECKING:
    from kubernetes.client import V1Pod

pytestmark = pytest.mark.parity

PROVIDER_FATAL_REASONS = [
    "CreateContainerConfigError",
    "ErrImagePull",
    "CreateContainerError",
    "ImageInspectError",
    "InvalidImageName",
]
"""``worker_pod_pending_fatal_container_state_reasons`` as the provider's config defaults it."""

LOGGER = logging.getLogger(__name__)
DELETION = "2026-06-07T00:00:00Z"

# --------------------------------------------------------------------------------------
# The provider's watcher, without a process


class _KubeConfig:
    """The one setting ``process_status`` reads from the executor's ``KubeConfig``."""

    def __init__(self, fatal_reasons: list[str]) -> None:
        self.worker_pod_pending_fatal_container_state_reasons = fatal_reasons


def _watcher() -> KubernetesJobWatcher:
    watcher = KubernetesJobWatcher.__new__(KubernetesJobWatcher)
    watcher.namespace = "airflow"
    watcher.scheduler_job_id = "7"
    watcher.watcher_queue = queue.Queue()
    watcher.resource_version = None
    watcher.kube_config = _KubeConfig(list(PROVIDER_FATAL_REASONS))
    watcher.supports_task_instance_uuid = False
    watcher.team_name = None
    return watcher


def _reported_annotations(pod: V1Pod) -> dict[str, str]:
    """The identity annotations the watcher's ``_run`` passes on (a None date included)."""
    assert pod.metadata is not None
    annotations: dict[str, str] = pod.metadata.annotations or {}
    date_key = get_logical_date_key()
    reported: dict[str, Any] = {
        "dag_id": annotations["dag_id"],
        "task_id": annotations["task_id"],
        date_key: annotations.get(date_key),
        "run_id": annotations.get("run_id"),
        "try_number": annotations["try_number"],
    }
    if TASK_INSTANCE_ID_ANNOTATION in annotations:
        reported[TASK_INSTANCE_ID_ANNOTATION] = annotations[TASK_INSTANCE_ID_ANNOTATION]
    if annotations.get("map_index") is not None:
        reported["map_index"] = annotations["map_index"]
    return reported


def provider_reports(event_type: str, manifest: dict[str, Any]) -> list[KubernetesWatch]:
    """What the provider's watcher puts on its queue for one event (may raise, as it does)."""
    pod = to_v1pod(manifest)
    metadata, status = pod.metadata, pod.status
    assert metadata is not None
    assert status is not None
    watcher = _watcher()
    # As _run: the model's values as they are (a missing phase is passed on as None).
    watcher.process_status(
        pod_name=cast("str", metadata.name),
        namespace=cast("str", metadata.namespace),
        status=cast("str", status.phase),
        annotations=_reported_annotations(pod),
        resource_version=cast("str", metadata.resource_version),
        event={"type": event_type, "object": pod, "raw_object": copy.deepcopy(manifest)},
    )
    reports: list[KubernetesWatch] = []
    while not watcher.watcher_queue.empty():
        reports.append(watcher.watcher_queue.get_nowait())
    return reports


def provider_failure_details(manifest: dict[str, Any]) -> dict[str, Any] | None:
    details = collect_pod_failure_details(to_v1pod(manifest), LOGGER)
    return None if details is None else dict(details)


_AS_THE_PROVIDER = ResolverConfig(fatal_pending_reasons=PROVIDER_FATAL_PENDING_REASONS)


def _ours(
    event_type: str, manifest: dict[str, Any], config: ResolverConfig = _AS_THE_PROVIDER
) -> Resolution:
    resolution = resolve_event(
        {"type": event_type, "object": copy.deepcopy(manifest)}, config=config
    )
    assert isinstance(resolution, Resolution)
    assert isinstance(resolution.outcome, Outcome)
    return resolution


def _provider_state_as_ours(
    state: ProviderTaskInstanceState | str | None,
) -> TaskInstanceState | ExecutorPseudoState:
    if state is None:
        return ExecutorPseudoState.LOOKUP
    if state == ADOPTED:
        return ExecutorPseudoState.ADOPTED
    assert isinstance(state, ProviderTaskInstanceState), state
    return TaskInstanceState(state.value)


# --------------------------------------------------------------------------------------
# Strategies: what a cluster sends about a task pod


_WAITING_REASONS = [
    *PROVIDER_FATAL_REASONS,
    "CrashLoopBackOff",
    "ContainerCreating",
    "PodInitializing",
    "ImagePullBackOff",
    None,
]
_WAITING_MESSAGES = [
    None,
    "pull QPS exceeded",
    "pull QPS exceeded.",
    "Back-off pulling image",
    'secret "db" not found',
]
_TERMINATED_REASONS = ["OOMKilled", "Error", "Completed", "ContainerCannotRun", None]
_EXIT_CODES = st.one_of(
    st.sampled_from([0, 0, 1, 2, 127, 137, 143, 255, -1]),
    st.integers(-(2**31), 2**31 - 1),
)
_POD_REASONS = [None, "ProviderFailed", "Evicted", "DeadlineExceeded", "NodeLost", "Shutdown"]
_POD_MESSAGES = [None, "The node was low on resource: memory.", "Pod was active too long"]
PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"]
_WEIGHTED_PHASES = [
    "Pending",
    "Pending",
    "Pending",
    "Running",
    "Succeeded",
    "Failed",
    "Failed",
    "Unknown",
]
"""Pending and Failed pods take the most rules (4a-4c, 5): drawn more often."""


_RARELY = st.sampled_from([False] * 9 + [True])
"""True one time in ten (hypothesis draws small integers far more often than 1 in 10)."""


def _without_none(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if value is not None}


waiting_states = st.one_of(
    st.builds(
        lambda reason, message: {"waiting": _without_none({"reason": reason, "message": message})},
        st.sampled_from(_WAITING_REASONS),
        st.sampled_from(_WAITING_MESSAGES),
    ),
    st.just({"waiting": {"reason": "ErrImagePull", "message": "pull QPS exceeded"}}),
)
terminated_states = st.builds(
    lambda code, reason, message: {
        "terminated": _without_none({"exitCode": code, "reason": reason, "message": message})
    },
    _EXIT_CODES,
    st.sampled_from(_TERMINATED_REASONS),
    st.sampled_from([None, "Killed", "exit status 1"]),
)
running_states = st.sampled_from([{"running": {}}, {"running": {"startedAt": DELETION}}])
container_states = st.one_of(waiting_states, terminated_states, running_states)


@st.composite
def container_statuses(draw: st.DrawFn, prefix: str) -> list[dict[str, Any]] | None:
    """None (absent), an empty list (sent by some API servers), or up to 3 statuses."""
    count = draw(st.one_of(st.none(), st.integers(0, 3)))
    if count is None:
        return None
    statuses = []
    for index in range(count):
        status: dict[str, Any] = {
            "name": "base" if prefix == "main" and index == 0 else f"{prefix}-{index}",
            "image": "airflow:3.3.2",
            "imageID": "",
            "ready": draw(st.booleans()),
            "restartCount": draw(st.integers(0, 5)),
            "state": draw(container_states),
        }
        if draw(st.booleans()):
            status["lastState"] = draw(terminated_states)
        statuses.append(status)
    return statuses


@st.composite
def pod_statuses(draw: st.DrawFn, phases: list[str] | None = None) -> dict[str, Any]:
    status = _without_none(
        {
            "phase": draw(st.sampled_from(phases or _WEIGHTED_PHASES)),
            "reason": draw(st.sampled_from(_POD_REASONS)),
            "message": draw(st.sampled_from(_POD_MESSAGES)),
            "initContainerStatuses": draw(container_statuses("init")),
            "containerStatuses": draw(container_statuses("main")),
        }
    )
    if phases is None and draw(_RARELY):
        del status["phase"]  # an odd status: the provider logs it as an invalid state
    return status


def _unmapped_task_pod() -> dict[str, Any]:
    pod = construct_task_pod(
        namespace="other",
        scheduler_job_id=8,
        pod_id="report-send-0a1b2c3d",
        dag_id="report",
        task_id="send",
        kube_image="airflow:3.3.2",
        try_number=1,
        args=["airflow", "tasks", "run"],
        run_id="scheduled__2026-06-07T00:00:00+00:00",
        airflow_version="3.3.2",
    )
    pod["metadata"]["resourceVersion"] = "9001"
    return pod


@st.composite
def task_pod_events(draw: st.DrawFn, phases: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """(event type, pod manifest) for a task pod our builder makes, with a cluster's status."""
    pod = task_pod() if draw(st.booleans()) else _unmapped_task_pod()
    pod["status"] = draw(pod_statuses(phases))
    if draw(st.booleans()):
        pod["metadata"]["deletionTimestamp"] = DELETION
    if draw(_RARELY):
        pod["metadata"]["labels"]["airflow_pod_revoked"] = draw(st.sampled_from(["True", ""]))
    return draw(st.sampled_from(["ADDED", "MODIFIED", "DELETED"])), pod


def _provider_may_raise(event_type: str, manifest: dict[str, Any]) -> bool:
    """Difference (b): an empty containerStatuses list reaches the fatal-reason check."""
    metadata, status = manifest["metadata"], manifest["status"]
    return (
        event_type != "DELETED"  # DELETED is adopted (row 2) or deleted before start (4a)
        and "airflow_pod_revoked" not in metadata["labels"]
        and status.get("reason") != "ProviderFailed"
        and status.get("phase") == "Pending"
        and status.get("containerStatuses") == []
    )


def _fatal_init_container(status: dict[str, Any]) -> bool:
    """Whether an init container waits for a reason the provider's default list fails."""
    for container in status.get("initContainerStatuses", []):
        waiting = container.get("state", {}).get("waiting", {})
        if waiting.get("reason") in PROVIDER_FATAL_REASONS and not (
            waiting["reason"] == "ErrImagePull" and waiting.get("message") == "pull QPS exceeded"
        ):
            return True
    return False


# --------------------------------------------------------------------------------------
# 1. The reported state, over generated events


@given(generated=task_pod_events())
def test_resolve_event_reports_what_the_provider_reports(
    generated: tuple[str, dict[str, Any]],
) -> None:
    event_type, manifest = generated
    ours = _ours(event_type, manifest)  # first: ours must never raise, whatever theirs does
    try:
        theirs = provider_reports(event_type, manifest)
    except IndexError:
        assert _provider_may_raise(event_type, manifest)
        event("provider raised: difference (b)")
        if _fatal_init_container(manifest["status"]):
            assert ours.state is TaskInstanceState.FAILED
        else:
            assert ours.outcome is Outcome.PENDING
            assert ours.state is None
        return
    assert not _provider_may_raise(event_type, manifest)
    assert len(theirs) <= 1
    phase = manifest["status"].get("phase")
    provider = "nothing" if not theirs else repr(theirs[0].state)
    event(f"{event_type} {phase}: ours {ours.outcome.name}, provider {provider}")
    if not theirs:
        assert ours.state is None, ours
        return
    report = theirs[0]
    assert ours.state == _provider_state_as_ours(report.state), (ours, report)
    assert (ours.pod_name, ours.namespace, ours.resource_version) == (
        report.pod_name,
        report.namespace,
        report.resource_version,
    )
    assert isinstance(ours.key, TaskInstanceKey)
    assert ours.key.as_tuple() == tuple(provider_annotations_to_key(report.annotations))
    if report.failure_details is not None:
        event("provider reported failure details")
        assert ours.failure_details == dict(report.failure_details)
    elif ours.failure_details is not None:
        # Difference (a): the rows where 10.25.0 reports FAILED without details.
        assert ours.outcome is Outcome.FAILED
        assert manifest["status"].get("reason") == "ProviderFailed" or manifest["status"].get(
            "phase"
        ) in {"Pending", "Running"}, ours


# --------------------------------------------------------------------------------------
# 2. Failure details of Failed pods


@given(generated=task_pod_events(phases=["Failed"]))
def test_failure_details_of_failed_pods_match_the_providers_collector(
    generated: tuple[str, dict[str, Any]],
) -> None:
    event_type, manifest = generated
    theirs = provider_failure_details(manifest)
    assert theirs is not None
    assert collect_failure_details(manifest) == theirs
    ours = _ours(event_type, manifest)
    if ours.outcome is Outcome.FAILED and manifest["status"].get("reason") != "ProviderFailed":
        event("row 5: resolution details compared")
        assert ours.failure_details == theirs
    else:
        event(f"{ours.outcome.name}: collector compared only")


@given(status=pod_statuses())
def test_failure_details_are_none_unless_failed_as_the_providers(status: dict[str, Any]) -> None:
    manifest = task_pod(status)
    theirs = provider_failure_details(manifest)
    assert collect_failure_details(manifest) == theirs
    assert (theirs is None) is (status.get("phase") != "Failed")


# --------------------------------------------------------------------------------------
# 3. The decision table, row by row, through both


def _container(name: str, state: dict[str, Any] | None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": name,
        "image": "airflow:3.3.2",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
    }
    if state is not None:
        status["state"] = state
    return status


def _waiting(name: str, reason: str | None, message: str | None = None) -> dict[str, Any]:
    return _container(name, {"waiting": _without_none({"reason": reason, "message": message})})


def _terminated(name: str, code: int, reason: str | None = None) -> dict[str, Any]:
    return _container(name, {"terminated": _without_none({"exitCode": code, "reason": reason})})


def _pod(
    status: dict[str, Any], *, deleting: bool = False, revoked: bool = False
) -> dict[str, Any]:
    pod = task_pod(status)
    if deleting:
        pod["metadata"]["deletionTimestamp"] = DELETION
    if revoked:
        pod["metadata"]["labels"]["airflow_pod_revoked"] = "True"
    return pod


_FAILED = TaskInstanceState.FAILED
_LOOKUP = ExecutorPseudoState.LOOKUP
_ADOPTED = ExecutorPseudoState.ADOPTED
_PENDING_QPS = {"phase": "Pending", "containerStatuses": [_waiting("base", "ErrImagePull", "pull QPS exceeded")]}  # fmt: skip  # noqa: E501


@pytest.mark.parametrize(
    ("event_type", "manifest", "state"),
    [
        pytest.param("DELETED", _pod({"phase": "Failed"}, revoked=True), None, id="1-revoked"),
        pytest.param("DELETED", _pod({"phase": "Running"}), _ADOPTED, id="2-adopted"),
        pytest.param("DELETED", _pod({"phase": "Succeeded", "reason": "ProviderFailed"}), _ADOPTED, id="2-adopted-before-provider-failed"),  # noqa: E501
        pytest.param("MODIFIED", _pod({"phase": "Pending", "reason": "ProviderFailed"}), _FAILED, id="3-provider-failed"),  # noqa: E501
        pytest.param("DELETED", _pod({"phase": "Pending", "containerStatuses": [_waiting("base", "ErrImagePull")]}, deleting=True), None, id="4a-deleted-before-start"),  # noqa: E501
        pytest.param("MODIFIED", _pod({"phase": "Pending", "initContainerStatuses": [_waiting("init-0", "PodInitializing"), _waiting("init-1", "InvalidImageName")]}), _FAILED, id="4b-init"),  # noqa: E501
        pytest.param("MODIFIED", _pod({"phase": "Pending", "containerStatuses": [_waiting("base", "ContainerCreating"), _waiting("side", "ErrImagePull")]}), None, id="4b-only-first-main"),  # noqa: E501
        pytest.param("MODIFIED", _pod(_PENDING_QPS), None, id="4b-pull-qps-exceeded"),
        pytest.param("MODIFIED", _pod({"phase": "Pending", "containerStatuses": [_waiting("base", None)]}), None, id="4b-no-reason"),  # noqa: E501
        pytest.param("MODIFIED", _pod({"phase": "Pending", "containerStatuses": [_waiting("base", "CrashLoopBackOff")]}), None, id="4b-crash-loop-not-default"),  # noqa: E501
        pytest.param("ADDED", _pod({"phase": "Pending"}), None, id="4c-pending"),
        pytest.param("MODIFIED", _pod({"phase": "Failed", "containerStatuses": [_terminated("base", 137, "OOMKilled")]}), _FAILED, id="5-failed"),  # noqa: E501
        pytest.param("MODIFIED", _pod({"phase": "Succeeded"}), _LOOKUP, id="6-succeeded"),
        pytest.param("DELETED", _pod({"phase": "Running"}, deleting=True), _FAILED, id="7a-running-deleted"),  # noqa: E501
        pytest.param("MODIFIED", _pod({"phase": "Running"}, deleting=True), None, id="7b-running"),
        pytest.param("MODIFIED", _pod({"phase": "Unknown"}), None, id="8-unknown"),
    ],
)  # fmt: skip
def test_decision_table_rows(
    event_type: str,
    manifest: dict[str, Any],
    state: TaskInstanceState | ExecutorPseudoState | None,
) -> None:
    theirs = provider_reports(event_type, manifest)
    ours = _ours(event_type, manifest)
    assert ours.state is state
    assert [_provider_state_as_ours(report.state) for report in theirs] == (
        [] if state is None else [state]
    )


# --------------------------------------------------------------------------------------
# 4. The documented differences, pinned


@pytest.mark.parametrize(
    ("event_type", "manifest", "details"),
    [
        pytest.param(
            "MODIFIED",
            _pod({"phase": "Pending", "reason": "ProviderFailed", "message": "no node"}),
            {"pod_status": "Pending", "pod_reason": "ProviderFailed", "pod_message": "no node"},
            id="provider-failed",
        ),
        pytest.param(
            "MODIFIED",
            _pod({"phase": "Pending", "containerStatuses": [_waiting("base", "ErrImagePull")]}),
            {
                "pod_status": "Pending",
                "container_state": "waiting",
                "container_reason": "ErrImagePull",
                "container_name": "base",
            },
            id="fatal-pending",
        ),
        pytest.param(
            "DELETED",
            _pod({"phase": "Running"}, deleting=True),
            {"pod_status": "Running", "pod_reason": "PodDeleted", "pod_message": None},
            id="running-deleted",
        ),
    ],
)
def test_difference_a_ours_adds_failure_details(
    event_type: str, manifest: dict[str, Any], details: dict[str, Any]
) -> None:
    (theirs,) = provider_reports(event_type, manifest)
    assert theirs.state == ProviderTaskInstanceState.FAILED
    assert theirs.failure_details is None
    ours = _ours(event_type, manifest)
    assert ours.state is TaskInstanceState.FAILED
    assert ours.failure_details == details


@pytest.mark.parametrize(
    ("status", "error"),
    [
        pytest.param({"phase": "Pending", "containerStatuses": []}, IndexError, id="empty-list"),
        pytest.param(
            {
                "phase": "Pending",
                "initContainerStatuses": [_waiting("init-0", "ErrImagePull")],
                "containerStatuses": [],
            },
            IndexError,
            id="empty-list-after-a-fatal-init-container",
        ),
        pytest.param(
            {"phase": "Pending", "containerStatuses": [_container("base", None)]},
            KeyError,
            id="main-without-state",
        ),
        pytest.param(
            {"phase": "Pending", "initContainerStatuses": [_container("init-0", None)]},
            KeyError,
            id="init-without-state",
        ),
    ],
)
def test_difference_b_provider_raises_where_ours_resolves(
    status: dict[str, Any], error: type[Exception]
) -> None:
    manifest = _pod(status)
    with pytest.raises(error):
        provider_reports("MODIFIED", manifest)
    ours = _ours("MODIFIED", manifest)
    if _fatal_init_container(status):
        assert ours.state is TaskInstanceState.FAILED
    else:
        assert ours.outcome is Outcome.PENDING
        assert ours.state is None


def test_difference_c_a_container_without_state_stops_the_providers_collector() -> None:
    manifest = _pod(
        {
            "phase": "Failed",
            "reason": "Error",
            "containerStatuses": [_container("base", None), _terminated("side", 1, "Error")],
        }
    )
    pod_level = {"pod_status": "Failed", "pod_reason": "Error", "pod_message": None}
    with_container = {
        **pod_level,
        "container_state": "terminated",
        "container_reason": "Error",
        "container_message": None,
        "exit_code": 1,
        "container_type": "main",
        "container_name": "side",
    }
    assert provider_failure_details(manifest) == pod_level
    (theirs,) = provider_reports("MODIFIED", manifest)
    assert theirs.failure_details == pod_level
    ours = _ours("MODIFIED", manifest)
    assert ours.state is TaskInstanceState.FAILED
    assert ours.failure_details == with_container


def test_difference_d_a_terminated_state_without_exit_code_never_reaches_the_provider() -> None:
    status = {
        "phase": "Failed",
        "containerStatuses": [_container("base", {"terminated": {"reason": "Error"}})],
    }
    manifest = _pod(status)
    with pytest.raises(InvalidManifest, match=r"exitCode"):
        to_v1pod(manifest)
    ours = _ours("MODIFIED", manifest)
    assert ours.state is TaskInstanceState.FAILED
    assert ours.failure_details == {
        "pod_status": "Failed",
        "pod_reason": None,
        "pod_message": None,
    }


def test_difference_e_an_empty_container_name_is_unknown_in_ours() -> None:
    manifest = _pod({"phase": "Failed", "containerStatuses": [_terminated("", 1, "Error")]})
    theirs = provider_failure_details(manifest)
    ours = _ours("MODIFIED", manifest)
    assert theirs is not None
    assert ours.failure_details is not None
    assert theirs["container_name"] == ""
    assert ours.failure_details["container_name"] == "unknown"
    assert {**theirs, "container_name": "unknown"} == ours.failure_details


@pytest.mark.parametrize(
    "reason", sorted(DEFAULT_FATAL_PENDING_REASONS - set(PROVIDER_FATAL_REASONS))
)
def test_difference_f_ours_fails_a_pod_that_never_starts_by_default(reason: str) -> None:
    waiting = {
        "name": "base",
        "image": "apache/airflow:3.3.2",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": reason, "message": "x"}},
    }
    manifest = _pod({"phase": "Pending", "containerStatuses": [waiting]})
    assert provider_reports("MODIFIED", manifest) == []
    assert _ours("MODIFIED", manifest).outcome is Outcome.PENDING
    ours = _ours("MODIFIED", manifest, ResolverConfig())
    assert ours.state is TaskInstanceState.FAILED
    assert ours.failure_details is not None
    assert ours.failure_details.get("container_reason") == reason
