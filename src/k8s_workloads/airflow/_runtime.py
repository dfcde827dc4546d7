"""Airflow as the executor meets it at run time: its modules loaded by name, its version,
the provider's executor class, the clock, and what a failed call raises.

The executor's modules (:mod:`k8s_workloads.airflow.executor` and the private modules
beside it) reach Airflow, the provider and the kubernetes client through :func:`_airflow`,
and a call that fails raises one of :func:`_failures`.
"""

from __future__ import annotations

import datetime
import functools
import importlib
from typing import Any

from k8s_workloads.airflow.convert import ConversionError

__all__ = [
    "_AIRFLOW_VERSION",
    "_HOLDER",
    "_ProviderKubernetesExecutor",
    "_airflow",
    "_airflow_stats",
    "_failures",
    "_utcnow",
]

_HOLDER = "k8s_workloads: queued by scheduler job "
"""The mark a callback's row carries in ``output`` while this executor holds it (the
scheduler job's id follows); cleared once the callback's success is stored."""


def _airflow(module: str) -> Any:  # noqa: ANN401 - Airflow's modules, untyped here
    # The boundary with Airflow and its provider: their classes are used as they are at
    # run time; typings/ declares only what the parity tests need.
    return importlib.import_module(module)


_AIRFLOW_VERSION: str = _airflow("airflow").__version__
_ProviderKubernetesExecutor: Any = _airflow(
    "airflow.providers.cncf.kubernetes.executors.kubernetes_executor"
).KubernetesExecutor


_METRICS_BACKENDS = ("statsd_on", "statsd_datadog_enabled", "otel_on")
"""The ``[metrics]`` options of which one on sends Airflow's metrics somewhere (Airflow's
``get_stats_factory`` reads the same three)."""


def _airflow_stats() -> Any:  # noqa: ANN401 - Airflow's Stats, or None
    """Airflow's ``Stats`` (the one its scheduler and executors initialise, from
    ``[metrics]``) when metrics are on; None when they go nowhere."""
    conf = _airflow("airflow.configuration").conf
    if not any(conf.getboolean("metrics", name, fallback=False) for name in _METRICS_BACKENDS):
        return None
    return _airflow("airflow.observability.stats").Stats


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


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
