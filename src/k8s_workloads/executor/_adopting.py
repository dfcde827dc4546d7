"""Adoption in the executor core: taking over the pods of dead schedulers after a
restart, and revoking a task instance's pods."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, TypeVar

from k8s_workloads.compat import supports_callbacks
from k8s_workloads.decisions.actions import EmitEvent, FreeSlot, PatchLabels, TrackRunning
from k8s_workloads.decisions.adoption import (
    AdoptionPlan,
    adoption_selectors,
    plan_adoption,
    plan_revocation,
)
from k8s_workloads.executor._base import _CoreBase
from k8s_workloads.executor._records import _ADOPTION, _FINAL, _Work
from k8s_workloads.executor.requests import CreatePod
from k8s_workloads.keys import CallbackKey, TaskInstanceKey

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from k8s_workloads.pods.labels import PodSelector


_Key = TypeVar("_Key", TaskInstanceKey, CallbackKey)


class _Adopting(_CoreBase):
    """Adoption and revocation, as works of the core."""

    def adopt(
        self,
        pods: Iterable[Mapping[str, Any]],
        *,
        alive_scheduler_ids: Iterable[str | int] = (),
        expected_task_keys: Iterable[TaskInstanceKey] | None = None,
        expected_callback_keys: Iterable[CallbackKey] | None = None,
    ) -> AdoptionPlan:
        """Take over the listed pods of dead schedulers (after a restart).

        ``pods``: every pod of the lists :meth:`adoption_selectors` names, as listed (a
        pod in two lists counts once). Perform the requests that follow; then
        :meth:`not_adopted` gives the keys not taken over: task instances for the
        scheduler to reset, callbacks to run again. A pod whose relabel fails (its owner
        changed: a rival adopted it) is not adopted; a pod without a readable owner label
        or workload is skipped, named in the plan's ``undecodable``.
        """
        plan = plan_adoption(
            pods,
            me=self.config.scheduler_id,
            alive_scheduler_ids=alive_scheduler_ids,
            expected_task_keys=expected_task_keys,
            expected_callback_keys=expected_callback_keys,
            airflow_version=self._resolver.airflow_version,
            config=self.config.decisions,
            running=tuple(self._running),
        )
        completed = {(result.namespace, result.pod_name): result for result in plan.completed}
        groups: list[_Work] = []
        for action in plan.actions:
            if isinstance(action, PatchLabels):
                groups.append(_Work(_ADOPTION, deque([action])))
                groups[-1].completed = completed.get((action.namespace, action.pod_name))
            elif groups:
                groups[-1].actions.append(action)
        for group in groups:
            key = group.completed.key if group.completed is not None else None
            for step in group.actions:
                if isinstance(step, (TrackRunning, FreeSlot, EmitEvent)):
                    key = step.key
            self._open(group, key)
        return plan

    def adoption_selectors(
        self,
        dead_scheduler_ids: Iterable[str | int] = (),
        alive_scheduler_ids: Iterable[str | int] = (),
    ) -> tuple[PodSelector, ...]:
        """The pod lists to make (in each watched namespace) before :meth:`adopt`:
        :func:`~k8s_workloads.decisions.adoption.adoption_selectors` for this scheduler, with the
        callback list when its Airflow runs callbacks (3.3+)."""
        return adoption_selectors(
            self.config.scheduler_id,
            dead_scheduler_ids=dead_scheduler_ids,
            alive_scheduler_ids=alive_scheduler_ids,
            callbacks=supports_callbacks(self._resolver.airflow_version),
        )

    def not_adopted(self, expected: Iterable[_Key]) -> list[_Key]:
        """Expected keys this executor does not run, once the adoption's requests are
        performed: task instances for the scheduler to reset, callbacks for the executor
        to run again (Airflow resets only task instances)."""
        return [key for key in expected if key not in self._running]

    def revoke(self, key: TaskInstanceKey, pods: Iterable[Mapping[str, Any]]) -> None:
        """Stop running a task instance: its queued job is dropped and its pods (this
        scheduler's, listed) are marked revoked, then deleted. No event is reported."""
        for entry in self._queue:
            if entry.job.key == key and entry.resend is not None:
                self._drop_sent(entry.resend)  # sent before, not made: its Secret goes
        self._queue = deque(entry for entry in self._queue if entry.job.key != key)
        self._delayed = [entry for entry in self._delayed if entry.job.key != key]
        self._create_retries.pop(key, None)
        self._resends.pop(key, None)
        for flight in self._in_flight.values():
            if isinstance(flight.request, CreatePod) and flight.request.key == key:
                flight.revoked = True  # its pod is not among those listed: deleted once made
            elif flight.readback is not None and flight.readback.request.key == key:
                flight.readback.revoked = True  # likewise, once read back
        for record in self._readbacks:
            if record.request.key == key:
                record.revoked = True
        decision = plan_revocation(key, pods, me=self.config.scheduler_id, attempts=self._attempts)
        self._attempts = decision.attempts
        self._generation += 1
        self._open(_Work(_FINAL, deque(decision.actions)), key)
