"""Pod creation in the executor core: the creation queue with its not-before times, the
pause after a 429 or a ``Retry-After``, the per-job retry counts, building each pod (and
its Secret, with a secure payload) and what a failed or skipped creation means."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from k8s_workloads.decisions.actions import Decision, EmitEvent, FreeSlot, Ignore, RequeueJob
from k8s_workloads.decisions.creation_errors import decide_create_error
from k8s_workloads.decisions.guards import creation_paused_until
from k8s_workloads.executor._base import _CoreBase
from k8s_workloads.executor._records import _FINAL, _args_workload, _Flight, _Queued, _Work
from k8s_workloads.executor.requests import CreatePod, DeleteSecret, Handled, Manifest, Request
from k8s_workloads.pods.build import PodTemplate, construct_pod
from k8s_workloads.pods.payload import (
    attach_secure_payload,
    json_path_command_args,
    secure_workload_payload,
)
from k8s_workloads.pods.redaction import token_masker
from k8s_workloads.states import KubernetesJob, state_class_for_key

if TYPE_CHECKING:
    import datetime
    from collections.abc import Mapping

    from k8s_workloads.keys import WorkloadKey


class _Creation(_CoreBase):
    """The creation queue: which job's pod to create next, and its failures."""

    @property
    def paused_until(self) -> datetime.datetime | None:
        """Pod creation is paused until then (after a 429 or a ``Retry-After``)."""
        return self._paused_until

    def create_retries(self, key: WorkloadKey) -> int:
        """How often the pod creation of ``key`` has been retried since it last succeeded."""
        return self._create_retries.get(key, 0)

    def create_failed(
        self,
        request: CreatePod,
        *,
        status: int | None,
        body: object = None,
        headers: Mapping[str, str] | None = None,
        reason: str | None = None,
    ) -> None:
        """Pod creation failed with this HTTP ``status`` (None: a connection error)."""
        flight = self._flight(request, CreatePod)
        self._land(flight)
        self._create_error(flight, status, body, headers, reason)

    def create_skipped(self, request: CreatePod, reason: str) -> None:
        """``request``'s pod was not created, on purpose: the workload is stale (its task
        instance was retried, cleared or queued by another scheduler since it was
        submitted, as the provider checks before each creation). The job is dropped with
        no event and stops running; ``reason`` goes to :attr:`on_decision`."""
        flight = self._flight(request, CreatePod)
        self._land(flight)
        key = request.key
        self._create_retries.pop(key, None)
        decision = Decision((FreeSlot(key),), self._attempts.without(key), Ignore(reason))
        if self.on_decision is not None:
            self.on_decision(Handled(key, "stale", decision))
        self._open(_Work(_FINAL, deque(decision.actions), attempts=decision.attempts), key)

    def _wake_up(self) -> datetime.datetime | None:
        if not self._queue:
            return None
        # Only jobs with a delay are looked at: a pass costs nothing per queued job.
        times = [entry.not_before for entry in self._delayed if entry.not_before is not None]
        if self._queue and self._paused_until is not None:
            times.append(self._paused_until)
        return min(times) if times else None

    def _create_next(self, now: datetime.datetime, *, implicit: bool) -> Request | None:
        config = self.config
        if (
            self._creation_stopped
            or self._created_this_pass >= config.creation_batch_size
            or self._creating >= config.max_concurrent_creations
        ):
            return None
        if self._paused_until is not None:
            if now < self._paused_until:
                return None
            self._paused_until = None
        while (entry := self._next_due(now)) is not None:
            key = entry.job.key
            attempt = self._attempts.get(key)
            if key not in self._running or attempt is None or attempt.job is not entry.job:
                continue  # revoked or settled meanwhile: drop the job
            self._created_this_pass += 1
            try:
                pod, secret = self._build(entry.job)
            except (ValueError, TypeError) as error:
                # The builders' typed errors (an invalid pod, reconciliation, mutation hook,
                # payload, key, version) and a load_template that cannot give the template.
                # With secure_payload the pod never held the token the builders mask, so
                # the job's command is searched for it too.
                mask = token_masker([list(entry.job.command)])
                info = mask(f"the pod could not be built: {error}")
                self._fail_launch(entry.job, info, "build error")
                return None
            request = CreatePod(key, pod["metadata"]["namespace"], pod, secret)
            return self._launch(request, implicit=implicit, entry=entry)
        return None

    def _next_due(self, now: datetime.datetime) -> _Queued | None:
        """Take the first queued job that may be created now."""
        for index, entry in enumerate(self._queue):
            if entry.not_before is not None and now < entry.not_before:
                continue
            if entry.job.key in self._create_failed:
                continue  # its creation failed in this pass: retried on the next one
            if entry.job.key in self._busy:
                continue  # its workload's last result is still being handled
            del self._queue[index]
            if entry.not_before is not None:
                self._delayed = [other for other in self._delayed if other is not entry]
            return entry
        return None

    def _fail_launch(self, job: KubernetesJob[Any], info: str, cause: str) -> None:
        key = job.key
        failed = EmitEvent(key, state_class_for_key(key).FAILED, info)
        self._create_retries.pop(key, None)
        decision = Decision((FreeSlot(key), failed), self._attempts.without(key))
        if self.on_decision is not None:
            self.on_decision(Handled(key, cause, decision))
        self._open(_Work(_FINAL, deque(decision.actions), attempts=decision.attempts), key)

    def _template(self) -> PodTemplate | Mapping[str, Any] | None:
        """The configured template, prepared on first use (see :class:`PodTemplate`)."""
        if self._prepared_template is None:
            try:
                self._prepared_template = PodTemplate(self.config.pod_template)
            except (ValueError, TypeError):
                # Refused: every job's build raises the builder's own error for it.
                return self.config.pod_template
        return self._prepared_template

    def _build(self, job: KubernetesJob[Any]) -> tuple[Manifest, Manifest | None]:
        config = self.config
        template: PodTemplate | Mapping[str, Any] | None
        if job.pod_template_file is not None:
            if config.load_template is None:
                raise ValueError(
                    f"pod_template_file {job.pod_template_file!r}: no load_template configured"
                )
            # A file's template is read per job (the file may change); the builder keeps
            # its preparation by content.
            template = config.load_template(job.pod_template_file)
        else:
            template = self._template()
        args = list(job.command)
        workload = _args_workload(args) if config.secure_payload else None
        pod = construct_pod(
            job,
            namespace=config.namespace,
            scheduler_job_id=config.scheduler_id,
            airflow_version=config.airflow_version,
            kube_image=config.kube_image,
            base_worker_pod=template,
            args=json_path_command_args() if workload is not None else args,
            mutation_hook=config.mutation_hook,
            rng=config.rng,
        )
        if workload is None:
            return pod, None
        metadata = pod["metadata"]
        payload = secure_workload_payload(
            workload, pod_name=metadata["name"], namespace=metadata["namespace"]
        )
        return attach_secure_payload(pod, payload), payload.secret

    def _create_error(
        self,
        flight: _Flight,
        status: int | None,
        body: object,
        headers: Mapping[str, str] | None,
        reason: str | None,
        *,
        fatal: BaseException | None = None,
    ) -> None:
        request, entry = flight.request, flight.entry
        assert isinstance(request, CreatePod)  # noqa: S101 - _launch's
        assert entry is not None  # noqa: S101
        job, key = entry.job, request.key
        self._create_failed.add(key)
        cleanup: list[DeleteSecret] = []
        if request.secret is not None:
            cleanup.append(DeleteSecret(request.secret["metadata"]["name"], request.namespace))
        if fatal is not None:
            info = f"pod creation failed: {type(fatal).__name__}: {fatal}"
            self._fail_launch(job, info, "create error")
            self._ready[-1].actions.extendleft(cleanup)
            return
        retries = self._create_retries.get(key, 0)
        decision = decide_create_error(
            job,
            status,
            body,
            headers,
            reason=reason,
            retries=retries,
            config=self.config.decisions,
            attempts=self._attempts,
        )
        requeue = next((a for a in decision.actions if isinstance(a, RequeueJob)), None)
        if requeue is not None:
            self._create_retries[key] = retries + 1
            paused = (
                None
                if self._now is None
                else creation_paused_until(decision, now=self._now, paused_until=self._paused_until)
            )
            if paused is not None:  # the creations not handed out yet wait
                self._paused_until = paused
                self._creation_stopped = True
        else:
            self._create_retries.pop(key, None)
        if self.on_decision is not None:
            self.on_decision(Handled(key, "create error", decision))
        work = _Work(_FINAL, deque([*cleanup, *decision.actions]), attempts=decision.attempts)
        self._open(work, key)
