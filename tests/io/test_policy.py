"""The shared answer policy (:mod:`k8s_workloads.io.policy`): what a failed call means,
the label patch every client sends, and lists read in pages."""

from __future__ import annotations

from typing import Any

import pytest

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor import DeleteSecret
from k8s_workloads.io.policy import (
    LIST_RESTARTS,
    Paging,
    error_status,
    failure_is_done,
    label_patch,
)
from k8s_workloads.keys import TaskInstanceKey
from k8s_workloads.states import TaskInstanceState
from k8s_workloads.testing import ApiError

NS = "airflow"


@pytest.mark.parametrize(
    ("request_", "status", "done"),
    [
        (DeletePod("p", NS), 404, True),
        (DeleteSecret("s", NS), 404, True),
        (PatchLabels("p", NS, {"a": "b"}), 404, True),
        (PatchLabels("p", NS, {"a": "b"}, "12"), 404, False),  # an adoption took nothing
        (PatchLabels("p", NS, {"a": "b"}, "12"), 409, False),
        (PatchLabels("p", NS, {"a": "b"}, expect={"a": "c"}), 404, False),
        (PatchLabels("p", NS, {"a": "b"}, expect={"a": "c"}), 422, False),  # a rival took it
        (DeletePod("p", NS), 409, False),
        (DeletePod("p", NS), 500, False),
        (EmitEvent(TaskInstanceKey("d", "t", "r", 1), TaskInstanceState.SUCCESS), 404, False),
    ],
)
def test_a_failure_is_done_only_where_the_table_says(
    request_: Any,
    status: int,
    done: bool,
) -> None:
    assert failure_is_done(request_, ApiError(status, "x")) is done
    assert failure_is_done(request_, ConnectionResetError()) is False


def test_a_guarded_relabel_is_a_json_patch_testing_the_owner_first() -> None:
    # Issue 19, item 2: RFC 6902, the tests before the changes (all or nothing), label
    # keys escaped as RFC 6901 pointers.
    request = PatchLabels(
        "p",
        NS,
        {"airflow-worker": "3", "example.com/adopted~by": "k8s"},
        expect={"airflow-worker": "1"},
    )
    assert label_patch(request) == [
        {"op": "test", "path": "/metadata/labels/airflow-worker", "value": "1"},
        {"op": "replace", "path": "/metadata/labels/airflow-worker", "value": "3"},
        {"op": "add", "path": "/metadata/labels/example.com~1adopted~0by", "value": "k8s"},
    ]
    both = PatchLabels("p", NS, {"a": "b"}, "12", expect={"a": "c"})
    patch = label_patch(both)
    assert isinstance(patch, list)
    assert patch[:2] == [
        {"op": "test", "path": "/metadata/labels/a", "value": "c"},
        {"op": "test", "path": "/metadata/resourceVersion", "value": "12"},
    ]
    # Without expect: the merge patch, as before (conditional on the version if given).
    assert label_patch(PatchLabels("p", NS, {"a": "b"}, "12")) == {
        "metadata": {"labels": {"a": "b"}, "resourceVersion": "12"}
    }
    assert not PatchLabels("p", NS, {"a": "b"}, expect={}).conditional


def test_paging_follows_tokens_and_starts_again_a_bounded_number_of_times() -> None:
    paging = Paging({"_request_timeout": 5}, label_selector="a=b", page_size=2)
    assert paging.query() == {"_request_timeout": 5, "limit": 2, "label_selector": "a=b"}
    paging.take({"items": [{"n": 1}, {"n": 2}], "metadata": {"continue": "t1"}})
    assert paging.query() == {
        "_request_timeout": 5,
        "limit": 2,
        "label_selector": "a=b",
        "_continue": "t1",
    }
    assert not paging.expired(ApiError(500, "x"))  # not an expired token: raised
    for _ in range(LIST_RESTARTS):
        assert paging.expired(ApiError(410, "Expired"))  # a whole new list
        assert paging.query() == {"_request_timeout": 5, "limit": 2, "label_selector": "a=b"}
        paging.take({"items": [{"n": 1}], "metadata": {"continue": "t2"}})
    assert not paging.expired(ApiError(410, "Expired"))  # restarts used up: raised
    paging.take({"items": [{"n": 3}], "metadata": {"resourceVersion": "9"}})
    assert paging.query() is None
    assert paging.result == ([{"n": 1}, {"n": 3}], "9")


def test_a_410_on_the_first_page_is_not_an_expired_token() -> None:
    paging = Paging({})
    assert not paging.expired(ApiError(410, "Expired"))


def test_a_paging_without_a_page_size_reads_the_list_in_one_call() -> None:
    paging = Paging({}, label_selector="a=b", field_selector="status.phase=Running", page_size=None)
    assert paging.query() == {"label_selector": "a=b", "field_selector": "status.phase=Running"}
    paging.take({"items": [{"n": 1}], "metadata": {"resourceVersion": "4"}})
    assert paging.query() is None
    assert paging.result == ([{"n": 1}], "4")


def test_an_error_status_is_an_integer_status_or_none() -> None:
    assert error_status(ApiError(409, "Conflict")) == 409
    assert error_status(ConnectionResetError()) is None

    class Odd(Exception):
        status = True  # a bool is not an HTTP status

    assert error_status(Odd()) is None
