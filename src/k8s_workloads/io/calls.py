"""Which API calls a request makes, without I/O: written once for every client.

A :class:`CallPlan` turns one of the core's requests into :class:`ApiCall` values (the
Secret before its pod; a list page by page, started again when a continue token expired)
and collects the answer the core needs. Each client module only makes the calls
(:func:`on_core_v1` for both ``kubernetes`` clients, the kit's own mapping for the
:class:`~k8s_workloads.testing.FakeCluster`) and reads their bodies::

    plan = CallPlan(request, request_args=args, delete_options=options, page_size=500)
    for call in plan:
        try:
            plan.take(read_body(on_core_v1(api, call)))
        except ApiException as error:
            if not plan.recovered(error):
                raise
    answer = plan.result

A failed call goes to :meth:`CallPlan.recovered` (the policy's rules on what is no failure
of the request). State reads and events are the caller's (``read_states``, ``emit``): a
plan runs them itself and makes no call; without them such a request is a
:class:`TypeError`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

import attrs

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor.requests import CreatePod, DeleteSecret, ListPods, ReadPod, ReadStates
from k8s_workloads.io.policy import PAGE_SIZE, Paging, error_status, label_patch
from k8s_workloads.pods.labels import PodSelector

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from k8s_workloads.decisions.adoption import AdoptionPlan
    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.executor.requests import Request
    from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey, WorkloadKey

__all__ = [
    "ApiCall",
    "CallPlan",
    "CoreV1Client",
    "Listing",
    "ListsPods",
    "PlansAdoption",
    "list_request",
    "on_core_v1",
]

R = TypeVar("R")

Listing = tuple[list[dict[str, Any]], "str | None"]
"""A list's answer: the pods and the list's resource version."""


@attrs.frozen
class ApiCall:
    """One call of the pod and Secret API: ``verb`` on ``resource``, with the path's
    ``namespace`` (None: a list of every namespace) and ``name``, the ``body``, and the
    client's keyword arguments (a list's query, the request arguments, a delete's
    ``body`` options)."""

    verb: Literal["create", "delete", "patch", "list", "read"]
    resource: Literal["pod", "secret"]
    namespace: str | None
    name: str | None = None
    body: Any = None
    kwargs: Mapping[str, Any] = attrs.field(factory=dict)


class CallPlan:
    """The calls one request makes, in order, and the answer for the core (``result``:
    a list's ``(pods, resource_version)``, a state read's states, else None).

    Iterate it for the next call; give each call's answer to :meth:`take` (a list page's
    or a read pod's body, as bytes or as the decoded document) and a failed call to
    :meth:`recovered`.
    """

    def __init__(
        self,
        request: Request,
        *,
        request_args: Mapping[str, Any] | None = None,
        delete_options: Mapping[str, Any] | None = None,
        page_size: int | None = PAGE_SIZE,
        read_states: Callable[[ReadStates], object] | None = None,
        emit: Callable[[EmitEvent], None] | None = None,
        client: str = "Kubernetes",
    ) -> None:
        self.request = request
        self.result: object = None
        self._args = dict(request_args or {})
        self._delete_options = dict(delete_options or {})
        self._page_size = page_size
        self._read_states = read_states
        self._emit = emit
        self._client = client
        self._paging: Paging | None = None
        self._current: ApiCall | None = None

    def __iter__(self) -> Iterator[ApiCall]:
        request, args = self.request, self._args
        if isinstance(request, EmitEvent) and self._emit is not None:
            self._emit(request)
        elif isinstance(request, ReadStates) and self._read_states is not None:
            self.result = self._read_states(request)
        elif isinstance(request, CreatePod):
            if request.secret is not None:  # the Secret before its pod, in one task
                self._current = ApiCall(
                    "create", "secret", request.namespace, body=request.secret, kwargs=args
                )
                yield self._current
            self._current = None
            yield ApiCall("create", "pod", request.namespace, body=request.pod, kwargs=args)
        elif isinstance(request, ReadPod):
            self._current = ApiCall("read", "pod", request.namespace, request.pod_name, kwargs=args)
            yield self._current
        elif isinstance(request, DeletePod):
            options = {**args, "body": self._delete_options or None}
            yield ApiCall("delete", "pod", request.namespace, request.pod_name, kwargs=options)
        elif isinstance(request, DeleteSecret):
            yield ApiCall("delete", "secret", request.namespace, request.name, kwargs=args)
        elif isinstance(request, PatchLabels):
            # A list body (a guarded relabel) is a JSON patch: the clients send it as
            # application/json-patch+json, a dict as a strategic merge patch.
            patch = label_patch(request)
            yield ApiCall("patch", "pod", request.namespace, request.pod_name, patch, args)
        elif isinstance(request, ListPods):
            yield from self._pages(request)
        else:
            raise TypeError(f"{type(request).__name__} is not a {self._client} call")

    def _pages(self, request: ListPods) -> Iterator[ApiCall]:
        self._paging = paging = Paging(
            self._args,
            label_selector=request.selector.label_selector,
            field_selector=request.selector.field_selector,
            page_size=self._page_size,
        )
        while (query := paging.query()) is not None:
            yield ApiCall("list", "pod", request.namespace, kwargs=query)
        self.result = paging.result

    def take(self, answer: bytes | Mapping[str, Any] | None) -> None:
        """The answer of the call just made (read only for a list page or a read pod)."""
        if self._paging is not None:
            self._paging.take(json.loads(answer) if isinstance(answer, bytes) else answer or {})
        elif isinstance(self.request, ReadPod):
            self.result = json.loads(answer) if isinstance(answer, bytes) else answer

    def recovered(self, error: BaseException) -> bool:
        """Whether the failed call is no failure of the request (keep iterating); False:
        raise ``error``. A list page whose continue token expired (the list starts
        again); a resent creation's Secret that exists (the first send made it); a read
        pod that is not found (the answer is None)."""
        if self._paging is not None:
            return self._paging.expired(error)
        current = self._current
        if current is None or error_status(error) is None:
            return False
        if current.verb == "read":
            return error_status(error) == 404
        return (
            current.resource == "secret"
            and isinstance(self.request, CreatePod)
            and self.request.resend
            and error_status(error) == 409
        )


def on_core_v1(api: Any, call: ApiCall) -> Any:  # noqa: ANN401 - CoreV1Api, untyped
    """Make ``call`` with a ``CoreV1Api`` of either ``kubernetes`` client (the
    ``kubernetes_asyncio`` one answers with a coroutine): the same method names and
    argument order."""
    if call.verb == "list":
        if call.namespace is None:
            return api.list_pod_for_all_namespaces(**call.kwargs)
        return api.list_namespaced_pod(call.namespace, **call.kwargs)
    method = getattr(api, f"{call.verb}_namespaced_{call.resource}")
    if call.verb == "create":
        return method(call.namespace, call.body, **call.kwargs)
    if call.verb == "patch":
        return method(call.name, call.namespace, call.body, **call.kwargs)
    return method(call.name, call.namespace, **call.kwargs)


class CoreV1Client(Generic[R]):
    """What the calls of both ``kubernetes`` clients keep (``api``, a ``CoreV1Api``;
    ``request_args``, keyword arguments every call takes, e.g. ``_request_timeout``;
    ``delete_options``, the ``DeleteOptions`` body of pod deletions; ``page_size``) and
    do: a request's :class:`CallPlan`, made by the client's ``_run`` (``R``: its answer,
    or an awaitable of it)."""

    def __init__(
        self,
        api: Any,  # noqa: ANN401 - either client's CoreV1Api (untyped)
        *,
        request_args: Mapping[str, Any] | None = None,
        delete_options: Mapping[str, Any] | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.api = api
        self.request_args = {**(request_args or {}), "_preload_content": False}
        self.delete_options = dict(delete_options or {})
        self.page_size = page_size

    def plan(
        self,
        request: Request,
        read_states: Callable[[ReadStates], object] | None = None,
        emit: Callable[[EmitEvent], None] | None = None,
    ) -> CallPlan:
        """``request``'s calls with this client's settings."""
        return CallPlan(
            request,
            request_args=self.request_args,
            delete_options=self.delete_options,
            page_size=self.page_size,
            read_states=read_states,
            emit=emit,
        )

    def perform(self, request: Request) -> R:
        """Perform a pod or Secret request, or a list (``(pods, resource_version)``).

        Raises the client's errors (its ``FAILURES``); what a 404 means is the policy's
        (:func:`~k8s_workloads.io.policy.failure_is_done`), decided by the driver.
        """
        return self._run(self.plan(request))

    def performer(
        self,
        *,
        read_states: Callable[[ReadStates], object],
        emit: Callable[[EmitEvent], None],
    ) -> Callable[[Request], R]:
        """One ``perform`` for every request: the database's and the scheduler's parts
        (state reads, events: plain functions) are the caller's, the rest goes to the API."""
        return lambda request: self._run(self.plan(request, read_states, emit))

    def _run(self, plan: CallPlan) -> R:
        raise NotImplementedError


