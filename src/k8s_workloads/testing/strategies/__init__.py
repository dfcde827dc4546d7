"""Hypothesis strategies for executors' property tests (needs the ``hypothesis`` extra).

The strategies this project's own tests are built on, for an executor author's tests:

* **ids and keys**: :func:`task_keys`, :func:`callback_keys`, :func:`generic_keys`,
  :func:`workload_keys`, and the ids they are made of (:data:`airflow_ids`, :data:`run_ids`,
  :data:`scheduler_job_ids`, :data:`generic_ids`, with ``hostile_*`` variants past what
  Airflow accepts);
* **pods as a cluster reports them**: :func:`cluster_pods` (a pod this library builds for a
  drawn key, at a drawn :class:`PodFate`: unscheduled, creating, image pull failed or
  backing off, running, succeeded, failed, OOM-killed, evicted) and :func:`cluster_events`
  (the watch events that carry them);
* **pod templates and overrides**: :func:`pod_templates`, :func:`pod_overrides`,
  :func:`templates_and_overrides` (plausible ones a user writes), and
  :func:`hostile_templates_and_overrides`, :data:`hostile_hooks` and the ``hostile_*``
  values (what a broken template, override or mutation hook may hold).

Every strategy is typed; nothing here reads a clock or the network.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401
except ImportError as missing:  # pragma: no cover - the extra is installed in every test env
    raise ImportError(
        "k8s_workloads.testing.strategies needs hypothesis: pip install 'k8s-workloads[hypothesis]'"
    ) from missing

from k8s_workloads.testing.strategies import _cluster, _hostile, _ids, _manifests
from k8s_workloads.testing.strategies._cluster import *  # noqa: F403
from k8s_workloads.testing.strategies._hostile import *  # noqa: F403
from k8s_workloads.testing.strategies._ids import *  # noqa: F403
from k8s_workloads.testing.strategies._manifests import *  # noqa: F403

# Each module lists its public names once; the package offers all of them.
__all__: list[str] = []
__all__ += _cluster.__all__
__all__ += _hostile.__all__
__all__ += _ids.__all__
__all__ += _manifests.__all__
