"""The executor's settings and what its lifecycle needs: the options read and checked
(:class:`_Settings`), the core's configuration made from them and from the provider's,
the pod template loaded within bounds, the API client and the mutation hook.
``start()`` and ``end()`` are the executor's: they make and stop its parts.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import attrs

from k8s_workloads.adapters import to_manifest
from k8s_workloads.airflow._runtime import (
    _AIRFLOW_VERSION,
    _airflow,
)
from k8s_workloads.airflow.settings import (
    LibraryOptions,
    read_options,
    setting_problems,
    watched_namespaces,
)
from k8s_workloads.config import DecisionConfig
from k8s_workloads.executor.config import ExecutorConfig
from k8s_workloads.pods.restart import WORKER_RESTART_POLICY, replaced_restart_policy
from k8s_workloads.watch.failures import (
    DEFAULT_FATAL_PENDING_REASONS,
    PROVIDER_FATAL_PENDING_REASONS,
    PendingPolicy,
)
from k8s_workloads.watch.resolution import ResolverConfig
from k8s_workloads.yaml_input import load_bounded_file

if TYPE_CHECKING:
    import logging
    from collections.abc import Callable

__all__ = [
    "_ProviderRetries",
    "_Settings",
    "executor_kube_client",
    "load_pod_template",
]


_KUBE_CLIENT = "airflow.providers.cncf.kubernetes.kube_client"


@attrs.frozen
class _ProviderRetries:
    """The retries the provider's executor read from its settings at ``__init__``."""

    pod_launch_failure_max_retries: int
    pod_launch_failure_excluded_container_reasons: Any
    task_publish_max_retries: int


class _Settings:
    """The executor's settings, read and checked, and what is made of them: the core's
    configuration, the pod templates (read within bounds), the ``DeleteOptions`` body, the
    watched namespaces.

    ``setting``: ``[kubernetes_executor] name`` as text, or None (the library's options
    have their declared defaults: the package is a registered provider, ``provider.py``);
    ``kube_config``: the provider's ``KubeConfig``; ``scheduler_id``: this scheduler's job
    id; ``log``: where a template's replaced ``restartPolicy`` is told.
    """

    def __init__(
        self,
        *,
        setting: Callable[[str], str | None],
        kube_config: Any,  # noqa: ANN401 - the provider's KubeConfig
        scheduler_id: str,
        log: logging.Logger | logging.LoggerAdapter[Any],
    ) -> None:
        self.setting = setting
        self.kube_config = kube_config
        self.scheduler_id = scheduler_id
        self.log = log
        self.restart_warned: set[str] = set()
        """The template files whose replaced restartPolicy was logged (read_template)."""

    def check(self) -> LibraryOptions:
        """The library's options, read and checked, and every setting the executor reads
        (``settings.setting_problems``, as ``airflow-config --check`` checks them): one
        ``InvalidExecutorSetting`` line naming the first problem."""
        factory_read = hasattr(_airflow(_KUBE_CLIENT), "_get_executor_kube_client")
        problems = setting_problems(
            self.setting,
            environ=os.environ,
            load_template=load_pod_template,
            client_factory_read=factory_read,
        )
        if problems:
            raise problems[0]
        return read_options(self.setting)

    def core_config(self, options: LibraryOptions, retries: _ProviderRetries) -> ExecutorConfig:
        """The core's configuration: the provider's settings, the library's ``options``
        and the provider executor's ``retries``."""
        kube = self.kube_config
        watched = self.namespaces()
        decisions = DecisionConfig(
            delete_worker_pods=kube.delete_worker_pods,
            delete_worker_pods_on_failure=kube.delete_worker_pods_on_failure,
            mark_kept_failed_pods_done=options.mark_kept_failed_pods_done,
            pod_launch_failure_retries=retries.pod_launch_failure_max_retries,
            pod_launch_failure_excluded_container_reasons=(
                retries.pod_launch_failure_excluded_container_reasons
            ),
            callback_launch_failure_retries=options.callback_launch_failure_retries,
            callback_queued_timeout=options.callback_queued_timeout or None,
            task_publish_max_retries=retries.task_publish_max_retries,
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
            scheduler_id=self.scheduler_id,
            namespace=kube.kube_namespace,
            airflow_version=_AIRFLOW_VERSION,
            kube_image=kube.kube_image,
            pod_template=self.read_template(kube.pod_template_file),
            load_template=self.read_template,
            mutation_hook=_mutation_hook(),
            decisions=decisions,
            resolver=resolver,
            secure_payload=options.secure_workload_payload,
            creation_batch_size=max(1, int(kube.worker_pods_creation_batch_size)),
            max_concurrent_creations=self.creation_concurrency(),
            max_concurrent_cleanups=options.pod_cleanup_max_concurrency,
            # One watch per namespace the provider watches (every one: None).
            watch_all_namespaces=watched == [None],
            watch_namespaces=[namespace for namespace in watched if namespace is not None],
            # The event buffer is stored by the scheduler's loop after sync(): a pod goes
            # once the scheduler took its workload's event and the loop came round.
            confirm_reports=True,
        )

    def creation_concurrency(self) -> int:
        """Pod creations in flight at once: with the provider's ``async_pod_creation``,
        ``pod_creation_max_concurrency`` (0: ``worker_pods_creation_batch_size``); one at a
        time otherwise, as the provider creates them."""
        kube = self.kube_config
        if not getattr(kube, "async_pod_creation", False):
            return 1
        concurrency = int(getattr(kube, "pod_creation_max_concurrency", 0) or 0)
        return max(1, concurrency or int(kube.worker_pods_creation_batch_size))

    def delete_options(self) -> dict[str, Any] | None:
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

    def namespaces(self) -> list[str | None]:
        """Where pods are watched and listed, as the provider does
        (``settings.watched_namespaces``)."""
        return watched_namespaces(self.setting)

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

    def read_template(self, path: str | None) -> dict[str, Any]:
        """:meth:`_template`, logging once per path a ``restartPolicy`` the file asks for
        that its pods will not have (read again for each job naming it: not once a pod)."""
        template = self._template(path)
        policy = replaced_restart_policy(template)
        if path and policy is not None and path not in self.restart_warned:
            self.restart_warned.add(path)
            self.log.warning(
                "pod_template_file %r asks for restartPolicy %r: k8s_workloads builds every "
                "worker pod with restartPolicy %r (a restarted workload would run again)",
                path,
                policy,
                WORKER_RESTART_POLICY,
            )
        return template


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
