"""What the executor core is configured with: :class:`ExecutorConfig` (checked when made)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import attrs

from k8s_workloads import config_checks as _checks
from k8s_workloads.config import DecisionConfig
from k8s_workloads.display import shown
from k8s_workloads.pods.validation import is_dns1123_label
from k8s_workloads.watch.resolution import ResolverConfig

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from k8s_workloads.compat import AirflowVersion, VersionLike
    from k8s_workloads.pods.general_build import MutationHook

__all__ = ["ExecutorConfig"]


def _text(value: str | int) -> str:
    return str(value)


def _version(value: VersionLike | None) -> AirflowVersion | None:
    return _checks.optional_version("ExecutorConfig", "airflow_version", value)


def _namespace(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    given: object = value  # typed str, but a caller may pass anything
    if not isinstance(given, str) or not is_dns1123_label(given):
        raise _checks.InvalidConfig(
            type(instance).__name__,
            attribute.name,
            f"must be a namespace name (a DNS-1123 label), got {shown(value)}",
        )


def _namespaces(value: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    given: object = value  # typed, but a caller may pass anything
    if isinstance(given, (list, tuple)) and all(
        isinstance(name, str) and is_dns1123_label(name) for name in given
    ):
        return tuple(dict.fromkeys(given))  # once each, in order
    raise _checks.InvalidConfig(
        "ExecutorConfig",
        "watch_namespaces",
        f"must be a list of namespace names (DNS-1123 labels), got {shown(value)}",
    )


@attrs.frozen(eq=False)
class ExecutorConfig:
    """What the core builds pods with and decides by.

    ``pod_template`` is the manifest every pod is merged over (the provider's
    ``pod_template_file``, loaded); a job naming its own ``pod_template_file`` gets
    ``load_template(path)`` (the caller reads files; the core does not), which raises
    ``ValueError`` or ``TypeError`` for a template it cannot give: the job then fails. ``rng`` draws
    pod-name suffixes (a seeded ``random.Random`` makes runs reproducible; None: the
    library's default source). ``creation_batch_size`` pods are created per pass (the
    provider's ``worker_pods_creation_batch_size``, default 1), at most
    ``max_concurrent_creations`` of them in flight at once. With ``secure_payload``
    the workload JSON goes into a Secret instead of the pod's args
    (:mod:`k8s_workloads.pods.payload`). ``read_callback_states`` asks for ``Callback.state``
    before reporting a callback, so a terminal callback is never overwritten (and, likewise,
    for a generic workload's state before reporting it).

    ``airflow_version`` is needed only where Airflow is: a task or callback job submitted
    to a core without it is refused (:class:`~k8s_workloads.pods.errors.InvalidJob`, field
    ``airflow_version``); generic workloads (:class:`~k8s_workloads.keys.GenericKey`) run
    without it. :meth:`generic` gives the defaults that suit an executor with no Airflow.
    """

    scheduler_id: str = attrs.field(converter=_text)
    namespace: str = attrs.field(validator=_namespace)
    airflow_version: AirflowVersion | None = attrs.field(default=None, converter=_version)
    """The Airflow the task and callback pods run (None: no Airflow, generic jobs only)."""
    kube_image: str | None = attrs.field(default=None, validator=_checks.optional_text)
    pod_template: Mapping[str, Any] | None = attrs.field(
        default=None, validator=_checks.optional_mapping
    )
    load_template: Callable[[str], Mapping[str, Any]] | None = attrs.field(
        default=None, validator=_checks.optional_callable
    )
    mutation_hook: MutationHook | None = attrs.field(
        default=None, validator=_checks.optional_callable
    )
    decisions: DecisionConfig = attrs.field(
        default=DecisionConfig(), validator=_checks.kind(DecisionConfig)
    )
    resolver: ResolverConfig | None = attrs.field(
        default=None, validator=_checks.kind(ResolverConfig, optional=True)
    )
    """None: the provider's watcher for ``airflow_version``."""
    secure_payload: bool = attrs.field(default=False, validator=_checks.boolean)
    read_callback_states: bool = attrs.field(default=True, validator=_checks.boolean)
    creation_batch_size: int = attrs.field(default=1, validator=_checks.positive)
    max_concurrent_creations: int = attrs.field(default=16, validator=_checks.positive)
    """Pod creations in flight at once when the core is driven concurrently
    (:meth:`ExecutorCore.start_request`); one at a time with :meth:`~ExecutorCore.next_request`."""
    max_concurrent_cleanups: int = attrs.field(default=16, validator=_checks.positive)
    """Pod deletions, label patches and Secret deletions in flight at once (likewise)."""
    watch_all_namespaces: bool = attrs.field(default=False, validator=_checks.boolean)
    """Watch and list the pods of every namespace (one watch), not only ``namespace``'s."""
    watch_namespaces: tuple[str, ...] = attrs.field(default=(), converter=_namespaces)
    """Watch and list the pods of each of these namespaces (one watch each), not only
    ``namespace``'s: the provider's ``multi_namespace_mode_namespace_list``. Ignored with
    ``watch_all_namespaces``; empty: ``namespace`` alone."""
    confirm_reports: bool = attrs.field(default=False, validator=_checks.boolean)
    """A finished workload's report goes out before its pod is deleted (or labelled done)
    either way. Off: a completed :class:`~k8s_workloads.decisions.actions.EmitEvent` means
    the report is stored. On: the clean-up waits until
    :meth:`ExecutorCore.reports_stored` names the workload — for an executor whose
    reports become durable later (Airflow's event buffer, stored by the scheduler's next
    loop). A process that dies in between leaves the pod: the next one adopts it and
    reports it once. Until then each such pod stays in the cluster and its work in the
    core: an executor that sets this and never calls ``reports_stored`` keeps them all."""
    rng: random.Random | None = attrs.field(
        default=None, validator=_checks.kind(random.Random, optional=True)
    )

    @property
    def watched_namespaces(self) -> tuple[str | None, ...]:
        """The namespace of each watch the core's pods are seen through, each listed on
        a re-list (None: one watch of every namespace)."""
        if self.watch_all_namespaces:
            return (None,)
        return self.watch_namespaces or (self.namespace,)

    def resolver_config(self) -> ResolverConfig:
        return self.resolver or ResolverConfig(airflow_version=self.airflow_version)

    @classmethod
    def generic(
        cls,
        scheduler_id: str | int,
        namespace: str,
        **options: Any,  # noqa: ANN401 - any other field, by name, as the constructor takes it
    ) -> ExecutorConfig:
        """A config for an executor with no Airflow, running generic workloads.

        What differs from the constructor's defaults, and why:

        * no ``airflow_version``: task and callback jobs are refused at ``submit``, callback
          pods met in the watch are undecodable (ignored);
        * ``read_callback_states=False``: the core reports each workload's result from its
          pod alone and never hands out a :class:`~k8s_workloads.executor.ReadStates`
          (there is no Airflow row to guard; an executor that keeps states of its own and
          wants a terminal one never overwritten passes ``read_callback_states=True`` and
          answers the reads, a :data:`~k8s_workloads.states.GenericState` or None each);
        * ``decisions`` with ``callback_launch_failure_retries=1``: a pod that failed
          before the workload ran (its image never pulled, the node went away before it
          started) is launched once more, as a task's is by default; a workload whose
          code ran is never run again (no scheduler retries it: that is the executor's
          call);
        * and ``task_publish_max_retries=-1``: a creation the API server answered with a
          transient error (429, 5xx, a quota 403) is retried after its pause until it is
          made, for at most ``callback_queued_timeout`` (600 s) — no scheduler queues it
          again after a failure, as Airflow would a task (the provider's 0 fails it at
          the first 503).

        ``options`` are any other fields by name (``kube_image``, ``pod_template``,
        ``creation_batch_size`` …), and override these defaults.
        """
        defaults: dict[str, Any] = {
            "read_callback_states": False,
            "decisions": DecisionConfig(
                callback_launch_failure_retries=1, task_publish_max_retries=-1
            ),
        }
        return cls(scheduler_id, namespace, **{**defaults, **options})
