"""Drive an :class:`~k8s_workloads.executor.ExecutorCore` with many requests in flight on a
bounded thread pool, for any client whose calls block.

The core is touched only on the thread that calls :meth:`PoolDriver.run` (it is not
thread-safe); the pool's threads only perform calls. ``perform`` maps one request to the
client's calls and returns the answer the core needs: the states for a
:class:`~k8s_workloads.executor.ReadStates`, ``(pods, resource_version)`` for a
:class:`~k8s_workloads.executor.ListPods`, anything for the rest. Events
(:class:`~k8s_workloads.decisions.actions.EmitEvent`) and state reads run on the calling thread (a
scheduler's event buffer and database session are its own); pod calls and lists on the
pool::

    driver = PoolDriver(core, calls.perform, failures=calls.FAILURES, inline=my_inline)
    answer = driver.run(now, seconds=1.0)   # one bounded sync(): Waiting or NothingToDo

``run`` returns when the pass is over (:class:`~k8s_workloads.executor.NothingToDo`) or
after ``seconds`` (:class:`~k8s_workloads.executor.Waiting`): the requests in flight go on
on the pool, and the next ``run`` reports them first. The bound is checked before each
request starts and while waiting, so a run overruns it by one inline request at most.
Nothing is lost.
"""

from __future__ import annotations

import concurrent.futures
import time
from concurrent.futures import FIRST_COMPLETED
from typing import TYPE_CHECKING

from k8s_workloads.executor.requests import NothingToDo, Waiting
from k8s_workloads.io._inflight import InFlight, Wait, inline_by_default

if TYPE_CHECKING:
    import datetime
    from collections.abc import Callable, Iterable

    from k8s_workloads.executor.core import ExecutorCore
    from k8s_workloads.executor.requests import Adoption, CreatePod, Request
    from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey

__all__ = ["PoolDriver"]


class PoolDriver(InFlight["concurrent.futures.Future[object]"]):
    """Performs a core's requests, many at a time, on a pool of ``workers`` threads.

    ``failures``: the exception types a failed call raises (anything else is a bug: it
    is reported failed to the core, then raised). ``screen``: called for each
    :class:`~k8s_workloads.executor.CreatePod` before it starts; a reason (a string)
    skips it (:meth:`~k8s_workloads.executor.ExecutorCore.create_skipped`). ``inline``:
    which requests run on the calling thread (default: events and state reads).
    """

    def __init__(
        self,
        core: ExecutorCore,
        perform: Callable[[Request], object],
        *,
        failures: tuple[type[BaseException], ...],
        workers: int | None = None,
        screen: Callable[[CreatePod], str | None] | None = None,
        inline: Callable[[Request], bool] = inline_by_default,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            core,
            failures=failures,
            screen=screen,
            inline=inline,
            cancelled=concurrent.futures.CancelledError,
        )
        config = core.config
        self.perform = perform
        self.clock = clock
        self.workers = workers or (config.max_concurrent_creations + config.max_concurrent_cleanups)
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def run(self, now: datetime.datetime, *, seconds: float | None = None) -> Waiting | NothingToDo:
        """Start what the core hands out and report what completes, until the pass is
        over or ``seconds`` have gone by (None: until the pass is over)."""
        deadline = None if seconds is None else self.clock() + seconds
        self.report_done()
        while not self.aborted:
            step = self.next_step(now, deadline, self.clock)
            if isinstance(step, (Waiting, NothingToDo)):
                return step
            if isinstance(step, Wait):
                if self.calls:
                    concurrent.futures.wait(
                        self.calls, timeout=step.timeout, return_when=FIRST_COMPLETED
                    )
                    self.report_done()
            elif self.admit(step):
                self._start(step)
        return Waiting(len(self.core.in_flight))

    def abort(self) -> None:
        """Crash, for tests: the calls not started yet are cancelled, those under way end
        on the pool unreported, as a process that died reports nothing; the pool stops
        without waiting, and :meth:`run` returns at once from now on. Call it from the
        thread that calls :meth:`run` (between two bounded runs). A new core and driver
        adopt what the calls made."""
        for future in self.forget_calls():
            future.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def adopt(
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
        listings = [self.perform(listing) for listing in lists]
        plan, expected = self.plan_adoption(
            listings,
            alive,
            expected_task_keys,
            expected_callback_keys,
            expected_generic_keys,
            dead_scheduler_ids=dead,
        )
        self.run(now)
        return self.core.adoption(plan, expected)

    def close(self, *, wait: bool = True) -> None:
        """Stop the pool (``wait``: after the calls in flight end). Their completions are
        reported by the next :meth:`run`, if any."""
        if self._pool is not None:
            self._pool.shutdown(wait=wait)
            self._pool = None

    def _start(self, request: Request) -> None:
        if self.inline(request):
            try:
                answer = self.perform(request)
            except self.failures as error:
                self.settle_inline(request, None, error)
            else:
                self.settle_inline(request, answer, None)
            return
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                self.workers, thread_name_prefix="k8s-workloads-io"
            )
        self.calls[self._pool.submit(self.perform, request)] = request
