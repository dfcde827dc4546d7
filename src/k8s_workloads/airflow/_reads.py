"""What the executor reads for the core: workload states from Airflow's metadata database
(one query per kind), whether a task's queued row is still this workload's before its pod
is created (the stale check), and pod lists from the cluster (adoption, re-lists).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.airflow._lifecycle import _Lifecycle
from k8s_workloads.airflow._runtime import _airflow, _failures
from k8s_workloads.airflow.convert import from_airflow_state, to_airflow_key, to_airflow_state
from k8s_workloads.decisions.guards import stale_task_reason
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.states import CallbackState, TaskInstanceState

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from k8s_workloads.executor.requests import CreatePod, ListPods

__all__ = ["_Reads"]


class _Reads(_Lifecycle):
    """The executor's reads of the database and the cluster."""

    def _screen(self, request: CreatePod) -> str | None:
        """Why ``request``'s pod must not be created (a stale task instance), or None."""
        stale = self._stale(request.key)
        if stale is not None:
            self.log.info("Not creating pod %s for %s: %s", request.pod_name, request.key, stale)
            airflow_key = to_airflow_key(request.key)
            if self.event_buffer.get(airflow_key) == (
                to_airflow_state(TaskInstanceState.QUEUED),
                self.scheduler_job_id,
            ):
                self.event_buffer.pop(airflow_key, None)
        return stale

    def _stale(self, key: WorkloadKey) -> str | None:
        """Why a task's pod must not be created now, or None: the provider's check that
        the workload still owns its queued row (the same id, queued, the same try, by this
        scheduler) — after a delay (a 429, a quota) it may have been retried, cleared or
        queued by another scheduler. A failed read creates the pod (the check is a guard,
        and a result is handled as usual).

        The provider reads one row per pod; here the first creation of a pass reads its
        row and those of the next ``creation_batch_size`` queued tasks in one query, and
        the pass's other creations take their answers from that read.
        """
        if key not in self._stale_verdicts:
            batch = [key]
            size = self.core.config.creation_batch_size
            for job in self.core.queued:  # in creation order
                if len(batch) > size:
                    break
                if job.key in self._ti_ids and job.key not in self._stale_verdicts:
                    batch.append(job.key)
            self._stale_verdicts.update(self._check_stale(batch))
        return self._stale_verdicts.get(key)

    def _check_stale(self, keys: Sequence[WorkloadKey]) -> dict[WorkloadKey, str | None]:
        """:meth:`_stale`'s verdicts for ``keys``, from one query (None for a key that is
        no task, or whose row id is not known)."""
        from uuid import UUID  # noqa: PLC0415

        verdicts: dict[WorkloadKey, str | None] = dict.fromkeys(keys)
        task_instance = _airflow("airflow.models.taskinstance").TaskInstance
        try:
            python_type = task_instance.id.type.python_type
        except NotImplementedError:
            python_type = str
        wanted: dict[Any, list[TaskInstanceKey]] = {}
        for key in keys:
            ti_id = self._ti_ids.get(key)
            if isinstance(key, TaskInstanceKey) and ti_id is not None:
                row_id = UUID(ti_id) if python_type is UUID else python_type(ti_id)
                wanted.setdefault(row_id, []).append(key)
        if not wanted:
            return verdicts
        create_session = _airflow("airflow.utils.session").create_session
        select = _airflow("sqlalchemy").select
        try:
            with create_session(scoped=False) as session:  # not the scheduler's
                rows = session.execute(
                    select(
                        task_instance.id,
                        task_instance.state,
                        task_instance.try_number,
                        task_instance.queued_by_job_id,
                    ).where(task_instance.id.in_(list(wanted)))
                ).all()
        except _failures() as error:
            self.log.warning(
                "Could not check that %s are still queued (%s)",
                ", ".join(str(key) for group in wanted.values() for key in group),
                error,
            )
            return verdicts
        found = {row[0]: tuple(row[1:]) for row in rows}
        for row_id, row_keys in wanted.items():
            row = found.get(row_id)
            for key in row_keys:
                verdicts[key] = self._stale_verdict(key, self._ti_ids[key], row)
        return verdicts

    def _stale_verdict(
        self, key: TaskInstanceKey, ti_id: str, row: tuple[Any, ...] | None
    ) -> str | None:
        state_row = None if row is None else (row[0], row[1], row[2])
        return stale_task_reason(key, state_row, ti_id=ti_id, scheduler_id=self.scheduler_job_id)

    def _read_states(
        self, keys: Iterable[WorkloadKey]
    ) -> dict[WorkloadKey, TaskInstanceState | CallbackState | None]:
        """One query for the task instances, one for the callbacks, in a session of its own."""
        from uuid import UUID  # noqa: PLC0415

        callback_model = _airflow("airflow.models.callback").Callback
        task_instance = _airflow("airflow.models.taskinstance").TaskInstance
        create_session = _airflow("airflow.utils.session").create_session
        select = _airflow("sqlalchemy").select

        tasks = [key for key in keys if isinstance(key, TaskInstanceKey)]
        callbacks = [key for key in keys if isinstance(key, CallbackKey)]
        states: dict[WorkloadKey, TaskInstanceState | CallbackState | None] = {}
        # An independent session: the scheduler calls try_adopt_task_instances inside its
        # own, and the scoped one would be that same session, committed and closed here.
        with create_session(scoped=False) as session:
            if tasks:
                wanted = {to_airflow_key(key): key for key in tasks}
                rows = session.execute(
                    select(
                        task_instance.dag_id,
                        task_instance.task_id,
                        task_instance.run_id,
                        task_instance.map_index,
                        task_instance.state,
                    ).where(task_instance.filter_for_tis(list(wanted)))
                )
                by_primary = {(r[0], r[1], r[2], r[3]): r[4] for r in rows}
                for airflow_key, key in wanted.items():
                    state = by_primary.get(airflow_key.primary)
                    states[key] = from_airflow_state(state, key=key)
            if callbacks:
                ids = {UUID(key.id): key for key in callbacks}
                rows = session.execute(
                    select(callback_model.id, callback_model.state).where(
                        callback_model.id.in_(list(ids))
                    )
                )
                for callback_id, state in rows:
                    callback = ids[callback_id]
                    states[callback] = from_airflow_state(state, key=callback)
        return states

    def _list(
        self, namespace: str | None, *, label_selector: str, field_selector: str | None = None
    ) -> tuple[list[Any], str | None]:
        """Listed pods as manifests (read as JSON in pages, never as model objects) and
        the list's version."""
        return self._calls.list_pods(
            namespace, label_selector=label_selector, field_selector=field_selector
        )

    def _relist(self, request: ListPods) -> tuple[list[Any], str | None]:
        """List every watched namespace; each watcher resumes from its own list's version
        (the core keeps the last one: versions of different lists are not compared)."""
        pods: list[Any] = []
        versions: dict[str | None, str | None] = {}
        for namespace in self._namespaces():
            items, versions[namespace] = self._list(
                namespace, label_selector=request.selector.label_selector
            )
            pods.extend(items)
        for watcher in self._watchers:
            watcher.resource_version = versions.get(watcher.namespace)
            watcher.restart.set()
        return pods, versions[namespace]
