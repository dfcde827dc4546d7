# airflow.providers.cncf.kubernetes.executors.kubernetes_executor_utils (provider 10.25.0):
# only the watcher's per-event entry point and the failure-details collector tests/compat
# calls. The provider annotates kube_config as the client's Configuration but reads
# Airflow's KubeConfig from it, and leaves the event and logger untyped: Any here too.

import multiprocessing
from queue import Queue
from typing import Any

from kubernetes.client import V1Pod

from airflow.providers.cncf.kubernetes.executors.kubernetes_executor_types import (
    FailureDetails,
    KubernetesWatch,
)

class KubernetesJobWatcher(multiprocessing.Process):
    namespace: str
    scheduler_job_id: str
    watcher_queue: Queue[KubernetesWatch]
    resource_version: str | None
    kube_config: Any
    supports_task_instance_uuid: bool
    team_name: str | None
    def __init__(
        self,
        namespace: str,
        watcher_queue: Queue[KubernetesWatch],
        resource_version: str | None,
        scheduler_job_id: str,
        kube_config: Any,
        supports_task_instance_uuid: bool = False,
        team_name: str | None = None,
    ) -> None: ...
    def process_error(self, event: Any) -> str: ...
    def _run(
        self,
        kube_client: Any,
        resource_version: str | None,
        scheduler_job_id: str,
        kube_config: Any,
    ) -> str | None: ...
    _log: Any
    def process_status(
        self,
        pod_name: str,
        namespace: str,
        status: str,
        annotations: dict[str, str],
        resource_version: str,
        event: Any,
    ) -> None: ...

def collect_pod_failure_details(pod: V1Pod, logger: Any) -> FailureDetails | None: ...
