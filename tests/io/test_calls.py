"""Which calls a request makes (:mod:`k8s_workloads.io.calls`), written once for every
client: the plan of each request, list pages and their restarts, the caller's own
requests, and the ``CoreV1Api`` method each call is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import pytest

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor import CreatePod, DeleteSecret, ListPods, ReadStates
from k8s_workloads.io.calls import ApiCall, CallPlan, PlansAdoption, on_core_v1
from k8s_workloads.io.policy import LIST_RESTARTS
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods.labels import PodSelector
from k8s_workloads.states import TaskInstanceState
from k8s_workloads.testing import ApiError

if TYPE_CHECKING:
    from k8s_workloads.executor.core import ExecutorCore

NS = "airflow"
KEY = TaskInstanceKey("etl", "t", "manual__1", 1)
ARGS = {"_request_timeout": 5}


def calls(plan: CallPlan) -> list[ApiCall]:
    made = []
    for call in plan:
        made.append(call)
        plan.take(None)
    return made


def test_a_secret_is_created_before_its_pod() -> None:
    secret = {"metadata": {"name": "s1"}}
    pod = {"metadata": {"name": "p1"}}
    made = calls(CallPlan(CreatePod(KEY, NS, pod, secret), request_args=ARGS))
    assert [(call.verb, call.resource, call.body) for call in made] == [
        ("create", "secret", secret),
        ("create", "pod", pod),
    ]
    assert all(call.kwargs == ARGS for call in made)
    assert [call.resource for call in calls(CallPlan(CreatePod(KEY, NS, pod, None)))] == ["pod"]


def test_only_a_pod_deletion_sends_the_delete_options() -> None:
    options = {"gracePeriodSeconds": 0}
    (pod,) = calls(CallPlan(DeletePod("p", NS), delete_options=options))
    (secret,) = calls(CallPlan(DeleteSecret("s", NS), delete_options=options))
    assert (pod.name, pod.kwargs) == ("p", {"body": options})
    assert (secret.name, secret.kwargs) == ("s", {})
    (bare,) = calls(CallPlan(DeletePod("p", NS)))
    assert bare.kwargs == {"body": None}  # no options: the client sends no body


def test_a_guarded_relabel_is_a_patch_with_a_list_body() -> None:
    (call,) = calls(CallPlan(PatchLabels("p", NS, {"a": "b"}, expect={"a": "c"})))
    assert (call.verb, call.name) == ("patch", "p")
    assert isinstance(call.body, list)
    assert call.body[0] == {"op": "test", "path": "/metadata/labels/a", "value": "c"}


def test_a_list_follows_its_pages_and_starts_again_when_a_token_expires() -> None:
    plan = CallPlan(ListPods(NS, PodSelector("a=b")), page_size=2)
    pages: Iterator[ApiError | bytes | dict[str, Any]] = iter(
        [
            {"items": [{"n": 1}, {"n": 2}], "metadata": {"continue": "t1"}},
            ApiError(410, "Expired"),
            {"items": [{"n": 1}, {"n": 2}], "metadata": {"continue": "t2"}},
            b'{"items": [{"n": 3}], "metadata": {"resourceVersion": "7"}}',
        ]
    )
    queries = []
    for call in plan:
        queries.append(dict(call.kwargs))
        page = next(pages)
        if isinstance(page, ApiError):
            assert plan.recovered(page)
        else:
            plan.take(page)
    assert [query.get("_continue") for query in queries] == [None, "t1", None, "t2"]
    assert queries[0] == {"limit": 2, "label_selector": "a=b"}
    assert plan.result == ([{"n": 1}, {"n": 2}, {"n": 3}], "7")


def test_a_list_that_keeps_expiring_is_given_up_and_other_errors_are_never_retried() -> None:
    plan = CallPlan(ListPods(None, PodSelector("")), page_size=1)
    restarts = 0
    for call in plan:
        assert call.namespace is None  # every namespace
        if call.kwargs.get("_continue") is None:
            plan.take({"items": [{}], "metadata": {"continue": "t"}})
            continue
        if not plan.recovered(ApiError(410, "Expired")):
            break
        restarts += 1
    assert restarts == LIST_RESTARTS
    assert not CallPlan(DeletePod("p", NS)).recovered(ApiError(410, "Expired"))  # not a list


def test_state_reads_and_events_are_the_callers_and_make_no_call() -> None:
    read = ReadStates((KEY,))
    event = EmitEvent(KEY, TaskInstanceState.SUCCESS)
    emitted: list[EmitEvent] = []
    plan = CallPlan(
        read,
        read_states=lambda request: dict.fromkeys(request.keys, "running"),
        emit=emitted.append,
    )
    assert calls(plan) == []
    assert plan.result == {KEY: "running"}
    assert calls(CallPlan(event, emit=emitted.append)) == []
    assert emitted == [event]


@pytest.mark.parametrize("request_", [ReadStates((KEY,)), EmitEvent(KEY, TaskInstanceState.FAILED)])
def test_without_the_callers_functions_such_a_request_is_a_type_error(request_: Any) -> None:
    with pytest.raises(TypeError, match=f"{type(request_).__name__} is not a cluster call"):
        calls(CallPlan(request_, client="cluster"))


class Recorder:
    """A ``CoreV1Api`` stand-in that records each method called and its arguments."""

    def __init__(self) -> None:
        self.made: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> str:
            self.made.append((method, args, kwargs))
            return method

        return call


def test_each_call_is_the_core_v1_method_with_its_arguments_in_the_clients_order() -> None:
    api = Recorder()
    for call in [
        ApiCall("create", "secret", NS, body={"s": 1}, kwargs=ARGS),
        ApiCall("delete", "pod", NS, "p", kwargs={"body": None}),
        ApiCall("patch", "pod", NS, "p", body=[{"op": "test"}]),
        ApiCall("list", "pod", NS, kwargs={"limit": 5}),
        ApiCall("list", "pod", None, kwargs={"limit": 5}),
    ]:
        on_core_v1(api, call)
    assert api.made == [
        ("create_namespaced_secret", (NS, {"s": 1}), ARGS),
        ("delete_namespaced_pod", ("p", NS), {"body": None}),
        ("patch_namespaced_pod", ("p", NS, [{"op": "test"}]), {}),
        ("list_namespaced_pod", (NS,), {"limit": 5}),
        ("list_pod_for_all_namespaces", (), {"limit": 5}),
    ]


class _AdoptingCore:
    """Stands in for the core: what ``adopt`` was given, and a plan to answer."""

    def __init__(self) -> None:
        self.given: dict[str, Any] = {}

    def adopt(self, pods: list[dict[str, Any]], **options: Any) -> str:
        self.given = {"pods": pods, **options}
        return "the plan"


def test_plan_adoption_gives_the_core_every_listed_pod_and_answers_every_key_expected() -> None:
    core = _AdoptingCore()
    planner = PlansAdoption()
    planner.core = cast("ExecutorCore", core)
    callback = CallbackKey("019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e")
    listings = [([{"metadata": {"name": "a"}}], "5"), ([{"metadata": {"name": "b"}}], "7")]
    plan, expected = planner.plan_adoption(
        listings, [2], iter([KEY]), iter([callback]), None, dead_scheduler_ids=[1]
    )
    assert cast("object", plan) == "the plan"
    assert expected == [KEY, callback]  # task keys, then callback keys (then generic ones)
    assert core.given == {
        "pods": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}],
        "alive_scheduler_ids": [2],
        "expected_task_keys": [KEY],  # the iterators read once, into lists
        "expected_callback_keys": [callback],
        "expected_generic_keys": None,
        "dead_scheduler_ids": [1],
    }
