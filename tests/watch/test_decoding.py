"""The typed decoding of a watch line: what it reads, what it skips, and the texts it
leaves to the full decoding (``json.loads``)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from k8s_workloads.watch.decoding import (
    UntypedFieldError,
    decode_conditions,
    decode_event,
    decode_pod_event,
    decode_spec_pod_event,
    status_as_builtins,
)
from tests.support.event_factory import event, task_pod, terminated


def line(kind: str = "MODIFIED", **pod_changes: Any) -> str:
    pod = task_pod({"phase": "Failed", "containerStatuses": [terminated("base", 1, "Error")]})
    pod["spec"] = {"containers": [{"name": "base", "args": ["run", "--token", "s3cret"]}]}
    pod["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    pod["metadata"]["labels"]["team"] = "data"
    pod.update(pod_changes)
    return json.dumps(event(kind, pod))


def test_a_pod_event_is_read_as_the_rules_read_it() -> None:
    text = line()
    decoded = decode_pod_event(text)
    assert decoded is not None
    assert decoded.type == "MODIFIED"
    assert decoded.object is not None
    metadata, status = decoded.object.metadata, decoded.object.status
    assert metadata is not None
    assert status is not None
    full = json.loads(text)["object"]
    assert metadata.name == full["metadata"]["name"]
    assert metadata.annotations is not None
    assert metadata.annotations.as_map() == full["metadata"]["annotations"]
    assert status.phase == "Failed"


def test_labels_no_rule_reads_are_skipped_unread() -> None:
    decoded = decode_pod_event(line())
    assert decoded is not None
    assert decoded.object is not None
    assert decoded.object.metadata is not None
    labels = decoded.object.metadata.labels
    assert labels is not None
    assert "team" not in labels.as_map()
    assert labels.as_map()["kubernetes_executor"] == "True"


def test_a_read_field_of_another_type_leaves_the_text_to_the_full_decoding() -> None:
    text = line(status={"phase": 3})
    assert decode_pod_event(text) is None
    decoded = decode_event(text)
    assert isinstance(decoded, dict)
    assert decoded["object"]["status"] == {"phase": 3}  # as it is: the rules say it is odd


def test_the_full_decoding_keeps_what_resolution_reads_and_drops_the_rest() -> None:
    decoded = decode_event(line())
    assert isinstance(decoded, dict)
    obj = decoded["object"]
    assert "spec" not in obj
    assert "managedFields" not in obj["metadata"]
    assert obj["status"]["phase"] == "Failed"


def test_text_that_is_not_json_raises_as_json_loads_does() -> None:
    with pytest.raises(ValueError, match="Expecting"):
        decode_event('{"type": ')
    assert decode_pod_event('{"type": ') is None


def test_conditions_are_decoded_only_when_read_and_checked_then() -> None:
    good = decode_pod_event(line(status={"phase": "Pending", "conditions": [{"type": "Ready"}]}))
    assert good is not None
    assert good.object is not None
    assert good.object.status is not None
    assert [condition.type for condition in decode_conditions(good.object.status)] == ["Ready"]
    bad = decode_pod_event(line(status={"phase": "Pending", "conditions": [{"type": 1}]}))
    assert bad is not None  # taken: the conditions wait until a rule reads them
    assert bad.object is not None
    assert bad.object.status is not None
    with pytest.raises(UntypedFieldError, match=r"status\.conditions"):
        decode_conditions(bad.object.status)
    with pytest.raises(UntypedFieldError):
        status_as_builtins(bad.object.status)


def test_the_spec_decoding_keeps_the_containers_args_for_masking() -> None:
    decoded = decode_spec_pod_event(line())
    assert decoded is not None
    view = decoded.masking_view()
    assert view["object"]["spec"]["containers"][0]["args"] == ["run", "--token", "s3cret"]
    no_spec = decode_spec_pod_event(json.dumps({"type": "ADDED", "object": {}}))
    assert no_spec is not None
    assert no_spec.masking_view() == {"type": "ADDED", "object": {}}


def test_duplicate_keys_keep_the_last_value_as_json_loads_does() -> None:
    text = '{"type": "ADDED", "type": "DELETED", "object": {"metadata": {"name": "a"}}}'
    decoded = decode_pod_event(text)
    assert decoded is not None
    assert decoded.type == json.loads(text)["type"] == "DELETED"
    assert msgspec.json.decode(text)["type"] == "DELETED"
