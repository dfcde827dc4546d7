"""The options the decision rules read, below the rules that read them.

:class:`DecisionConfig` is what :mod:`~k8s_workloads.decisions` and
:mod:`~k8s_workloads.decisions.creation_errors` decide by;
:class:`~k8s_workloads.executor.config.ExecutorConfig` holds one. Every value is checked
when a config is made: a wrong one is an :class:`~k8s_workloads.InvalidConfig` naming the
field.
"""

from __future__ import annotations

import attrs

from k8s_workloads import config_checks as _checks

__all__ = ["DecisionConfig"]


@attrs.frozen
class DecisionConfig:
    """The executor options the decisions read; defaults are the provider's.

    Every value is checked here: a wrong one is an :class:`InvalidConfig` naming it."""

    delete_worker_pods: bool = attrs.field(default=True, validator=_checks.boolean)
    delete_worker_pods_on_failure: bool = attrs.field(default=False, validator=_checks.boolean)
    mark_kept_failed_pods_done: bool = attrs.field(default=True, validator=_checks.boolean)
    """Label a failed pod kept for debugging ``airflow_executor_done=True``, so watch
    restarts and adoption stop re-reporting it (the provider leaves it, §7.3.2)."""
    pod_launch_failure_retries: int = attrs.field(default=1, validator=_checks.retries)
    """Requeue a task whose pod failed before the task ran: -1 unlimited, 0 never."""
    pod_launch_failure_excluded_container_reasons: frozenset[str] = attrs.field(
        default=frozenset({"Error"}), validator=_checks.text_set
    )
    callback_launch_failure_retries: int = attrs.field(default=0, validator=_checks.retries)
    """The same for callbacks, counted per callback; 0 (the provider's behaviour) never."""
    task_publish_max_retries: int = attrs.field(default=0, validator=_checks.retries)
    """Pod-creation retries for transient API errors: -1 unlimited, 0 never."""
    max_handling_retries: int = attrs.field(default=3, validator=_checks.count)
    """How often a result whose handling raised is retried before it becomes a failure."""
    max_retry_after_seconds: float = attrs.field(default=600.0, validator=_checks.seconds)
    """The longest pause a ``Retry-After`` header may ask for; a longer one is cut to
    this (the provider honours any value, so a huge one stops pod creation for good)."""
    callback_queued_timeout: float | None = attrs.field(
        default=600.0, validator=_checks.optional_seconds
    )
    """Seconds a callback may wait for its pod while the API server cannot be reached
    before it fails (None: no limit). A task's wait is bounded by Airflow's
    ``[scheduler] task_queued_timeout``, which revokes it; nothing bounds a callback's."""
    unreachable_backoff_seconds: tuple[float, float] = attrs.field(
        default=(1.0, 30.0), validator=_checks.backoff
    )
    """Pod creation pauses this long (first, most) after a creation that never reached the
    API server, doubling while it stays unreachable. Driven with many requests in flight, a
    creation retried after an answer (a 429, a 5xx, a quota) waits at least this long too,
    doubling with each retry (one at a time, it waits for the next pass)."""
