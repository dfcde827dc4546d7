"""Apache Airflow integration: the only place besides the adapter that imports Airflow.

Install with the extra: ``pip install 'k8s-workloads[airflow]'`` (Airflow 3.3.x with
``apache-airflow-providers-cncf-kubernetes`` 10.21.0 to 10.25.x). ``import k8s_workloads`` never
imports Airflow; this subpackage loads its modules on first use.

* :class:`KubernetesExecutor` (:mod:`k8s_workloads.airflow.executor`): the provider's
  executor with callback workloads, on the executor core. Set
  ``AIRFLOW__CORE__EXECUTOR=k8s_workloads.airflow.KubernetesExecutor``.
* :mod:`k8s_workloads.airflow.convert`: keys and states to Airflow's types and back.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from k8s_workloads.airflow.convert import (
        ConversionError,
        from_airflow_key,
        from_airflow_state,
        to_airflow_key,
        to_airflow_state,
    )
    from k8s_workloads.airflow.executor import KubernetesExecutor

__all__ = [
    "ConversionError",
    "KubernetesExecutor",
    "from_airflow_key",
    "from_airflow_state",
    "to_airflow_key",
    "to_airflow_state",
]

_MODULES = {**dict.fromkeys(__all__, "convert"), "KubernetesExecutor": "executor"}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:  # noqa: ANN401 - the value of any public name
        module = _MODULES.get(name)
        if module is None:
            raise AttributeError(f"module 'k8s_workloads.airflow' has no attribute {name!r}")
        try:
            loaded = importlib.import_module(f"k8s_workloads.airflow.{module}")
        except ImportError as error:
            raise ImportError(
                f"k8s_workloads.airflow.{name} needs Apache Airflow 3.3: "
                f"pip install 'k8s-workloads[airflow]' ({error})"
            ) from error
        value = getattr(loaded, name)
        globals()[name] = value
        return value
