# airflow.providers.cncf.kubernetes.kubernetes_helper_functions (provider 10.25.0):
# only the functions tests/compat calls.

from airflow.models.taskinstancekey import TaskInstanceKey

def add_unique_suffix(*, name: str, rand_len: int = 8, max_len: int = 63) -> str: ...
def create_unique_id(
    dag_id: str | None = None,
    task_id: str | None = None,
    *,
    max_length: int = 63,
    unique: bool = True,
) -> str: ...
def annotations_to_key(annotations: dict[str, str]) -> TaskInstanceKey: ...
