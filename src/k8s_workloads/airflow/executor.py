"""``KubernetesExecutor``: the provider's executor, with callback workloads, on the core.

Set ``AIRFLOW__CORE__EXECUTOR=k8s_workloads.airflow.executor.KubernetesExecutor``. It
subclasses ``apache-airflow-providers-cncf-kubernetes``'s ``KubernetesExecutor`` and keeps
what Airflow sees of it (configuration, logs, ``revoke_task``, the CLI), but runs the loop
on :class:`~k8s_workloads.executor.ExecutorCore`:

* every workload — ``ExecuteTask`` and, on Airflow 3.3+, ``ExecuteCallback`` — becomes a
  job of the core, whose pod is built by the library (task pods as the provider builds
  them, over the same template, ``pod_override`` and mutation hook);
* one watcher thread per watched namespace reads the pod watch as raw JSON lines (no
  ``V1Pod`` per event, nothing decoded on its thread), and ``sync()`` feeds them to the
  core, which keeps each watch's version, resolves, decides and asks for the calls;
* state reads are one database query per ``sync()`` for tasks and callbacks alike;
* keys and states cross to Airflow's types only here (:mod:`k8s_workloads.airflow.convert`),
  and no library error escapes ``sync()``;
* a callback is never lost to its scheduler's death: the executor marks the rows of the
  callbacks it is queued and takes over those of dead schedulers, their pods by a relabel
  guarded by the owner label, the ones without a pod by running them again, each exactly
  once across live schedulers (:class:`~k8s_workloads.airflow._adoption._Adoption`).

The class is small: intake, the loop, ``start()`` / ``end()`` and ``revoke_task``. What it
does besides, it asks of parts it holds, each given only what it uses (values, callables,
small protocols), none of them given the executor: ``_Settings`` (``_lifecycle``: the
settings read and checked, the core's configuration), ``_StateReads`` and ``_PodLists``
(``_reads``: the database's states and the stale check; the cluster's pod lists),
``_Adoption`` (``_adoption``: what dead schedulers left), ``_CreationLog``
(``_creation_log``: the pods' creations and the lines an operator reads of them and of the
core's decisions), one ``_Watcher`` thread per
watched namespace (``_watcher``: a client, a label selector, a queue and a logger) and the
``_WatchFeed`` that joins them to the core (the core, the queue, the watchers).
``_runtime`` loads Airflow's modules.
"""

from __future__ import annotations

import contextlib
import queue
import time
from typing import TYPE_CHECKING, Any

from k8s_workloads.adapters import to_manifest
from k8s_workloads.airflow._adoption import _Adoption
from k8s_workloads.airflow._creation_log import _CreationLog
from k8s_workloads.airflow._lifecycle import (
    _KUBE_CLIENT,
    _ProviderRetries,
    _Settings,
    executor_kube_client,
)
from k8s_workloads.airflow._metrics import _Metrics
from k8s_workloads.airflow._reads import _PodLists, _StateReads
from k8s_workloads.airflow._runtime import (
    _AIRFLOW_VERSION,
    _airflow,
    _airflow_stats,
    _failures,
    _ProviderKubernetesExecutor,
    _utcnow,
)
from k8s_workloads.airflow._watcher import _Watcher, _WatchFeed
from k8s_workloads.airflow.convert import (
    ConversionError,
    from_airflow_key,
    to_airflow_key,
    to_airflow_state,
)
from k8s_workloads.airflow.provider import SECTION
from k8s_workloads.compat import supports_callbacks
from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.executor.core import ExecutorCore
from k8s_workloads.executor.requests import (
    CreatePod,
    ListPods,
    ReadStates,
    Request,
)
from k8s_workloads.io.kube import KubeCalls
from k8s_workloads.io.pool import PoolDriver
from k8s_workloads.io.watching import describe_failure, server_address
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods.errors import InvalidJob, InvalidPod
from k8s_workloads.pods.labels import scheduler_pods_selector, watcher_selector
from k8s_workloads.pods.workload import workload_command_args
from k8s_workloads.states import CallbackState, KubernetesJob, TaskInstanceState

