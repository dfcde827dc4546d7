"""Pod creation in the executor core: the creation queue with its not-before times, the
pause after a 429 or a ``Retry-After`` or while the API server cannot be reached, the
per-job retry counts, building each pod (and its Secret, with a secure payload) and what
a failed or skipped creation means — a failure with no clear answer is resolved by
reading the pod back (:mod:`~k8s_workloads.decisions.creation_errors`'s tables).

When a failed creation is tried again depends on how the core is driven:

=====================  ============================  ===========================
the creation           one at a time                 many in flight
                       (``next_request``, the        (``start_request``)
                       provider's)
=====================  ============================  ===========================
retried by a decision  on the next pass              after its delay, and no
(a 429, a 5xx read                                   sooner than the backoff
back, a quota 403)                                   (1 s doubling to 30 s with
                                                     each retry)
a 429 or a             every creation paused until   the same, resuming when the
``Retry-After``        then, and to the next pass    pause ends
never sent (refused)   the job waits; creation       the same, resuming when the
                       paused (backing off), to the  pause ends
                       next pass
read back, not found   the next pass, then backing   at once, then backing off
                       off
=====================  ============================  ===========================

Many in flight, a pass ends only when nothing is: a retry that waited for it would wait
for every unrelated slow call (another workload's deletion). It waits for its own time
instead (:attr:`~k8s_workloads.executor.Waiting.until` tells the driver when), still after
its workload's own requests (its Secret's clean-up), and never twice in a burst.
"""

from __future__ import annotations

import datetime
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from k8s_workloads.decisions.actions import (
    Decision,
    DeletePod,
    EmitEvent,
    FreeSlot,
    Ignore,
    RequeueJob,
)
from k8s_workloads.decisions.adoption import plan_relist
from k8s_workloads.decisions.creation_errors import (
    AfterCreateFailure,
    AfterReadBack,
    Delivery,
    after_create_failure,
    after_read_back,
    classify_create_error,
    decide_create_error,
)
from k8s_workloads.decisions.guards import creation_paused_until
from k8s_workloads.executor._base import _CoreBase
from k8s_workloads.executor._records import (
    _FINAL,
    _args_workload,
    _ErrorParts,
    _Flight,
    _Pending,
    _Queued,
    _ReadBack,
    _Work,
)
from k8s_workloads.executor.requests import (
    CreatePod,
    DeleteSecret,
    Handled,
    ProtocolError,
    ReadPod,
    Request,
)
from k8s_workloads.keys import RUN_ONCE_KEYS
from k8s_workloads.pods.build import PodTemplate, check_job, construct_pod
from k8s_workloads.pods.payload import (
    attach_secure_payload,
    json_path_command_args,
    secure_workload_payload,
)
from k8s_workloads.pods.redaction import token_masker
from k8s_workloads.states import KubernetesJob, state_class_for_key

