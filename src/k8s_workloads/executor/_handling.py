"""Results in the executor core: deciding about each waiting result (with the states
it needs read first), and performing a decision's actions, in order, as works."""

from __future__ import annotations

import datetime
from collections import deque
from typing import TYPE_CHECKING

import attrs

from k8s_workloads.decisions.actions import (
    Action,
    Decision,
    DeletePod,
    EmitEvent,
    FreeSlot,
    PatchLabels,
    RequeueJob,
    TrackRunning,
)
from k8s_workloads.decisions.guards import leftover_cleanup, state_needed
from k8s_workloads.decisions.results import decide, handling_failed
from k8s_workloads.decisions.rules import UNKNOWN, KnownState
from k8s_workloads.executor._base import _CoreBase
from k8s_workloads.executor._records import (
    _ADOPTION,
    _CLEANED_KEPT,
    _DECISION,
    _FINAL,
    _Pending,
    _Queued,
    _transient,
    _Work,
)
from k8s_workloads.executor.requests import (
    DeleteSecret,
    FailedRelabel,
    Handled,
    ReadStates,
    Request,
)
from k8s_workloads.keys import CallbackKey, WorkloadKey
from k8s_workloads.pods.labels import AIRFLOW_WORKER_LABEL, POD_EXECUTOR_DONE_LABEL
from k8s_workloads.pods.payload import workload_secret_name

if TYPE_CHECKING:
    from k8s_workloads.states import WorkloadResult


