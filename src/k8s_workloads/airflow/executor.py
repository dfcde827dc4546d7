"""``KubernetesExecutor``: the provider's executor, with callback workloads, on the core.

Set ``AIRFLOW__CORE__EXECUTOR=k8s_workloads.airflow.executor.KubernetesExecutor``. It
subclasses ``apache-airflow-providers-cncf-kubernetes``'s ``KubernetesExecutor`` and keeps
what Airflow sees of it (configuration, logs, ``revoke_task``, the CLI), but runs the loop
on :class:`~k8s_workloads.executor.ExecutorCore`:

* every workload — ``ExecuteTask`` and, on Airflow 3.3+, ``ExecuteCallback`` — becomes a
  job of the core, whose pod is built by the library (task pods as the provider builds
  them, over the same template, ``pod_override`` and mutation hook);
* one watcher thread reads the pod watch as raw JSON lines (no ``V1Pod`` per event), and
  ``sync()`` feeds them to the core, which resolves, decides and asks for the calls;
* state reads are one database query per ``sync()`` for tasks and callbacks alike;
* keys and states cross to Airflow's types only here (:mod:`k8s_workloads.airflow.convert`),
  and no library error escapes ``sync()``;
* a callback is never lost to its scheduler's death: the executor marks the rows of the
  callbacks it is queued (:meth:`KubernetesExecutor._claim_callback`) and takes over those
  of dead schedulers, their pods by a relabel guarded by the owner label, the ones without
  a pod by running them again, each exactly once across live schedulers
  (:meth:`KubernetesExecutor._take_orphaned_callbacks`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime
import functools
import importlib
import os
import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from k8s_workloads._yaml_input import load_bounded_file
from k8s_workloads.adapters import to_manifest
from k8s_workloads.airflow.convert import (
    ConversionError,
    from_airflow_key,
    from_airflow_state,
    to_airflow_key,
    to_airflow_state,
)
from k8s_workloads.airflow.provider import SECTION
from k8s_workloads.airflow.settings import (
    LibraryOptions,
    cluster_access_problem,
    image_problem,
    read_options,
)
from k8s_workloads.codec import InvalidAnnotations, annotations_to_key
from k8s_workloads.compat import InvalidVersion, supports_callbacks
from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.decisions.guards import stale_task_reason
from k8s_workloads.executor import (
    CreatePod,
    ExecutorConfig,
    ExecutorCore,
    ListPods,
    ReadStates,
    Request,
)
from k8s_workloads.io.kube import KubeCalls
from k8s_workloads.io.pool import PoolDriver
from k8s_workloads.keys import CallbackKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.labels import (
    callback_pods_selector,
    scheduler_pods_selector,
    watcher_selector,
)
from k8s_workloads.pods import workload_command_args
from k8s_workloads.states import CallbackState, KubernetesJob, TaskInstanceState
from k8s_workloads.watch._watchjson import decode_event
from k8s_workloads.watch.failures import PendingPolicy
from k8s_workloads.watch.resolution import ResolverConfig

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from k8s_workloads.decisions.adoption import AdoptionPlan

__all__ = ["KubernetesExecutor"]


def _airflow(module: str) -> Any:  # noqa: ANN401 - Airflow's modules, untyped here
    # The boundary with Airflow and its provider: their classes are used as they are at
    # run time; typings/ declares only what the parity tests need.
    return importlib.import_module(module)


_AIRFLOW_VERSION: str = _airflow("airflow").__version__
_ProviderKubernetesExecutor: Any = _airflow(
    "airflow.providers.cncf.kubernetes.executors.kubernetes_executor"
).KubernetesExecutor

_SECTION = SECTION
_KUBE_CLIENT = "airflow.providers.cncf.kubernetes.kube_client"
_SYNC_MARGIN_SECONDS = 0.05
"""Kept from ``sync_max_seconds`` for what a pass may do past its bound (one inline
request: an event, a state read) and the bookkeeping after it."""
_WATCH_TIMEOUT_SECONDS = 300
_HOLDER = "k8s_workloads: queued by scheduler job "
"""The ``output`` of an executor callback row while this executor holds it, before the
holder's job id (see :meth:`KubernetesExecutor._claim_callback`)."""


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class _Watcher(threading.Thread):
    """Reads one namespace's pod watch (None: every namespace's) as JSON lines onto the
    executor's queue; restarts when the stream ends."""

    def __init__(
        self,
        executor: KubernetesExecutor,
        namespace: str | None,
        events: queue.SimpleQueue[object],
    ) -> None:
        super().__init__(name=f"k8s-workloads-watcher-{namespace or 'all'}", daemon=True)
        self.executor = executor
        self.namespace = namespace
        self.events = events
        self.stopping = threading.Event()
        self.resource_version: str | None = None
        self.restart = threading.Event()
        """Set by ``sync()`` after a re-list: watch again from ``resource_version``."""
        self.response: Any = None

    def stop(self, timeout: float) -> None:
        """Stop reading: the open stream is shut down, so an idle watch ends at once."""
        self.stopping.set()
        response = self.response
        shutdown = getattr(response, "shutdown", None)  # urllib3 2.3+
        if shutdown is not None:
            with contextlib.suppress(Exception):
                shutdown()
        self.join(timeout=timeout)

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._stream()
            except Exception:  # noqa: PERF203 - the thread's boundary: it must not die
                if self.stopping.is_set():
                    return  # the stream was shut down by stop()
                self.executor.log.exception("The pod watch failed; restarting it")
                self.stopping.wait(1.0)

    def _stream(self) -> None:
        executor = self.executor
        selector = watcher_selector(executor.scheduler_job_id or "")
        api = executor.kube_client
        kwargs: dict[str, Any] = {
            "label_selector": selector.label_selector,
            "watch": True,
            "timeout_seconds": _WATCH_TIMEOUT_SECONDS,
            "_preload_content": False,
        }
        if self.resource_version:
            kwargs["resource_version"] = self.resource_version
        if self.namespace is None:
            response = api.list_pod_for_all_namespaces(**kwargs)
        else:
            response = api.list_namespaced_pod(self.namespace, **kwargs)
        self.response = response
        try:
            buffer = b""
            for chunk in response.stream(amt=None, decode_content=True):
                if self.stopping.is_set() or self.restart.is_set():
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._take(line.decode("utf-8", "replace"))
        finally:
            self.response = None
            response.release_conn()
        if self.restart.is_set():
            self.restart.clear()

    def _take(self, line: str) -> None:
        # Decoded here, once, on the watcher's thread (only what resolution reads); the
        # core takes the decoded event. Text that is not JSON goes on as it is, and the
        # core reports it.
        try:
            event = decode_event(line)
        except (ValueError, RecursionError):
            self.events.put(line)
            return
        self.events.put(event)
        if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
            return
        obj = event["object"]
        if event.get("type") == "ERROR":
            # A 410 (or any ERROR): the stream ends; the core asks for a re-list.
            self.resource_version = None
            self.restart.set()
            return
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if isinstance(version, str):
            self.resource_version = version


