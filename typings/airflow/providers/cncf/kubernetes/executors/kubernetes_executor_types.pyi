# airflow.providers.cncf.kubernetes.executors.kubernetes_executor_types (provider 10.25.0):
# the watcher's queue record, its failure details and the constants tests/compat reads.

from typing import Literal, NamedTuple, TypedDict

from airflow.utils.state import TaskInstanceState

ADOPTED: str
POD_REVOKED_KEY: str
TASK_INSTANCE_ID_ANNOTATION: str

class FailureDetails(TypedDict, total=False):
    pod_status: str | None
    pod_reason: str | None
    pod_message: str | None
    container_state: str | None
    container_reason: str | None
    container_message: str | None
    exit_code: int | None
    container_type: Literal["init", "main"] | None
    container_name: str | None

class KubernetesWatch(NamedTuple):
    pod_name: str
    namespace: str
    state: TaskInstanceState | str | None
    annotations: dict[str, str]
    resource_version: str
    failure_details: FailureDetails | None