if TYPE_CHECKING:
    from collections.abc import Sequence

    from k8s_workloads.keys import WorkloadKey

__all__ = ["KubernetesExecutor"]

_END_PASS_SECONDS = 10.0
"""The longest ``end()``'s last pass performs the core's requests."""
_END_WAIT_SECONDS = 5.0
"""The longest ``end()`` waits for an orphan scan, and then for the watcher threads."""
END_SECONDS = _END_PASS_SECONDS + 2 * _END_WAIT_SECONDS
"""``end()`` returns within this many seconds (see its docstring)."""
_SYNC_MARGIN_SECONDS = 0.05
"""Kept from ``sync_max_seconds`` for what a pass may do past its bound (one inline
request: an event, a state read) and the bookkeeping after it."""


class KubernetesExecutor(_ProviderKubernetesExecutor):  # type: ignore[misc] # Any base
    """The provider's KubernetesExecutor, with callback workloads on Airflow 3.3+."""

    supports_callbacks: bool = supports_callbacks(_AIRFLOW_VERSION)

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start the executor: the API client, the core, its parts and the watchers."""
        kube_client = _airflow(_KUBE_CLIENT)
        self.log.info("Start Kubernetes executor (k8s_workloads)")
        if not self.supports_callbacks:
            self.log.info(
                "Airflow %s: tasks only; callback workloads need Airflow 3.3 or later",
                _AIRFLOW_VERSION,
            )
        self.scheduler_job_id = str(self.job_id)
        settings = _Settings(
            setting=self._setting,
            kube_config=self.kube_config,
            scheduler_id=self.scheduler_job_id,
            log=self.log,
        )
        # Checked before the client is made: its ConfigException ("Service host/port is
        # not set") and image-less pods are what the provider shows instead.
        self._options = settings.check()
        self.kube_client = executor_kube_client(kube_client, self.team_name)
        retries = _ProviderRetries(
            pod_launch_failure_max_retries=self.pod_launch_failure_max_retries,
            pod_launch_failure_excluded_container_reasons=(
                self.pod_launch_failure_excluded_container_reasons
            ),
            task_publish_max_retries=self.task_publish_max_retries,
        )
        self.core = ExecutorCore(settings.core_config(self._options, retries))
        self._metrics = _Metrics(_airflow_stats(), log=self.log)
        """What is sent to Airflow's Stats (nothing, and nothing kept, with metrics off)."""
        self._failed_at_intake: set[Any] = set()
        """Airflow keys of tasks execute_async failed (refused at submit): not running."""
        self._taken_reports: list[WorkloadKey] = []
        """Workloads whose final events the scheduler took (get_event_buffer) since the
        last sync(): stored by the time the next one starts (see _reports_stored)."""
        self._succeeded_callbacks: list[str] = []
        """Callbacks taken as ``success``: their marks go once stored."""
        self._sync_bound = self._options.sync_max_seconds
        self._ti_ids: dict[WorkloadKey, str] = {}
        """Task instances' row ids, by key (for the stale check)."""
        self._start_parts(settings)

    def _start_parts(self, settings: _Settings) -> None:
        """Make the parts the executor holds, each given what it uses, and start the
        watchers: the calls and their driver, the reads, the watchers, the pod lists and
        adoption."""
        core, options, config = self.core, self._options, self.core.config
        namespaces = settings.namespaces()
        self._calls = KubeCalls(
            self.kube_client,
            # Every call bounded (api_request_timeout); the provider's own request
            # arguments win, its _request_timeout too (a list made a tuple by KubeConfig).
            request_args={
                "_request_timeout": options.api_request_timeout.pair,
                **(self.kube_config.kube_client_request_args or {}),
            },
            delete_options=settings.delete_options(),
            # The watchers share the client: each holds a connection of the pool for as
            # long as it watches, so the calls get as many as they may have in flight.
            pool_size=config.max_concurrent_creations
            + config.max_concurrent_cleanups
            + len(namespaces),
        )
        self._creations = _CreationLog(
            create=self._calls.perform,
            metrics=self._metrics,
            log=self.log,
            server=server_address(self.kube_client),
        )
        core.on_decision = self._creations.decision
        core.on_pod = self._creations.pod_changed
        self._driver = PoolDriver(
            core, self._perform, failures=_failures(), screen=self._screen, inline=_inline
        )
        self._reads = _StateReads(
            scheduler_id=self.scheduler_job_id,
            ti_ids=self._ti_ids,
            queued=lambda: core.queued,
            batch_size=config.creation_batch_size,
            log=self.log,
        )
        self._events: queue.SimpleQueue[object] = queue.SimpleQueue()
        """Watch lines (``(namespace, relists, line)``) and the watchers' resume asks."""
        selector = watcher_selector(self.scheduler_job_id or "").label_selector
        self._watchers = [
            _Watcher(
                self.kube_client,
                namespace,
                self._events,
                label_selector=selector,
                log=self.log,
                connect_timeout=options.api_request_timeout.connect,
                on_restart=self._metrics.watch_restarted,
                resource_version=core.resource_version(namespace),
                relists=core.relists,
            )
            for namespace in namespaces
        ]
        self._watch_feed = _WatchFeed(core, self._events, self._watchers, self._metrics)
        self._pod_lists = _PodLists(self._calls, namespaces)
        self._adoption = _Adoption(
            core=core,
            pods=self._pod_lists,
            scheduler_id=self.scheduler_job_id,
            supports_callbacks=self.supports_callbacks,
            alive_others=self._alive_other_scheduler_job_ids,
            generator=lambda: self.jwt_generator,
            run_callback=self._process_callback,
            fail_callback=self._fail_callback,
            perform=self._pass,
            log=self.log,
        )
        for watcher in self._watchers:
            watcher.start()

    def _setting(self, name: str) -> str | None:
        """``[kubernetes_executor] name`` as text (this executor's, per team); the
        library's options have their declared defaults (``provider.py``)."""
        value: str | None = self.conf.get(SECTION, name, fallback=None)
        return value

    def get_event_buffer(self, dag_ids: Any = None) -> dict[Any, Any]:  # noqa: ANN401
        """Airflow's, noting which workloads' events the scheduler took: their pods are
        cleaned up once they are stored (the next ``sync()``)."""
        events: dict[Any, Any] = super().get_event_buffer(dag_ids)
        waiting = set(self.core.unstored_reports)  # their final report is in the buffer
        for airflow_key, (state, _) in events.items():
            with contextlib.suppress(ConversionError):
                key = from_airflow_key(airflow_key)
                if key in waiting:  # not an earlier event of a workload reported later
                    self._taken_reports.append(key)
                if isinstance(key, CallbackKey) and state == CallbackState.SUCCESS.value:
                    self._succeeded_callbacks.append(key.id)
        return events

    def _reports_stored(self) -> None:
        """The events the scheduler took before this call are stored: its loop
        (``_process_executor_events``) commits them before it calls ``heartbeat()`` again,
        and a loop that fails to commit ends the scheduler. Their pods may go, and the
        succeeded callbacks' rows lose the executor's mark."""
        taken, self._taken_reports = self._taken_reports, []
        if taken:
            self.core.reports_stored(taken)
        succeeded, self._succeeded_callbacks = self._succeeded_callbacks, []
        if succeeded:
            self._adoption.release_marks(succeeded)

    def end(self) -> None:
        """Stop the watchers, perform what the core still asks for, stop the I/O.

        Returns within :data:`END_SECONDS` (20 s), whatever the API server does: the
        watchers' open streams are shut down at once; the last pass performs what the
        core still asks for for at most 10 s (plus at most one inline request: a state
        read, or one namespace's list of a re-list, its calls bounded by
        ``api_request_timeout``); an orphan
        scan still running is waited for at most 5 s; the watcher threads are joined for
        at most 5 s in all. Calls still in flight then end on their own threads within
        their timeouts (``api_request_timeout``: 70 s at most by default, a call of each
        of a creation's Secret and pod), unreported; the interpreter waits for them at
        exit.
        """
        watchers = getattr(self, "_watchers", None)
        if not watchers:
            return
        for watcher in watchers:
            watcher.shut_down()
        # What the scheduler took in its last loop may not be stored (end() runs after a
        # failed commit too): those pods stay, and the next scheduler's adoption reports
        # them once or, stored, only cleans them up.
        self._taken_reports, self._succeeded_callbacks = [], []
        with contextlib.suppress(Exception):
            self._pass(seconds=_END_PASS_SECONDS)
        self._driver.close(wait=False)
        # A scan still running goes on after end() (list, take rows, log): waited for a
        # while, not for ever; those not started are dropped.
        self._adoption.close(_END_WAIT_SECONDS)
        deadline = time.monotonic() + _END_WAIT_SECONDS
        for watcher in watchers:
            watcher.join(timeout=max(0.0, deadline - time.monotonic()))
        self._watchers = []

    def terminate(self) -> None:
        self.end()

    # --- intake ----------------------------------------------------------------------

    def queue_workload(self, workload: Any, session: Any) -> None:  # noqa: ANN401 - Airflow's
        """Queue a task or, on Airflow 3.3+, a callback; before 3.3 refuse callbacks clearly.

        Before 3.3 the scheduler runs callbacks itself and Airflow's own executors refuse
        them (``NotImplementedError``); this one refuses them the same way, saying why.
        """
        execute_callback = getattr(_airflow("airflow.executors.workloads"), "ExecuteCallback", None)
        if (
            not self.supports_callbacks
            and execute_callback is not None
            and isinstance(workload, execute_callback)
        ):
            raise NotImplementedError(
                f"{type(self).__name__} runs callback workloads on Airflow 3.3 or later; "
                f"this is Airflow {_AIRFLOW_VERSION}, where the scheduler runs callbacks "
                "itself. Upgrade Airflow to run callbacks as Kubernetes pods."
            )
        if (
            execute_callback is not None
            and isinstance(workload, execute_callback)
            and session is not None
            and not self._adoption.claim_callback(workload, session)
        ):
            return
        # Airflow's own intake: provider 10.21-10.23 replace it with one that refuses
        # every workload but a task (later ones use Airflow's on Airflow 3.1+).
        _airflow("airflow.executors.base_executor").BaseExecutor.queue_workload(
            self, workload, session
        )

    def execute_async(
        self,
        key: Any,  # noqa: ANN401 - Airflow's TaskInstanceKey
        command: Any,  # noqa: ANN401
        queue: str | None = None,  # noqa: ARG002 - the provider's signature
        executor_config: Any | None = None,  # noqa: ANN401
    ) -> None:
        """A task workload: a job of the core (the provider's QUEUED event first)."""
        generator = _airflow("airflow.providers.cncf.kubernetes.pod_generator").PodGenerator
        try:
            override = generator.from_obj(executor_config)
        except Exception:  # noqa: BLE001 - the provider's rule: an invalid config fails the task
            self.fail(key=key, info="Invalid executor_config passed")
            return
        template_file = (executor_config or {}).get("pod_template_file")
        workload = command[0] if isinstance(command, list | tuple) and command else None
        ti_id = getattr(getattr(workload, "ti", None), "id", None)
        if ti_id is not None:
            self._ti_ids[from_airflow_key(key)] = str(ti_id)  # for the stale check
        self.event_buffer[key] = (to_airflow_state(TaskInstanceState.QUEUED), self.scheduler_job_id)
        try:
            job: KubernetesJob[Any] = KubernetesJob(
                from_airflow_key(key),
                _command_args(command),
                pod_override=None if override is None else to_manifest(override),
                pod_template_file=template_file,
            )
        except (ConversionError, ValueError, TypeError) as error:
            self.fail(key=key, info=f"cannot run this workload on Kubernetes: {error}")
            return
        try:
            self.core.submit(job)
            self._metrics.accepted(job.key)
        except (InvalidJob, InvalidPod) as error:
            # Refused at submit (a bad override or template file): reported as a pod that
            # could not be built was, when the core found out only at creation.
            info = f"the pod could not be built: {error}"
            self.log.warning("No pod could be built for %s: the workload fails: %s", job.key, info)
            self._failed_at_intake.add(key)
            self.fail(key=key, info=info)
        except (ValueError, TypeError) as error:
            self._failed_at_intake.add(key)
            self.fail(key=key, info=f"cannot run this workload on Kubernetes: {error}")

    def _process_workloads(self, workloads: Sequence[Any]) -> None:
        execute_task = _airflow("airflow.executors.workloads").ExecuteTask
        callbacks: list[Any] = []
        tasks: list[Any] = []
        for workload in workloads:
            (tasks if isinstance(workload, execute_task) else callbacks).append(workload)
        if tasks:
            super()._process_workloads(tasks)
            # Older providers (10.21) add each task to running after execute_async: one
            # failed there (refused at submit) is not running, whatever the order.
            for task in tasks:
                if task.ti.key in self._failed_at_intake:
                    self.running.discard(task.ti.key)
            self._failed_at_intake.clear()
        for workload in callbacks:
            self._process_callback(workload)

    def _process_callback(self, workload: Any) -> None:  # noqa: ANN401 - ExecuteCallback
        airflow_key = workload.key
        self.queued_callbacks.pop(airflow_key, None)
        self.running.add(airflow_key)
        self.event_buffer[airflow_key] = (to_airflow_state(CallbackState.QUEUED), None)
        try:
            key = from_airflow_key(airflow_key)
            self.core.submit(KubernetesJob(key, workload_command_args(workload.model_dump_json())))
            self._metrics.accepted(key)
        except (ConversionError, ValueError, TypeError) as error:
            self.running.discard(airflow_key)
            self.event_buffer[airflow_key] = (
                to_airflow_state(CallbackState.FAILED),
                f"cannot run this callback on Kubernetes: {error}",
            )

    # --- the loop --------------------------------------------------------------------

    def sync(self) -> None:
        """Feed the watch lines that arrived to the core, then perform its requests."""
        if not getattr(self, "_watchers", None):
            return
        started = time.monotonic()
        now = _utcnow()
        self._reports_stored()
        self._watch_feed.feed(now)
        # The [scheduler] section, read from Airflow's configuration as the provider does.
        interval = _airflow("airflow.providers.common.compat.sdk").conf.getfloat(
            "scheduler", "orphaned_tasks_check_interval", fallback=300.0
        )
        self._adoption.look_for_orphans(interval)  # looked for in the background
        self._adoption.plan_orphans()  # once found: planned here, performed by the pass below
        # What is left of the bound after feeding and planning, less a margin for the one
        # request a pass may finish past its own bound and the bookkeeping after it.
        spent = time.monotonic() - started
        self._pass(seconds=max(0.0, self._sync_bound - spent - _SYNC_MARGIN_SECONDS))
        self._watch_feed.resume()
        metrics = self._metrics
        if metrics.on:
            metrics.synced(time.monotonic() - started, len(self.core.in_flight))

    def _pass(self, *, seconds: float | None = None) -> None:
        """Perform the core's requests, many in flight (:class:`PoolDriver`). Bounded, as
        in ``sync()``: back after ``seconds`` with calls still going, which the next pass
        reports; unbounded (None) where the caller needs the answers (adoption)."""
        core = self.core
        self._reads.new_pass()  # read again in each pass: rows move on between passes
        try:
            self._driver.run(_utcnow(), seconds=seconds)
        except Exception:
            # What is not a failed call is a bug; sync() is the scheduler loop's, and no
            # library error may stop it (the provider catches only its own types there).
            self.log.exception("The executor pass failed; the next sync() goes on")
        metrics = self._metrics
        for failed in core.take_failed_relabels():
            metrics.relabel_refused(failed.key)
            self.log.warning(
                "Not adopting pod %s/%s of %s: the API server refused its relabel (%s); "
                "another scheduler took it or it is gone, so it is not run again here",
                failed.namespace,
                failed.pod_name,
                failed.key,
                describe_failure(failed.error),
            )
        for key, running in core.take_running_changes():
            airflow_key = to_airflow_key(key)
            if running:  # adopted: a live pod of a dead scheduler's, taken over
                self.running.add(airflow_key)
                metrics.adopted(key)
            else:
                self.running.discard(airflow_key)
                self._ti_ids.pop(key, None)
                metrics.stopped(key)

    def _perform(self, request: Request) -> object:
        """One request: events, state reads and re-lists here (the scheduler's thread);
        pod and Secret calls through :class:`KubeCalls` (the driver's pool)."""
        if isinstance(request, EmitEvent):
            self.event_buffer[to_airflow_key(request.key)] = (
                to_airflow_state(request.state),
                request.info,
            )
            return None
        if isinstance(request, ReadStates):
            return self._reads.read_states(request.keys)
        if isinstance(request, ListPods):
            return self._pod_lists.relist(request)
        if isinstance(request, CreatePod):
            return self._creations.create(request)
        return self._calls.perform(request)

    def _screen(self, request: CreatePod) -> str | None:
        """Why ``request``'s pod must not be created (a stale task instance), or None; a
        stale one's QUEUED event is taken back."""
        stale = self._reads.stale(request.key)
        if stale is not None:
            self.log.info("Not creating pod %s for %s: %s", request.pod_name, request.key, stale)
            airflow_key = to_airflow_key(request.key)
            if self.event_buffer.get(airflow_key) == (
                to_airflow_state(TaskInstanceState.QUEUED),
                self.scheduler_job_id,
            ):
                self.event_buffer.pop(airflow_key, None)
        return stale

    def _fail_callback(self, key: CallbackKey, info: str) -> None:
        """Report a callback failed (one adoption cannot run again)."""
        self.event_buffer[to_airflow_key(key)] = (to_airflow_state(CallbackState.FAILED), info)

    # --- adoption and revoke -----------------------------------------------------------

    def try_adopt_task_instances(self, tis: Sequence[Any]) -> Sequence[Any]:
        """Take over the dead schedulers' task and callback pods; return the TIs to reset."""
        return self._adoption.adopt_task_instances(tis)

    def revoke_task(self, *, ti: Any) -> None:  # noqa: ANN401 - Airflow's TaskInstance
        """Stop the task instance's pod: marked revoked, then deleted; no event."""
        key = from_airflow_key(ti.key)
        assert isinstance(key, TaskInstanceKey)  # noqa: S101 - a task instance's key
        self.running.discard(ti.key)
        self.queued_tasks.pop(ti.key, None)
        selector = scheduler_pods_selector(self.scheduler_job_id or "")
        pods = self._pod_lists.list_watched(label_selector=selector.label_selector)
        self.core.revoke(key, pods)
        self._pass(seconds=self._sync_bound)


def _command_args(command: Any) -> list[str]:  # noqa: ANN401 - [ExecuteTask] or an argv
    if (
        isinstance(command, list | tuple)
        and len(command) == 1
        and hasattr(command[0], "model_dump_json")
    ):
        return workload_command_args(command[0].model_dump_json())
    return [str(part) for part in command]


def _inline(request: Request) -> bool:
    """Performed on the scheduler's thread: events (its buffer), state reads (its
    database) and re-lists (they restart the watchers)."""
    return isinstance(request, (EmitEvent, ReadStates, ListPods))
