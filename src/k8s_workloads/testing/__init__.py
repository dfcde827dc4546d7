"""The public test kit: a fake Kubernetes cluster and a fake Airflow database.

Like httpx's ``MockTransport``, it ships with the library so that executor authors test
their own code against it, and the library's own tests and simulator use the same kit:

* :class:`FakeCluster` keeps pods, Secrets and namespaces as a Kubernetes 1.37 API server
  does: it validates what is created and patched (422 with ``details.causes``), applies
  patches by content type, deletes pods gracefully (Terminating until the kubelet's
  :meth:`~FakeCluster.finish_deletion`), interprets label and field selectors, bumps
  ``resourceVersion`` on every change, streams watch events per selector (``DELETED``
  when a patch makes a pod leave a watch's selection), expires watches with a 410 and
  fails any call on demand (status, body, ``Retry-After``); what it models and what it
  does not is the docs' "How faithful the test kit is" (docs/test-kit.md);
* :class:`FakeAirflowDB` holds task instance and callback states and records the events
  the executor reports, as the scheduler would;
* :class:`Kubelet` binds the cluster's pods to its node and moves them to ``Running``,
  then ends each as a plan says (:class:`PodOutcome`: success, failure, OOMKilled,
  image-pull failure, eviction, node loss) with the statuses a real kubelet writes;
  :class:`ProcessKubelet` runs each container's command as a local process instead
  (env, Secrets, volumes, logs, exit codes, SIGTERM/SIGKILL, a lifetime per pod);
* :class:`CoreDriver` runs an :class:`~k8s_workloads.executor.ExecutorCore` against the
  two: the ``perform`` loop of a real executor, in one place;
* :class:`FakeApiServer` serves a :class:`FakeCluster` over HTTP on 127.0.0.1, so the real
  kubernetes client (and code built on it) runs unchanged against it, with an injected
  latency if asked, network faults on demand (connections reset, refused for a while,
  stalled, a creation's answer lost; a share of the calls failed at random, seeded:
  :class:`FaultRate`), a bearer token and RBAC denials if asked (:class:`Denied`,
  answered by ``SelfSubjectAccessReview`` too), and counts what it served
  (:class:`ServerStats`);
  ``python -m
  k8s_workloads.testing.server`` runs one in its own process, and ``python -m
  k8s_workloads.testing serve`` one with the process kubelet, a kubeconfig and the
  Airflow settings that point at it (a local cluster to try an executor on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from k8s_workloads.testing._access import Denied
from k8s_workloads.testing._cluster_store import CALLS
from k8s_workloads.testing._rates import FaultRate
from k8s_workloads.testing._routes import STATS_PATH
from k8s_workloads.testing.cluster import FakeCluster
from k8s_workloads.testing.database import DatabaseUnavailable, FakeAirflowDB
from k8s_workloads.testing.driver import CoreDriver, PassReport
from k8s_workloads.testing.errors import FAILURES, ApiError, Fault
from k8s_workloads.testing.kubelet import Kubelet, PodOutcome
from k8s_workloads.testing.process_kubelet import ProcessKubelet
from k8s_workloads.testing.selectors import FieldSelector, InvalidSelector, LabelSelector
from k8s_workloads.testing.stats import ServerStats
from k8s_workloads.testing.watch import FakeWatch

if TYPE_CHECKING:
    from k8s_workloads.testing.server import FakeApiServer

__all__ = [
    "CALLS",
    "FAILURES",
    "STATS_PATH",
    "ApiError",
    "CoreDriver",
    "DatabaseUnavailable",
    "Denied",
    "FakeAirflowDB",
    "FakeApiServer",
    "FakeCluster",
    "FakeWatch",
    "Fault",
    "FaultRate",
    "FieldSelector",
    "InvalidSelector",
    "Kubelet",
    "LabelSelector",
    "PassReport",
    "PodOutcome",
    "ProcessKubelet",
    "ServerStats",
]

_SERVED = frozenset({"FakeApiServer"})


def __getattr__(name: str) -> Any:  # noqa: ANN401 - one of _SERVED
    # The server module is imported when first asked for: imported with the package, it
    # would already be in sys.modules when ``python -m k8s_workloads.testing.server``
    # runs it as __main__, and runpy warns about that on stderr.
    if name in _SERVED:
        from k8s_workloads.testing import server  # noqa: PLC0415

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SERVED})
