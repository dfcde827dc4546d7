"""Properties of resolve_event over generated watch events, on kubernetes 36 and 37.

* It is total: arbitrary JSON-like values, events of every type whose objects are partial
  pod shapes with random (also non-string) metadata, labels, annotations and status,
  under any :class:`ResolverConfig` and ``now``, give a :class:`Resolution` with an
  :class:`Outcome`, never an exception.
* A pod as a ``V1Pod`` (:func:`k8s_workloads.adapters.to_v1pod`) and as a manifest dict
  resolve identically, field by field.
* A callback pod never yields a :class:`TaskInstanceState`, a task pod never a
  :class:`CallbackState`, whatever the status, event type and config.
* A FAILED resolution never says "because of None" (apache/airflow#73164), and
  :meth:`Resolution.to_result` gives a :class:`TaskResult` for a task key and a
  :class:`CallbackResult` for a callback key whenever there is a state.

Two crashes of the opt-in pending policy found here are pinned by tests: a naive ``now``
(read as UTC) and a condition whose ``type`` is a list or object.
"""

from __future__ import annotations

import copy
import datetime
import itertools
import json
import string
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from k8s_workloads.adapters import to_v1pod
from k8s_workloads.keys import GENERIC_ID_MAX_LENGTH, TaskInstanceKey
from k8s_workloads.pods.codec import ANNOTATIONS_READ
from k8s_workloads.pods.labels import (
    CALLBACK_ID_ANNOTATION,
    KUBERNETES_EXECUTOR_LABEL,
    POD_REVOKED_LABEL,
    WORKLOAD_TYPE_LABEL,
)
from k8s_workloads.states import (
    CallbackResult,
    CallbackState,
    GenericResult,
    TaskInstanceState,
    TaskResult,
)
from k8s_workloads.testing.strategies import ClusterEvent, PodFate, cluster_events, generic_keys
from k8s_workloads.watch.decoding import decode_event, decode_pod_event
from k8s_workloads.watch.events import resolve_event, resolve_event_json, resolve_typed_event
from k8s_workloads.watch.failures import DEFAULT_FATAL_PENDING_REASONS, PendingPolicy
from k8s_workloads.watch.resolution import Outcome, Resolution, ResolverConfig
from tests.support.event_factory import (
    CALLBACK_ID,
    CALLBACK_KEY,
    FAILED,
    RUNNING,
    TASK_KEY,
    callback_pod,
    task_pod,
)

EVENT_TYPES = ["ADDED", "MODIFIED", "DELETED"]
ALL_EVENT_TYPES = [*EVENT_TYPES, "ERROR", "BOOKMARK"]
PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"]

_RARELY = st.sampled_from([False] * 9 + [True])
"""True one time in ten."""


def _says_none(value: object) -> bool:
    """Whether any string in a JSON-like value contains "None" (a reason may say it)."""
    if isinstance(value, str):
        return "None" in value
    if isinstance(value, dict):
        return any(_says_none(key) or _says_none(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_says_none(item) for item in value)
    return False


def check_resolution(resolution: object, source: object) -> Resolution:
    """What every resolution of ``source`` satisfies, whatever it is."""
    assert isinstance(resolution, Resolution)
    assert isinstance(resolution.outcome, Outcome)
    assert isinstance(resolution.reason, str)
    if resolution.outcome is Outcome.FAILED:
        if not _says_none(source):  # else the pod itself may give "None" as its reason
            assert "because of None" not in resolution.reason, resolution
        assert resolution.state in {TaskInstanceState.FAILED, CallbackState.FAILED}
    result = resolution.to_result()
    if resolution.state is None:
        assert result is None
    else:
        assert resolution.key is not None, resolution
        if isinstance(resolution.key, TaskInstanceKey):
            assert isinstance(result, TaskResult), resolution
        else:
            assert isinstance(result, CallbackResult), resolution
        assert result.key == resolution.key
        assert result.state == resolution.state
        assert result.failure_details == resolution.failure_details
    return resolution


def resolve(
    watch_event: object, config: ResolverConfig, now: datetime.datetime | None
) -> Resolution:
    return check_resolution(resolve_event(watch_event, config=config, now=now), watch_event)


# --------------------------------------------------------------------------------------
# Strategies

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=12), children, max_size=4),
    ),
    max_leaves=25,
)
"""Any JSON value (floats include NaN and infinities, which Python's json writes too)."""

