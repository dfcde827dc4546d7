"""Workload keys as the CLI prints them (:mod:`k8s_workloads.cli._keys`)."""

from __future__ import annotations

from hypothesis import given

from k8s_workloads.cli._keys import key_to_json, key_to_text
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey, key_from_json
from k8s_workloads.testing.strategies import workload_keys


def test_a_key_prints_on_one_line_and_no_key_as_a_dash() -> None:
    key = TaskInstanceKey("etl", "load", "r1", try_number=2, map_index=3)
    assert key_to_text(key) == "task etl.load run=r1 try=2 map=3"
    assert key_to_text(CallbackKey("019ea001-0000-7000-8000-0000000000aa")) == (
        "callback 019ea001-0000-7000-8000-0000000000aa"
    )
    assert key_to_text(None) == "-"


@given(workload_keys())
def test_a_keys_json_reads_back_to_the_key(key: WorkloadKey) -> None:
    printed = key_to_json(key)
    assert printed["kind"] in {"task", "callback"}
    assert key_from_json(printed) == key
