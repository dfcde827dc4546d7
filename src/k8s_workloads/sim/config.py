"""The simulator's options: the executor's, at the executor's own defaults, and the
simulator's (the clock, the run's length, what its Airflow does after a restart).

Every executor option takes its default from the class it goes to
(:class:`~k8s_workloads.config.DecisionConfig`,
:class:`~k8s_workloads.watch.resolution.ResolverConfig`,
:class:`~k8s_workloads.executor.ExecutorConfig`), read once here, so a scenario runs the
executor as it ships. One default is the simulator's own: ``creation_batch_size``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import attrs

from k8s_workloads import config_checks as _checks
from k8s_workloads.config import DecisionConfig
from k8s_workloads.executor.config import ExecutorConfig
from k8s_workloads.watch.failures import PendingPolicy
from k8s_workloads.watch.resolution import ResolverConfig

__all__ = ["SIM_CREATION_BATCH_SIZE", "SimConfig"]

_T = TypeVar("_T")


def _default(cls: type[Any], name: str, kind: type[_T]) -> _T:
    """The default of the attrs class ``cls``'s field ``name``, checked to be a ``kind``.

    attrs types a field's default as ``Any``; this gives it its type back, and fails when
    the simulator is imported (not in a scenario) if the field's default changes kind."""
    default: object = attrs.fields_dict(cls)[name].default
    # A bool is an int to isinstance; not to a count of retries.
    if not isinstance(default, kind) or (isinstance(default, bool) and kind is not bool):
        raise TypeError(f"{cls.__name__}.{name} defaults to {default!r}, not {kind.__name__}")
    return default


SIM_CREATION_BATCH_SIZE = 1_000
"""The simulator's ``creation_batch_size``: every pod queued in a tick is created in that
tick's pass. :class:`~k8s_workloads.executor.ExecutorConfig`'s default is 1 (the
provider's ``worker_pods_creation_batch_size``), which would spread a scenario's
launches over as many passes as it has workloads; a scenario sets it to see that."""

_DECISION_FIELDS = (
    "delete_worker_pods",
    "delete_worker_pods_on_failure",
    "mark_kept_failed_pods_done",
    "pod_launch_failure_retries",
    "callback_launch_failure_retries",
    "task_publish_max_retries",
)
"""The fields that go to :class:`DecisionConfig` under the same names."""

_SIM_CONFIG_CHECKS: tuple[tuple[str, _checks.Validator], ...] = (
    ("airflow_version", _checks.kind(str)),
    ("namespace", _checks.kind(str)),
    ("kube_image", _checks.optional_text),
    ("delete_worker_pods", _checks.boolean),
    ("delete_worker_pods_on_failure", _checks.boolean),
    ("mark_kept_failed_pods_done", _checks.boolean),
    ("pod_launch_failure_retries", _checks.retries),
    ("callback_launch_failure_retries", _checks.retries),
    ("task_publish_max_retries", _checks.retries),
    ("pending_policy", _checks.kind(PendingPolicy, optional=True)),
    ("report_callback_running", _checks.boolean),
    ("tick_seconds", _checks.seconds),
    ("max_ticks", _checks.positive),
    ("reset_orphaned_callbacks", _checks.boolean),
    ("creation_batch_size", _checks.positive),
    ("decisions", _checks.kind(tuple)),
    ("resolver", _checks.kind(tuple)),
)


@dataclasses.dataclass(frozen=True)
class SimConfig:
    """The executor's and the simulator's options (``config`` in a scenario file).

    The executor's options default to what their classes default to; the common ones are
    fields here, every other :class:`DecisionConfig` and :class:`ResolverConfig` option
    goes in ``decisions`` and ``resolver`` by name."""

    airflow_version: str = "3.3.2"
    namespace: str = "airflow"
    kube_image: str | None = _default(ExecutorConfig, "kube_image", type(None))
    delete_worker_pods: bool = _default(DecisionConfig, "delete_worker_pods", bool)
    delete_worker_pods_on_failure: bool = _default(
        DecisionConfig, "delete_worker_pods_on_failure", bool
    )
    mark_kept_failed_pods_done: bool = _default(DecisionConfig, "mark_kept_failed_pods_done", bool)
    pod_launch_failure_retries: int = _default(DecisionConfig, "pod_launch_failure_retries", int)
    callback_launch_failure_retries: int = _default(
        DecisionConfig, "callback_launch_failure_retries", int
    )
    task_publish_max_retries: int = _default(DecisionConfig, "task_publish_max_retries", int)
    pending_policy: PendingPolicy | None = _default(ResolverConfig, "pending", type(None))  # noqa: RUF009
    report_callback_running: bool = _default(ResolverConfig, "report_callback_running", bool)
    tick_seconds: float = 1.0
    """Seconds per tick (Retry-After headers, grace periods)."""
    max_ticks: int = 1000
    """The run stops (a ``timeout`` anomaly) after this many ticks."""
    reset_orphaned_callbacks: bool = True
    """Re-queue a callback a dead scheduler queued without a pod (Airflow 3.3.2 does not)."""
    creation_batch_size: int = SIM_CREATION_BATCH_SIZE
    """Pods created per executor pass (the provider's ``worker_pods_creation_batch_size``)."""
    decisions: tuple[tuple[str, Any], ...] = ()
    """Any other :class:`DecisionConfig` option (``config.decisions`` in YAML), by name."""
    resolver: tuple[tuple[str, Any], ...] = ()
    """Any other :class:`ResolverConfig` option (``config.resolver`` in YAML), by name."""

    def __post_init__(self) -> None:
        # Checked when made, as every config: an InvalidConfig naming the field.
        for name, check in _SIM_CONFIG_CHECKS:
            _checks.check(self, name, check, getattr(self, name))
        _checks.version("SimConfig", "airflow_version", self.airflow_version)
        self.decision_config()  # the options under config.decisions and config.resolver,
        self.resolver_config()  # checked by the classes they go to

    def decision_config(self) -> DecisionConfig:
        config = DecisionConfig(**{name: getattr(self, name) for name in _DECISION_FIELDS})
        return attrs.evolve(config, **dict(self.decisions))

    def resolver_config(self) -> ResolverConfig:
        config = ResolverConfig(
            airflow_version=self.airflow_version,
            pending=self.pending_policy,
            report_callback_running=self.report_callback_running,
        )
        return attrs.evolve(config, **dict(self.resolver))

    def image(self) -> str:
        return self.kube_image or f"apache/airflow:{self.airflow_version}"

    def to_json(self) -> dict[str, object]:
        shown: dict[str, object] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, PendingPolicy):
                value = attrs.asdict(value)
            elif field.name in {"decisions", "resolver"}:
                value = {
                    name: sorted(option) if isinstance(option, frozenset) else option
                    for name, option in value
                }
            shown[field.name] = value
        return shown