class _Handling(_CoreBase):
    """Waiting results to decisions, and decisions to requests."""

    def _pod_call_failed(
        self, work: _Work, request: DeletePod | PatchLabels, error: BaseException
    ) -> None:
        # Not cleaned up after all: a later terminal event of the pod is a leftover to
        # clean up again, not a duplicate of a clean-up that happened.
        self._cleaned.pop((request.namespace, request.pod_name), None)
        relabel = isinstance(request, PatchLabels) and AIRFLOW_WORKER_LABEL in request.labels
        if work.kind == _ADOPTION and relabel:
            assert isinstance(request, PatchLabels)  # noqa: S101 - relabel says so
            self._relabel_failed(work, request, error)
            return
        if work.kind in {_FINAL, _ADOPTION}:
            # The rest goes on; the clean-up itself is tried again on the next pass while
            # the error is transient, so a finished pod is not left in the watch to be
            # re-read after every restart (an adopted pod's too: it was relabelled, so no
            # other scheduler cleans it up). A refusal (403, 422 …) is final.
            if _transient(error):
                self._cleanups.append((request, work.key or work.owner))
            self._ready.appendleft(work)
            return
        # A failed pod call of a decision stops it (nothing after it happens) and
        # handling_failed decides about the result at once (a retry waits for the next
        # pass).
        self._close(work)
        pending = work.pending
        if work.kind == _DECISION and pending is not None:
            pending.error = error
            self._results.appendleft(pending)

    def _relabel_failed(self, work: _Work, request: PatchLabels, error: BaseException) -> None:
        """An adoption's relabel failed: tried again on the next pass while the error is
        transient (guarded by the same owner); refused after a try with no clear answer,
        checked once more as this scheduler's (that try was applied, its answer lost);
        refused otherwise — a rival took the pod, or it is gone (a rival that took it
        reported it and deleted it) — named by take_failed_relabels, never run again."""
        mine = {AIRFLOW_WORKER_LABEL: request.labels[AIRFLOW_WORKER_LABEL]}
        status = getattr(error, "status", None)
        if _transient(error):
            work.uncertain = True
            work.actions.appendleft(request)
            self._adoption.relabels.append(work)
            return
        if work.uncertain and status == 422 and request.expect != mine:
            work.actions.appendleft(attrs.evolve(request, expect=mine))
            self._ready.appendleft(work)
            return
        self._close(work)
        if work.key is not None:
            failed = FailedRelabel(work.key, request.namespace, request.pod_name, error)
            self._adoption.failed.append(failed)

    def _work_request(self, *, implicit: bool) -> Request | None:
        """The next request of the first work that has one to start, or None."""
        slots = self._cleanup_slots()
        if self._parked and self._cleaning < slots:
            work, parked = self._parked.popleft()
            return self._launch(parked, implicit=implicit, work=work)
        ready = self._ready
        while ready:
            work = ready.popleft()
            request = self._work_step(work)
            if request is None:
                continue  # the work is done
            if not isinstance(request, EmitEvent) and (self._parked or self._cleaning >= slots):
                self._parked.append((work, request))
                continue
            return self._launch(request, implicit=implicit, work=work)
        return None

    def _work_step(self, work: _Work) -> DeletePod | PatchLabels | EmitEvent | DeleteSecret | None:
        """The next request of ``work``; bookkeeping actions are applied on the way. None:
        the work is done, and closed."""
        while work.actions:
            action = work.actions.popleft()
            if isinstance(action, EmitEvent) and any(map(_is_cleanup, work.actions)):
                # The report is out: a clean-up failing after it is retried, never a
                # reason to decide (and report) again; with confirm_reports it waits
                # until the report is stored.
                if work.kind == _DECISION:
                    work.kind = _FINAL
                work.unstored = self.config.confirm_reports
            if isinstance(action, (DeletePod, PatchLabels, EmitEvent, DeleteSecret)):
                if isinstance(action, DeletePod) or (
                    isinstance(action, PatchLabels) and POD_EXECUTOR_DONE_LABEL in action.labels
                ):
                    self._remember_cleaned(action.namespace, action.pod_name)
                if isinstance(action, DeletePod) and self.config.secure_payload:
                    work.actions.appendleft(
                        DeleteSecret(workload_secret_name(action.pod_name), action.namespace)
                    )
                return action
            self._apply(action)
        self._close(work)
        key = work.key
        if work.attempts is not None:
            if key is None:  # not made by this core: every record is the work's
                self._attempts = work.attempts
                self._generation += 1
            elif self._attempts.get(key) is work.base:  # nobody changed it meanwhile
                record = work.attempts.get(key)
                if record is not work.base:
                    self._attempts = (
                        self._attempts.without(key)
                        if record is None
                        else self._attempts.with_record(key, record)
                    )
                    self._generation += 1
        if work.completed is not None:
            self._results.append(_Pending(work.completed))
        return None

    def _apply(self, action: Action | DeleteSecret) -> None:
        self._generation += 1
        if isinstance(action, FreeSlot):
            if action.key in self._running:
                del self._running[action.key]
                self._changes.append((action.key, False))
            self._create_retries.pop(action.key, None)
        elif isinstance(action, TrackRunning):
            if action.key not in self._running:
                self._running[action.key] = None
                self._changes.append((action.key, True))
        elif isinstance(action, RequeueJob):
            not_before = None
            if action.delay is not None and self._now is not None:
                not_before = self._now + datetime.timedelta(seconds=action.delay)
            resend = self._resends.pop(action.job.key, None)
            entry = _Queued(action.job, not_before, resend=resend)
            self._queue.append(entry)
            if not_before is not None:
                self._delayed.append(entry)
        # Every other action is a request (_work_step hands those out).

    # --- results ----------------------------------------------------------------------

    def _remember_cleaned(self, namespace: str, pod_name: str) -> None:
        cleaned = self._cleaned
        cleaned.pop((namespace, pod_name), None)
        cleaned[namespace, pod_name] = None
        if len(cleaned) > _CLEANED_KEPT:
            del cleaned[next(iter(cleaned))]

    def _decide_cached(self, pending: _Pending, known: KnownState) -> Decision:
        # The state check and the decision usually meet the same bookkeeping: decide once.
        cached = pending.cached
        if cached is not None and known is UNKNOWN and cached[0] == self._generation:
            return cached[1]
        decision = self._decide(pending.result, known)
        if known is UNKNOWN:
            pending.cached = (self._generation, decision)
        return decision

    def _needs_state(self, pending: _Pending) -> bool:
        result = pending.result
        if result.key in self._states:
            return False
        if isinstance(result.key, CallbackKey) and not self.config.read_callback_states:
            return False  # (state_needed's answer, without deciding first)
        decision = self._decide_cached(pending, UNKNOWN)
        return state_needed(result, decision, read_callback_states=self.config.read_callback_states)

    def _decide(self, result: WorkloadResult, known: KnownState) -> Decision:
        return decide(
            result,
            running=result.key in self._running,
            config=self.config.decisions,
            attempts=self._attempts,
            known_state=known,
        )

    def _handle_next(self) -> ReadStates | bool:
        """Decide about the first waiting result whose workload has no open work (False:
        there is none), or ask for the states that decision needs first."""
        results, busy = self._results, self._busy
        index = 0
        if busy:  # a workload's results are decided one after another, never side by side
            for index, waiting in enumerate(results):  # noqa: B007 - the index is the answer
                if waiting.result.key not in busy:
                    break
            else:
                return False
        pending = results[index]
        if pending.error is None and self._needs_state(pending):
            # One read for every waiting result that needs one: one query per pass.
            keys: dict[WorkloadKey, None] = {}
            for other in self._results:
                if (
                    other.error is None
                    and other.result.key not in keys
                    and self._needs_state(other)
                ):
                    keys[other.result.key] = None
            return ReadStates(tuple(keys))
        del results[index]
        result = pending.result
        if not pending.in_watch:
            # The pod left the watch: forgotten in the order its events came, after its
            # earlier results (forgetting it when the DELETED event was fed made the
            # MODIFIED event with the deletionTimestamp, fed just before, a leftover to
            # delete a second time).
            self._cleaned.pop((result.namespace, result.pod_name), None)
        work_pending: _Pending | None = None
        if pending.error is not None:
            decision = handling_failed(
                result,
                pending.error,
                running=result.key in self._running,
                failures_so_far=pending.failures,
                attempts=self._attempts,
                config=self.config.decisions,
                known_state=pending.known,
            )
            retry = decision.retry
            if retry is not None:
                self._backlog.append(
                    _Pending(result, retry.failures, pending.known, in_watch=pending.in_watch)
                )
            kind, cause = _FINAL, "handling failed"
        else:
            known = self._states.get(result.key, UNKNOWN)
            decision = leftover_cleanup(
                result,
                self._decide_cached(pending, known),
                running=result.key in self._running,
                in_watch=pending.in_watch,
                cleaned=(result.namespace, result.pod_name) in self._cleaned,
                attempts=self._attempts,
                config=self.config.decisions,
            )
            work_pending = _Pending(result, pending.failures, known, in_watch=pending.in_watch)
            kind, cause = _DECISION, "result"
        if self.on_decision is not None:
            self.on_decision(Handled(result.key, cause, decision, result))
        work = _Work(kind, _reported_first(decision.actions), work_pending, decision.attempts)
        self._open(work, result.key)
        return True


def _is_cleanup(action: Action | DeleteSecret) -> bool:
    return isinstance(action, (DeletePod, PatchLabels, DeleteSecret))


def _reported_first(actions: tuple[Action, ...]) -> deque[Action | DeleteSecret]:
    """A decision's actions, its pod's clean-up after its report: a finished workload's
    pod goes only once its result is out (the tables list them as the provider performs
    them, clean-up first). A process that dies in between leaves the pod, whose
    adoption reports it; the other way round, the workload ran and nothing said so."""
    if not any(isinstance(action, EmitEvent) for action in actions):
        return deque(actions)
    return deque(
        [
            *(action for action in actions if not _is_cleanup(action)),
            *(action for action in actions if _is_cleanup(action)),
        ]
    )
