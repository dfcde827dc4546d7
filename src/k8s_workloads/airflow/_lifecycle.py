"""The executor's settings and lifecycle: the options read and checked, the core's
configuration made from them and from the provider's, the pod template loaded within
bounds, and ``start()`` / ``end()``, which make and stop the core, its I/O and the watchers.

:class:`_Lifecycle` is the lowest of the classes ``KubernetesExecutor`` is made of, one a
concern: ``_Lifecycle``, then :mod:`~k8s_workloads.airflow._reads`'s, then
:mod:`~k8s_workloads.airflow._adoption`'s, then :mod:`~k8s_workloads.airflow.executor`'s
(intake and the loop). Each one sees the attributes ``start()`` sets.
"""

from __future__ import annotations

import contextlib
import os
import queue
import time
from typing import TYPE_CHECKING, Any

from k8s_workloads.adapters import to_manifest
from k8s_workloads.airflow._adoption import _Adoption
from k8s_workloads.airflow._metrics import _Metrics
from k8s_workloads.airflow._reads import _PodLists, _StateReads
from k8s_workloads.airflow._runtime import (
    _AIRFLOW_VERSION,
    _HOLDER,
    _airflow,
    _airflow_stats,
    _failures,
    _ProviderKubernetesExecutor,
)
from k8s_workloads.airflow._watcher import _Watcher
from k8s_workloads.airflow.convert import ConversionError, from_airflow_key
from k8s_workloads.airflow.provider import SECTION
from k8s_workloads.airflow.settings import (
    LibraryOptions,
    read_options,
    setting_problems,
    watched_namespaces,
)
from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import EmitEvent
from k8s_workloads.executor.config import ExecutorConfig
from k8s_workloads.executor.core import ExecutorCore
from k8s_workloads.executor.requests import CreatePod, Handled, ListPods, ReadStates, Request
from k8s_workloads.io.kube import KubeCalls
from k8s_workloads.io.pool import PoolDriver
from k8s_workloads.keys import CallbackKey
from k8s_workloads.pods.labels import watcher_selector
from k8s_workloads.pods.restart import WORKER_RESTART_POLICY, replaced_restart_policy
from k8s_workloads.states import CallbackState
from k8s_workloads.watch.failures import (
    DEFAULT_FATAL_PENDING_REASONS,
    PROVIDER_FATAL_PENDING_REASONS,
    PendingPolicy,
)
from k8s_workloads.watch.resolution import ResolverConfig
from k8s_workloads.yaml_input import load_bounded_file

if TYPE_CHECKING:
    from k8s_workloads.keys import WorkloadKey

__all__ = ["_Lifecycle", "executor_kube_client", "load_pod_template"]

_SECTION = SECTION

_END_PASS_SECONDS = 10.0
"""The longest ``end()``'s last pass performs the core's requests."""
_END_WAIT_SECONDS = 5.0
"""The longest ``end()`` waits for an orphan scan, and then for the watcher threads."""
END_SECONDS = _END_PASS_SECONDS + 2 * _END_WAIT_SECONDS
"""``end()`` returns within this many seconds (see its docstring)."""
_KUBE_CLIENT = "airflow.providers.cncf.kubernetes.kube_client"