def list_request(
    namespace: str | None, label_selector: str | None, field_selector: str | None
) -> ListPods:
    """A ``list_pods`` call's arguments as the core's request."""
    return ListPods(namespace, PodSelector(label_selector or "", field_selector))


class ListsPods:
    """``list_pods`` for calls whose ``perform`` answers at once (not a coroutine)."""

    def perform(self, request: Request) -> object:
        raise NotImplementedError

    def list_pods(
        self,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Listing:
        """Every pod matching the selectors (``namespace`` None: all), read in pages where
        the client pages, and the list's resource version. An expired continue token
        starts the list again."""
        return cast(
            "Listing", self.perform(list_request(namespace, label_selector, field_selector))
        )


class PlansAdoption:
    """``plan_adoption`` for a driver of ``core``: the adoption's pure part, between
    listing what the core's adoption lists name and performing the relabels."""

    core: ExecutorCore

    def plan_adoption(
        self,
        listings: Iterable[object],
        alive_scheduler_ids: list[str | int],
        expected_task_keys: Iterable[TaskInstanceKey] | None,
        expected_callback_keys: Iterable[CallbackKey] | None,
        expected_generic_keys: Iterable[GenericKey] | None = None,
        *,
        dead_scheduler_ids: Iterable[str | int] = (),
    ) -> tuple[AdoptionPlan, list[WorkloadKey]]:
        """The core's adoption of the pods in ``listings`` (the answers to its
        :meth:`~k8s_workloads.executor.ExecutorCore.adoption_lists`, each a
        :data:`Listing`), and every key expected: a driver's ``adopt`` performs the
        relabels, then asks the core."""
        tasks = None if expected_task_keys is None else list(expected_task_keys)
        callbacks = None if expected_callback_keys is None else list(expected_callback_keys)
        generic = None if expected_generic_keys is None else list(expected_generic_keys)
        pods = [pod for listing in listings for pod in cast("Listing", listing)[0]]
        plan = self.core.adopt(
            pods,
            alive_scheduler_ids=alive_scheduler_ids,
            expected_task_keys=tasks,
            expected_callback_keys=callbacks,
            expected_generic_keys=generic,
            dead_scheduler_ids=dead_scheduler_ids,
        )
        return plan, [*(tasks or ()), *(callbacks or ()), *(generic or ())]
