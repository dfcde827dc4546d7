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

from k8s_workloads.decisions.actions import DeletePod, EmitEvent, PatchLabels
from k8s_workloads.executor import (
    CreatePod,
    DeleteSecret,
    ListPods,
    NothingToDo,
    ReadStates,
    Request,
    Waiting,
)
from k8s_workloads.io.policy import PAGE_SIZE, Paging, label_patch, settle

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
            # A list body (a guarded relabel) goes as application/json-patch+json.
            patch = label_patch(request)
            await _drain(
                await api.patch_namespaced_pod(request.pod_name, request.namespace, patch, **extra)
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
        paging = Paging(
            self.request_args,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=self.page_size,
        )
        while (query := paging.query()) is not None:
            try:
                if namespace is None:
                    response = await self.api.list_pod_for_all_namespaces(**query)
                else:
                    response = await self.api.list_namespaced_pod(namespace, **query)
                paging.take(json.loads(await _drain(response)))
            except ApiException as error:  # noqa: PERF203 - a page's call, retried as a whole
                if not paging.expired(error):
                    raise
        return paging.result


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
            if deadline is not None and loop.time() >= deadline:
                return Waiting(len(core.in_flight))  # the pass goes on at the next run
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
                settle(core, request, error=error, failures=self.failures)
            else:
                settle(core, request, answer=answer, failures=self.failures)
            return
        self._tasks[asyncio.ensure_future(self.perform(request))] = request

    def _report_done(self) -> None:
        bug: BaseException | None = None
        for task in [task for task in self._tasks if task.done()]:
            request = self._tasks.pop(task)
            error = task.exception() if not task.cancelled() else asyncio.CancelledError()
            answer = task.result() if error is None else None
            bug = (
                settle(self.core, request, answer=answer, error=error, failures=self.failures)
                or bug
            )
        if bug is not None:
            raise bug
