"""The provider's own watcher against the kit: what the kit serves, the provider reads.

``KubernetesJobWatcher._run`` (cncf-kubernetes 10.25.0, the code its watcher process runs)
streams pods from the kit's ``FakeApiServer`` through the real kubernetes client, as it
would from a cluster: task pods this library builds, moved through their lives by the kit's
scripted ``Kubelet`` (succeeded, failed, OOM-killed, image pull failure, still running). It
must read every status without raising (a container status without ``image`` once made it
raise ``ValueError: Invalid value for image``), report what our resolver reports of the
same pod, and take the kit's expired watch the way it takes a real server's: HTTP 200 with
an in-stream ``ERROR`` event carrying a 410 ``Status`` (the API concepts page, "Efficient
detection of changes": a watch from a version too old "must fail with a watch event of
type ERROR"), which the kubernetes client raises from the stream as its ``ApiException``.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip(
    "airflow.providers.cncf.kubernetes.executors.kubernetes_executor_utils",
    reason="the provider runs in the Airflow environment",
)

from airflow.providers.cncf.kubernetes.executors.kubernetes_executor_utils import (
    KubernetesJobWatcher,
)
from airflow.utils.state import TaskInstanceState as ProviderState
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from k8s_workloads.testing import FakeApiServer, FakeCluster, Kubelet, PodOutcome
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.failures import PROVIDER_FATAL_PENDING_REASONS
from k8s_workloads.watch.resolution import Outcome, ResolverConfig
from tests.support.pod_builds import named_task_pod

AS_THE_PROVIDER = ResolverConfig(fatal_pending_reasons=PROVIDER_FATAL_PENDING_REASONS)
NS = "airflow"
JOB = "7"
FATAL = ["CreateContainerConfigError", "ErrImagePull", "CreateContainerError"]
OUTCOMES = {
    "ok": PodOutcome.success(),
    "fails": PodOutcome.failure(3),
    "oom": PodOutcome.oom_killed(),
    "no-image": PodOutcome.image_pull_failure(),
}


class _KubeConfig:
    """What ``_run`` and ``process_status`` read of the provider's ``KubeConfig``."""

    def __init__(self) -> None:
        self.kube_client_request_args = {"timeout_seconds": 1}
        self.worker_pod_pending_fatal_container_state_reasons = FATAL


def _watcher() -> KubernetesJobWatcher:
    # The watcher's process is not started: _run is what its loop calls.
    watcher = KubernetesJobWatcher.__new__(KubernetesJobWatcher)
    watcher.namespace = NS
    watcher.scheduler_job_id = JOB
    watcher.watcher_queue = queue.Queue()
    watcher.resource_version = None
    watcher.kube_config = _KubeConfig()
    watcher.supports_task_instance_uuid = False
    watcher.team_name = None
    watcher._log = logging.getLogger(__name__)
    return watcher


@pytest.fixture
def served() -> Iterator[tuple[FakeCluster, client.CoreV1Api]]:
    cluster = FakeCluster(namespaces=[NS])
    with FakeApiServer(cluster, lifetime=60) as server:
        api: Any = client.ApiClient(client.Configuration(host=server.url))
        try:
            yield cluster, client.CoreV1Api(api)
        finally:
            api.close()


def _drain(watcher: KubernetesJobWatcher) -> dict[str, Any]:
    """The last state the watcher put for each pod."""
    reported: dict[str, Any] = {}
    while not watcher.watcher_queue.empty():
        watched = watcher.watcher_queue.get()  # a KubernetesWatch: name, namespace, state, ...
        reported[watched[0]] = watched[2]
    return reported


def test_the_providers_watcher_reads_every_status_the_kubelet_writes(
    served: tuple[FakeCluster, client.CoreV1Api],
) -> None:
    cluster, api = served
    for name in OUTCOMES:
        cluster.create_pod(NS, named_task_pod(name, namespace=NS, owner=JOB))
    kubelet = Kubelet(cluster, run_seconds=1, plan=OUTCOMES)
    for second in (0.0, 1.0, 2.0):  # bound, Running, then each pod's outcome
        kubelet.step(second)
    cluster.create_pod(NS, named_task_pod("running", namespace=NS, owner=JOB))
    for second in (3.0, 4.0):  # bound, then Running (its end is not reached)
        kubelet.step(second)

    watcher = _watcher()
    last_version = watcher._run(api, None, JOB, watcher.kube_config)
    assert last_version is not None
    reported = _drain(watcher)

    ours = {}
    for pod in cluster.pods():
        resolution = resolve_event({"type": "ADDED", "object": pod}, config=AS_THE_PROVIDER)
        ours[pod["metadata"]["name"]] = resolution.outcome
    # The provider puts FAILED for a failed pod, None for a succeeded one (the task
    # reports its own state), nothing for a running one; ours says the same.
    expected_provider = {
        Outcome.FAILED: ProviderState.FAILED,
        Outcome.SUCCEEDED: None,
    }
    for name, outcome in ours.items():
        if outcome in expected_provider:
            assert reported[name] == expected_provider[outcome], (name, outcome, reported)
        else:
            assert name not in reported, (name, outcome, reported)
    assert ours["fails"] is Outcome.FAILED
    assert ours["oom"] is Outcome.FAILED
    assert ours["running"] is Outcome.RUNNING
    # By now the image pull backs off (ImagePullBackOff): not fatal in the provider's list;
    # ours fails it by default (a deliberate difference).
    assert ours["no-image"] is Outcome.PENDING
    (stuck,) = [pod for pod in cluster.pods() if pod["metadata"]["name"] == "no-image"]
    assert resolve_event({"type": "ADDED", "object": stuck}).outcome is Outcome.FAILED
    assert ours["ok"] is Outcome.SUCCEEDED


def test_an_expired_watch_reaches_the_providers_watcher_as_the_clients_410(
    served: tuple[FakeCluster, client.CoreV1Api],
) -> None:
    cluster, api = served
    cluster.create_pod(NS, named_task_pod("ok", namespace=NS, owner=JOB))
    old = cluster.resource_version
    cluster.create_pod(NS, named_task_pod("later", namespace=NS, owner=JOB))
    cluster.compact()  # the history before now is gone: a watch from `old` is too old
    watcher = _watcher()
    # The server answers 200 and ends the stream with an ERROR event; the kubernetes
    # client turns that event into ApiException(410), which ends the provider's watcher
    # process (the executor starts a new one from resource version "0"). The same error
    # as a real server's, through the same path: the stream, not the request.
    with pytest.raises(ApiException) as raised:
        watcher._run(api, old, JOB, watcher.kube_config)
    assert raised.value.status == 410
    assert "too old resource version" in str(raised.value.reason)
    assert cluster.calls[-1][0] == "watch"