class KubernetesExecutor(_ProviderKubernetesExecutor):  # type: ignore[misc] # Any base
    """The provider's KubernetesExecutor, with callback workloads on Airflow 3.3+."""

    supports_callbacks: bool = supports_callbacks(_AIRFLOW_VERSION)

    # --- configuration ---------------------------------------------------------------

    def _setting(self, name: str) -> str | None:
        """``[kubernetes_executor] name`` as text; the library's options have their
        declared defaults (the package is a registered provider: ``provider.py``)."""
        value: str | None = self.conf.get(_SECTION, name, fallback=None)
        return value

    def _check_settings(self) -> LibraryOptions:
        """The library's options, read and checked, and the settings without which no pod
        runs: one ``InvalidExecutorSetting`` line (``settings``) naming the first problem."""
        options = read_options(self._setting)
        factory_read = hasattr(_airflow(_KUBE_CLIENT), "_get_executor_kube_client")
        problem = cluster_access_problem(
            self._setting, environ=os.environ, client_factory_read=factory_read
        ) or image_problem(self._setting, self._template(self.kube_config.pod_template_file))
        if problem is not None:
            raise problem
        return options

    def _core_config(self) -> ExecutorConfig:
        kube = self.kube_config
        options = self._options
        decisions = DecisionConfig(
            delete_worker_pods=kube.delete_worker_pods,
            delete_worker_pods_on_failure=kube.delete_worker_pods_on_failure,
            mark_kept_failed_pods_done=options.mark_kept_failed_pods_done,
            pod_launch_failure_retries=self.pod_launch_failure_max_retries,
            pod_launch_failure_excluded_container_reasons=(
                self.pod_launch_failure_excluded_container_reasons
            ),
            callback_launch_failure_retries=options.callback_launch_failure_retries,
            task_publish_max_retries=self.task_publish_max_retries,
            max_handling_retries=options.max_handling_retries,
        )
        resolver = ResolverConfig(
            airflow_version=_AIRFLOW_VERSION,
            fatal_pending_reasons=frozenset(
                kube.worker_pod_pending_fatal_container_state_reasons or ()
            ),
            pending=PendingPolicy() if options.pending_policy else None,
        )
        return ExecutorConfig(
            scheduler_id=self.scheduler_job_id or "",
            namespace=kube.kube_namespace,
            airflow_version=_AIRFLOW_VERSION,
            kube_image=kube.kube_image,
            pod_template=self._template(kube.pod_template_file),
            load_template=self._template,
            mutation_hook=_mutation_hook(),
            decisions=decisions,
            resolver=resolver,
            secure_payload=options.secure_workload_payload,
            creation_batch_size=max(1, int(kube.worker_pods_creation_batch_size)),
            max_concurrent_creations=self._creation_concurrency(),
            max_concurrent_cleanups=options.pod_cleanup_max_concurrency,
            watch_all_namespaces=bool(kube.multi_namespace_mode),
        )

    def _creation_concurrency(self) -> int:
        """Pod creations in flight at once: with the provider's ``async_pod_creation``,
        ``pod_creation_max_concurrency`` (0: ``worker_pods_creation_batch_size``); one at a
        time otherwise, as the provider creates them."""
        kube = self.kube_config
        if not getattr(kube, "async_pod_creation", False):
            return 1
        concurrency = int(getattr(kube, "pod_creation_max_concurrency", 0) or 0)
        return max(1, concurrency or int(kube.worker_pods_creation_batch_size))

    def _delete_options(self) -> dict[str, Any] | None:
        """``[kubernetes_executor] delete_option_kwargs`` as the ``DeleteOptions`` body the
        provider sends (its keys are the client's snake_case names)."""
        options = self.kube_config.delete_option_kwargs or {}
        if not options:
            return None
        client = _airflow("kubernetes.client")
        body: dict[str, Any] = client.ApiClient().sanitize_for_serialization(
            client.V1DeleteOptions(**options)
        )
        return body

    @staticmethod
    def _template(path: str | None) -> dict[str, Any]:
        if not path:
            return {}
        generator = _airflow("airflow.providers.cncf.kubernetes.pod_generator").PodGenerator
        try:
            if not os.path.exists(path):  # noqa: PTH110 - the provider's test
                # The provider's warning ("Model file ... does not exist") and empty pod.
                return to_manifest(generator.deserialize_model_file(path))
            # The provider's deserialize_model_file reads it with yaml.safe_load: a
            # task's pod_template_file is a DAG author's, and an alias bomb or a file
            # without end would fill the scheduler's memory. Read within the CLI's bounds.
            loaded = load_bounded_file(path)
            return to_manifest(generator.deserialize_model_dict(loaded))
        except (OSError, ValueError, TypeError, _airflow("yaml").YAMLError) as error:
            # The core fails the job with this message (it takes ValueError and TypeError).
            raise ValueError(f"pod template file {path!r}: {error}") from error

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start the executor: the API client, the core and the watcher thread."""
        kube_client = _airflow(_KUBE_CLIENT)
        self.log.info("Start Kubernetes executor (k8s_workloads)")
        if not self.supports_callbacks:
            self.log.info(
                "Airflow %s: tasks only; callback workloads need Airflow 3.3 or later",
                _AIRFLOW_VERSION,
            )
        self.scheduler_job_id = str(self.job_id)
        # Checked before the client is made: its ConfigException ("Service host/port is
        # not set") and image-less pods are what the provider shows instead.
        self._options = self._check_settings()
        self.kube_client = _executor_kube_client(kube_client, self.team_name)
        self.core = ExecutorCore(self._core_config())
        self._sync_bound = self._options.sync_max_seconds
        config = self.core.config
        self._calls = KubeCalls(
            self.kube_client,
            request_args=self.kube_config.kube_client_request_args or {},
            delete_options=self._delete_options(),
            pool_size=config.max_concurrent_creations + config.max_concurrent_cleanups,
        )
        self._driver = PoolDriver(
            self.core,
            self._perform,
            failures=_failures(),
            screen=self._screen,
            inline=_inline,
        )
        self._last_orphan_adoption = float("-inf")  # the first sync() adopts
        self._orphan_scan: concurrent.futures.Future[Any] | None = None
        self._background = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="k8s-workloads-orphans"
        )
        self._events: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._ti_ids: dict[WorkloadKey, str] = {}
        self._stale_verdicts: dict[WorkloadKey, str | None] = {}
        """This pass's stale checks (see _stale), read one creation batch at a time."""
        self._watchers = [_Watcher(self, ns, self._events) for ns in self._namespaces()]
        for watcher in self._watchers:
            watcher.start()

    def _namespaces(self) -> list[str | None]:
        """Where pods are watched and listed, as the provider does: the configured
        namespace; in multi-namespace mode each of ``multi_namespace_mode_namespace_list``,
        or every namespace (None) when there is no list."""
        kube = self.kube_config
        if not kube.multi_namespace_mode:
            return [kube.kube_namespace]
        listed = [ns.strip() for ns in kube.multi_namespace_mode_namespace_list or () if ns.strip()]
        return list(dict.fromkeys(listed)) or [None]

    def end(self) -> None:
        """Stop the watchers and perform what the core still asks for."""
        watchers = getattr(self, "_watchers", None)
        if not watchers:
            return
        for watcher in watchers:
            watcher.stopping.set()
        with contextlib.suppress(Exception):
            self._pass()
        self._driver.close()
        # A scan still running would go on after end(): list, take rows, log. Wait for it
        # (each of its calls is bounded by the client's timeouts); drop those not started.
        self._background.shutdown(wait=True, cancel_futures=True)
        for watcher in watchers:
            watcher.stop(timeout=5)
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
            and not self._claim_callback(workload, session)
        ):
            return
        # Airflow's own intake: provider 10.21-10.23 replace it with one that refuses
        # every workload but a task (later ones use Airflow's on Airflow 3.1+).
        _airflow("airflow.executors.base_executor").BaseExecutor.queue_workload(
            self, workload, session
        )

    def _claim_callback(self, workload: Any, session: Any) -> bool:  # noqa: ANN401 - Airflow's
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
            .values(output=f"{_HOLDER}{self.scheduler_job_id}")
            .execution_options(synchronize_session=False)
        )
        if result.rowcount == 1:
            return True
        self.log.info(
            "Callback %s is held by another scheduler (or no longer active); not run here",
            workload.callback.id,
        )
        return False

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
            self.core.submit(job)
        except (ConversionError, ValueError, TypeError) as error:
            self.fail(key=key, info=f"cannot run this workload on Kubernetes: {error}")

    def _process_workloads(self, workloads: Sequence[Any]) -> None:
        execute_task = _airflow("airflow.executors.workloads").ExecuteTask
        callbacks: list[Any] = []
        tasks: list[Any] = []
        for workload in workloads:
            (tasks if isinstance(workload, execute_task) else callbacks).append(workload)
        if tasks:
            super()._process_workloads(tasks)
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
        with contextlib.suppress(queue.Empty):
            while True:
                self.core.feed_event(self._events.get_nowait(), now=now)
        # The [scheduler] section, read from Airflow's configuration as the provider does.
        interval = _airflow("airflow.providers.common.compat.sdk").conf.getfloat(
            "scheduler", "orphaned_tasks_check_interval", fallback=300.0
        )
        if time.monotonic() - self._last_orphan_adoption >= interval:
            self._last_orphan_adoption = time.monotonic()
            self._adopt_orphans()  # looked for in the background
        self._plan_orphans()  # once found: planned here, performed by the pass below
        # What is left of the bound after feeding and planning, less a margin for the one
        # request a pass may finish past its own bound and the bookkeeping after it.
        spent = time.monotonic() - started
        self._pass(seconds=max(0.0, self._sync_bound - spent - _SYNC_MARGIN_SECONDS))

    def _adopt_orphans(self) -> None:
        """Take over the callbacks of dead schedulers (their pods, or the callbacks run
        again where no pod exists), and clean up their Succeeded pods.

        Airflow hands an executor only task instances to adopt (``try_adopt_task_instances``,
        and only when there are some), never callbacks: the executor looks for them itself,
        at start and every ``[scheduler] orphaned_tasks_check_interval``, as the provider
        looks for completed pods. The lists, queries and the takeover's conditional
        UPDATEs run in the background (a namespace of many pods is many pages); a later
        ``sync()`` plans the adoption from them and submits the callbacks taken over
        (:meth:`_plan_orphans`), and its pass performs it.
        """
        if self._orphan_scan is None:
            self._orphan_scan = self._background.submit(self._orphan_inputs)

    def _orphan_inputs(
        self,
    ) -> tuple[list[Mapping[str, Any]], list[Any], list[CallbackKey], _Relaunches]:
        pods = self._adoption_pods(())
        alive = list(self._alive_other_scheduler_job_ids())
        active = self._active_callbacks()
        try:
            relaunches = self._take_orphaned_callbacks()
        except _failures() as error:
            # Nothing was taken (a row taken is kept, see the loop): the next scan tries.
            self.log.warning("Looking for orphaned callbacks failed (%s); tried later", error)
            relaunches = ([], [])
        return pods, alive, active, relaunches

    def _take_orphaned_callbacks(self) -> _Relaunches:
        """Take over the callbacks queued by schedulers no longer alive that have no pod.

        A row marked ``queued by scheduler job N`` (:meth:`_claim_callback`), still
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
        me = str(self.scheduler_job_id)
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
            generator = self.jwt_generator  # what the scheduler signs workloads with
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
        for namespace in self._namespaces():
            for pod in self._list(namespace, label_selector=selector.label_selector)[0]:
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

    def _plan_orphans(self) -> None:
        scan = self._orphan_scan
        if scan is None or not scan.done():
            return
        self._orphan_scan = None
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
            self._process_callback(workload)
        for callback_id, holder, why in failed:
            self.log.error(
                "Callback %s, queued by scheduler job %s (no longer alive), fails: %s",
                callback_id,
                holder,
                why,
            )
            self.event_buffer[to_airflow_key(CallbackKey(callback_id))] = (
                to_airflow_state(CallbackState.FAILED),
                f"k8s_workloads: cannot run this orphaned callback again: {why}",
            )

    def _pass(self, *, seconds: float | None = None) -> None:
        """Perform the core's requests, many in flight (:class:`PoolDriver`). Bounded, as
        in ``sync()``: back after ``seconds`` with calls still going, which the next pass
        reports; unbounded (None) where the caller needs the answers (adoption)."""
        core = self.core
        self._stale_verdicts = {}  # read again in each pass: rows move on between passes
        try:
            self._driver.run(_utcnow(), seconds=seconds)
        except Exception:
            # What is not a failed call is a bug; sync() is the scheduler loop's, and no
            # library error may stop it (the provider catches only its own types there).
            self.log.exception("The executor pass failed; the next sync() goes on")
        for key, running in core.take_running_changes():
            airflow_key = to_airflow_key(key)
            if running:
                self.running.add(airflow_key)
            else:
                self.running.discard(airflow_key)
                self._ti_ids.pop(key, None)

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
            return self._read_states(request.keys)
        if isinstance(request, ListPods):
            return self._relist(request)
        return self._calls.perform(request)

    def _screen(self, request: CreatePod) -> str | None:
        """Why ``request``'s pod must not be created (a stale task instance), or None."""
        stale = self._stale(request.key)
        if stale is not None:
            self.log.info("Not creating a pod for %s: %s", request.key, stale)
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

    # --- adoption and revoke -----------------------------------------------------------

    def try_adopt_task_instances(self, tis: Sequence[Any]) -> Sequence[Any]:
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
                    alive_scheduler_ids=self._alive_other_scheduler_job_ids(),
                    expected_task_keys=expected,
                    expected_callback_keys=self._active_callbacks(),
                )
            )
            self._pass()  # unbounded: the relabels' answers decide what is reset
            reset = {to_airflow_key(key) for key in self.core.not_adopted(expected)}
        except _failures() as error:
            self.log.warning("Adoption failed (%s); the scheduler resets the task instances", error)
            return list(tis)
        return [*without_owner, *(ti for key, ti in owned.items() if key in reset)]

    def _adoption_pods(self, dead: Iterable[str]) -> list[Mapping[str, Any]]:
        """The pods of the core's adoption lists (live pods of the ``dead`` schedulers,
        live callback pods and Succeeded pods no live scheduler owns), as listed: a pod
        in two lists is there twice, and the core counts it once (the newer version)."""
        alive = self._alive_other_scheduler_job_ids()
        pods: list[Mapping[str, Any]] = []
        for selector in self.core.adoption_selectors(dead, alive):
            for namespace in self._namespaces():
                items, _ = self._list(
                    namespace,
                    label_selector=selector.label_selector,
                    field_selector=selector.field_selector,
                )
                pods.extend(items)
        return pods

    def _log_unreadable(self, plan: AdoptionPlan) -> None:
        """One line per listed pod adoption skipped as unreadable (no workload in its
        annotations, a missing or malformed owner label); the rest were planned."""
        for pod in plan.undecodable:
            self.log.warning("Not adopting pod %s/%s: %s", pod.namespace, pod.pod_name, pod.reason)

    def _active_callbacks(self) -> list[CallbackKey]:
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

    def revoke_task(self, *, ti: Any) -> None:  # noqa: ANN401 - Airflow's TaskInstance
        """Stop the task instance's pod: marked revoked, then deleted; no event."""
        key = from_airflow_key(ti.key)
        assert isinstance(key, TaskInstanceKey)  # noqa: S101 - a task instance's key
        self.running.discard(ti.key)
        self.queued_tasks.pop(ti.key, None)
        selector = scheduler_pods_selector(self.scheduler_job_id or "")
        pods: list[Any] = []
        for namespace in self._namespaces():
            pods.extend(self._list(namespace, label_selector=selector.label_selector)[0])
        self.core.revoke(key, pods)
        self._pass(seconds=self._sync_bound)


