"""What the executor reads for the core: workload states from Airflow's metadata database
(one query per kind), whether a task's queued row is still this workload's before its pod
is created (the stale check), and pod lists from the cluster (adoption, re-lists).

Two parts the executor holds, each given what it reads with: :class:`_StateReads` (the
scheduler's id, the task instances' row ids, the queue of jobs and a logger) and
:class:`_PodLists` (the calls that list and the watched namespaces).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from k8s_workloads.airflow._runtime import _airflow, _failures
from k8s_workloads.airflow.convert import from_airflow_state, to_airflow_key
from k8s_workloads.decisions.guards import stale_task_reason
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from k8s_workloads.executor.requests import ListPods
    from k8s_workloads.states import CallbackState, KubernetesJob, TaskInstanceState

__all__ = ["_PodLists", "_StateReads"]


class _Lister(Protocol):
    """What lists pods (:class:`~k8s_workloads.io.kube.KubeCalls`)."""

    def list_pods(
        self,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]: ...


class _StateReads:
    """The executor's reads of Airflow's metadata database, each in a session of its own.

    ``scheduler_id``: this scheduler's job id (the stale check's owner); ``ti_ids``: the
    task instances' row ids, by key (kept by the executor); ``queued``: the core's queued
    jobs, in creation order; ``batch_size``: how many queued tasks one stale check reads.
    """

    def __init__(
        self,
        *,
        scheduler_id: str | None,
        ti_ids: Mapping[WorkloadKey, str],
        queued: Callable[[], Iterable[KubernetesJob[Any]]],
        batch_size: int,
        log: logging.Logger | logging.LoggerAdapter[Any],
    ) -> None:
        self.scheduler_id = scheduler_id
        self.ti_ids = ti_ids
        self.queued = queued
        self.batch_size = batch_size
        self.log = log
        self.verdicts: dict[WorkloadKey, str | None] = {}
        """This pass's stale checks (see :meth:`stale`), read one creation batch at a time."""

    def new_pass(self) -> None:
        """Forget the stale checks: rows move on between passes."""
        self.verdicts = {}

    def stale(self, key: WorkloadKey) -> str | None:
        """Why a task's pod must not be created now, or None: the provider's check that
        the workload still owns its queued row (the same id, queued, the same try, by this
        scheduler) — after a delay (a 429, a quota) it may have been retried, cleared or
        queued by another scheduler. A failed read creates the pod (the check is a guard,
        and a result is handled as usual).

        The provider reads one row per pod; here the first creation of a pass reads its
        row and those of the next ``creation_batch_size`` queued tasks in one query, and
        the pass's other creations take their answers from that read.
        """
        if key not in self.verdicts:
            batch = [key]
            for job in self.queued():  # in creation order
                if len(batch) > self.batch_size:
                    break
                if job.key in self.ti_ids and job.key not in self.verdicts:
                    batch.append(job.key)
            self.verdicts.update(self.check_stale(batch))
        return self.verdicts.get(key)

    def check_stale(self, keys: Sequence[WorkloadKey]) -> dict[WorkloadKey, str | None]:
        """:meth:`stale`'s verdicts for ``keys``, from one query (None for a key that is
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
            ti_id = self.ti_ids.get(key)
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
                verdicts[key] = self._stale_verdict(key, self.ti_ids[key], row)
        return verdicts

    def _stale_verdict(
        self, key: TaskInstanceKey, ti_id: str, row: tuple[Any, ...] | None
    ) -> str | None:
        state_row = None if row is None else (row[0], row[1], row[2])
        return stale_task_reason(key, state_row, ti_id=ti_id, scheduler_id=self.scheduler_id)

    def read_states(
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


class _PodLists:
    """The executor's pod lists: ``calls`` list them, in ``namespaces`` (None: every
    namespace)."""

    def __init__(
        self,
        calls: _Lister,
        namespaces: Sequence[str | None],
    ) -> None:
        self.calls = calls
        self.namespaces = tuple(namespaces)

    def list_namespace(
        self, namespace: str | None, *, label_selector: str, field_selector: str | None = None
    ) -> tuple[list[Any], str | None]:
        """Listed pods as manifests (read as JSON in pages, never as model objects) and
        the list's version."""
        listed: tuple[list[Any], str | None] = self.calls.list_pods(
            namespace, label_selector=label_selector, field_selector=field_selector
        )
        return listed

    def list_watched(self, *, label_selector: str, field_selector: str | None = None) -> list[Any]:
        """The pods listed in every watched namespace, one after the other."""
        pods: list[Any] = []
        for namespace in self.namespaces:
            items, _ = self.list_namespace(
                namespace, label_selector=label_selector, field_selector=field_selector
            )
            pods.extend(items)
        return pods

    def relist(self, request: ListPods) -> tuple[list[Any], str | None]:
        """A re-list's list of one watched namespace: its pods and the list's version,
        which the core keeps for that namespace's watch."""
        return self.list_namespace(
            request.namespace, label_selector=request.selector.label_selector
        )