_AIRFLOW_VERSIONS = ["3.3.2", None, "3.2.0"]
_TIMESTAMPS = st.one_of(
    st.sampled_from(["2026-06-07T12:00:00Z", "2026-06-07T11:59:00Z", "not a time", ""]),
    st.datetimes(timezones=st.one_of(st.none(), st.timezones())).map(
        lambda moment: moment.isoformat()
    ),
)
aware_nows = st.one_of(
    st.none(),
    st.datetimes(timezones=st.timezones()),
    st.just(datetime.datetime(2026, 6, 7, 12, 5, tzinfo=datetime.timezone.utc)),
)
"""``now`` as documented: None or an aware datetime (see the pinned naive-now crash)."""

# Every policy PendingPolicy accepts (it refuses NaN, infinities and negative seconds).
_SECONDS = st.floats(min_value=0, allow_nan=False, allow_infinity=False)
_GRACES = st.one_of(st.none(), _SECONDS)
pending_policies = st.one_of(
    st.none(),
    st.just(PendingPolicy()),
    st.builds(
        PendingPolicy,
        image_pull_grace=_GRACES,
        create_container_error_grace=_GRACES,
        create_container_config_error_grace=_GRACES,
        unknown_waiting_reason_grace=_GRACES,
        pending_timeout=_GRACES,
    ),
)
_REASONS = [
    *sorted(DEFAULT_FATAL_PENDING_REASONS),
    "CrashLoopBackOff",
    "ContainerCreating",
    "PodInitializing",
    "ImagePullBackOff",
    "ErrImageNeverPull",
]
fatal_reason_settings = st.one_of(
    st.just(DEFAULT_FATAL_PENDING_REASONS),
    st.frozensets(st.sampled_from(_REASONS)),
    st.lists(st.sampled_from(_REASONS)).map(", ".join),  # the provider's comma list
)


def configs(versions: list[str | None] | None = None) -> st.SearchStrategy[ResolverConfig]:
    return st.builds(
        ResolverConfig,
        airflow_version=st.sampled_from(versions or [*_AIRFLOW_VERSIONS, "3.4.0"]),
        fatal_pending_reasons=fatal_reason_settings,
        pending=pending_policies,
        report_callback_running=st.booleans(),
        oom_success_is_failure=st.booleans(),
    )


# Partial pod shapes: plausible keys, plausible or arbitrary values.