def _executor_kube_client(kube_client: Any, team_name: str | None) -> Any:  # noqa: ANN401
    """The provider's API client for its executor: with ``client_factory`` and per-team
    settings from provider 10.24, from ``in_cluster`` / ``config_file`` before."""
    get_client = getattr(kube_client, "_get_executor_kube_client", None)
    if get_client is None:
        return kube_client.get_kube_client()
    return get_client(team_name=team_name)


_Relaunches = tuple[list[Any], list[tuple[str, str, str]]]
"""Orphaned callbacks taken over: the workloads to run, and ``(id, holder, why)`` of those
that fail."""


def _command_args(command: Any) -> list[str]:  # noqa: ANN401 - [ExecuteTask] or an argv
    if (
        isinstance(command, list | tuple)
        and len(command) == 1
        and hasattr(command[0], "model_dump_json")
    ):
        return workload_command_args(command[0].model_dump_json())
    return [str(part) for part in command]


def _mutation_hook() -> Any:  # noqa: ANN401 - a MutationHook, or None
    """Airflow's ``pod_mutation_hook`` as a manifest hook; None when it would do nothing.

    Each pod through a hook makes a ``V1Pod`` and back, most of a pod's build: with
    Airflow's own hook and no policy implementing it, there is nothing to mutate.
    """
    settings = _airflow("airflow.settings")
    hook = getattr(settings, "pod_mutation_hook", None)
    if hook is None or _is_default_mutation_hook(settings, hook):
        return None
    from k8s_workloads.adapters import v1pod_mutation_hook  # noqa: PLC0415

    return v1pod_mutation_hook(hook)


