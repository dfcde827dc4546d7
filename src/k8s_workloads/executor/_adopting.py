"""Adoption in the executor core: taking over the pods of dead schedulers after a
restart, and revoking a task instance's pods."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, TypeVar

from k8s_workloads.compat import supports_callbacks
from k8s_workloads.decisions.actions import (
    DeletePod,
    EmitEvent,
    FreeSlot,
    PatchLabels,
    TrackRunning,
)
from k8s_workloads.decisions.adoption import (
    AdoptionPlan,
    adoption_selectors,
    plan_adoption,
    plan_revocation,
)
from k8s_workloads.executor._base import _CoreBase
from k8s_workloads.executor._records import _ADOPTION, _FINAL, _Work
from k8s_workloads.executor.requests import Adoption, CreatePod, ListPods
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.labels import AIRFLOW_WORKER_LABEL

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from k8s_workloads.executor.requests import FailedRelabel
    from k8s_workloads.pods.labels import PodSelector


_Key = TypeVar("_Key", bound=WorkloadKey)


class _Adopting(_CoreBase):
    """Adoption and revocation, as works of the core."""

    def adopt(
        self,
        pods: Iterable[Mapping[str, Any]],
        *,
        alive_scheduler_ids: Iterable[str | int] = (),
        expected_task_keys: Iterable[TaskInstanceKey] | None = None,
        expected_callback_keys: Iterable[CallbackKey] | None = None,
        expected_generic_keys: Iterable[GenericKey] | None = None,
        dead_scheduler_ids: Iterable[str | int] = (),
    ) -> AdoptionPlan:
        """Take over the listed pods of dead schedulers (after a restart).

        ``pods``: every pod of the lists :meth:`adoption_selectors` names, as listed (a
        pod in two lists counts once). Perform the requests that follow; then
        :meth:`not_adopted` gives the keys to run again: task instances for the
        scheduler to reset, callbacks to queue again — only those with no pod listed.
        A relabel that fails for a transient reason is tried again on the next passes (a
        refusal after one such is checked once more as this scheduler's: it may have been
        applied); one the API server refuses (its owner changed: a rival adopted it; or
        the pod is gone: a rival reported and deleted it, or someone else deleted it) is
        not adopted and is named by :meth:`take_failed_relabels`. A pod without
        a readable owner label or workload is skipped, named in the plan's
        ``undecodable``. The drivers' ``adopt`` does all of it in one call.
        ``expected_generic_keys``: as ``expected_callback_keys``, for generic workloads
        (:func:`~k8s_workloads.decisions.adoption.plan_adoption`). This scheduler's own id
        among ``dead_scheduler_ids`` (those the lists were made for) says its earlier run
        died — an executor restarted under the id it had: that run's pods are taken over
        too. Adopt before the watch's events are fed: until then they are a stranger's.
        """
        retrying = [work.key for work in self._adoption.relabels if work.key is not None]
        plan = plan_adoption(
            pods,
            me=self.config.scheduler_id,
            alive_scheduler_ids=alive_scheduler_ids,
            expected_task_keys=expected_task_keys,
            expected_callback_keys=expected_callback_keys,
            expected_generic_keys=expected_generic_keys,
            airflow_version=self._resolver.airflow_version,
            config=self.config.decisions,
            running=(*self._running, *retrying),  # a relabel retried is not planned twice
            reclaim=str(self.config.scheduler_id) in {str(job) for job in dead_scheduler_ids},
        )
        self._adoption.found = plan.found | plan.owned  # held here when listed: a pod too
        completed = {(result.namespace, result.pod_name): result for result in plan.completed}
        groups: list[_Work] = []
        relabelled: tuple[str, str] | None = None  # the pod the last group took over
        for action in plan.actions:
            if isinstance(action, PatchLabels) and AIRFLOW_WORKER_LABEL in action.labels:
                relabelled = (action.namespace, action.pod_name)
                groups.append(_Work(_ADOPTION, deque([action])))
                groups[-1].completed = completed.get(relabelled)
            elif (
                isinstance(action, (DeletePod, PatchLabels))
                and (action.namespace, action.pod_name) != relabelled
            ):
                # A pod cleaned up or retired without being taken over (an earlier
                # launch, a settled workload's failed pod): a work of its own, tried
                # again while its failure is transient — never dropped for standing
                # before any relabel, nor tied to another pod's relabel.
                relabelled = None
                groups.append(_Work(_FINAL, deque([action])))
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

    def adoption_lists(
        self,
        dead_scheduler_ids: Iterable[str | int] = (),
        alive_scheduler_ids: Iterable[str | int] = (),
    ) -> tuple[ListPods, ...]:
        """The lists to perform before :meth:`adopt`, as requests any driver's
        ``perform`` answers (``(pods, resource_version)``): each of
        :meth:`adoption_selectors` in each watched namespace (one list of all namespaces
        with ``watch_all_namespaces``)."""
        selectors = self.adoption_selectors(dead_scheduler_ids, alive_scheduler_ids)
        return tuple(
            ListPods(namespace, selector)
            for selector in selectors
            for namespace in self.config.watched_namespaces
        )

    def adoption(self, plan: AdoptionPlan, expected: Iterable[WorkloadKey]) -> Adoption:
        """What :meth:`adopt`'s ``plan`` came to once its relabels were performed: the
        ``expected`` keys to run again, the relabels refused (taken: see
        :meth:`take_failed_relabels`) and those still retrying."""
        held = {work.key for work in self._adoption.relabels}
        rerun = [
            key
            for key in expected
            if key not in self._running
            and key not in plan.found
            and key not in plan.owned
            and key not in held
        ]
        return Adoption(
            plan,
            tuple(rerun),
            tuple(self.take_failed_relabels()),
            self.relabels_retrying,
        )

    def not_adopted(self, expected: Iterable[_Key]) -> list[_Key]:
        """Expected keys to run again, once the adoption's requests are performed: no pod
        of theirs was listed by the latest :meth:`adopt` and this executor does not run
        them — task instances for the scheduler to reset, callbacks to queue again
        (Airflow resets only task instances). Never a workload the adoption finished
        (its Succeeded pod reported) nor one whose relabel failed (it has a pod)."""
        held = {work.key for work in self._adoption.relabels}
        held.update(self._adoption.found)
        return [key for key in expected if key not in self._running and key not in held]

    @property
    def relabels_retrying(self) -> tuple[WorkloadKey, ...]:
        """Adopted workloads whose relabel failed for a transient reason: tried again on
        the next pass, tracked once it succeeds."""
        return tuple(work.key for work in self._adoption.relabels if work.key is not None)

    def take_failed_relabels(self) -> list[FailedRelabel]:
        """The relabels the API server refused since the last call: pods not adopted (a
        rival scheduler took them, or they are gone), whose workloads are not run again
        either — a rival runs them, or ran them. Log them; nothing is lost silently."""
        failed, self._adoption.failed = self._adoption.failed, []
        return failed

    def revoke(self, key: TaskInstanceKey, pods: Iterable[Mapping[str, Any]]) -> None:
        """Stop running a task instance: its queued job is dropped and its pods (this
        scheduler's, listed) are marked revoked, then deleted. No event is reported. A
        pod whose report waits to be stored (``confirm_reports``) goes at once too: the
        revocation overrides the outcome."""
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
