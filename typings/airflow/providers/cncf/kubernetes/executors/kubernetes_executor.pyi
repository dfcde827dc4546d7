# airflow.providers.cncf.kubernetes.executors.kubernetes_executor (provider 10.25.0): only
# what tests/compat/test_parity_decisions.py touches — the executor's result handling
# (_change_state), the attributes it reads, and its attempt record. The job and result
# records and the done-label key are defined in kubernetes_executor_types and imported by
# this module at run time; they are declared here so the test can import them from the
# module it exercises. The provider types kube_config/kube_scheduler/task_queue as objects
# the test replaces with recording fakes: Any here.

from collections.abc import Sequence
from typing import Any, NamedTuple

from airflow.models.taskinstancekey import TaskInstanceKey
from airflow.providers.cncf.kubernetes.executors.kubernetes_executor_types import FailureDetails
from airflow.utils.state import TaskInstanceState

POD_EXECUTOR_DONE_KEY: str

class KubernetesJob(NamedTuple):
    key: TaskInstanceKey
    command: Sequence[str]
    kube_executor_config: Any
    pod_template_file: str | None
    kube_image: str | None = None

class KubernetesResults(NamedTuple):
    key: TaskInstanceKey
    state: TaskInstanceState | str | None
    pod_name: str
    namespace: str
    resource_version: str
    failure_details: FailureDetails | None

class _PodLaunchAttempt:
    job: KubernetesJob
    attempts: int
    requeued_for_pod: str | None
    def __init__(
        self, job: KubernetesJob, attempts: int = 0, requeued_for_pod: str | None = None
    ) -> None: ...

class KubernetesExecutor:
    supports_task_instance_uuid: bool
    kube_config: Any
    kube_scheduler: Any
    task_queue: Any
    running: set[TaskInstanceKey]
    event_buffer: dict[TaskInstanceKey, tuple[TaskInstanceState | str | None, Any]]
    pod_launch_attempts: dict[TaskInstanceKey, _PodLaunchAttempt]
    pod_launch_failure_max_retries: int
    pod_launch_failure_excluded_container_reasons: frozenset[str]
    _log: Any
    def _change_state(self, results: KubernetesResults, *, session: Any = ...) -> None: ...
    def _get_task_instance_state(
        self, key: TaskInstanceKey, *, session: Any
    ) -> TaskInstanceState | None: ...