def _is_default_mutation_hook(settings: Any, hook: object) -> bool:  # noqa: ANN401 - airflow.settings
    """Whether ``hook`` is the function ``airflow.settings`` defines and no policy plugin
    implements ``pod_mutation_hook``.

    Airflow's function calls the policy plugin manager's hook, and
    ``airflow_local_settings``'s ``pod_mutation_hook`` becomes a plugin of that manager
    (``policies.make_plugin_from_local_settings``), as do the ``airflow.policy`` entry
    points: the function stays the same, so the manager is asked. A function set in its
    place (before Airflow 2.6 ``airflow_local_settings`` replaced it; or by code) is a
    user's hook. Anything this cannot tell is taken for a user's hook.
    """
    if (
        getattr(hook, "__module__", None) != settings.__name__
        or getattr(hook, "__qualname__", None) != "pod_mutation_hook"
    ):
        return False
    manager = getattr(settings, "get_policy_plugin_manager", None)
    if manager is None:
        return False
    try:
        return not manager().hook.pod_mutation_hook.get_hookimpls()
    except AttributeError:  # no such hook spec: not the manager described above
        return False


def _inline(request: Request) -> bool:
    """Performed on the scheduler's thread: events (its buffer), state reads (its
    database) and re-lists (they restart the watchers)."""
    return isinstance(request, (EmitEvent, ReadStates, ListPods))


@functools.cache
def _failures() -> tuple[type[BaseException], ...]:
    """What a failed call raises: the API (and its transport), the database, a state
    the library cannot read."""
    return (
        _airflow("kubernetes.client.exceptions").ApiException,
        _airflow("urllib3.exceptions").HTTPError,
        _airflow("sqlalchemy.exc").SQLAlchemyError,
        OSError,
        ConversionError,
    )
