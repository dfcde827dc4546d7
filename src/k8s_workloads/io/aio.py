"""``kubernetes_asyncio``: the core's requests as coroutines, many in flight on one event loop.

Install the ``asyncio`` extra (``k8s-workloads[asyncio]``). :class:`AsyncKubeCalls` is the
one place that maps requests to ``kubernetes_asyncio``'s ``CoreV1Api``;
:class:`AsyncDriver` drives a core with them, as :class:`~k8s_workloads.io.pool.PoolDriver`
does with threads::

    calls = AsyncKubeCalls(kubernetes_asyncio.client.CoreV1Api(api_client))
    driver = AsyncDriver(core, calls.performer(read_states=read, emit=emit))
    answer = await driver.run(now, seconds=1.0)   # Waiting or NothingToDo

The core is touched only by the coroutine that awaits :meth:`AsyncDriver.run`; requests
run as tasks on the same loop. Responses are read to their end and released (the
connector keeps the connections for reuse); lists are read in pages. What an answer means
is the shared policy's (:mod:`k8s_workloads.io.policy`).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client.exceptions import ApiException

from k8s_workloads.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor import (
    CreatePod,
    DeleteSecret,
    ListPods,
    NothingToDo,
    ReadStates,
    Request,
    Waiting,
)
from k8s_workloads.io.policy import (
    LIST_RESTARTS,
    PAGE_SIZE,
    error_status,
    report_answer,
    report_failure,
)

if TYPE_CHECKING:
    import datetime
    from collections.abc import Awaitable, Callable, Mapping

    from k8s_workloads.executor import ExecutorCore

__all__ = ["FAILURES", "AsyncDriver", "AsyncKubeCalls"]

FAILURES: tuple[type[BaseException], ...] = (ApiException, OSError, asyncio.TimeoutError)
"""What a failed ``kubernetes_asyncio`` call raises (aiohttp's connection errors are
``OSError``\\ s)."""


async def _drain(response: Any) -> bytes:  # noqa: ANN401 - aiohttp's ClientResponse
    """The whole body; the connection goes back to the connector, never left half read.

    Unread (``_preload_content=False``), an error answer is not raised by the client: it
    is raised here, as the ``ApiException`` the client raises otherwise.
    """
    try:
        data: bytes = await response.read()
    finally:
        response.release()
    status = response.status
    if not 200 <= status <= 299:
        error = ApiException(status=status, reason=response.reason)
        error.body = data
        error.headers = response.headers
        raise error
    return data


class AsyncKubeCalls:
    """Pod and Secret calls and lists through ``api`` (``kubernetes_asyncio``'s
    ``CoreV1Api``); ``request_args`` and ``delete_options`` as for
    :class:`~k8s_workloads.io.kube.KubeCalls`."""

    def __init__(
        self,
        api: Any,  # noqa: ANN401 - kubernetes_asyncio.client.CoreV1Api (untyped)
        *,
        request_args: Mapping[str, Any] | None = None,
        delete_options: Mapping[str, Any] | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.api = api
        self.request_args = {**(request_args or {}), "_preload_content": False}
        self.delete_options = dict(delete_options or {})
        self.page_size = page_size

    async def perform(self, request: Request) -> object:
        """Perform a pod or Secret request, or a list (``(pods, resource_version)``)."""
        api, extra = self.api, self.request_args
        if isinstance(request, CreatePod):
            if request.secret is not None:  # the Secret before its pod
                await _drain(
                    await api.create_namespaced_secret(request.namespace, request.secret, **extra)
                )
            await _drain(await api.create_namespaced_pod(request.namespace, request.pod, **extra))
        elif isinstance(request, DeletePod):
            body = self.delete_options or None
            await _drain(
                await api.delete_namespaced_pod(
                    request.pod_name, request.namespace, body=body, **extra
                )
            )
        elif isinstance(request, DeleteSecret):
            await _drain(
                await api.delete_namespaced_secret(request.name, request.namespace, **extra)
            )
        elif isinstance(request, PatchLabels):
            metadata: dict[str, Any] = {"labels": dict(request.labels)}
            if request.resource_version is not None:
                metadata["resourceVersion"] = request.resource_version
            body = {"metadata": metadata}
            await _drain(
                await api.patch_namespaced_pod(request.pod_name, request.namespace, body, **extra)
            )
        elif isinstance(request, ListPods):
            return await self.list_pods(
                request.namespace,
                label_selector=request.selector.label_selector,
                field_selector=request.selector.field_selector,
            )
        else:
            raise TypeError(f"{type(request).__name__} is not a Kubernetes call")
        return None

    def performer(
        self,
        *,
        read_states: Callable[[ReadStates], object],
        emit: Callable[[EmitEvent], None],
    ) -> Callable[[Request], Awaitable[object]]:
        """One coroutine function for every request: state reads and events are the
        caller's (plain functions), the rest goes to the API."""

        async def perform(request: Request) -> object:
            if isinstance(request, EmitEvent):
                emit(request)
                return None
            if isinstance(request, ReadStates):
                return read_states(request)
            return await self.perform(request)

        return perform

    async def list_pods(
        self,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Every pod matching the selectors, read in pages, and the list's version."""
        kwargs: dict[str, Any] = {**self.request_args, "limit": self.page_size}
        if label_selector:
            kwargs["label_selector"] = label_selector
        if field_selector:
            kwargs["field_selector"] = field_selector
        for restart in range(LIST_RESTARTS + 1):
            items: list[dict[str, Any]] = []
            token: str | None = None
            try:
                while True:
                    page = await self._page(namespace, kwargs, token)
                    items.extend(page.get("items") or [])
                    metadata = page.get("metadata") or {}
                    token = metadata.get("continue") or None
                    if token is None:
                        return items, metadata.get("resourceVersion")
            except ApiException as error:
                if error_status(error) != 410 or token is None or restart == LIST_RESTARTS:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _page(
        self, namespace: str | None, kwargs: dict[str, Any], token: str | None
    ) -> dict[str, Any]:
        if token is not None:
            kwargs = {**kwargs, "_continue": token}
        if namespace is None:
            response = await self.api.list_pod_for_all_namespaces(**kwargs)
        else:
            response = await self.api.list_namespaced_pod(namespace, **kwargs)
        page: dict[str, Any] = json.loads(await _drain(response))
        return page


def _inline_by_default(request: Request) -> bool:
    return isinstance(request, (EmitEvent, ReadStates))


class AsyncDriver:
    """Performs a core's requests, many at a time, as tasks on the running event loop.

    ``failures``, ``screen`` and ``inline`` as for
    :class:`~k8s_workloads.io.pool.PoolDriver`; ``perform`` is a coroutine function.
    """

    def __init__(
        self,
        core: ExecutorCore,
        perform: Callable[[Request], Awaitable[object]],
        *,
        failures: tuple[type[BaseException], ...] = FAILURES,
        screen: Callable[[CreatePod], str | None] | None = None,
        inline: Callable[[Request], bool] = _inline_by_default,
    ) -> None:
        self.core = core
        self.perform = perform
        self.failures = failures
        self.screen = screen
        self.inline = inline
        self._tasks: dict[asyncio.Task[object], Request] = {}

    @property
    def in_flight(self) -> int:
        """Requests running as tasks, not reported to the core yet."""
        return len(self._tasks)

    async def run(
        self, now: datetime.datetime, *, seconds: float | None = None
    ) -> Waiting | NothingToDo:
        """Start what the core hands out and report what completes, until the pass is
        over or ``seconds`` have gone by (the tasks in flight go on; the next ``run``
        reports them)."""
        loop = asyncio.get_running_loop()
        deadline = None if seconds is None else loop.time() + seconds
        core = self.core
        self._report_done()
        while True:
            answer = core.start_request(now)
            if isinstance(answer, NothingToDo):
                return answer
            if isinstance(answer, Waiting):
                timeout = None if deadline is None else deadline - loop.time()
                if timeout is not None and timeout <= 0:
                    return answer
                if self._tasks:
                    await asyncio.wait(
                        self._tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                    )
                self._report_done()
                continue
            await self._start(answer)

    async def aclose(self) -> None:
        """Wait for the requests in flight and report them."""
        if self._tasks:
            await asyncio.wait(self._tasks)
        self._report_done()

    async def _start(self, request: Request) -> None:
        core = self.core
        if isinstance(request, CreatePod) and self.screen is not None:
            reason = self.screen(request)
            if reason is not None:
                core.create_skipped(request, reason)
                return
        if self.inline(request):
            try:
                answer = await self.perform(request)
            except self.failures as error:
                report_failure(core, request, error)
            else:
                report_answer(core, request, answer)
            return
        self._tasks[asyncio.ensure_future(self.perform(request))] = request

    def _report_done(self) -> None:
        done = [task for task in self._tasks if task.done()]
        bug: BaseException | None = None
        for task in done:
            request = self._tasks.pop(task)
            error = task.exception() if not task.cancelled() else asyncio.CancelledError()
            if error is None:
                report_answer(self.core, request, task.result())
            elif isinstance(error, self.failures):
                report_failure(self.core, request, error)
            else:
                if not isinstance(request, EmitEvent):
                    self.core.request_failed(request, error)  # not left in flight for ever
                bug = bug or error
        if bug is not None:
            raise bug