class _Lifecycle(_ProviderKubernetesExecutor):  # type: ignore[misc] # Any base
    """The provider's executor, configured, started and ended on the library's core."""

    if TYPE_CHECKING:  # defined by the classes made on this one; start() and end() use them

        def _pass(self, *, seconds: float | None = None) -> None: ...
        def _perform(self, request: Request) -> object: ...
        def _screen(self, request: CreatePod) -> str | None: ...
        def _log_decision(self, handled: Handled) -> None: ...
        def _process_callback(self, workload: Any) -> None: ...  # noqa: ANN401
        def _fail_callback(self, key: CallbackKey, info: str) -> None: ...

    # --- configuration ---------------------------------------------------------------

    def _setting(self, name: str) -> str | None:
        """``[kubernetes_executor] name`` as text; the library's options have their
        declared defaults (the package is a registered provider: ``provider.py``)."""
        value: str | None = self.conf.get(_SECTION, name, fallback=None)
        return value

    def _check_settings(self) -> LibraryOptions:
        """The library's options, read and checked, and every setting the executor reads
        (``settings.setting_problems``, as ``airflow-config --check`` checks them): one
        ``InvalidExecutorSetting`` line naming the first problem."""
        factory_read = hasattr(_airflow(_KUBE_CLIENT), "_get_executor_kube_client")
        problems = setting_problems(
            self._setting,
            environ=os.environ,
            load_template=load_pod_template,
            client_factory_read=factory_read,
        )
        if problems:
            raise problems[0]
        return read_options(self._setting)

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
            callback_queued_timeout=options.callback_queued_timeout or None,
            task_publish_max_retries=self.task_publish_max_retries,
            max_handling_retries=options.max_handling_retries,
        )
        fatal = frozenset(kube.worker_pod_pending_fatal_container_state_reasons or ())
        if fatal == PROVIDER_FATAL_PENDING_REASONS:
            # The provider's default, as it comes: the library's, which fails a pod stuck
            # in ImagePullBackOff too (a user's own list is taken as it is).
            fatal = DEFAULT_FATAL_PENDING_REASONS
        resolver = ResolverConfig(
            airflow_version=_AIRFLOW_VERSION,
            fatal_pending_reasons=fatal,
            pending=PendingPolicy() if options.pending_policy else None,
        )
        return ExecutorConfig(
            scheduler_id=self.scheduler_job_id or "",
            namespace=kube.kube_namespace,
            airflow_version=_AIRFLOW_VERSION,
            kube_image=kube.kube_image,
            pod_template=self._read_template(kube.pod_template_file),
            load_template=self._read_template,
            mutation_hook=_mutation_hook(),
            decisions=decisions,
            resolver=resolver,
            secure_payload=options.secure_workload_payload,
            creation_batch_size=max(1, int(kube.worker_pods_creation_batch_size)),
            max_concurrent_creations=self._creation_concurrency(),
            max_concurrent_cleanups=options.pod_cleanup_max_concurrency,
            watch_all_namespaces=bool(kube.multi_namespace_mode),
            # The event buffer is stored by the scheduler's loop after sync(): a pod goes
            # once the scheduler took its workload's event and the loop came round.
            confirm_reports=True,
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
        if not os.path.exists(path):  # noqa: PTH110 - the provider's test
            # The provider's warning ("Model file ... does not exist") and empty pod (a
            # task's file; the configured one is refused at start).
            return to_manifest(generator.deserialize_model_file(path))
        try:
            return load_pod_template(path)
        except (OSError, ValueError, TypeError) as error:
            # The core fails the job with this message (it takes ValueError and TypeError).
            raise ValueError(f"pod template file {path!r}: {error}") from error

    def _read_template(self, path: str | None) -> dict[str, Any]:
        """:meth:`_template`, logging once per path a ``restartPolicy`` the file asks for
        that its pods will not have (read again for each job naming it: not once a pod)."""
        template = self._template(path)
        policy = replaced_restart_policy(template)
        if path and policy is not None and path not in self._restart_warned:
            self._restart_warned.add(path)
            self.log.warning(
                "pod_template_file %r asks for restartPolicy %r: k8s_workloads builds every "
                "worker pod with restartPolicy %r (a restarted workload would run again)",
                path,
                policy,
                WORKER_RESTART_POLICY,
            )
        return template

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
        self._restart_warned: set[str] = set()
        """The template files whose replaced restartPolicy was logged (_read_template)."""
        # Checked before the client is made: its ConfigException ("Service host/port is
        # not set") and image-less pods are what the provider shows instead.
        self._options = self._check_settings()
        self.kube_client = executor_kube_client(kube_client, self.team_name)
        self.core = ExecutorCore(self._core_config())
        self.core.on_decision = self._log_decision
        self.core.on_pod = self._log_pod
        self._metrics = _Metrics(_airflow_stats(), log=self.log)
        """What is sent to Airflow's Stats (nothing, and nothing kept, with metrics off)."""
        self._failed_creations: dict[WorkloadKey, str] = {}
        """Each failed creation's error, until the core's decision on it."""
        self._creations_unsent = False
        """Whether pod creations are paused: the last one did not reach the API server."""
        self._failed_at_intake: set[Any] = set()
        """Airflow keys of tasks execute_async failed (refused at submit): not running."""
        self._taken_reports: list[WorkloadKey] = []
        """Workloads whose final events the scheduler took (get_event_buffer) since the
        last sync(): stored by the time the next one starts (see _reports_stored)."""
        self._succeeded_callbacks: list[str] = []
        """Callbacks taken as ``success``: their marks go once stored."""
        self._sync_bound = self._options.sync_max_seconds
        config = self.core.config
        namespaces = self._namespaces()
        self._calls = KubeCalls(
            self.kube_client,
            # Every call bounded (api_request_timeout); the provider's own request
            # arguments win, its _request_timeout too (a list made a tuple by KubeConfig).
            request_args={
                "_request_timeout": self._options.api_request_timeout.pair,
                **(self.kube_config.kube_client_request_args or {}),
            },
            delete_options=self._delete_options(),
            # The watchers share the client: each holds a connection of the pool for as
            # long as it watches, so the calls get as many as they may have in flight.
            pool_size=config.max_concurrent_creations
            + config.max_concurrent_cleanups
            + len(namespaces),
        )
        self._driver = PoolDriver(
            self.core,
            self._perform,
            failures=_failures(),
            screen=self._screen,
            inline=_inline,
        )
        self._events: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._ti_ids: dict[WorkloadKey, str] = {}
        """Task instances' row ids, by key (for the stale check)."""
        core = self.core
        self._reads = _StateReads(
            scheduler_id=self.scheduler_job_id,
            ti_ids=self._ti_ids,
            queued=lambda: core.queued,
            batch_size=config.creation_batch_size,
            log=self.log,
        )
        connect = self._options.api_request_timeout.connect
        selector = watcher_selector(self.scheduler_job_id or "").label_selector
        self._watchers = [
            _Watcher(
                self.kube_client,
                ns,
                self._events,
                label_selector=selector,
                log=self.log,
                connect_timeout=connect,
                on_restart=self._metrics.watch_restarted,
            )
            for ns in namespaces
        ]
        self._pod_lists = _PodLists(self._calls, namespaces, self._watchers)
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

    def _namespaces(self) -> list[str | None]:
        """Where pods are watched and listed, as the provider does
        (``settings.watched_namespaces``)."""
        return watched_namespaces(self._setting)

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
            self._release_marks(succeeded)

    def _release_marks(self, callback_ids: list[str]) -> None:
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

    def end(self) -> None:
        """Stop the watchers, perform what the core still asks for, stop the I/O.

        Returns within :data:`END_SECONDS` (20 s), whatever the API server does: the
        watchers' open streams are shut down at once; the last pass performs what the
        core still asks for for at most 10 s (plus at most one inline request: a state
        read, or a re-list whose calls are bounded by ``api_request_timeout``); an orphan
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


def load_pod_template(path: str) -> dict[str, Any]:
    """The pod template file at ``path`` as the executor builds pods from it: read as the
    provider's ``PodGenerator.deserialize_model_file`` reads it, as a manifest.

    The provider reads the file with ``yaml.safe_load``: a task's ``pod_template_file`` is
    a DAG author's, and an alias bomb or a file without end would fill the scheduler's
    memory, so it is read within the CLI's bounds. An empty file is an empty pod, as
    there. Raises ``OSError`` (unreadable), ``ValueError`` (not YAML, past the bounds) or
    ``TypeError`` (not a mapping).
    """
    yaml = _airflow("yaml")
    try:
        loaded = load_bounded_file(path)
    except yaml.YAMLError as error:
        raise ValueError(f"not YAML: {error}".replace("\n", " ")) from error
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise TypeError(f"a YAML {type(loaded).__name__}, not a mapping")
    generator = _airflow("airflow.providers.cncf.kubernetes.pod_generator").PodGenerator
    manifest: dict[str, Any] = to_manifest(generator.deserialize_model_dict(loaded))
    return manifest


def executor_kube_client(kube_client: Any, team_name: str | None) -> Any:  # noqa: ANN401
    """The provider's API client for its executor: with ``client_factory`` and per-team
    settings from provider 10.24, from ``in_cluster`` / ``config_file`` before."""
    get_client = getattr(kube_client, "_get_executor_kube_client", None)
    if get_client is None:
        return kube_client.get_kube_client()
    return get_client(team_name=team_name)


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
