"""``kubernetes_asyncio``: the core's requests as coroutines, many in flight on one event
loop, and its pod watch.

Install the ``asyncio`` extra (``k8s-workloads[asyncio]``). :class:`AsyncKubeCalls` is the
one place that maps requests to ``kubernetes_asyncio``'s ``CoreV1Api``;
:class:`AsyncDriver` drives a core with them, as :class:`~k8s_workloads.io.pool.PoolDriver`
does with threads; :class:`AsyncWatch` feeds the core its pod watch and wakes the driver
at each event. One executor is three objects and one ``gather``, no polling::

    api = kubernetes_asyncio.client.CoreV1Api(api_client)
    driver = AsyncDriver(core, AsyncKubeCalls(api).performer(read_states=read, emit=emit))
    watch = AsyncWatch(driver, api)                  # resumes from core.resource_version
    driver.submit(job)                               # core.submit(job), then driver.wake()
    await asyncio.gather(watch.run(), driver.run_forever())   # until stop() or abort()

The driver waits on its calls in flight and on :meth:`AsyncDriver.wake` at once: a result
is taken up as its event arrives, a job as it is submitted, and a request the core delays
(a creation retried after a failure) when it is due, whatever else is in flight.
:meth:`AsyncDriver.run` is one bounded pass instead (``await driver.run(now,
seconds=1.0)``: Waiting or NothingToDo), for an executor whose own loop calls it.
:meth:`AsyncDriver.abort` is a crash, for tests: the calls in flight are cancelled and
never reported, the watch stops, and a new core's :meth:`AsyncDriver.adopt` takes over
what the calls made.

The core is touched only on the loop's thread: by the coroutine that drives it, and by
the watch between two of its steps; requests run as tasks on the same loop. Responses
are read to their end and released (the connector keeps the connections for reuse);
lists are read in pages; the watch reads its stream raw, line by line (no models are
built). What an answer means is the shared policy's (:mod:`k8s_workloads.io.policy`);
how a watch keeps going, the Airflow watcher's (:mod:`k8s_workloads.io.watching`).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from asyncio import FIRST_COMPLETED
from typing import TYPE_CHECKING, Any, cast

from aiohttp import ClientError
from kubernetes_asyncio.client.exceptions import ApiException

from k8s_workloads.executor.requests import NothingToDo, Waiting
from k8s_workloads.io._inflight import InFlight, Wait, inline_by_default
from k8s_workloads.io.calls import CallPlan, CoreV1Client, Listing, list_request, on_core_v1
from k8s_workloads.io.watching import PodWatch, expired_event
from k8s_workloads.pods.labels import watcher_selector

if TYPE_CHECKING:
    import random
    from collections.abc import Awaitable, Callable, Iterable

    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.executor.requests import Adoption, CreatePod, Request
    from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey
    from k8s_workloads.states import KubernetesJob

__all__ = ["FAILURES", "AsyncDriver", "AsyncKubeCalls", "AsyncWatch"]

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


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class AsyncDriver(InFlight["asyncio.Task[object]"]):
    """Performs a core's requests, many at a time, as tasks on the running event loop.

    ``failures``, ``screen`` and ``inline`` as for
    :class:`~k8s_workloads.io.pool.PoolDriver`; ``perform`` is a coroutine function;
    ``clock`` gives the ``now`` of :meth:`run_forever` and of an :class:`AsyncWatch`'s
    events (an aware UTC datetime). Touch the core only from the loop's thread: from
    another thread, ``loop.call_soon_threadsafe(driver.submit, job)``.
    """

    def __init__(
        self,
        core: ExecutorCore,
        perform: Callable[[Request], Awaitable[object]],
        *,
        failures: tuple[type[BaseException], ...] = FAILURES,
        screen: Callable[[CreatePod], str | None] | None = None,
        inline: Callable[[Request], bool] = inline_by_default,
        clock: Callable[[], datetime.datetime] = _utc_now,
    ) -> None:
        super().__init__(
            core, failures=failures, screen=screen, inline=inline, cancelled=asyncio.CancelledError
        )
        self.perform = perform
        self.clock = clock
        self._woken = False
        self._waiter: asyncio.Future[None] | None = None
        self._stopping = False
        self._abandoned: list[asyncio.Task[object]] = []
        self._reports: list[asyncio.Future[None]] = []
        self._watches: list[AsyncWatch] = []
        self._started = 0  # requests handed out: whether a pass did anything

    # --- what an executor calls ---------------------------------------------------------

    def wake(self) -> None:
        """Something was fed to the core (an event, a job): a run waiting for a call to
        complete, or :meth:`run_forever` waiting between passes, asks the core at once.
        :class:`AsyncWatch` calls it for each event, :meth:`submit` for each job."""
        self._woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def submit(self, job: KubernetesJob[Any]) -> None:
        """:meth:`ExecutorCore.submit <k8s_workloads.executor.ExecutorCore.submit>`, then
        :meth:`wake`."""
        self.core.submit(job)
        self.wake()

    async def run(
        self, now: datetime.datetime, *, seconds: float | None = None
    ) -> Waiting | NothingToDo:
        """Start what the core hands out and report what completes, until the pass is
        over or ``seconds`` have gone by (the tasks in flight go on; the next ``run``
        reports them). A :meth:`wake` meanwhile asks the core again at once, with this
        ``now``. After :meth:`abort` or :meth:`stop`: back at once."""
        return await self._drive(lambda: now, seconds, live=False)

    async def run_forever(self, *, idle_seconds: float = 1.0) -> None:
        """Drive the core until :meth:`stop` or :meth:`abort`, each step at
        ``clock()``: a pass, then a wait until the core's next due time
        (:class:`~k8s_workloads.executor.NothingToDo`'s ``until``) or a :meth:`wake`,
        then the next pass — at once while jobs wait for a slot, and at most
        ``idle_seconds`` later while the core has retries to make (a failed re-list, a
        result whose handling failed), as a scheduler's heartbeat would. A request
        delayed within a pass starts when it is due, whatever else is in flight.

        After :meth:`stop`, the calls in flight complete and are reported before it
        returns; after :meth:`abort`, it returns at once."""
        while not (self.aborted or self._stopping):
            started = self._started
            answer = await self._drive(self.clock, None, live=True)
            if not isinstance(answer, NothingToDo):
                break  # stopped or aborted
            await self._idle(answer, idle_seconds, progressed=self._started != started)
        if not self.aborted:
            await self.aclose()

    def stop(self) -> None:
        """End :meth:`run_forever` (after its calls in flight) and the watches of this
        driver, for good: :meth:`run` returns at once from then on."""
        self._stopping = True
        self.wake()
        for watch in self._watches:
            watch.stop()

    def abort(self) -> None:
        """Crash, for tests: every request in flight is cancelled and never reported, a
        call that completed meanwhile neither, nothing more starts, and the watches of
        this driver stop feeding the core. A new core and driver then adopt what the
        calls made (:meth:`aclose` waits for the cancelled tasks)."""
        for task in self.forget_calls():
            task.cancel()
            self._abandoned.append(task)
        self.wake()
        for watch in self._watches:
            watch.stop()

    async def aclose(self) -> None:
        """Wait for the requests in flight and report them (after :meth:`abort`: wait for
        the cancelled ones, reporting nothing)."""
        if self._abandoned:
            await asyncio.gather(*self._abandoned, return_exceptions=True)
            self._abandoned.clear()
        if self.calls:
            await asyncio.wait(self.calls)
        self.report_done()

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
        dead = list(dead_scheduler_ids)
        lists = self.core.adoption_lists(dead, alive)
        listings = [await self.perform(listing) for listing in lists]
        plan, expected = self.plan_adoption(
            listings,
            alive,
            expected_task_keys,
            expected_callback_keys,
            expected_generic_keys,
            dead_scheduler_ids=dead,
        )
        await self.run(now)
        return self.core.adoption(plan, expected)

    # --- the loop -----------------------------------------------------------------------

    async def _drive(
        self, now: Callable[[], datetime.datetime], seconds: float | None, *, live: bool
    ) -> Waiting | NothingToDo:
        clock = asyncio.get_running_loop().time
        deadline = None if seconds is None else clock() + seconds
        self.report_done()
        while not (self.aborted or self._stopping):
            self._woken = False
            step = self.next_step(now(), deadline, clock, live=live)
            if isinstance(step, (Waiting, NothingToDo)):
                return step
            if isinstance(step, Wait):
                if self.calls:
                    await self._wait(step.timeout)
                self.report_done()
            else:
                self._started += 1  # handed out: started, or skipped by the screen
                if self.admit(step):
                    await self._start(step)
        return Waiting(len(self.core.in_flight))

    async def _idle(self, answer: NothingToDo, idle_seconds: float, *, progressed: bool) -> None:
        """Between passes: until ``answer.until``, a wake, or a heartbeat's retries (a
        pass that started nothing is never followed by another at once: no spinning)."""
        core = self.core
        timeout: float | None = None
        if answer.until is not None:
            timeout = max(0.0, (answer.until - self.clock()).total_seconds())
        elif core.queued and core.paused_until is None:
            timeout = 0.0  # jobs the pass's batch left: the next pass takes them
        if core.has_work:
            timeout = idle_seconds if timeout is None else min(timeout, idle_seconds)
        if timeout == 0.0 and not progressed:
            timeout = idle_seconds
        if timeout == 0.0:
            await asyncio.sleep(0)  # let the watch and the callers run between passes
            return
        await self._wait(timeout)

    async def _wait(self, timeout: float | None) -> None:
        """Until a call completes, :meth:`wake` is called, or ``timeout`` seconds."""
        if self._woken:
            return
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait([*self.calls, waiter], timeout=timeout, return_when=FIRST_COMPLETED)
        finally:
            self._waiter = None
            waiter.cancel()

    def report_done(self) -> None:
        """Report every completed call to the core (then raise the last bug, if any);
        a watch waiting out a re-list looks at the core again."""
        try:
            super().report_done()
        finally:
            self._reported()

    def settle_inline(self, request: Request, answer: object, error: BaseException | None) -> None:
        super().settle_inline(request, answer, error)
        self._reported()

    def _reported(self) -> None:
        reports, self._reports = self._reports, []
        for future in reports:
            if not future.done():
                future.set_result(None)

    def _next_report(self) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._reports.append(future)
        return future

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


class AsyncWatch(PodWatch):
    """The core's pod watch on the event loop, feeding ``driver``'s core and waking it.

    It watches the pods the core's selector names
    (:func:`~k8s_workloads.pods.labels.watcher_selector`) in ``namespace``, one of the
    core's watched namespaces (``ExecutorConfig.watched_namespaces``; None: the core's
    one watch, of its namespace or of every one), through ``api``
    (``kubernetes_asyncio``'s ``CoreV1Api``), from :meth:`ExecutorCore.resource_version
    <k8s_workloads.executor.ExecutorCore.resource_version>` (None: from now, every pod
    first as ``ADDED``). Each event's line goes to :meth:`ExecutorCore.feed_event
    <k8s_workloads.executor.ExecutorCore.feed_event>` as the bytes it came as (the
    core's one path from bytes to decisions), then :meth:`AsyncDriver.wake`. After an
    ``ERROR`` (a 410: the version is gone; a 410 answer to the watch call itself reads
    the same) the core re-lists: the watch waits until the driver has performed the
    re-list, then watches from the list's version; a stream from before the last
    re-list (another watch's ERROR) is ended unread. Bookmarks, the 5-10 minute server
    timeout, a silent connection replaced after :attr:`read_timeout` seconds and the
    1 s to 30 s backoff with jitter are the Airflow watcher's
    (:mod:`k8s_workloads.io.watching`); an outage is a warning per failed attempt, on
    ``log``.

    ``connect_timeout``: seconds to connect; ``rng``: the randomness of the timeouts and
    the backoff (seed it in tests). Run it beside the driver; :meth:`AsyncDriver.stop`
    and :meth:`AsyncDriver.abort` stop it too::

        watch = AsyncWatch(driver, api)
        await asyncio.gather(watch.run(), driver.run_forever())
    """

    def __init__(
        self,
        driver: AsyncDriver,
        api: Any,  # noqa: ANN401 - kubernetes_asyncio's CoreV1Api (untyped)
        *,
        namespace: str | None = None,
        connect_timeout: float = 10.0,
        rng: random.Random | None = None,
        log: logging.Logger | None = None,
    ) -> None:
        self.driver = driver
        self.core = driver.core
        self.core.resource_version(namespace)  # a namespace not watched: ValueError
        super().__init__(
            api,
            self.core.watched_namespaces[0] if namespace is None else namespace,
            log=log or logging.getLogger(__name__),
            connect_timeout=connect_timeout,
            rng=rng,
        )
        self.lines = 0
        """Lines fed to the core so far (bookmarks and ``ERROR`` events too)."""
        self._delivered = False
        self._stopping = False
        self._stopped: asyncio.Future[None] | None = None
        driver._watches.append(self)  # noqa: SLF001 - its stop() and abort() stop this

    def stop(self) -> None:
        """Stop watching: an open stream is closed, :meth:`run` returns."""
        self._stopping = True
        if self._stopped is not None and not self._stopped.done():
            self._stopped.set_result(None)

    async def run(self) -> None:
        """Watch until :meth:`stop` (or the driver's ``stop()`` or ``abort()``)."""
        stopped = self._stopped = asyncio.get_running_loop().create_future()
        if self._stopping:
            return
        while not stopped.done():
            await self._wait_out_relist(stopped)
            if stopped.done():
                return
            self._delivered = False
            stream = asyncio.ensure_future(self._stream())
            try:
                await asyncio.wait({stream, stopped}, return_when=FIRST_COMPLETED)
            finally:
                if not stream.done():  # stopped (or cancelled): nothing more is fed
                    stream.cancel()
                    await asyncio.wait({stream})
            if stream.cancelled():
                return
            error = stream.exception()
            if error is not None and not isinstance(error, Exception):
                raise error  # not a failure of the watch: a KeyboardInterrupt, an exit
            delay = self.ended(delivered=self._delivered, error=error)
            if delay is not None:
                await asyncio.wait({stopped}, timeout=delay)

    async def _wait_out_relist(self, stopped: asyncio.Future[None]) -> None:
        """Wait for a re-list under way, at most :attr:`relist_wait` seconds (then the
        stream starts from now, and ends once the re-list does)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.relist_wait
        while self.core.is_relisting and not self._stopping:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            report = self.driver._next_report()  # noqa: SLF001 - the re-list's completion
            await asyncio.wait({report, stopped}, timeout=remaining, return_when=FIRST_COMPLETED)
            report.cancel()

    async def _stream(self) -> None:
        selector = watcher_selector(self.core.config.scheduler_id)
        # Taken with the version, before the call: a re-list that ends while the call is
        # answered makes this stream older than its list.
        version, relists = self.core.resource_version(self.namespace), self.core.relists
        relisting = self.core.is_relisting  # started during a re-list, after the wait
        kwargs = self.watch_arguments(selector.label_selector, selector.field_selector, version)
        namespace = self.namespace
        if namespace is None:
            response = await self.api.list_pod_for_all_namespaces(**kwargs)
        else:
            response = await self.api.list_namespaced_pod(namespace, **kwargs)
        finished = False
        try:
            if not 200 <= response.status <= 299:
                finished = True
                self._refused(response, await response.read())
                return
            self.established()
            finished = await self._read(response, relists, relisting=relisting)
        finally:
            if finished:
                response.release()
            else:
                response.close()  # not read to its end: the connection is not reused

    async def _read(self, response: Any, relists: int, *, relisting: bool) -> bool:  # noqa: ANN401
        """Feed every line of the stream; True once it ended, False when a re-list ended
        it early or the watch was stopped. ``relisting``: the stream started while a
        re-list was under way (after :attr:`relist_wait`): it goes on until that ends."""
        core, wake, clock, namespace = (
            self.core,
            self.driver.wake,
            self.driver.clock,
            self.namespace,
        )
        buffer = bytearray()
        async for chunk in response.content.iter_any():
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", start)) >= 0:
                line = bytes(buffer[start:end])
                start = end + 1
                if not line.strip():
                    continue
                if self._stopping or self._outdated(relists, relisting=relisting):
                    self._delivered = True  # ended for a re-list: watch again at once
                    return False
                self._delivered = True
                self.lines += 1
                core.feed_event(line, now=clock(), namespace=namespace)
                wake()
                if core.is_relisting and not relisting:  # an ERROR: watch after the re-list
                    return False
            del buffer[:start]
        return True

    def _outdated(self, relists: int, *, relisting: bool) -> bool:
        """Whether a stream started at the core's ``relists`` is to end unread: a re-list
        ended since (the stream is older than its list), or one is under way that the
        stream did not start in (watch after it)."""
        core = self.core
        return core.relists != relists or (core.is_relisting and not relisting)

    def _refused(self, response: Any, body: bytes) -> None:  # noqa: ANN401 - ClientResponse
        """The watch call was answered with an error: a 410 (the version is gone) is the
        ``ERROR`` event a watch would carry, for the core to re-list; anything else fails
        the watch (backing off)."""
        status = response.status
        if status == 410:
            event = expired_event(body)
            self.core.feed_event(event, now=self.driver.clock(), namespace=self.namespace)
            self._delivered = True
            self.driver.wake()
            return
        error = ApiException(status=status, reason=response.reason)
        error.body = body
        error.headers = response.headers
        raise error