if TYPE_CHECKING:
    from k8s_workloads.decisions.attempts import Attempt
    from k8s_workloads.keys import WorkloadKey
    from k8s_workloads.pods.manifest import Manifest


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
        delivery: Delivery | None = None,
    ) -> None:
        """Pod creation failed with this HTTP ``status`` (None: a connection error, which
        ``delivery`` tells apart: UNSENT, the request never reached the server; UNKNOWN,
        the default, it may have been applied and the pod is read back)."""
        flight = self._flight(request, CreatePod)
        self._land(flight)
        if status is not None:
            delivery = Delivery.ANSWERED
        parts = _ErrorParts(status, body, headers, reason)
        self._create_failure(flight, delivery or Delivery.UNKNOWN, parts)

    def pod_read(self, request: ReadPod, pod: Mapping[str, Any] | None) -> None:
        """The answer to ``request``: the pod read back, or None (404: there is none)."""
        flight = self._flight(request, ReadPod)
        if pod is not None and not isinstance(pod, Mapping):
            raise ProtocolError(f"answer {request!r} with a pod manifest or None")
        self._land(flight)
        self._unreachable = 0
        record = flight.readback
        assert record is not None  # noqa: S101 - _read_back_next's
        self._resolve(record, pod, implicit=flight.implicit)

    def _create_failure(
        self,
        flight: _Flight,
        delivery: Delivery,
        parts: _ErrorParts,
    ) -> None:
        """The first table of :mod:`~k8s_workloads.decisions.creation_errors`."""
        request = flight.request
        resend = isinstance(request, CreatePod) and request.resend
        step = after_create_failure(delivery, parts.status, parts.body, resend=resend)
        if step is AfterCreateFailure.WAIT:
            self._create_unsent(flight, parts.reason)
        elif step is AfterCreateFailure.READ_BACK:
            self._start_read_back(flight, parts)
        else:
            self._unreachable = 0
            self._create_error(flight, *parts)

    def _create_unsent(self, flight: _Flight, reason: str | None) -> None:
        """The creation never reached the API server: not a publish attempt. The job goes
        back to the head of the queue with the same pod, and creation pauses, longer each
        time it happens again, until the server answers — a callback no longer than
        ``callback_queued_timeout`` since its first attempt."""
        request, entry = flight.request, flight.entry
        assert isinstance(request, CreatePod)  # noqa: S101 - _launch's
        assert entry is not None  # noqa: S101
        key, now = request.key, self._now
        config = self.config.decisions
        what = reason or "connection error"
        if self._waited_too_long(entry, request, what):
            return
        entry.resend, entry.not_before = request, None
        self._queue.appendleft(entry)
        if flight.implicit:
            self._create_failed.add(key)
        delay = None
        if now is not None and (self._paused_until is None or now >= self._paused_until):
            first, most = config.unreachable_backoff_seconds
            delay = min(most, first * 2 ** min(self._unreachable, 32))
            self._unreachable += 1
            self._paused_until = now + datetime.timedelta(seconds=delay)
        if flight.implicit:  # one at a time: on the next pass; else when the pause ends
            self._creation_stopped = True
        if self.on_decision is not None:
            requeue = RequeueJob(entry.job, f"the API server was not reached: {what}", delay)
            decision = Decision((requeue,), self._attempts)
            self.on_decision(Handled(key, "create unsent", decision, pod_name=request.pod_name))

    def _waited_too_long(self, entry: _Queued, request: CreatePod, what: str) -> bool:
        """Fail a callback (or generic workload) whose pod could not be created within
        ``callback_queued_timeout`` of its first attempt (True: failed)."""
        timeout, now = self.config.decisions.callback_queued_timeout, self._now
        if (
            not isinstance(request.key, RUN_ONCE_KEYS)
            or timeout is None
            or now is None
            or entry.since is None
            or (now - entry.since).total_seconds() < timeout
        ):
            return False
        info = (
            f"pod creation failed: no pod could be created for {timeout:g} s "
            f"(callback_queued_timeout): {what}"
        )
        self._fail_launch(entry.job, info, "create error", pod_name=request.pod_name)
        self._drop_sent(request)
        return True

    def _send_again(self, entry: _Queued, resend: CreatePod | None, *, implicit: bool) -> None:
        """Back at the head of the queue after a read back found no pod: at once the first
        time, then waiting longer each time (a creation that never gets an answer must
        not spin, nor hold up the jobs behind it for ever)."""
        entry.resend, entry.not_before = resend, None
        entry.resends += 1
        now = self._now
        if now is not None and entry.resends > 1:
            first, most = self.config.decisions.unreachable_backoff_seconds
            delay = min(most, first * 2 ** min(entry.resends - 2, 32))
            entry.not_before = now + datetime.timedelta(seconds=delay)
            self._delayed.append(entry)
        self._queue.appendleft(entry)
        if implicit:
            self._create_failed.add(entry.job.key)

    def _start_read_back(self, flight: _Flight, parts: _ErrorParts) -> None:
        """No clear answer: whether the pod exists is read back before anything else
        happens to its workload (which stays busy until then)."""
        request, entry = flight.request, flight.entry
        assert isinstance(request, CreatePod)  # noqa: S101 - _launch's
        assert entry is not None  # noqa: S101
        key = request.key
        self._busy[key] = self._busy.get(key, 0) + 1
        record = _ReadBack(entry, request, parts, revoked=flight.revoked)
        self._readbacks.append(record)
        self._unresolved[request.namespace, request.pod_name] = record
        if self.on_decision is not None:
            status = parts.status
            what = f"HTTP {status}" if status is not None else (parts.reason or "no answer")
            ignore = Ignore(f"pod creation unanswered ({what}): reading the pod back")
            decision = Decision((), self._attempts, ignore)
            self.on_decision(Handled(key, "create unknown", decision, pod_name=request.pod_name))

    def _read_back_next(self, now: datetime.datetime, *, implicit: bool) -> Request | None:
        """The next read back that is due, handed out."""
        for index, record in enumerate(self._readbacks):
            if record.not_before is not None and now < record.not_before:
                continue
            del self._readbacks[index]
            sent = record.request
            request = ReadPod(sent.key, sent.namespace, sent.pod_name)
            return self._launch(request, implicit=implicit, readback=record)
        return None

    def _read_back_failed(self, record: _ReadBack) -> None:
        """The read back failed too: tried again later, waiting longer each time."""
        record.failures += 1
        now = self._now
        if now is not None:
            first, most = self.config.decisions.unreachable_backoff_seconds
            delay = min(most, first * 2 ** min(record.failures - 1, 32))
            record.not_before = now + datetime.timedelta(seconds=delay)
        self._readbacks.append(record)

    def _resolve(self, record: _ReadBack, pod: Mapping[str, Any] | None, *, implicit: bool) -> None:
        """The second table of :mod:`~k8s_workloads.decisions.creation_errors`."""
        entry, sent = record.entry, record.request
        key = sent.key
        self._unbusy(key)
        self._unresolved.pop((sent.namespace, sent.pod_name), None)
        attempt = self._attempts.get(key)
        live = (
            not record.revoked
            and key in self._running
            and attempt is not None
            and attempt.job is entry.job
        )
        earlier = (sent.namespace, sent.pod_name) in self._cleaned or _requeued(attempt, pod)
        step = after_read_back(
            pod, sent.pod, record.parts.status, earlier=earlier, seen=record.seen
        )
        if step is AfterReadBack.CREATED:
            self._create_retries.pop(key, None)
            if self.on_decision is not None:
                ignore = Ignore("the pod read back is this attempt's: created")
                decision = Decision((), self._attempts, ignore)
                handled = Handled(key, "create confirmed", decision, pod_name=sent.pod_name)
                self.on_decision(handled)
            if not live:  # revoked or settled meanwhile: its pod goes
                gone: deque[Any] = deque([DeletePod(sent.pod_name, sent.namespace)])
                self._open(_Work(_FINAL, gone), key)
            elif pod is None:
                # Made (the watch showed it) and gone since: if its last events fell in a
                # watch gap, a re-list (which waited for this read back) never reports it.
                # Settled as a re-list settles a pod that vanished; a final event of it
                # still waiting comes first, and this one is then stale.
                vanished = plan_relist(
                    (key,),
                    (),
                    attempts=self._attempts,
                    airflow_version=self._resolver.airflow_version,
                )
                self._results.extend(_Pending(result) for result in vanished)
            return
        if not live:  # no pod of this attempt, and nothing more to create
            self._drop_sent(sent)
            return
        if step is not AfterReadBack.DECIDE and self._waited_too_long(
            entry, sent, "no answer to its creation"
        ):
            return
        if step is AfterReadBack.RESEND:
            self._send_again(entry, sent, implicit=implicit)
        elif step is AfterReadBack.REBUILD:
            self._send_again(entry, None, implicit=implicit)
        else:
            flight = _Flight(sent, implicit=implicit, entry=entry)
            self._create_error(flight, *record.parts)

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
        times = [record.not_before for record in self._readbacks if record.not_before is not None]
        if self._readbacks and len(times) < len(self._readbacks):
            return None  # one is due now: asked for at once (as a job without a delay)
        if self._queue:
            # Only jobs with a delay are looked at: a pass costs nothing per queued job.
            times.extend(e.not_before for e in self._delayed if e.not_before is not None)
            if self._paused_until is not None:
                times.append(self._paused_until)
        return min(times) if times else None

    def _create_next(self, now: datetime.datetime, *, implicit: bool) -> Request | None:
        config = self.config
        if (
            self._creation_stopped
            or self._created_this_pass >= config.creation_batch_size
            or self._creating >= config.max_concurrent_creations
            or (self._unreachable and self._creating)  # unreachable: one probe at a time
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
                if entry.resend is not None:
                    self._drop_sent(entry.resend)
                continue  # revoked or settled meanwhile: drop the job
            self._created_this_pass += 1
            if entry.since is None:
                entry.since = now
            if entry.resend is not None:  # the same pod again: a new identity, one flight
                resend = attrs.evolve(entry.resend, resend=True)
                return self._launch(resend, implicit=implicit, entry=entry)
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
                continue  # one at a time, its creation failed in this pass: the next one
            if entry.job.key in self._busy:
                continue  # its workload's last result is still being handled
            del self._queue[index]
            if entry.not_before is not None:
                self._delayed = [other for other in self._delayed if other is not entry]
            return entry
        return None

    def _fail_launch(
        self, job: KubernetesJob[Any], info: str, cause: str, *, pod_name: str | None = None
    ) -> None:
        key = job.key
        failed = EmitEvent(key, state_class_for_key(key).FAILED, info)
        self._create_retries.pop(key, None)
        decision = Decision((FreeSlot(key), failed), self._attempts.without(key))
        if self.on_decision is not None:
            self.on_decision(Handled(key, cause, decision, pod_name=pod_name))
        self._open(_Work(_FINAL, deque(decision.actions), attempts=decision.attempts), key)

    def _check_job(self, job: KubernetesJob[Any]) -> None:
        """Refuse at ``submit`` a job no pod could be built from (:func:`check_job`), its
        override prepared over the configured template once (the build finds it so)."""
        config = self.config
        template = self._template() if job.pod_template_file is None else None
        check_job(
            job,
            airflow_version=config.airflow_version,
            base_worker_pod=template if isinstance(template, PodTemplate) else None,
            loads_templates=config.load_template is not None,
        )

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

    def _spaced(self, decision: Decision, requeue: RequeueJob, retries: int) -> Decision:
        """Driven concurrently, a creation retried waits for its own time, not for the
        pass to end: its delay, and no less than ``unreachable_backoff_seconds``' first,
        doubling with each retry (``retries``), so a creation the server keeps refusing
        is not sent again and again in one burst."""
        first, most = self.config.decisions.unreachable_backoff_seconds
        spacing = min(most, first * 2 ** min(retries - 1, 32))
        if requeue.delay is not None and requeue.delay >= spacing:
            return decision
        spaced = attrs.evolve(requeue, delay=spacing)
        actions = tuple(spaced if action is requeue else action for action in decision.actions)
        return attrs.evolve(decision, actions=actions)

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
        if flight.implicit:
            self._create_failed.add(key)
        cleanup: list[DeleteSecret] = []
        if request.secret is not None:
            cleanup.append(DeleteSecret(request.secret["metadata"]["name"], request.namespace))
        if fatal is not None:
            info = f"pod creation failed: {type(fatal).__name__}: {fatal}"
            self._fail_launch(job, info, "create error", pod_name=request.pod_name)
            self._ready[-1].actions.extendleft(cleanup)
            return
        retries = self._create_retries.get(key, 0)
        verdict = classify_create_error(
            status, body, headers, reason=reason, retries=retries, config=self.config.decisions
        )
        decision = decide_create_error(job, verdict, self._attempts)
        requeue = next((a for a in decision.actions if isinstance(a, RequeueJob)), None)
        if requeue is not None:
            self._create_retries[key] = retries + 1
            # Sent again under the same name: a 5xx whose write lands late answers 409 then,
            # and is read back as this attempt's pod instead of being created twice.
            self._resends[key] = request
            paused = (
                None
                if self._now is None
                else creation_paused_until(decision, now=self._now, paused_until=self._paused_until)
            )
            if paused is not None:  # the creations not handed out yet wait
                self._paused_until = paused
                if flight.implicit:  # one at a time: until the next pass too
                    self._creation_stopped = True
            if not flight.implicit:
                decision = self._spaced(decision, requeue, retries + 1)
        else:
            self._create_retries.pop(key, None)
        if self.on_decision is not None:
            self.on_decision(Handled(key, "create error", decision, pod_name=request.pod_name))
        work = _Work(_FINAL, deque([*cleanup, *decision.actions]), attempts=decision.attempts)
        self._open(work, key)


def _requeued(attempt: Attempt | None, pod: Mapping[str, Any] | None) -> bool:
    """Whether ``pod`` (read back) is an earlier launch of the workload whose failure was
    requeued: a kept pod under a name every launch shares (a fixed name from a
    ``pod_override``), never this attempt's. Its uid tells it apart, not its name."""
    if attempt is None or pod is None:
        return False
    metadata = pod.get("metadata")
    uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
    return isinstance(uid, str) and uid in attempt.requeued_uids
