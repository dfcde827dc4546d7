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
from typing import TYPE_CHECKING

from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.executor import CreatePod, NothingToDo, ReadStates, Request, Waiting
from k8s_workloads.io.policy import settle

if TYPE_CHECKING:
    import datetime
    from collections.abc import Callable

    from k8s_workloads.executor import ExecutorCore

__all__ = ["PoolDriver"]


def _inline_by_default(request: Request) -> bool:
    return isinstance(request, (EmitEvent, ReadStates))


class PoolDriver:
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
        inline: Callable[[Request], bool] = _inline_by_default,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        config = core.config
        self.core = core
        self.perform = perform
        self.failures = failures
        self.screen = screen
        self.inline = inline
        self.clock = clock
        self.workers = workers or (config.max_concurrent_creations + config.max_concurrent_cleanups)
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._futures: dict[concurrent.futures.Future[object], Request] = {}

    @property
    def in_flight(self) -> int:
        """Requests on the pool, finished or not, not reported to the core yet."""
        return len(self._futures)

    def run(self, now: datetime.datetime, *, seconds: float | None = None) -> Waiting | NothingToDo:
        """Start what the core hands out and report what completes, until the pass is
        over or ``seconds`` have gone by (None: until the pass is over)."""
        deadline = None if seconds is None else self.clock() + seconds
        core = self.core
        self._report_done()
        while True:
            if deadline is not None and self.clock() >= deadline:
                return Waiting(len(core.in_flight))  # the pass goes on at the next run
            answer = core.start_request(now)
            if isinstance(answer, NothingToDo):
                return answer
            if isinstance(answer, Waiting):
                timeout = None if deadline is None else deadline - self.clock()
                if timeout is not None and timeout <= 0:
                    return answer
                self._wait(timeout)
                continue
            self._start(answer)

    def close(self, *, wait: bool = True) -> None:
        """Stop the pool (``wait``: after the calls in flight end). Their completions are
        reported by the next :meth:`run`, if any."""
        if self._pool is not None:
            self._pool.shutdown(wait=wait)
            self._pool = None

    # --- internals ------------------------------------------------------------------

    def _start(self, request: Request) -> None:
        core = self.core
        if isinstance(request, CreatePod) and self.screen is not None:
            reason = self.screen(request)
            if reason is not None:
                core.create_skipped(request, reason)
                return
        if self.inline(request):
            try:
                answer = self.perform(request)
            except self.failures as error:
                settle(core, request, error=error, failures=self.failures)
            else:
                settle(core, request, answer=answer, failures=self.failures)
            return
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                self.workers, thread_name_prefix="k8s-workloads-io"
            )
        self._futures[self._pool.submit(self.perform, request)] = request

    def _wait(self, timeout: float | None) -> None:
        if not self._futures:
            return
        concurrent.futures.wait(
            self._futures, timeout=timeout, return_when=concurrent.futures.FIRST_COMPLETED
        )
        self._report_done()

    def _report_done(self) -> None:
        bug: BaseException | None = None
        for future in [future for future in self._futures if future.done()]:
            request = self._futures.pop(future)
            error = future.exception()
            answer = future.result() if error is None else None
            bug = (
                settle(self.core, request, answer=answer, error=error, failures=self.failures)
                or bug
            )
        if bug is not None:
            raise bug
