"""Taking over what dead schedulers left: their task and callback pods
(``try_adopt_task_instances``, and the executor's own scan, since Airflow hands it no
callbacks), and the callbacks they queued that have no pod yet, run again exactly once
across live schedulers (the holder mark on a callback's row, :meth:`_Adoption.claim_callback`).

:class:`_Adoption` is a part the executor holds, given what it uses: the core
(:class:`~k8s_workloads.executor.ExecutorCore`), the pod lists, this scheduler's id, and
callables for the rest (the other live schedulers, the workload signer, running or failing
a callback, a pass).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import time
from typing import TYPE_CHECKING, Any

import attrs

from k8s_workloads.airflow._runtime import (
    _AIRFLOW_VERSION,
    _HOLDER,
    _airflow,
    _failures,
    _utcnow,
)
from k8s_workloads.airflow.convert import from_airflow_key, to_airflow_key
from k8s_workloads.compat import InvalidVersion
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods.codec import InvalidAnnotations, annotations_to_key
from k8s_workloads.pods.labels import callback_pods_selector
from k8s_workloads.states import CallbackState

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from k8s_workloads.airflow._reads import _PodLists
    from k8s_workloads.decisions.adoption import AdoptionPlan
    from k8s_workloads.executor import ExecutorCore

__all__ = ["_Adoption"]

_Relaunches = tuple[list[Any], list[tuple[str, str, str]]]
"""Orphaned callbacks taken over: the workloads to run, and ``(id, holder, why)`` of those
that fail."""


@attrs.define(kw_only=True, eq=False, slots=False)  # tests replace a method on one
class _Adoption:
    """Adoption of dead schedulers' pods and callbacks.

    ``core``: the executor's core; ``pods``: the pod lists of the watched namespaces;
    ``scheduler_id``: this scheduler's job id; ``supports_callbacks``: whether this Airflow
    runs callbacks on executors (3.3+); ``alive_others``: the other live schedulers' job
    ids (the provider's query); ``generator``: what the scheduler signs workloads with;
    ``run_callback``: submit a callback workload taken over; ``fail_callback``: report one
    that cannot run again; ``perform``: a pass performing the core's requests, to the end.
    """

    core: ExecutorCore
    pods: _PodLists
    scheduler_id: str
    supports_callbacks: bool
    alive_others: Callable[[], Iterable[str | int]]
    generator: Callable[[], Any]
    run_callback: Callable[[Any], None]
    fail_callback: Callable[[CallbackKey, str], None]
    perform: Callable[[], None]
    log: logging.Logger | logging.LoggerAdapter[Any]
    last_scan: float = attrs.field(init=False, default=float("-inf"))
    """When the last scan for orphans started (``time.monotonic()``; the first sync()
    looks for orphans)."""
    scan: concurrent.futures.Future[Any] | None = attrs.field(init=False, default=None)
    background: concurrent.futures.ThreadPoolExecutor = attrs.field(
        init=False,
        factory=lambda: concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="k8s-workloads-orphans"
        ),
    )

    def claim_callback(self, workload: Any, session: Any) -> bool:  # noqa: ANN401 - Airflow's
        """Record on the callback's row that this scheduler holds it; False: another does.

        Airflow's ``callback`` table says nothing of who queued a callback (task
        instances have ``queued_by_job_id``), so a callback whose scheduler died before
        its pod existed would stay ``queued`` for ever. The executor writes
        ``k8s_workloads: queued by scheduler job <id>`` to the row's ``output`` (unused
        while a callback is active: Airflow writes it when one fails) with a conditional
        UPDATE in the scheduler's own session, the transaction that sets the row
        ``queued``: the mark and the state commit together. Of two schedulers queueing
        one pending callback (``_enqueue_executor_callbacks`` takes no row lock), the
        second finds the mark set and drops its copy.
        """
        from uuid import UUID  # noqa: PLC0415

        callback = _airflow("airflow.models.callback").Callback
        update = _airflow("sqlalchemy").update
        active = [CallbackState.PENDING.value, CallbackState.QUEUED.value]
        result = session.execute(
            update(callback)
            .where(
                callback.id == UUID(str(workload.callback.id)),
                callback.state.in_(active),
                callback.output.is_(None),
            )
            .values(output=f"{_HOLDER}{self.scheduler_id}")
            .execution_options(synchronize_session=False)
        )
        if result.rowcount == 1:
            return True
        self.log.info(
            "Callback %s is held by another scheduler (or no longer active); not run here",
            workload.callback.id,
        )
        return False

    def look_for_orphans(self, interval: float) -> None:
        """Start a scan for orphans (:meth:`scan_orphans`) when the last one started
        ``interval`` seconds ago or more."""
        if time.monotonic() - self.last_scan >= interval:
            self.last_scan = time.monotonic()
            self.scan_orphans()

    def scan_orphans(self) -> None:
        """Take over the callbacks of dead schedulers (their pods, or the callbacks run
        again where no pod exists), and clean up their Succeeded pods.

        Airflow hands an executor only task instances to adopt (``try_adopt_task_instances``,
        and only when there are some), never callbacks: the executor looks for them itself,
        at start and every ``[scheduler] orphaned_tasks_check_interval``, as the provider
        looks for completed pods. The lists, queries and the takeover's conditional
        UPDATEs run in the background (a namespace of many pods is many pages); a later
        ``sync()`` plans the adoption from them and submits the callbacks taken over
        (:meth:`plan_orphans`), and its pass performs it.
        """
        if self.scan is None:
            self.scan = self.background.submit(self._orphan_inputs)

    def _orphan_inputs(
        self,
    ) -> tuple[list[Mapping[str, Any]], list[Any], list[CallbackKey], _Relaunches]:
        pods = self._adoption_pods(())
        alive = list(self.alive_others())
        active = self.active_callbacks()
        try:
            relaunches = self.take_orphaned_callbacks()
        except _failures() as error:
            # Nothing was taken (a row taken is kept, see the loop): the next scan tries.
            self.log.warning("Looking for orphaned callbacks failed (%s); tried later", error)
            relaunches = ([], [])
        return pods, alive, active, relaunches

    def take_orphaned_callbacks(self) -> _Relaunches:
        """Take over the callbacks queued by schedulers no longer alive that have no pod.

        A row marked ``queued by scheduler job N`` (:meth:`claim_callback`), still
        ``queued``, whose scheduler N is not alive (its job not running, or no heartbeat
        within ``[scheduler] scheduler_health_check_threshold``, as Airflow judges its
        task instances' schedulers) and of which no pod exists — of any scheduler, in any
        phase: a pod is adopted as a pod — is rebuilt into an ``ExecuteCallback`` (as
        ``_enqueue_executor_callbacks`` builds it), then taken by one conditional UPDATE
        of its mark from ``N`` to this scheduler: of two schedulers racing, the one whose
        UPDATE changes the row runs it; the other changes nothing and drops it. A row
        held by a live scheduler is never written. A row that cannot be rebuilt is taken
        the same way and reported failed (one callback; the rest go on). A database
        error before the UPDATE leaves everything for the next scan.

        Returns the workloads to run and the ``(callback id, holder, why)`` of those that
        fail; the caller (the scheduler's thread) submits and reports them.
        """
        if not self.supports_callbacks:
            return [], []
        from uuid import UUID  # noqa: PLC0415

        callback = _airflow("airflow.models.callback").Callback
        sqlalchemy = _airflow("sqlalchemy")
        create_session = _airflow("airflow.utils.session").create_session
        me = str(self.scheduler_id)
        with create_session(scoped=False) as session:
            alive = self._live_scheduler_ids(session) | {me}
            rows = session.execute(
                sqlalchemy.select(callback.id, callback.output).where(
                    callback.state == CallbackState.QUEUED.value,
                    callback.output.like(f"{_HOLDER}%"),
                )
            ).all()
        orphans = {
            str(row_id): output
            for row_id, output in rows
            if output.removeprefix(_HOLDER) not in alive
        }
        if not orphans:
            return [], []
        for key in self._callbacks_with_pods():
            orphans.pop(key.id, None)  # adopted as a pod (or reported), never run again
        if not orphans:
            return [], []
        try:
            generator = self.generator()  # what the scheduler signs workloads with
        except (ValueError, _airflow("airflow.exceptions").AirflowConfigException) as error:
            self.log.warning("Cannot run orphaned callbacks again (%s); tried later", error)
            return [], []
        taken: list[Any] = []
        failed: list[tuple[str, str, str]] = []
        for callback_id, holder in orphans.items():
            try:
                with create_session(scoped=False) as session:
                    workload, why = self._rebuild_callback(session, UUID(callback_id), generator)
                    won = session.execute(
                        sqlalchemy.update(callback)
                        .where(
                            callback.id == UUID(callback_id),
                            callback.state == CallbackState.QUEUED.value,
                            callback.output == holder,
                        )
                        .values(output=f"{_HOLDER}{me}")
                        .execution_options(synchronize_session=False)
                    ).rowcount
            except _failures() as error:
                # Not committed: still the dead scheduler's, for the next scan. The rows
                # taken before it are returned, never dropped while this scheduler lives.
                self.log.warning("Could not take over callback %s (%s)", callback_id, error)
                continue
            if won != 1:
                continue  # another live scheduler took it first
            if workload is not None:
                taken.append(workload)
            else:
                failed.append((callback_id, holder.removeprefix(_HOLDER), why))
        return taken, failed

    def _live_scheduler_ids(self, session: Any) -> set[str]:  # noqa: ANN401 - a Session
        """The scheduler jobs alive now (running, with a recent heartbeat); raises on a
        database error (the provider's own check answers "none" then, which would make
        every live scheduler's callbacks look orphaned)."""
        job = _airflow("airflow.jobs.job").Job
        select = _airflow("sqlalchemy").select
        threshold = _airflow("airflow.providers.common.compat.sdk").conf.getint(
            "scheduler", "scheduler_health_check_threshold", fallback=30
        )
        cutoff = _utcnow() - datetime.timedelta(seconds=threshold)
        ids = session.scalars(
            select(job.id).where(
                job.job_type == "SchedulerJob",
                job.state == "running",
                job.latest_heartbeat > cutoff,
            )
        )
        return {str(job_id) for job_id in ids}

    def _callbacks_with_pods(self) -> set[CallbackKey]:
        """Callbacks of which a pod exists, of any scheduler and in any phase."""
        selector = callback_pods_selector()
        keys: set[CallbackKey] = set()
        for pod in self.pods.list_watched(label_selector=selector.label_selector):
            metadata = pod.get("metadata") or {}
            try:
                key = annotations_to_key(
                    metadata.get("annotations") or {},
                    metadata.get("labels") or {},
                    airflow_version=_AIRFLOW_VERSION,
                )
            except (InvalidAnnotations, InvalidVersion):
                continue  # adoption reports it, naming it
            if isinstance(key, CallbackKey):
                keys.add(key)
        return keys

    def _rebuild_callback(
        self,
        session: Any,  # noqa: ANN401 - a Session
        callback_id: Any,  # noqa: ANN401 - a UUID
        generator: Any,  # noqa: ANN401 - a JWTGenerator
    ) -> tuple[Any, str]:
        """The ``ExecuteCallback`` for a callback row, built as the scheduler builds it,
        or None and why it cannot be."""
        callback = _airflow("airflow.models.callback").Callback
        dag_run_model = _airflow("airflow.models.dagrun").DagRun
        execute_callback = _airflow("airflow.executors.workloads").ExecuteCallback
        row = session.get(callback, callback_id)
        data = None if row is None else row.data
        if not isinstance(data, dict) or data.get("dag_run_id") is None:
            return None, "its data names no dag_run_id to rebuild the workload from"
        try:
            dag_run = session.get(dag_run_model, data["dag_run_id"])
            if dag_run is None:
                return None, f"its dag run {data['dag_run_id']!r} no longer exists"
            return execute_callback.make(callback=row, dag_run=dag_run, generator=generator), ""
        except (
            ValueError,
            TypeError,
            KeyError,
            AttributeError,
            _airflow("sqlalchemy.exc").StatementError,  # a dag_run_id of the wrong type
        ) as error:
            return None, f"its row cannot be rebuilt into a workload ({error})"

    def plan_orphans(self) -> None:
        """Once a scan is done: its adoption planned (the next pass performs it), the
        callbacks taken over submitted, those that cannot run again failed."""
        scan = self.scan
        if scan is None or not scan.done():
            return
        self.scan = None
        try:
            pods, alive, callbacks, (taken, failed) = scan.result()  # raises what the calls do
        except _failures() as error:
            self.log.warning("Adopting orphaned callbacks failed (%s); tried later", error)
            return
        # plan_adoption is total: any listed pod, however odd, is adopted or skipped.
        self._log_unreadable(
            self.core.adopt(
                pods,
                alive_scheduler_ids=alive,
                expected_task_keys=[],
                expected_callback_keys=callbacks,
            )
        )
        for workload in taken:
            self.log.info(
                "Running callback %s again: its scheduler died before its pod existed",
                workload.callback.id,
            )
            self.run_callback(workload)
        for callback_id, holder, why in failed:
            self.log.error(
                "Callback %s, queued by scheduler job %s (no longer alive), fails: %s",
                callback_id,
                holder,
                why,
            )
            self.fail_callback(
                CallbackKey(callback_id),
                f"k8s_workloads: cannot run this orphaned callback again: {why}",
            )

    def close(self, timeout: float) -> None:
        """Stop scanning: a scan still running is waited for at most ``timeout`` seconds
        (it goes on after: list, take rows, log); those not started are dropped."""
        scan = self.scan
        self.background.shutdown(wait=False, cancel_futures=True)
        if scan is not None:
            concurrent.futures.wait([scan], timeout=timeout)

    def release_marks(self, callback_ids: list[str]) -> None:
        """Clear the executor's mark (``queued by scheduler job N``) from the ``output`` of
        callbacks stored ``success``: the column is the user's (Airflow writes a failed
        callback's error there), and a settled callback needs no holder. One conditional
        UPDATE, in a session of its own; a failure leaves the marks, saying so."""
        from uuid import UUID  # noqa: PLC0415

        callback = _airflow("airflow.models.callback").Callback
        update = _airflow("sqlalchemy").update
        create_session = _airflow("airflow.utils.session").create_session
        try:
            with create_session(scoped=False) as session:
                session.execute(
                    update(callback)
                    .where(
                        callback.id.in_([UUID(callback_id) for callback_id in callback_ids]),
                        callback.state == CallbackState.SUCCESS.value,
                        callback.output.like(f"{_HOLDER}%"),
                    )
                    .values(output=None)
                    .execution_options(synchronize_session=False)
                )
        except _failures() as error:
            self.log.warning(
                "Could not clear the executor's mark from %d succeeded callbacks' output: %s",
                len(callback_ids),
                error,
            )

    # --- the scheduler's adoption -------------------------------------------------------

    def adopt_task_instances(self, tis: Sequence[Any]) -> Sequence[Any]:
        """Take over the dead schedulers' task and callback pods; return the TIs to reset."""
        without_owner = [ti for ti in tis if not ti.queued_by_job_id]
        owned = {ti.key: ti for ti in tis if ti.queued_by_job_id}
        dead = {str(ti.queued_by_job_id) for ti in owned.values()}
        try:
            expected = [
                key for key in map(from_airflow_key, owned) if isinstance(key, TaskInstanceKey)
            ]
            # Each relabel is guarded by the owner (a JSON patch testing airflow-worker):
            # a status update since the list does not fail it; a rival adopter does.
            self._log_unreadable(
                self.core.adopt(
                    self._adoption_pods(dead),
                    alive_scheduler_ids=self.alive_others(),
                    expected_task_keys=expected,
                    expected_callback_keys=self.active_callbacks(),
                )
            )
            self.perform()  # unbounded: the relabels' answers decide what is reset
            reset = {to_airflow_key(key) for key in self.core.not_adopted(expected)}
        except _failures() as error:
            self.log.warning("Adoption failed (%s); the scheduler resets the task instances", error)
            return list(tis)
        return [*without_owner, *(ti for key, ti in owned.items() if key in reset)]

    def _adoption_pods(self, dead: Iterable[str]) -> list[Mapping[str, Any]]:
        """The pods of the core's adoption lists (live pods of the ``dead`` schedulers,
        live callback pods and Succeeded pods no live scheduler owns), as listed: a pod
        in two lists is there twice, and the core counts it once (the newer version)."""
        alive = self.alive_others()
        pods: list[Mapping[str, Any]] = []
        for selector in self.core.adoption_selectors(dead, alive):
            pods.extend(
                self.pods.list_watched(
                    label_selector=selector.label_selector,
                    field_selector=selector.field_selector,
                )
            )
        return pods

    def _log_unreadable(self, plan: AdoptionPlan) -> None:
        """One line per listed pod adoption skipped as unreadable (no workload in its
        annotations, a missing or malformed owner label); the rest were planned."""
        for pod in plan.undecodable:
            self.log.warning("Not adopting pod %s/%s: %s", pod.namespace, pod.pod_name, pod.reason)

    def active_callbacks(self) -> list[CallbackKey]:
        """The callbacks Airflow runs now (pending, queued, running), by key."""
        if not self.supports_callbacks:
            return []  # before 3.3 no callback ran on an executor
        callback_model = _airflow("airflow.models.callback").Callback
        create_session = _airflow("airflow.utils.session").create_session
        select = _airflow("sqlalchemy").select

        active = [state.value for state in (
            CallbackState.PENDING, CallbackState.QUEUED, CallbackState.RUNNING
        )]  # fmt: skip
        with create_session(scoped=False) as session:  # not the scheduler's (see above)
            ids = session.scalars(select(callback_model.id).where(callback_model.state.in_(active)))
            return [CallbackKey(str(callback_id)) for callback_id in ids]
