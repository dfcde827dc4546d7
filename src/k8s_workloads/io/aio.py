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
from typing import TYPE_CHECKING, Any, cast

from aiohttp import ClientError
from kubernetes_asyncio.client.exceptions import ApiException

from k8s_workloads.executor.requests import NothingToDo, Waiting
from k8s_workloads.io._calls import CallPlan, CoreV1Client, Listing, list_request, on_core_v1
from k8s_workloads.io._inflight import InFlight, Wait, inline_by_default

if TYPE_CHECKING:
    import datetime
    from collections.abc import Awaitable, Callable, Iterable

    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.executor.requests import Adoption, CreatePod, Request
    from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey

__all__ = ["FAILURES", "AsyncDriver", "AsyncKubeCalls"]

FAILURES: tuple[type[BaseException], ...] = (
    ApiException,
    ClientError,
    OSError,
    asyncio.TimeoutError,
)
"""What a failed ``kubernetes_asyncio`` call raises: the API's answer (``ApiException``),
or a connection's failure — aiohttp's ``ClientError`` family (``ServerDisconnectedError``
and ``ClientPayloadError`` are no ``OSError``), an ``OSError``, a timeout. The core reads
each (:func:`~k8s_workloads.decisions.creation_errors.delivery_of`): a refused or
unresolved connection (``ClientConnectorError``) or a connect timeout never reached the
server; a reset, a disconnect, a cut body or a read timeout may have been applied, and a
creation is read back."""


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


class AsyncKubeCalls(CoreV1Client["Awaitable[object]"]):
    """Pod and Secret calls and lists through ``api`` (``kubernetes_asyncio``'s
    ``CoreV1Api``); ``request_args`` and ``delete_options`` as for
    :class:`~k8s_workloads.io.kube.KubeCalls`. :meth:`perform` answers with a coroutine."""

    async def _run(self, plan: CallPlan) -> object:
        for call in plan:
            try:
                plan.take(await _drain(await on_core_v1(self.api, call)))
            except ApiException as error:  # noqa: PERF203 - see CallPlan.recovered
                if not plan.recovered(error):
                    raise
        return plan.result

    async def list_pods(
        self,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Listing:
        """Every pod matching the selectors, read in pages, and the list's version."""
        answer = await self.perform(list_request(namespace, label_selector, field_selector))
        return cast("Listing", answer)


class AsyncDriver(InFlight["asyncio.Task[object]"]):
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
        inline: Callable[[Request], bool] = inline_by_default,
    ) -> None:
        super().__init__(
            core, failures=failures, screen=screen, inline=inline, cancelled=asyncio.CancelledError
        )
        self.perform = perform

    async def run(
        self, now: datetime.datetime, *, seconds: float | None = None
    ) -> Waiting | NothingToDo:
        """Start what the core hands out and report what completes, until the pass is
        over or ``seconds`` have gone by (the tasks in flight go on; the next ``run``
        reports them)."""
        clock = asyncio.get_running_loop().time
        deadline = None if seconds is None else clock() + seconds
        self.report_done()
        while True:
            step = self.next_step(now, deadline, clock)
            if isinstance(step, (Waiting, NothingToDo)):
                return step
            if isinstance(step, Wait):
                if self.calls:
                    await asyncio.wait(
                        self.calls, timeout=step.timeout, return_when=asyncio.FIRST_COMPLETED
                    )
                self.report_done()
            elif self.admit(step):
                await self._start(step)

    async def adopt(
        self,
        now: datetime.datetime,
        *,
        dead_scheduler_ids: Iterable[str | int] = (),
        alive_scheduler_ids: Iterable[str | int] = (),
        expected_task_keys: Iterable[TaskInstanceKey] | None = None,
        expected_callback_keys: Iterable[CallbackKey] | None = None,
        expected_generic_keys: Iterable[GenericKey] | None = None,
    ) -> Adoption:
        """Take over the pods of dead schedulers, in one call: list what the core's
        :meth:`~k8s_workloads.executor.ExecutorCore.adoption_lists` name, adopt them,
        perform the relabels, and say what to run again — the expected keys with no pod
        anywhere, never a workload the adoption finished — which relabels were refused
        and which are retried on the next passes (:class:`~k8s_workloads.executor.Adoption`).
        A list that fails raises as its call does: adopt again later.
        ``expected_generic_keys``: an executor's generic workloads, as callbacks'."""
        alive = list(alive_scheduler_ids)
        lists = self.core.adoption_lists(dead_scheduler_ids, alive)
        listings = [await self.perform(listing) for listing in lists]
        plan, expected = self.plan_adoption(
            listings, alive, expected_task_keys, expected_callback_keys, expected_generic_keys
        )
        await self.run(now)
        return self.core.adoption(plan, expected)

    async def aclose(self) -> None:
        """Wait for the requests in flight and report them."""
        if self.calls:
            await asyncio.wait(self.calls)
        self.report_done()

    async def _start(self, request: Request) -> None:
        if self.inline(request):
            try:
                answer = await self.perform(request)
            except self.failures as error:
                self.settle_inline(request, None, error)
            else:
                self.settle_inline(request, answer, None)
            return
        self.calls[asyncio.ensure_future(self.perform(request))] = request
