"""The pod view the failure rules read: a manifest's status read into typed structs, a
value of the wrong type read as absent, and the same view as the typed watch decoding."""

from __future__ import annotations

import json

from k8s_workloads.watch._podstatus import (
    Condition,
    ContainerState,
    ContainerStatus,
    Terminated,
    Waiting,
    read_conditions,
    read_status,
)
from k8s_workloads.watch.decoding import decode_pod_event
from tests.support.event_factory import event, task_pod, terminated, waiting

STATUS = {
    "phase": "Failed",
    "reason": "Evicted",
    "initContainerStatuses": [waiting("init", "ErrImagePull", "no such image")],
    "containerStatuses": [terminated("base", 137, "OOMKilled")],
}


def test_a_manifest_status_reads_field_by_field() -> None:
    status = read_status(STATUS)
    assert (status.phase, status.reason, status.message) == ("Failed", "Evicted", None)
    assert status.initContainerStatuses == [
        ContainerStatus("init", ContainerState(None, Waiting("ErrImagePull", "no such image")))
    ]
    assert status.containerStatuses is not None
    state = status.containerStatuses[0].state
    assert state == ContainerState(Terminated("OOMKilled", 137, None), None)


def test_a_value_of_the_wrong_type_reads_as_absent() -> None:
    status = read_status(
        {
            "phase": 3,
            "reason": ["x"],
            "containerStatuses": [
                "not a container",
                {"name": 7, "state": {"terminated": {"exitCode": True, "reason": 1}}},
            ],
            "ephemeralContainerStatuses": {"not": "a list"},
        }
    )
    assert (status.phase, status.reason) == (None, None)
    assert status.ephemeralContainerStatuses is None
    assert status.containerStatuses == [
        ContainerStatus(),
        ContainerStatus(None, ContainerState(Terminated(None, None, None), None)),
    ]


def test_conditions_read_apart_and_odd_entries_read_empty() -> None:
    conditions = read_conditions(
        {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": 5}, "x"]}
    )
    assert conditions == [Condition("DisruptionTarget", "True", None), Condition()]
    assert read_conditions({"conditions": "none"}) == []
    assert read_conditions({}) == []


def test_the_dict_path_and_the_typed_decoding_give_the_same_view() -> None:
    text = json.dumps(event("MODIFIED", task_pod(STATUS)))
    decoded = decode_pod_event(text)
    assert decoded is not None
    assert decoded.object is not None
    typed = decoded.object.status
    assert typed is not None
    from_dict = read_status(json.loads(text)["object"]["status"])
    for field in ("phase", "reason", "message", "initContainerStatuses", "containerStatuses"):
        assert getattr(typed, field) == getattr(from_dict, field), field
