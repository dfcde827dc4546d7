"""A driver's bookkeeping of the requests in flight, without I/O: written once for the
thread pool's driver (:class:`~k8s_workloads.io.pool.PoolDriver`) and the event loop's
(:class:`~k8s_workloads.io.aio.AsyncDriver`).

:class:`InFlight` keeps which request each call in flight performs, decides a pass's
next step (start a request, wait for a call, or return the core's answer), screens
creations and reports completed calls to the core through the shared policy
(:func:`~k8s_workloads.io.policy.settle`). A driver adds only its I/O: how a call starts,
how it waits, and its clock::

    while True:
        step = self.next_step(now, deadline, clock)
        if isinstance(step, (Waiting, NothingToDo)):
            return step
        if isinstance(step, Wait):
            wait_for_a_call(step.timeout)   # then self.report_done()
        elif self.admit(step):
            start(step)                     # inline, or self.calls[handle] = step
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import attrs

from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.executor.requests import CreatePod, NothingToDo, ReadStates, Request, Waiting
from k8s_workloads.io.calls import PlansAdoption
from k8s_workloads.io.policy import settle

if TYPE_CHECKING:
    import datetime
    from collections.abc import Callable

    from k8s_workloads.executor.core import ExecutorCore

__all__ = ["Call", "InFlight", "Wait", "inline_by_default"]


class Call(Protocol):
    """A call in flight: a ``concurrent.futures.Future`` or an ``asyncio.Task``."""

    def done(self) -> bool: ...

    def cancelled(self) -> bool: ...

    def exception(self) -> BaseException | None: ...

    def result(self) -> object: ...


H = TypeVar("H", bound=Call)


@attrs.frozen
class Wait:
    """Wait for a call in flight to complete, at most ``timeout`` seconds (None: no bound)."""

    timeout: float | None


def inline_by_default(request: Request) -> bool:
    """Events and state reads run on the driver's own thread or coroutine: a scheduler's
    event buffer and database session are its own."""
    return isinstance(request, (EmitEvent, ReadStates))


@dataclasses.dataclass(eq=False, repr=False)
class InFlight(PlansAdoption, Generic[H]):
    """What both drivers keep: the core, the ``failures`` a call raises (anything else
    is a bug: reported failed to the core, then raised), ``screen`` (a reason skips a
    :class:`~k8s_workloads.executor.CreatePod`), ``inline`` (which requests run on the
    caller's thread or coroutine), the error a ``cancelled`` call stands for, and the
    calls in flight; the adoption's pure part is
    :class:`~k8s_workloads.io.calls.PlansAdoption`'s."""

    core: ExecutorCore
    _: dataclasses.KW_ONLY
    failures: tuple[type[BaseException], ...]
    screen: Callable[[CreatePod], str | None] | None
    inline: Callable[[Request], bool]
    cancelled: type[BaseException]
    calls: dict[H, Request] = dataclasses.field(default_factory=dict, init=False)
    aborted: bool = dataclasses.field(default=False, init=False)
    """Set by ``abort()``: nothing more is started nor reported, as after a crash."""

    @property
    def in_flight(self) -> int:
        """Requests started, finished or not, not reported to the core yet."""
        return len(self.calls)

    def next_step(
        self,
        now: datetime.datetime,
        deadline: float | None,
        clock: Callable[[], float],
        *,
        live: bool = False,
    ) -> Request | Wait | Waiting | NothingToDo:
        """The pass's next step: a request to start, a :class:`Wait`, or the answer to
        return (the pass is over, or ``deadline`` by ``clock`` has passed: the pass goes
        on at the next run). ``live``: ``now`` is read afresh for every step, so a wait
        ends when something the core delays is due (:attr:`Waiting.until`)."""
        core = self.core
        if deadline is not None and clock() >= deadline:
            return Waiting(len(core.in_flight))
        answer = core.start_request(now)
        if not isinstance(answer, Waiting):
            return answer
        timeout = None if deadline is None else deadline - clock()
        if timeout is not None and timeout <= 0:
            return answer
        if live and answer.until is not None:
            due = max(0.0, (answer.until - now).total_seconds())
            timeout = due if timeout is None else min(timeout, due)
        return Wait(timeout)

    def admit(self, request: Request) -> bool:
        """Whether ``request`` starts: a creation the screen gives a reason for is
        reported skipped instead."""
        if isinstance(request, CreatePod) and self.screen is not None:
            reason = self.screen(request)
            if reason is not None:
                self.core.create_skipped(request, reason)
                return False
        return True

    def forget_calls(self) -> list[H]:
        """``abort()``'s bookkeeping: every call in flight is dropped, never reported (a
        process that crashed reports nothing; the next one adopts what its calls made),
        and nothing more starts. The calls, for the driver to cancel."""
        self.aborted = True
        calls = list(self.calls)
        self.calls.clear()
        return calls

    def settle_inline(self, request: Request, answer: object, error: BaseException | None) -> None:
        """Report an inline request's ``answer`` or its ``error`` (one of ``failures``)."""
        if self.aborted:
            return
        settle(self.core, request, answer=answer, error=error, failures=self.failures)

    def report_done(self) -> None:
        """Report every completed call to the core; then raise the last bug, if any."""
        bug: BaseException | None = None
        for call in [call for call in self.calls if call.done()]:
            request = self.calls.pop(call)
            error = self.cancelled() if call.cancelled() else call.exception()
            answer = call.result() if error is None else None
            bug = (
                settle(self.core, request, answer=answer, error=error, failures=self.failures)
                or bug
            )
        if bug is not None:
            raise bug