def _maybe_odd(plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly plausible values, sometimes any JSON value (non-strings included)."""
    return st.one_of(plausible, plausible, json_values)


_phases = _maybe_odd(st.sampled_from(PHASES))
_waiting_reasons = _maybe_odd(st.sampled_from(_REASONS))
_messages = _maybe_odd(
    st.sampled_from(["pull QPS exceeded", "429 Too Many Requests", "Back-off pulling image"])
)
_exit_codes = st.one_of(
    st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, 1, 137, True, "1", 1.5, None])
)
_container_state_shapes = st.fixed_dictionaries(
    {},
    optional={
        "waiting": _maybe_odd(
            st.fixed_dictionaries({}, optional={"reason": _waiting_reasons, "message": _messages})
        ),
        "terminated": _maybe_odd(
            st.fixed_dictionaries(
                {},
                optional={
                    "exitCode": _exit_codes,
                    "reason": _maybe_odd(st.sampled_from(["OOMKilled", "Error", "Completed"])),
                    "message": _messages,
                },
            )
        ),
        "running": _maybe_odd(st.just({})),
    },
)
_container_shapes = st.fixed_dictionaries(
    {},
    optional={
        "name": _maybe_odd(st.sampled_from(["base", "init", "sidecar", ""])),
        "state": _maybe_odd(_container_state_shapes),
        "lastState": _maybe_odd(_container_state_shapes),
    },
)
_condition_shapes = st.fixed_dictionaries(
    {},
    optional={
        "type": _maybe_odd(
            st.sampled_from(["PodScheduled", "DisruptionTarget", "Ready", "ContainersReady"])
        ),
        "status": _maybe_odd(st.sampled_from(["True", "False"])),
        "reason": _maybe_odd(st.sampled_from(["Unschedulable", "EvictionByEvictionAPI"])),
        "message": _messages,
        "lastTransitionTime": _maybe_odd(_TIMESTAMPS),
    },
)
_status_fields = {
    "reason": _maybe_odd(st.sampled_from(["ProviderFailed", "Evicted", "NodeLost"])),
    "message": _messages,
    "initContainerStatuses": _maybe_odd(st.lists(_maybe_odd(_container_shapes), max_size=3)),
    "containerStatuses": _maybe_odd(st.lists(_maybe_odd(_container_shapes), max_size=3)),
    "ephemeralContainerStatuses": _maybe_odd(st.lists(_container_shapes, max_size=2)),
    "conditions": _maybe_odd(st.lists(_maybe_odd(_condition_shapes), max_size=3)),
    "startTime": _maybe_odd(_TIMESTAMPS),
}
status_shapes = st.one_of(
    st.fixed_dictionaries({"phase": st.sampled_from(PHASES)}, optional=_status_fields),
    st.fixed_dictionaries({}, optional={"phase": _phases, **_status_fields}),
)
"""Partial statuses: mostly with a real phase, else anything in any field."""
_label_keys = st.one_of(
    st.sampled_from(
        [KUBERNETES_EXECUTOR_LABEL, POD_REVOKED_LABEL, WORKLOAD_TYPE_LABEL, "airflow-worker"]
    ),
    st.text(max_size=10),
)
_labels = st.dictionaries(
    _label_keys, _maybe_odd(st.sampled_from(["True", "False", "callback", "task", ""])), max_size=4
)
_annotation_keys = st.one_of(
    st.sampled_from(
        [
            "dag_id",
            "task_id",
            "try_number",
            "map_index",
            "run_id",
            CALLBACK_ID_ANNOTATION,
            "logical_date",
            "execution_date",
        ]
    ),
    st.text(max_size=10),
)
_annotation_values = st.one_of(
    st.sampled_from(["etl", "load", "1", "-1", "007", "+1", "", "manual__2026", CALLBACK_ID]),
    st.text(alphabet=string.digits + "-+ _", max_size=400),  # long digit runs too
    json_values,
)
_annotations = st.dictionaries(_annotation_keys, _annotation_values, max_size=7)
_metadata_shapes = st.fixed_dictionaries(
    {},
    optional={
        "name": _maybe_odd(st.just("etl-load-abcd1234")),
        "namespace": _maybe_odd(st.just("airflow")),
        "resourceVersion": _maybe_odd(st.just("100")),
        "deletionTimestamp": _maybe_odd(_TIMESTAMPS),
        "creationTimestamp": _maybe_odd(_TIMESTAMPS),
        "labels": _maybe_odd(_labels),
        "annotations": _maybe_odd(_annotations),
    },
)
pod_shapes = st.fixed_dictionaries(
    {}, optional={"metadata": _maybe_odd(_metadata_shapes), "status": _maybe_odd(status_shapes)}
)
"""A partial pod: every level may be missing, odd, or hold non-string values."""


@st.composite
def builder_pods_with_odd_status(draw: st.DrawFn) -> dict[str, Any]:
    """A pod our builders make (so it decodes), with a partial, odd status."""
    pod = task_pod() if draw(st.booleans()) else callback_pod()
    pod["status"] = draw(_maybe_odd(status_shapes))
    if draw(st.booleans()):
        pod["metadata"]["deletionTimestamp"] = draw(_TIMESTAMPS)
    return pod


error_objects = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.just("Status"),
        "code": _maybe_odd(st.sampled_from([410, 500, 403])),
        "reason": _maybe_odd(st.sampled_from(["Expired", "Gone"])),
        "message": _messages,
    },
)
_event_objects = st.one_of(builder_pods_with_odd_status(), pod_shapes, error_objects, json_values)
watch_events = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(ALL_EVENT_TYPES), "object": _event_objects}),
    st.fixed_dictionaries(
        {},
        optional={"type": _maybe_odd(st.sampled_from(ALL_EVENT_TYPES)), "object": _event_objects},
    ),
)
"""Watch-event shapes: a type from the valid set (or not) and a pod-ish object (or not)."""


# --------------------------------------------------------------------------------------
# 1. Totality


@given(value=json_values, config=configs(), now=aware_nows)
def test_any_json_value_resolves(
    value: object, config: ResolverConfig, now: datetime.datetime | None
) -> None:
    resolution = resolve(value, config, now)
    event(resolution.outcome.name)
    if not isinstance(value, dict):
        assert resolution.outcome is Outcome.MALFORMED


@given(watch_event=watch_events, config=configs(), now=aware_nows)
def test_any_event_shape_resolves(
    watch_event: dict[str, Any], config: ResolverConfig, now: datetime.datetime | None
) -> None:
    resolution = resolve(watch_event, config, now)
    event(resolution.outcome.name)
    if resolution.outcome in {Outcome.FOREIGN, Outcome.REVOKED, Outcome.MALFORMED}:
        assert resolution.key is None
        assert resolution.state is None


@given(
    event_type=st.sampled_from(EVENT_TYPES),
    pod=builder_pods_with_odd_status(),
    config=configs(),
    now=aware_nows,
)
def test_builder_pods_with_any_status_resolve(
    event_type: str, pod: dict[str, Any], config: ResolverConfig, now: datetime.datetime | None
) -> None:
    resolution = resolve({"type": event_type, "object": pod}, config, now)
    event(resolution.outcome.name)


def test_a_naive_now_with_the_pending_policy_does_not_raise() -> None:
    pod = task_pod(
        {
            "phase": "Pending",
            "startTime": "2026-06-07T12:00:00Z",
            "containerStatuses": [{"name": "base", "state": {"waiting": {"reason": "X"}}}],
        }
    )
    naive_now = datetime.datetime(2026, 6, 7, 12, 5)  # noqa: DTZ001 - naive on purpose
    resolution = resolve_event(
        {"type": "MODIFIED", "object": pod},
        config=ResolverConfig(pending=PendingPolicy()),
        now=naive_now,
    )
    check_resolution(resolution, pod)
    # An unknown waiting reason has no grace period: failed at once, whatever the clock.
    assert resolution.outcome is Outcome.FAILED


@pytest.mark.parametrize("condition_type", [[], {}], ids=["list", "object"])
def test_an_unhashable_condition_type_with_the_pending_policy_does_not_raise(
    condition_type: object,
) -> None:
    pod = task_pod({"phase": "Pending", "conditions": [{"type": condition_type}]})
    watch_event = {"type": "MODIFIED", "object": pod}
    resolve(watch_event, ResolverConfig(pending=PendingPolicy()), None)


# --------------------------------------------------------------------------------------
# Realistic statuses: what a cluster sends, valid for both kubernetes models


_RFC3339 = st.datetimes(
    min_value=datetime.datetime(2000, 1, 1),  # noqa: DTZ001 - bounds of a naive strategy
    max_value=datetime.datetime(2100, 1, 1),  # noqa: DTZ001
    timezones=st.just(datetime.timezone.utc),
).map(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _without_none(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if value is not None}


_valid_states = st.one_of(
    st.builds(
        lambda reason, message: {"waiting": _without_none({"reason": reason, "message": message})},
        st.sampled_from([*_REASONS, None]),
        st.sampled_from([None, "pull QPS exceeded", "429 Too Many Requests", "boom"]),
    ),
    st.builds(
        lambda code, reason: {"terminated": _without_none({"exitCode": code, "reason": reason})},
        st.sampled_from([0, 1, 2, 137, 143, -1]),
        st.sampled_from(["OOMKilled", "Error", "Completed", "ContainerCannotRun", None]),
    ),
    st.just({"running": {}}),
)


@st.composite
def _valid_container_statuses(draw: st.DrawFn, prefix: str) -> list[dict[str, Any]] | None:
    count = draw(st.one_of(st.none(), st.integers(0, 3)))
    if count is None:
        return None
    statuses = []
    for index in range(count):
        status = {
            "name": f"{prefix}-{index}",
            "image": "airflow:3.3.2",
            "imageID": "",
            "ready": draw(st.booleans()),
            "restartCount": draw(st.integers(0, 3)),
            "state": draw(_valid_states),
        }
        if draw(st.booleans()):
            status["lastState"] = draw(_valid_states)
        statuses.append(status)
    return statuses


_valid_conditions = st.lists(
    st.builds(
        lambda kind, status, reason, since: _without_none(
            {"type": kind, "status": status, "reason": reason, "lastTransitionTime": since}
        ),
        st.sampled_from(["PodScheduled", "DisruptionTarget", "Ready", "ContainersReady"]),
        st.sampled_from(["True", "False"]),
        st.sampled_from([None, "Unschedulable", "EvictionByEvictionAPI", "PreemptionByScheduler"]),
        st.one_of(st.none(), _RFC3339),
    ),
    max_size=3,
)


@st.composite
def cluster_statuses(draw: st.DrawFn) -> dict[str, Any]:
    return _without_none(
        {
            "phase": draw(st.sampled_from(PHASES)),
            "reason": draw(st.sampled_from([None, "ProviderFailed", "Evicted", "NodeLost"])),
            "message": draw(st.sampled_from([None, "The node was low on resource: memory."])),
            "initContainerStatuses": draw(_valid_container_statuses("init")),
            "containerStatuses": draw(_valid_container_statuses("main")),
            "conditions": draw(st.one_of(st.none(), _valid_conditions)),
            "startTime": draw(st.one_of(st.none(), _RFC3339)),
        }
    )


@st.composite
def cluster_pods(draw: st.DrawFn, *, kind: str | None = None) -> dict[str, Any]:
    """A pod our builders make, as a cluster reports it; string metadata only."""
    kind = kind or draw(st.sampled_from(["task", "callback"]))
    pod = task_pod() if kind == "task" else callback_pod()
    pod["status"] = draw(cluster_statuses())
    metadata = pod["metadata"]
    metadata["creationTimestamp"] = draw(_RFC3339)
    if draw(st.booleans()):
        metadata["deletionTimestamp"] = draw(_RFC3339)
    if draw(_RARELY):
        metadata["labels"][POD_REVOKED_LABEL] = "True"
    if draw(_RARELY):  # identity that does not decode, or a pod that is not the executor's
        change = draw(st.sampled_from(["no try_number", "odd map_index", "foreign", "type"]))
        if change == "no try_number":
            metadata["annotations"].pop("try_number", None)
        elif change == "odd map_index":
            metadata["annotations"]["map_index"] = "+3"
        elif change == "foreign":
            del metadata["labels"][KUBERNETES_EXECUTOR_LABEL]
        else:
            metadata["labels"][WORKLOAD_TYPE_LABEL] = "task"
    return pod


# --------------------------------------------------------------------------------------
# 2. V1Pod and manifest dict resolve identically


@given(
    event_type=st.sampled_from(EVENT_TYPES),
    pod=cluster_pods(),
    config=configs(),
    now=aware_nows,
)
def test_a_v1pod_and_its_manifest_resolve_identically(
    event_type: str, pod: dict[str, Any], config: ResolverConfig, now: datetime.datetime | None
) -> None:
    model = to_v1pod(pod)
    from_dict = resolve({"type": event_type, "object": pod}, config, now)
    from_model = check_resolution(
        resolve_event({"type": event_type, "object": model}, config=config, now=now), pod
    )
    event(from_dict.outcome.name)
    assert from_model == from_dict


# --------------------------------------------------------------------------------------
# 3. Tasks and callbacks keep to their own states


@given(
    event_type=st.sampled_from(EVENT_TYPES),
    pod=st.one_of(cluster_pods(), builder_pods_with_odd_status()),
    config=configs(_AIRFLOW_VERSIONS),
    now=aware_nows,
)
def test_callbacks_never_get_task_states_nor_tasks_callback_states(
    event_type: str, pod: dict[str, Any], config: ResolverConfig, now: datetime.datetime | None
) -> None:
    resolution = resolve({"type": event_type, "object": pod}, config, now)
    is_callback = CALLBACK_ID_ANNOTATION in pod["metadata"]["annotations"]
    state = "no state" if resolution.state is None else type(resolution.state).__name__
    event(f"{'callback' if is_callback else 'task'}: {state}")
    if is_callback:
        assert not isinstance(resolution.state, TaskInstanceState), resolution
        assert resolution.key in {None, CALLBACK_KEY}
        if str(config.airflow_version) != "3.3.2":
            assert resolution.key is None  # callback pods are undecodable before 3.3
    else:
        assert not isinstance(resolution.state, CallbackState), resolution
        assert resolution.key in {None, TASK_KEY}


# --------------------------------------------------------------------------------------
# The executor's JSON decoding: only what resolution reads, the same resolution


@given(watch_event=st.one_of(watch_events, json_values), config=configs(), now=aware_nows)
def test_partial_decoding_resolves_as_full_decoding(
    watch_event: object, config: ResolverConfig, now: datetime.datetime | None
) -> None:
    from k8s_workloads.watch.decoding import decode_event  # noqa: PLC0415

    text = json.dumps(watch_event)
    full = resolve_event(json.loads(text), config=config, now=now)
    partial = resolve_event(decode_event(text), config=config, now=now)
    assert partial == full


@pytest.mark.parametrize(
    "text",
    [
        '{"type": "ADDED", "type": "DELETED", "object": {"kind": "Pod"}}',
        '{"type": "ADDED", "object": {"metadata": {"name": "a", "name": "b"}}}',
        '{"type": "ADDED", "object": null}',
        '{"type": "ADDED", "object": {"metadata": null, "status": {"phase": NaN}}}',
        '{"type": "MODIFIED", "object": {"metadata": {"name": "\\ud800"}}}',
        '{"type": "ERROR", "object": {"kind": "Status", "code": 410, "code": 500}}',
        '{"type": "ADDED", "object": {"metadata": {"resourceVersion": 1e400}}}',
        '[{"type": "ADDED"}]',
    ],
)
def test_partial_decoding_of_odd_json_matches_json_loads(text: str) -> None:
    from k8s_workloads.watch.decoding import decode_event  # noqa: PLC0415

    assert resolve_event(decode_event(text)) == resolve_event(json.loads(text))


# --------------------------------------------------------------------------------------
# Odd V1Pod objects (issue 11, item 6): values their types do not allow


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


_odd_values = st.one_of(
    st.sets(st.integers(), max_size=3),
    st.builds(object),
    st.just(_nested(1_200)),
    st.binary(max_size=5),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=3),
)


def _odd_metadata(field: str, value: object) -> Any:
    from kubernetes import client as k8s  # noqa: PLC0415

    labels = {"kubernetes_executor": "True"}
    metadata: Any = k8s.V1ObjectMeta(name="p", labels=labels)
    try:
        setattr(metadata, field, value)  # kubernetes 36: plain assignment is enough
    except (TypeError, ValueError):
        # kubernetes 37 validates on assignment; model_construct skips the validation.
        fields: dict[str, Any] = {"name": "p", "labels": labels, field: value}
        construct: Any = getattr(k8s.V1ObjectMeta, "model_construct")  # noqa: B009 - 37 only
        metadata = construct(**fields)
    return metadata


@given(
    field=st.sampled_from(["annotations", "labels", "resource_version", "name"]),
    inner=_odd_values,
    wrap=st.booleans(),
)
def test_odd_v1pod_objects_resolve_never_raise(field: str, inner: object, wrap: bool) -> None:
    from kubernetes import client as k8s  # noqa: PLC0415

    value = {"dag_id": inner} if wrap and field in {"annotations", "labels"} else inner
    pod = k8s.V1Pod(metadata=_odd_metadata(field, value))
    resolution = resolve_event({"type": "ADDED", "object": pod})
    assert isinstance(resolution.outcome, Outcome)


# --------------------------------------------------------------------------------------
# From JSON text: the typed decoding (resolve_event_json) resolves as json.loads does


def _full(text: str | bytes, config: ResolverConfig, now: datetime.datetime | None) -> Resolution:
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError) as error:
        return Resolution(Outcome.MALFORMED, f"not JSON: {error}")
    return resolve_event(decoded, config=config, now=now)


@given(watch_event=st.one_of(watch_events, json_values), config=configs(), now=aware_nows)
def test_json_text_resolves_as_its_full_decoding(
    watch_event: object, config: ResolverConfig, now: datetime.datetime | None
) -> None:
    text = json.dumps(watch_event)
    expected = _full(text, config, now)
    assert resolve_event_json(text, config=config, now=now) == expected
    assert resolve_event_json(text.encode(), config=config, now=now) == expected


@given(
    event_type=st.sampled_from(EVENT_TYPES),
    pod=cluster_pods(),
    config=configs(),
    now=aware_nows,
)
def test_cluster_pods_take_the_typed_path_and_resolve_as_their_full_decoding(
    event_type: str, pod: dict[str, Any], config: ResolverConfig, now: datetime.datetime | None
) -> None:
    text = json.dumps({"type": event_type, "object": pod})
    # What a cluster sends has its API types: the typed decoding takes all of it.
    decoded = decode_pod_event(text)
    assert decoded is not None
    if config.pending is None:
        assert resolve_typed_event(decoded, config=config, now=now) is not None
    got = check_resolution(resolve_event_json(text, config=config, now=now), pod)
    event(got.outcome.name)
    assert got == _full(text, config, now)


_ODD_TYPED = st.one_of(
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.text(max_size=5),
)
"""Values of a type a field may not have (strings only where the field is not one)."""

_TYPED_FIELDS = [
    ("metadata", "name"),
    ("metadata", "namespace"),
    ("metadata", "resourceVersion"),
    ("metadata", "uid"),
    ("metadata", "deletionTimestamp"),
    ("metadata", "labels"),
    ("metadata", "labels", KUBERNETES_EXECUTOR_LABEL),
    ("metadata", "labels", POD_REVOKED_LABEL),
    ("metadata", "labels", WORKLOAD_TYPE_LABEL),
    ("metadata", "annotations"),
    ("metadata", "annotations", "dag_id"),
    ("metadata", "annotations", "try_number"),
    ("metadata", "annotations", "map_index"),
    ("metadata", "annotations", "run_id"),
    ("metadata", "annotations", "callback_id"),
    ("metadata", "annotations", "logical_date"),
    ("status",),
    ("status", "phase"),
    ("status", "reason"),
    ("status", "message"),
    ("status", "conditions"),
    ("status", "conditions", 0, "type"),
    ("status", "conditions", 0, "reason"),
    ("status", "containerStatuses"),
    ("status", "containerStatuses", 0, "name"),
    ("status", "containerStatuses", 0, "state"),
    ("status", "containerStatuses", 0, "state", "terminated"),
    ("status", "containerStatuses", 0, "state", "terminated", "exitCode"),
    ("status", "containerStatuses", 0, "state", "terminated", "reason"),
    ("status", "containerStatuses", 0, "state", "waiting", "reason"),
    ("status", "containerStatuses", 0, "lastState", "terminated", "reason"),
    ("status", "initContainerStatuses", 0, "state", "waiting", "message"),
    ("status", "ephemeralContainerStatuses", 0, "state", "terminated", "reason"),
]
"""Paths to fields the typed decoding reads, each with its one API type."""

_LABELS_READ = frozenset({POD_REVOKED_LABEL, KUBERNETES_EXECUTOR_LABEL, WORKLOAD_TYPE_LABEL})


def _is_api_type(path: tuple[str | int, ...], value: object) -> bool:
    leaf = path[-1]
    if leaf in {"labels", "annotations"}:
        # Only the labels and annotations the rules read are typed; the rest are skipped.
        read = _LABELS_READ if leaf == "labels" else ANNOTATIONS_READ
        return isinstance(value, dict) and all(
            isinstance(v, str) for k, v in value.items() if k in read
        )
    if leaf == "exitCode":
        return isinstance(value, int) and not isinstance(value, bool)
    if leaf in {"status", "state", "terminated"}:
        return isinstance(value, dict)
    if leaf in {"conditions", "containerStatuses"}:
        return isinstance(value, list) and not value
    return isinstance(value, str)


def _put(pod: dict[str, Any], path: tuple[str | int, ...], value: object) -> None:
    """Set ``value`` at ``path``, making the dicts and one-item lists on the way."""
    node: Any = pod
    for step, following in itertools.pairwise(path):
        if isinstance(step, int):
            while len(node) <= step:
                node.append({})
            if not isinstance(node[step], dict):
                node[step] = {}
            node = node[step]
            continue
        child = node.get(step)
        wanted = list if isinstance(following, int) else dict
        if not isinstance(child, wanted) or (wanted is list and not child):
            child = [] if wanted is list else {}
            node[step] = child
        node = child
    node[path[-1]] = value


@given(
    event_type=st.sampled_from(EVENT_TYPES),
    pod=cluster_pods(),
    path=st.sampled_from(_TYPED_FIELDS),
    value=_ODD_TYPED,
    config=configs(),
    now=aware_nows,
)
def test_odd_typed_fields_fall_back_to_the_total_path(  # noqa: PLR0917 - the drawn inputs
    event_type: str,
    pod: dict[str, Any],
    path: tuple[str | int, ...],
    value: object,
    config: ResolverConfig,
    now: datetime.datetime | None,
) -> None:
    _put(pod, path, value)
    text = json.dumps({"type": event_type, "object": pod})
    odd = not _is_api_type(path, value)
    event("odd" if odd else "of its type")
    expected = _full(text, config, now)
    decoded = decode_pod_event(text)
    if odd and path[:2] != ("status", "conditions"):
        assert decoded is None  # the typed decoding does not take it
    elif odd and decoded is not None and config.pending is None:
        # Conditions are decoded when a rule reads them: odd ones send the event to the
        # total path then, and change nothing for the events whose rules never read them.
        typed = resolve_typed_event(decoded, config=config, now=now)
        assert typed is None or typed == expected
    assert resolve_event_json(text, config=config, now=now) == expected


@pytest.mark.parametrize(
    "conditions",
    [5, "x", {"type": "DisruptionTarget"}, [{"type": 1}], [{"status": True}], [[]], [None]],
)
@pytest.mark.parametrize("reason", [None, "ProviderFailed"])
def test_odd_conditions_are_read_by_the_total_path_when_a_rule_reads_them(
    conditions: object, reason: str | None
) -> None:
    failed = dict(copy.deepcopy(FAILED), conditions=conditions)
    running = dict(copy.deepcopy(RUNNING), conditions=conditions)
    if reason is not None:
        failed["reason"] = running["reason"] = reason
    for status, read in ((failed, True), (running, reason is not None)):
        text = json.dumps({"type": "MODIFIED", "object": task_pod(status)})
        decoded = decode_pod_event(text)
        assert decoded is not None  # the conditions are left as their JSON text
        typed = resolve_typed_event(decoded, config=ResolverConfig(), now=None)
        # Classifying a failure reads them: an odd value sends the event to the total path.
        assert (typed is None) == read
        assert resolve_event_json(text) == _full(text, ResolverConfig(), None)


@given(
    event_type=st.sampled_from(EVENT_TYPES),
    pod=cluster_pods(),
    where=st.sampled_from(["labels", "annotations"]),
    name=st.sampled_from(["team", "prometheus.io/scrape", "dag_id ", "Run_id"]),
    value=st.one_of(  # JSON values msgspec takes (no infinities), null among them
        st.none(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
        st.lists(st.integers(), max_size=2),
        st.text(max_size=5),
    ),
    config=configs(),
    now=aware_nows,
)
def test_unread_labels_and_annotations_of_any_type_stay_on_the_typed_path(  # noqa: PLR0917
    event_type: str,
    pod: dict[str, Any],
    where: str,
    name: str,
    value: object,
    config: ResolverConfig,
    now: datetime.datetime | None,
) -> None:
    typed = decode_pod_event(json.dumps({"type": event_type, "object": pod})) is not None
    pod["metadata"][where][name] = value
    text = json.dumps({"type": event_type, "object": pod})
    # What the rules never read is skipped: it does not change which path reads the pod.
    assert (decode_pod_event(text) is not None) == typed
    assert resolve_event_json(text, config=config, now=now) == _full(text, config, now)


@pytest.mark.parametrize(
    "text",
    [
        '{"type": "MODIFIED", "object": {"metadata": {"name": "\\ud800"}}}',
        '{"type": "MODIFIED", "object": {"metadata": {}, "status": {"phase": NaN}}}',
        '\ufeff{"type": "ADDED", "object": {"metadata": {}}}',
        '{"type": "ADDED", "object": {"metadata": {}}} trailing',
        (
            '{"type": "ADDED", "object": {"metadata": {}, "status": {"phase": "Failed",'
            ' "containerStatuses": [{"state": {"terminated": {"exitCode": 1.0}}}]}}}'
        ),
        '{"type": "ADDED", "type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}',
        '{"type": "ERROR", "object": {"kind": "Status", "code": 410}}',
        "",
        "not json",
        # A lone surrogate itself, not its escape: a str UTF-8 cannot encode.
        '{"type": "MODIFIED", "object": {"metadata": {"name": "\ud800"}}}',
        '{"type": "MODIFIED", "object": {"metadata": {}}, "x": "\udfff"}',
    ],
)
def test_odd_json_text_resolves_as_its_full_decoding(text: str) -> None:
    assert resolve_event_json(text) == _full(text, ResolverConfig(), None)
    if _full(text, ResolverConfig(), None).reason.startswith("not JSON"):
        with pytest.raises(ValueError, match=r"."):
            decode_event(text)
    else:
        assert resolve_event(decode_event(text)) == _full(text, ResolverConfig(), None)
    # json.loads reads bytes as UTF-8, -16 or -32, a byte-order mark and encoded surrogates
    # included: the bytes resolve as json.loads of the same bytes.
    data = text.encode("utf-8", "surrogatepass")
    assert resolve_event_json(data) == _full(data, ResolverConfig(), None)


# --- generic workloads (issue 30, item 5): key -> pod -> watch event -> key, no Airflow ------

_GENERIC_OUTCOMES = {
    PodFate.SUCCEEDED: (Outcome.SUCCEEDED, CallbackState.SUCCESS),
    PodFate.FAILED: (Outcome.FAILED, CallbackState.FAILED),
    PodFate.OOM_KILLED: (Outcome.FAILED, CallbackState.FAILED),
    PodFate.EVICTED: (Outcome.FAILED, CallbackState.FAILED),
    PodFate.RUNNING: (Outcome.RUNNING, CallbackState.RUNNING),
}


@given(cluster_events(keys=generic_keys()))
def test_a_generic_workloads_pod_resolves_to_its_key_with_no_airflow_version(
    drawn: ClusterEvent,
) -> None:
    config = ResolverConfig()  # no Airflow version: what an executor without Airflow has
    text = json.dumps(drawn.event)
    for resolution in (
        resolve_event(drawn.event, config=config),
        resolve_event_json(text, config=config),
        resolve_event(decode_event(text), config=config),
    ):
        assert resolution.key == drawn.pod.key
        expected = _GENERIC_OUTCOMES.get(drawn.pod.fate)
        if expected is not None and drawn.type != "DELETED":
            assert (resolution.outcome, resolution.state) == expected
        result = resolution.to_result()
        if result is not None:
            assert isinstance(result, GenericResult)
            assert result.key == drawn.pod.key


@given(
    st.one_of(
        st.just(""),
        st.text(min_size=GENERIC_ID_MAX_LENGTH + 1, max_size=GENERIC_ID_MAX_LENGTH + 5),
        st.text(min_size=1, max_size=20).map(lambda text: f"{text}\n"),
        st.sampled_from(["\u2028", "a\u202eb", "\x00"]),
    )
)
def test_a_pod_naming_no_valid_generic_id_is_undecodable_naming_the_annotation(bad: str) -> None:
    pod = {
        "metadata": {
            "name": "p",
            "labels": {KUBERNETES_EXECUTOR_LABEL: "True", WORKLOAD_TYPE_LABEL: "generic"},
            "annotations": {"workload_id": bad},
        },
        "status": {"phase": "Running"},
    }
    event_data = {"type": "MODIFIED", "object": pod}
    for resolution in (
        resolve_event(event_data),
        resolve_event_json(json.dumps(event_data)),
    ):
        assert resolution.outcome is Outcome.UNDECODABLE
        assert resolution.key is None
        assert "workload_id: GenericKey.id must" in resolution.reason
