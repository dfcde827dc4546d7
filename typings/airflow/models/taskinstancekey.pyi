# airflow.models.taskinstancekey (apache-airflow-core 3.3.2): the executor's task key.
# The provider's annotations_to_key returns one; at run time run_id may also be None.

from typing import Any, NamedTuple

class TaskInstanceKey(NamedTuple):
    dag_id: str
    task_id: str
    run_id: str
    try_number: int = 1
    map_index: int = -1

    @property
    def primary(self) -> tuple[str, str, str, int]: ...
    def with_try_number(self, try_number: int) -> TaskInstanceKey: ...
    @property
    def key(self) -> TaskInstanceKey: ...
    @classmethod
    def from_dict(cls, dictionary: dict[str, Any]) -> TaskInstanceKey: ...
